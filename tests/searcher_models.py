"""Synthetic cost models of real kernel shapes, each with a known optimum: the searcher's tests search
them (tests/test_searcher.py), and run as a module they compare the searcher's strategies (the
measurement in docs/optimiser.md; a benchmark, not a test).

    python -m tests.searcher_models [--seeds 10] [--budget 200] [--batch 8] [--json out.json]

Each model is a deterministic function of the knobs with a known optimum (found by enumerating the
space), shaped like a kind of kernel: a bowl in log2 of each block size, an interaction of warps and
block size (elements per thread), a cliff at resource limits (spills cost time; past shared memory or
registers the kernel fails to compile), measurement noise of about 1 %, and for one model a rugged
surface with a second basin. Every strategy gets the same roofline-ordered first points, suggests
``--batch`` points at a time (a round of workers) and observes them all; the table gives the median,
over seeds, of the evaluations until the searcher's own best point is truly within 2 % of the optimum,
and how many seeds got there within the budget.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from workers.proposers.knob_space import KnobDim, KnobSpace
from workers.proposers.searcher import Searcher, first_points

STRATEGIES = ("tpe", "hybrid", "random", "coordinate", "exhaustive")
P2 = [1 << e for e in range(17)]
WARPS = [1, 2, 4, 8, 16]
STAGES = [1, 2, 3, 4, 5]
SMEM_BYTES = 228 * 1024
Cost = float | str  # a time in ms, or a failure's text


def dim(name: str, kind: str, values: list[int], start: int) -> KnobDim:
    return KnobDim(name=name, kind=kind, values=values, start=start)


def pow2(lo: int, hi: int) -> list[int]:
    return [v for v in P2 if lo <= v <= hi]


def per_thread(elements: int, warps: int) -> tuple[float, str | None]:
    """Time factor of ``elements`` values held per thread, or a failure past the register file."""
    n = elements / (32 * warps)
    if n > 256:
        return 0.0, "out of resource: registers (too many values per thread)"
    return (2.0 if n > 128 else 1.0), None


def elementwise(p: dict[str, int]) -> Cost:
    """GELU-like: best at 4096-element blocks with 16 warps (8 values a thread)."""
    block, warps = p["k:BLOCK"], p["k:num_warps"]
    spill, failure = per_thread(block, warps)
    if failure:
        return failure
    values = math.log2(block / (32 * warps))
    return 0.1 * (1 + 0.04 * (math.log2(block) - 12) ** 2 + 0.05 * (values - 3) ** 2) * spill


def matmul(p: dict[str, int]) -> Cost:
    """A Triton matmul: best at 128 x 256 x 64 tiles, 8 warps, 3 stages, axes swapped (L2 reuse)."""
    bm, bn, bk, w, s = (p[f"mm:{k}"] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"))
    if (bm * bk + bk * bn) * 2 * s > SMEM_BYTES:
        return "out of resource: shared memory, Required: more than the hardware limit"
    spill, failure = per_thread(bm * bn, w)
    if failure:
        return failure
    tiles = 0.1 * (math.log2(bm) - 7) ** 2 + 0.1 * (math.log2(bn) - 8) ** 2 + 0.12 * (math.log2(bk) - 6) ** 2
    warps = 0.06 * (math.log2(bm * bn / (32 * w)) - 7) ** 2
    stages = 0.05 * (s - 3) ** 2 + (0.1 if s == 1 else 0.0)
    return 0.2 * (1 + tiles + warps + stages) * spill * (0.96 if p["mm:grid_swap"] else 1.0)


def two_launches(p: dict[str, int]) -> Cost:
    """A layer norm in two launches (statistics, then normalise), each with its own knobs and optimum."""
    b1, w1, s1 = p["stats:BLOCK_S"], p["stats:num_warps"], p["stats:num_stages"]
    b2, w2 = p["norm:BLOCK"], p["norm:num_warps"]
    (spill1, f1), (spill2, f2) = per_thread(b1, w1), per_thread(b2, w2)
    if f1 or f2:
        return f1 or f2
    t1 = (
        1
        + 0.05 * (math.log2(b1) - 11) ** 2
        + 0.04 * (math.log2(b1 / (32 * w1)) - 4) ** 2
        + 0.04 * (s1 - 2) ** 2
    )
    t2 = 1 + 0.05 * (math.log2(b2) - 10) ** 2 + 0.05 * (math.log2(b2 / (32 * w2)) - 2) ** 2
    return (0.6 * t1 * spill1 + 0.4 * t2 * spill2) * (0.97 if p["norm:grid_swap"] else 1.0)


def rugged(p: dict[str, int]) -> Cost:
    """A 2D stencil (pooling, depthwise conv): a local basin near the start and the global one at wide,
    short tiles, plus a bumpy surface (+-3 %, a fixed function of the point)."""
    bh, bw, w, s = p["st:BLOCK_H"], p["st:BLOCK_W"], p["st:num_warps"], p["st:num_stages"]
    spill, failure = per_thread(bh * bw, w)
    if failure:
        return failure
    h, x = math.log2(bh), math.log2(bw)
    near = 1.0 + 0.06 * ((h - 4) ** 2 + (x - 4) ** 2)
    far = 0.85 + 0.05 * ((h - 1) ** 2 + (x - 8) ** 2)
    warps = 0.04 * (math.log2(bh * bw / (32 * w)) - 2) ** 2 + 0.02 * (s - 2) ** 2
    bump = int.from_bytes(hashlib.sha256(repr(sorted(p.items())).encode()).digest()[:4]) / 2**32
    return (
        0.5
        * (min(near, far) + warps)
        * (1 + 0.06 * (bump - 0.5))
        * spill
        * (0.98 if p["st:grid_swap"] else 1.0)
    )


@dataclass(frozen=True)
class Model:
    name: str
    space: KnobSpace
    cost: Callable[[dict[str, int]], Cost]
    bottleneck: str  # what a roofline rule would call the start (wrong on purpose for the elementwise)


MODELS = [
    Model("elementwise", KnobSpace(dims=[dim("k:BLOCK", "block", pow2(16, 65536), 1024),
                                         dim("k:num_warps", "warps", WARPS, 4)]), elementwise, "underutilized"),
    Model("matmul", KnobSpace(dims=[dim("mm:BLOCK_M", "block", pow2(16, 256), 32), dim("mm:BLOCK_N", "block", pow2(16, 256), 32),
                                    dim("mm:BLOCK_K", "block", pow2(16, 256), 32), dim("mm:grid_swap", "grid", [0, 1], 0),
                                    dim("mm:num_warps", "warps", WARPS, 4), dim("mm:num_stages", "stages", STAGES, 3)]),
          matmul, "memory"),
    Model("two_launches", KnobSpace(dims=[dim("stats:BLOCK_S", "block", pow2(64, 16384), 256),
                                          dim("stats:num_warps", "warps", WARPS, 4),
                                          dim("stats:num_stages", "stages", STAGES, 3),
                                          dim("norm:BLOCK", "block", pow2(64, 16384), 256),
                                          dim("norm:grid_swap", "grid", [0, 1], 0),
                                          dim("norm:num_warps", "warps", WARPS, 4)]), two_launches, "memory"),
    Model("rugged", KnobSpace(dims=[dim("st:BLOCK_H", "block", pow2(1, 256), 16), dim("st:BLOCK_W", "block", pow2(2, 512), 16),
                                    dim("st:grid_swap", "grid", [0, 1], 0), dim("st:num_warps", "warps", WARPS, 4),
                                    dim("st:num_stages", "stages", STAGES, 3)]), rugged, "compute"),
]  # fmt: skip


def points(space: KnobSpace) -> list[dict[str, int]]:
    return [dict(zip([d.name for d in space.dims], values, strict=True))
            for values in itertools.product(*(d.values for d in space.dims))]  # fmt: skip


def optimum_ms(model: Model) -> float:
    return min(c for p in points(model.space) if not isinstance(c := model.cost(p), str))


def run(model: Model, strategy: str, seed: int, budget: int, batch: int, optimum: float) -> int | None:
    """Evaluations until the searcher's best is truly within 2 % of ``optimum``; None if not in budget."""
    searcher = Searcher(
        model.space, seed, first=first_points(model.space, model.bottleneck), strategy=strategy
    )
    noise = random.Random(f"noise:{seed}")
    evaluations = 0
    while evaluations < budget:
        batch_points = searcher.suggest(min(batch, budget - evaluations))
        if not batch_points:
            break
        for point in batch_points:
            cost = model.cost(point)
            if isinstance(cost, str):
                searcher.observe(point, None, cost)
            else:
                searcher.observe(point, cost * (1 + noise.gauss(0, 0.01)))
        evaluations += len(batch_points)
        best = searcher.best()
        if best is not None and model.cost(best[0]) <= 1.02 * optimum:
            return evaluations  # counted per batch: a round's results arrive together
    return None


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.searcher_models",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=200, help="evaluations per search at most")
    parser.add_argument("--batch", type=int, default=8, help="points suggested at a time (a round)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    rows = []
    print(f"| model | points | {' | '.join(STRATEGIES)} |")
    print(f"|---|---|{'---|' * len(STRATEGIES)}")
    for model in MODELS:
        optimum = optimum_ms(model)
        cells = []
        for strategy in STRATEGIES:
            started = time.perf_counter()
            found = [
                run(model, strategy, seed, args.budget, args.batch, optimum) for seed in range(args.seeds)
            ]
            reached = [f for f in found if f is not None]
            median = statistics.median(f if f is not None else math.inf for f in found)
            rows.append({"model": model.name, "points": model.space.size(), "strategy": strategy,
                         "evaluations": found, "seconds": time.perf_counter() - started})  # fmt: skip
            cells.append(
                f"{median if math.isfinite(median) else '>' + str(args.budget)} ({len(reached)}/{args.seeds})"
            )
        print(f"| {model.name} | {model.space.size()} | {' | '.join(cells)} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
