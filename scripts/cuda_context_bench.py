"""How long a CUDA context takes to make when many processes make theirs at once, as a search's child
processes do at the start of every stage.

    python scripts/cuda_context_bench.py 4 --gpus 1     # four workers' children on one GPU
    python scripts/cuda_context_bench.py 16 --gpus 4    # sixteen, four per GPU
    python scripts/cuda_context_bench.py 16 --gpus 4 --env CUDA_DEVICE_MAX_CONNECTIONS=1

Each process sees only its GPU (``CUDA_VISIBLE_DEVICES``, as Ray gives a worker and its children),
imports torch (not timed), waits for the others, then times three steps: ``torch.cuda.init()`` (the
driver and runtime), the first allocation (the context) and a 1 GiB allocation. Prints the median and
the slowest of each.

The first version of this script (the numbers in docs/gpu-runs/2026-11-22-h200x4-scaling-2) ended with
a bare ``torch.cuda.synchronize()``, which made a second context on GPU 0 in every process placed on
another GPU: its multi-GPU figure timed 28 contexts, not 16. It also showed every process all GPUs.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import time

STEPS = ("init", "context", "alloc_1GiB")


def _one(rank: int, gpus: int, env: dict[str, str], barrier, out) -> None:
    os.environ.update(env)
    os.environ["CUDA_VISIBLE_DEVICES"] = str(rank % gpus)
    import torch

    barrier.wait(timeout=120)
    marks = [time.perf_counter()]
    torch.cuda.init()
    marks.append(time.perf_counter())
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    marks.append(time.perf_counter())
    torch.empty(2**30, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    marks.append(time.perf_counter())
    out.put([b - a for a, b in zip(marks, marks[1:], strict=False)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("processes", type=int)
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--env", nargs="*", default=[], help="KEY=VALUE set in every process before torch loads")
    args = parser.parse_args()
    env = dict(kv.split("=", 1) for kv in args.env)
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(args.processes), ctx.Queue()
    procs = [ctx.Process(target=_one, args=(r, args.gpus, env, barrier, out), daemon=True) for r in range(args.processes)]
    for p in procs:
        p.start()
    rows = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join()
    steps = ", ".join(f"{name} median {statistics.median(col):.2f} s (slowest {max(col):.2f})"
                      for name, col in zip(STEPS, zip(*rows, strict=True), strict=True))  # fmt: skip
    print(f"{args.processes} processes on {args.gpus} GPU(s){' ' + ' '.join(args.env) if args.env else ''}: {steps}")


if __name__ == "__main__":
    main()
