"""How long a CUDA context takes to make when many processes make theirs at once, as a search's child
processes do at the start of every stage.

    python scripts/cuda_context_bench.py 4 --gpus 1     # four workers' children on one GPU
    python scripts/cuda_context_bench.py 16 --gpus 4    # sixteen, four per GPU
    python scripts/cuda_context_bench.py 16 --gpus 4 --env CUDA_DEVICE_MAX_CONNECTIONS=1

Each process sees only its GPU (``CUDA_VISIBLE_DEVICES``, as Ray gives a worker and its children),
imports torch (not timed), waits for the others, then times three steps: ``torch.cuda.init()`` (the
driver and runtime), the first allocation (the context) and a 1 GiB allocation. Prints the median and
the slowest of each.

With ``--for SECONDS``, a sustained rate instead of one burst: each of the processes is a *slot* that
starts fresh Python processes one after another (import torch, ``torch.cuda.init()``, a context),
as a worker's spares do, for that long. Prints the starts per second over all slots and each step's
median. If the host serialises part of the start, the rate stops growing with the slots, whatever
the number of GPUs: that rate caps a search's candidates per second on one host (a candidate starts
three GPU processes: the verification judge and runner, and timing).

    python scripts/cuda_context_bench.py 4 --gpus 1 --for 30
    python scripts/cuda_context_bench.py 16 --gpus 4 --for 30

The first version of this script (the numbers in docs/gpu-runs/2026-11-22-h200x4-scaling-2) ended with
a bare ``torch.cuda.synchronize()``, which made a second context on GPU 0 in every process placed on
another GPU: its multi-GPU figure timed 28 contexts, not 16. It also showed every process all GPUs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import threading
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


# One fresh process's start, as a spare makes it: its steps' seconds as JSON on stdout.
START = """
import json, time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
torch.cuda.init()
t2 = time.perf_counter()
torch.empty(1, device="cuda")
torch.cuda.synchronize()
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "init": t2 - t1, "context": t3 - t2}))
"""


def sustained(slots: int, gpus: int, env: dict[str, str], seconds: float) -> str:
    """Each slot starts processes back to back for ``seconds``; returns the rate and the steps' medians."""
    starts: list[dict[str, float]] = []
    errors: list[str] = []
    lock = threading.Lock()
    begin = time.perf_counter()

    def slot(rank: int) -> None:
        child_env = {**os.environ, **env, "CUDA_VISIBLE_DEVICES": str(rank % gpus)}
        while time.perf_counter() - begin < seconds:
            t = time.perf_counter()
            run = subprocess.run([sys.executable, "-c", START], env=child_env, capture_output=True, text=True)
            if run.returncode != 0:
                errors.append(run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"exit {run.returncode}")
                return
            with lock:
                starts.append({**json.loads(run.stdout), "wall": time.perf_counter() - t})

    threads = [threading.Thread(target=slot, args=(r,)) for r in range(slots)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - begin
    if errors or not starts:
        raise SystemExit(f"a start failed: {errors[0] if errors else 'none finished'}")
    steps = ", ".join(f"{k} {statistics.median(s[k] for s in starts):.2f} s" for k in ("wall", "import", "init", "context"))
    return f"{len(starts) / elapsed:.2f} starts/s ({len(starts)} in {elapsed:.1f} s); median per start: {steps}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("processes", type=int)
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--env", nargs="*", default=[], help="KEY=VALUE set in every process before torch loads")
    parser.add_argument("--for", dest="seconds", type=float, help="a sustained rate over this many seconds")
    args = parser.parse_args()
    env = dict(kv.split("=", 1) for kv in args.env)
    label = f"{args.processes} processes on {args.gpus} GPU(s){' ' + ' '.join(args.env) if args.env else ''}"
    if args.seconds:
        print(f"{label}, fresh processes back to back for {args.seconds:.0f} s: "
              f"{sustained(args.processes, args.gpus, env, args.seconds)}")  # fmt: skip
        return
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
    print(f"{label}: {steps}")


if __name__ == "__main__":
    main()
