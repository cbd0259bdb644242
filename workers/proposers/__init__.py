"""Proposers turn a parent kernel and its diagnosis into new candidate kernels, behind one interface.

The beam search does not know which kind it has: an LLM (``llm.py``), the offline tuner (``tuner.py``),
or a replay of a recorded run (``replay.py``). Every proposal is an ordinary candidate that goes
through verification and timing.
"""

from __future__ import annotations

from typing import Protocol

from beamsearch.records.schema import Attempt, Diagnosis, Kernel


class Proposer(Protocol):
    name: str

    def propose(self, parent: Kernel, diagnosis: Diagnosis, history: list[Attempt]) -> list[Kernel]:
        """New kernels derived from ``parent``, never one already in ``history`` (by hash)."""
        ...
