"""How long a CUDA context takes to make when many processes make theirs at once, as a search's child
processes do at the start of every stage.

    python scripts/cuda_context_bench.py 4 --gpus 1     # four workers' children on one GPU
    python scripts/cuda_context_bench.py 16 --gpus 4    # sixteen, four per GPU

Each process imports torch (not timed), waits for the others, then times its first CUDA allocation on
GPU ``rank % gpus`` (the context is made there, and only there). Prints the median and the slowest.

The first version of this script (the numbers in docs/gpu-runs/2026-11-22-h200x4-scaling-2) ended with
a bare ``torch.cuda.synchronize()``, which made a second context on GPU 0 in every process placed on
another GPU: its multi-GPU figure timed 28 contexts, not 16.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time


def _one(rank: int, gpus: int, barrier, out) -> None:
    import torch

    device = torch.device("cuda", rank % gpus)
    barrier.wait(timeout=120)
    start = time.perf_counter()
    torch.cuda.set_device(device)  # so nothing below makes a second context on GPU 0
    torch.empty(1, device=device)
    torch.cuda.synchronize(device)
    out.put(time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("processes", type=int)
    parser.add_argument("--gpus", type=int, default=1)
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(args.processes), ctx.Queue()
    procs = [ctx.Process(target=_one, args=(r, args.gpus, barrier, out), daemon=True) for r in range(args.processes)]
    for p in procs:
        p.start()
    seconds = sorted(out.get(timeout=300) for _ in procs)
    for p in procs:
        p.join()
    print(f"{args.processes} processes on {args.gpus} GPU(s): CUDA context median {statistics.median(seconds):.2f} s, "
          f"slowest {seconds[-1]:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
