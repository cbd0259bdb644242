"""Replay: the kernels of a recorded run, proposed again round by round, with no model.

Reads a trace folder's ``round_N/`` folders in order (``optimization_trace/round_N/`` under a problem
folder, or the rounds directly, or those in a published problem folder's ``optimization_trace.tar.xz``).
From each round it takes every ``candidates/<id>/kernel.py`` (our
traces) or else the round's ``kernel.py``; a round with neither but an ``opt_reply.txt`` (KernelAgent's
published layout) gives the kernel in that reply. So a published run can be re-measured on another GPU.
Each ``propose`` call returns the next round's kernels, and nothing once the rounds run out.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from beamsearch.records.schema import Attempt, Diagnosis, Kernel
from beamsearch.records.trace_archive import TRACE_ARCHIVE, TRACE_DIR, unpacked_trace

log = logging.getLogger(__name__)
ROUND = re.compile(r"round_(\d+)$")


def recorded_rounds(trace: Path) -> list[list[Kernel]]:
    """The kernels of each recorded round, in round order; unreadable rounds are logged and empty. Those
    of a published archive name their place in it."""
    with unpacked_trace(trace) as folder:
        archived = folder != trace / TRACE_DIR
        folder = folder if folder.is_dir() else trace  # the rounds directly
        rounds = sorted((int(m.group(1)), p) for p in folder.iterdir() if p.is_dir() and (m := ROUND.search(p.name)))
        kernels = [_round_kernels(path) for _, path in rounds]
        unpacked = str(folder.parent)
    if not archived:
        return kernels
    archive = str(trace / TRACE_ARCHIVE)
    return [[k.model_copy(update={"note": k.note.replace(unpacked, archive)}) for k in ks] for ks in kernels]


def _round_kernels(path: Path) -> list[Kernel]:
    files = sorted((path / "candidates").glob("*/kernel.py")) or [f for f in [path / "kernel.py"] if f.is_file()]
    if files:
        return [Kernel(source=f.read_text(), origin="replay", note=f"replay of {f}") for f in files]
    reply = path / "opt_reply.txt"
    if reply.is_file():
        from prompts.parsers import ReplyParseError, extract_kernel

        try:
            return [Kernel(source=extract_kernel(reply.read_text()), origin="replay", note=f"replay of {reply}")]
        except ReplyParseError as e:
            log.warning("replay: no kernel in %s: %s", reply, e)
    return []


class ReplayProposer:
    name = "replay"

    def __init__(self, trace: str | Path) -> None:
        self.trace = Path(trace)
        if not self.trace.is_dir():
            raise FileNotFoundError(f"replay: {self.trace} is not a folder")
        self._rounds = recorded_rounds(self.trace)
        if not self._rounds:
            raise FileNotFoundError(f"replay: no round_N folders under {self.trace} (or its optimization_trace/ or "
                                    f"{TRACE_ARCHIVE})")
        self._next = 0

    def seek(self, round_index: int) -> None:
        """Make the next ``propose`` return the kernels of recorded round ``round_index + 1``."""
        self._next = max(0, round_index)

    def propose(self, parent: Kernel, diagnosis: Diagnosis, history: list[Attempt]) -> list[Kernel]:
        if self._next >= len(self._rounds):
            return []
        kernels = self._rounds[self._next]
        self._next += 1
        tried = {a.kernel_hash for a in history}
        return [k.model_copy(update={"parent_hash": parent.hash}) for k in kernels if k.hash not in tried]
