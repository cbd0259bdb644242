"""What an idle ncu spare costs the host: CPU seconds per second, with and without its CUDA context.

    python scripts/ncu_idle_cost.py --spares 4 --settle-s 25 --window-s 15

A spare is the process the next profile runs in (``ncu ... python -m profiling.ncu_child``), started
ahead and waiting for its job. Idle ncu spares were seen to keep the CPU busy (4 x H200, 2026-11-22:
16 of them, 33 % of 64 cores against 12 %), which is why only workers that profile keep one. This
measures, on one GPU, the CPU time that ``--spares`` idle spares use over ``--window-s`` once they
have had ``--settle-s`` to start, in two modes: as the search starts them (the CUDA context made while
waiting) and without the early context. Prints CPU seconds per second of the spares' processes and
of the whole host.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from profiling.ncu import _prefix_for, find_ncu
from workers.harness import child_process
from workers.harness.child_process import descendants

TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu_s(root: int) -> float:
    """User and system CPU seconds of ``root`` and its live descendants."""
    total = 0.0
    for pid in [root, *descendants(root)]:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def host_busy_s() -> float:
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / TICKS


def measure(early_context: bool, spares: int, settle_s: float, window_s: float) -> tuple[float, float]:
    ncu = find_ncu()
    assert ncu, "ncu not found"
    env = child_process.child_env("cuda")
    if not early_context:
        env.pop(child_process.EARLY_CUDA_INIT)
    children = [child_process._spawn("profiling.ncu_child", env, _prefix_for(ncu)) for _ in range(spares)]
    try:
        time.sleep(settle_s)
        before, host_before, start = [tree_cpu_s(c.proc.pid) for c in children], host_busy_s(), time.monotonic()
        time.sleep(window_s)
        after, host_after, elapsed = [tree_cpu_s(c.proc.pid) for c in children], host_busy_s(), time.monotonic() - start
        alive = sum(c.proc.poll() is None for c in children)
        assert alive == spares, f"only {alive} of {spares} spares alive after the window: the measure would be void"
    finally:
        for c in children:
            child_process._kill(c)
            child_process._discard(c)
    return sum(after) - sum(before), (host_after - host_before) / elapsed if elapsed else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spares", type=int, default=4)
    parser.add_argument("--settle-s", type=float, default=25.0)
    parser.add_argument("--window-s", type=float, default=15.0)
    args = parser.parse_args()
    host_before, start = host_busy_s(), time.monotonic()
    time.sleep(args.window_s)
    print(f"no spares: host {(host_busy_s() - host_before) / (time.monotonic() - start):.2f} CPU s/s "
          f"on {os.cpu_count()} cores")  # fmt: skip
    for early in (True, False):
        spare_s, host_rate = measure(early, args.spares, args.settle_s, args.window_s)
        print(f"{args.spares} idle ncu spares, CUDA context made early: {early}: spares "
              f"{spare_s / args.window_s:.2f} CPU s/s; host {host_rate:.2f} CPU s/s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
