"""Where a child's time goes: the moment each step of its job ended, in seconds from the job's start.

Kept in every verdict, timing and profile, so a slow stage in a trace can be read step by step (CUDA
context, inputs, compile, locked measurement...) rather than guessed at.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Steps:
    def __init__(self, start: float | None = None, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.start = clock() if start is None else start
        self.ended: dict[str, float] = {}

    def end(self, step: str) -> None:
        self.ended[step] = round(self.clock() - self.start, 3)
