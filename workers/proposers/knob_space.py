"""A kernel's joint knob space: every knob the tuner reads, of every launch, with its legal values.

A *point* is a plain ``dict[str, int]`` from dimension name to value; ``render`` writes the kernel at a
point. Names are ``"<launch>:<knob>"`` (``"matmul_kernel:BLOCK_K"``, ``"matmul_kernel:num_warps"``,
``"matmul_kernel:grid_swap"``), so knobs of several launches stay apart.

Legal values:

- block constexprs: powers of two, from a sixteenth of the kernel's own value (at least 16 in a kernel
  that calls ``tl.dot``) up to the next power of two of the matching problem size when ``sizes`` is given,
  else sixteen times the kernel's own value;
- ``num_warps``: 1 to 16, powers of two; ``num_stages``: 1 to 5, only for kernels that loop (as the tuner);
- the grid axis swap: 0 (as written) or 1 (axes 0 and 1 swapped).

A persistent grid (programs = SMs, each looping) is not a knob: it needs the kernel body rewritten into
a loop over tiles, and no rewrite of an arbitrary kernel body is safe in general.
"""

from __future__ import annotations

from beamsearch.schema import Record


class KnobDim(Record):
    """One dimension of the space: ``values`` ascending, ``start`` the kernel's own value (among them)."""

    name: str  # "<launch>:<knob>"
    kind: str  # "block", "warps", "stages" or "grid" (the tuner's KnobKind)
    values: list[int]
    start: int


class KnobSpace(Record):
    dims: list[KnobDim]

    def size(self) -> int:
        """The number of points (the product of the dimensions' value counts); 1 for a space without knobs."""
        raise NotImplementedError

    def start(self) -> dict[str, int]:
        """The kernel's own point."""
        raise NotImplementedError


def space_of(source: str, sizes: dict[str, int] | None = None) -> KnobSpace:
    """Every knob of every launch in ``source``, with legal values; no dims when it has none or does not
    parse. ``sizes`` maps problem dimension names (``{"M": 4096, "N": 4096, "K": 4096}``) to sizes: a
    block knob ``BLOCK_K`` / ``BLOCK_SIZE_K`` / ``K_BLOCK`` is bounded by ``K``, any other by the largest."""
    raise NotImplementedError


def render(source: str, space: KnobSpace, point: dict[str, int]) -> str:
    """``source`` with every knob at ``point``'s value (knobs at their start value are left as written).
    Raises ValueError when ``space`` is not ``source``'s space or the point has an unknown name or an
    illegal value. A point missing some names keeps those knobs at their start."""
    raise NotImplementedError


def describe(space: KnobSpace, point: dict[str, int]) -> str:
    """The point's changes from the start, for a candidate's note: ``"k:BLOCK 1024 -> 4096, k:num_warps 4 -> 16"``."""
    raise NotImplementedError
