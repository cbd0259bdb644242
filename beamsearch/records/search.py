"""What the offline optimiser searches and learns, as plain data: a kernel's joint knob space and a
searcher's state. Shared data: the driver's resume point (``beamsearch.records.state``) holds it, and the
proposers (``workers.proposers.knob_space``, ``workers.proposers.searcher``) build and use it."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from beamsearch.records.schema import Record

Strategy = Literal["exhaustive", "tpe", "hybrid", "random", "coordinate"]


class KnobDim(Record):
    """One dimension of the space: ``values`` ascending, ``start`` the kernel's own value (among them)."""

    name: str  # "<launch>:<knob>"
    kind: str  # "block", "warps", "stages", "grid", "loads", "loop_stages", "unroll", "math" or "maxnreg" (the tuner's KnobKind)
    values: list[int]
    start: int


class DotTile(Record):
    """A ``tl.dot`` launch's tile knobs, by dimension name, and what its points cost the hardware: an
    fp32 accumulator of BLOCK_M x BLOCK_N spread over the program's threads, and a shared-memory
    pipeline of ``num_stages`` operand tiles (``workers.proposers.knob_space.over_limits``)."""

    m: str
    n: str
    k: str
    warps: str | None = None  # None: set in a way the tuner cannot read; no register limit then
    stages: str | None = None  # None: the launch does not loop (or the tuner cannot read them): one buffer
    operand_bytes: int = 2
    shared_bytes: int | None = Field(None, description="the GPU's shared memory a program may take; None "
                                     "when unknown (the CPU): then only the registers limit points")  # fmt: skip

    def knobs(self) -> list[str]:
        """The names of the knobs its limits read."""
        return [n for n in (self.m, self.n, self.k, self.warps, self.stages) if n]


class BlockTile(Record):
    """A launch without ``tl.dot``: its block knobs, whose product is the tile a program holds in registers
    over its warps' threads (``workers.proposers.knob_space.over_limits``)."""

    blocks: list[str]
    warps: str  # a launch whose warps the tuner cannot read gets no BlockTile

    def knobs(self) -> list[str]:
        """The names of the knobs its limit reads."""
        return [*self.blocks, self.warps]


class KnobSpace(Record):
    dims: list[KnobDim]
    tiles: list[DotTile] = Field([], description="the dot launches whose points beyond a program's registers "
                                 "or shared memory are never suggested")  # fmt: skip
    blocks: list[BlockTile] = Field([], description="the other launches whose points beyond a program's "
                                    "registers are never suggested")  # fmt: skip
    configs: list[dict[str, int]] = Field([], description="an @triton.autotune kernel's own configs, as points "
                                          "(workers.proposers.autotune_configs): the search tries them first")  # fmt: skip

    def size(self) -> int:
        """The number of points (the product of the dimensions' value counts); 1 for a space without knobs."""
        return math.prod(len(d.values) for d in self.dims)

    def start(self) -> dict[str, int]:
        """The kernel's own point."""
        return {d.name: d.start for d in self.dims}

    def dim(self, name: str) -> KnobDim:
        for d in self.dims:
            if d.name == name:
                return d
        raise ValueError(
            f"no knob {name!r} in this space (knobs: {', '.join(d.name for d in self.dims) or 'none'})"
        )

    def complete(self, point: dict[str, int]) -> dict[str, int]:
        """``point`` with every name of the space, missing ones at their start, in the space's order.
        Raises ValueError on an unknown name or a value the dimension does not allow."""
        for name, value in point.items():
            dim = self.dim(name)
            if value not in dim.values:
                raise ValueError(f"{name}={value} is not a legal value (legal: {dim.values})")
        return {d.name: point.get(d.name, d.start) for d in self.dims}


class Observation(Record):
    point: dict[str, int]
    time_ms: float | None  # None when the candidate failed
    failure: str | None = None  # the failure's text ("compile_failed: out of resource: shared memory ...")


class SearcherState(Record):
    """Everything a Searcher learned; goes in the resume point (state.json)."""

    space: KnobSpace = KnobSpace(dims=[])  # the space it searched, to refuse another space's state
    strategy: Strategy = "hybrid"
    first: list[dict[str, int]] = []  # the points to try first, as given
    suggested: list[dict[str, int]] = []  # in order
    observations: list[Observation] = []
    limits: list[dict[str, int]] = []  # points that ran out of resources: they and points above are out
    grid_limits: list[dict[str, int]] = []  # points whose launch grid was too large: they and points below are out
    same_code: list[list[dict[str, int]]] = []  # pairs of points seen to compile to the same code
