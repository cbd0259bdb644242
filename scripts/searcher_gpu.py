"""GPU check (not a test): the searcher on real Triton kernels' measured times, against a sweep.

    python -m scripts.searcher_gpu [--kernels gelu matmul] [--seeds 10] [--json out.json]
    python -m scripts.searcher_gpu --smoke     # CPU, Triton's interpreter, tiny sizes: the plumbing only

For each plain starting kernel below (a first draft: small fixed blocks, Triton's default warps), it
builds the kernel's joint knob space (``space_of`` with the problem's sizes), cuts a box of it small
enough to sweep in minutes, and times every point of the box in this process with
``triton.testing.do_bench`` (median), after checking its output against torch. A point that fails to
compile, runs out of resources or gives a wrong answer is a failure with its text. Then it replays each
search strategy over the swept times (no more GPU time): the evaluations until the searcher's own best
is within 2 % of the sweep's best, by strategy, as a table; with the start's time and the sweep's best.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

SMOKE = "--smoke" in sys.argv
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import torch  # noqa: E402
import triton.testing  # noqa: E402

from workers.proposers.knob_space import KnobDim, KnobSpace, describe, render, space_of  # noqa: E402
from workers.proposers.searcher import Searcher, first_points  # noqa: E402

STRATEGIES = ("hybrid", "tpe", "random", "coordinate", "exhaustive")

GELU = """
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def kernel_function(x):
    out = torch.empty_like(x)
    n = x.numel()
    BLOCK = 1024
    gelu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    return out
"""

MATMUL = """
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def kernel_function(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    BLOCK_M = 32
    BLOCK_N = 32
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=32)
    return c
"""


def gelu_case(device: str) -> tuple[str, dict[str, int], tuple, torch.Tensor, dict[str, list[int]]]:
    n = 4096 if SMOKE else 1 << 26
    x = torch.randn(n, device=device, dtype=torch.float16)
    # On the GPU, blocks of 64 to 16384 with every warp count: 45 points (the larger blocks' compiles are slow).
    box = {"block": [256, 1024, 4096]} if SMOKE else {"block": [1 << e for e in range(6, 15)]}
    return GELU, {"N": n}, (x,), torch.nn.functional.gelu(x.float()).half(), box


def matmul_case(device: str) -> tuple[str, dict[str, int], tuple, torch.Tensor, dict[str, list[int]]]:
    size = 64 if SMOKE else 4096
    a, b = (torch.randn(size, size, device=device, dtype=torch.float16) for _ in range(2))
    if SMOKE:
        box = {"block": [32, 64], "warps": [4], "stages": [3]}
    else:  # 3 x 3 x 2 tiles, 2 warps, 2 stages, the grid swap: 144 points (each one compiled)
        box = {"block": [64, 128, 256], "BLOCK_K": [32, 64], "warps": [4, 8], "stages": [3, 4]}
    return MATMUL, {"M": size, "N": size, "K": size}, (a, b), (a.float() @ b.float()).half(), box


CASES = {"gelu": gelu_case, "matmul": matmul_case}


def boxed(space: KnobSpace, box: dict[str, list[int]]) -> KnobSpace:
    """The part of ``space`` whose values ``box`` keeps, by knob name suffix or kind; start moved inside."""
    dims = []
    for d in space.dims:
        keep = box.get(d.name.split(":")[1]) or box.get(d.kind)
        values = [v for v in d.values if keep is None or v in keep]
        start = min(values, key=lambda v: (abs(math.log2(v or 1) - math.log2(d.start or 1)), v))
        dims.append(KnobDim(name=d.name, kind=d.kind, values=values, start=start))
    return KnobSpace(dims=dims)


def measure(source: str, space: KnobSpace, point: dict[str, int], inputs: tuple, expected: torch.Tensor,
            folder: Path, n: int) -> float | str:  # fmt: skip
    """The point's median ms under do_bench, or its failure's text."""
    path = folder / f"point_{n}.py"
    path.write_text(render(source, space, point))
    spec = importlib.util.spec_from_file_location(f"searcher_gpu_point_{n}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        out = module.kernel_function(*inputs)
        if not torch.allclose(out.float(), expected.float(), atol=2e-2, rtol=2e-2):
            return f"incorrect: max abs error {(out.float() - expected.float()).abs().max().item():.3g}"
        if SMOKE:
            return 1.0 + n % 7  # the interpreter's time means nothing
        return triton.testing.do_bench(lambda: module.kernel_function(*inputs), warmup=5, rep=25,
                                       return_mode="median")  # fmt: skip
    except Exception as e:  # a compile error, out of resources: the point's failure
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def replay(
    space: KnobSpace, times: dict[tuple, float | str], strategy: str, seed: int, best_ms: float
) -> int | None:
    searcher = Searcher(space, seed, first=first_points(space, "memory"), strategy=strategy)
    evaluations = 0
    while points := searcher.suggest(8):
        for point in points:
            result = times[tuple(point.values())]
            searcher.observe(point, None, result) if isinstance(result, str) else searcher.observe(
                point, result
            )
        evaluations += len(points)
        best = searcher.best()
        if best is not None and best[1] <= 1.02 * best_ms:
            return evaluations
    return None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kernels", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="CPU, interpreter, tiny sizes and boxes")
    parser.add_argument("--json", help="also write every measurement and the table here")
    args = parser.parse_args()
    device = "cpu" if SMOKE else "cuda"
    torch.manual_seed(0)
    report = []
    for name in args.kernels:
        source, sizes, inputs, expected, box = CASES[name](device)
        full = space_of(source, sizes)
        space = boxed(full, box)
        started = time.perf_counter()
        times: dict[tuple, float | str] = {}
        with tempfile.TemporaryDirectory() as folder:
            for n, point in enumerate(Searcher(space, 0, budget=space.size()).suggest(space.size())):
                times[tuple(point.values())] = measure(
                    source, space, point, inputs, expected, Path(folder), n
                )
        sweep_s = time.perf_counter() - started
        ok = {k: v for k, v in times.items() if not isinstance(v, str)}
        best_key = min(ok, key=ok.get)
        best_point = dict(zip([d.name for d in space.dims], best_key, strict=True))
        start_ms = measure(source, full, full.start(), inputs, expected, Path(tempfile.mkdtemp()), -1)
        print(f"== {name}: joint space {full.size()} points; swept box {space.size()} points in {sweep_s:.0f} s, "
              f"{len(times) - len(ok)} failed; start {start_ms} ms; sweep's best {ok[best_key]:.4f} ms at "
              f"{describe(full, best_point)}")  # fmt: skip
        for failure in sorted({v for v in times.values() if isinstance(v, str)})[:5]:
            print(f"   failure: {failure}")
        row = {"kernel": name, "space_points": full.size(), "box_points": space.size(), "sweep_s": sweep_s,
               "start_ms": start_ms, "best_ms": ok[best_key], "best_point": best_point,
               "times": [[list(k), v] for k, v in times.items()], "strategies": {}}  # fmt: skip
        print("| strategy | evaluations to within 2 % of the sweep's best (median) | seeds that got there |")
        print("|---|---|---|")
        for strategy in STRATEGIES:
            found = [replay(space, times, strategy, seed, ok[best_key]) for seed in range(args.seeds)]
            median = statistics.median(f if f is not None else math.inf for f in found)
            row["strategies"][strategy] = found
            print(f"| {strategy} | {median} | {sum(f is not None for f in found)}/{args.seeds} |", flush=True)
        report.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
