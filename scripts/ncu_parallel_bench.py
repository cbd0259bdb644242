"""Profiles on several GPUs of one host at once: do they run in parallel, and measure the same?

    python scripts/ncu_parallel_bench.py 43_Max_Pooling_3D --reps 4

One process per visible GPU profiles the problem's input kernel, all starting together, in two
interleaved modes:
- *alone*: GPU 0 profiles and the others wait (what one profile costs);
- *together*: every GPU profiles at once, as the beam's new kernels may be at a round's end.
The first round of each mode warms the spares and is not counted. Prints each profile's seconds, the
medians, the wall time of a round (its slowest GPU), and the kernel's ncu duration in each mode, to
check that profiles taken side by side measure the same.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics

MODES = ("alone", "together")


def profile_on(gpu: int, problem_name: str, reps: int, barrier, results) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)  # before anything starts CUDA or a child
    from beamsearch.records.problems import resolve_problem
    from beamsearch.records.schema import RunSpec
    from profiling import ncu
    from profiling.metrics import DURATION

    problem = resolve_problem(problem_name)
    spec = RunSpec(problem_path=problem.problem_path, shapes="full", device="cuda")
    for rep in range(reps + 1):
        for mode in MODES:
            barrier.wait()
            if mode == "alone" and gpu != 0:
                continue
            profile = ncu.profile_kernel(spec, problem.input_kernel_path)
            kernel_ns = profile.combined.get(DURATION, 0.0) if profile.available else 0.0
            results.put((rep, mode, gpu, profile.duration_s, kernel_ns, profile.reason))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("--reps", type=int, default=4)
    args = parser.parse_args()
    import torch

    gpus = torch.cuda.device_count()
    assert gpus >= 2, f"needs two GPUs or more, found {gpus}"
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(gpus), ctx.Queue()
    procs = [ctx.Process(target=profile_on, args=(g, args.problem, args.reps, barrier, results))
             for g in range(gpus)]  # fmt: skip
    for p in procs:
        p.start()
    expected = (args.reps + 1) * (1 + gpus)
    rows = [results.get(timeout=900) for _ in range(expected)]
    for p in procs:
        p.join()
    print(f"{gpus} GPUs ({torch.cuda.get_device_name(0)}), {args.problem}, {args.reps} counted rounds per mode")
    for rep, mode, gpu, seconds, kernel_ns, reason in sorted(rows):
        print(f"round {rep} {mode:8s} gpu {gpu}: {seconds:6.2f} s  kernel {kernel_ns / 1e3:.1f} us {reason}")
    counted = [r for r in rows if r[0] > 0]
    print("\nmode      median s per profile  median round wall s (slowest GPU)  median kernel us")
    for mode in MODES:
        mine = [r for r in counted if r[1] == mode]
        walls = [max(r[3] for r in mine if r[0] == rep) for rep in range(1, args.reps + 1)]
        print(f"{mode:8s}  {statistics.median(r[3] for r in mine):20.2f}  {statistics.median(walls):33.2f}  "
              f"{statistics.median(r[4] for r in mine) / 1e3:16.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
