"""Sample the host's CPU load while something else runs: is a slow multi-GPU search short of CPU?

    python scripts/host_load.py OUT.jsonl &   # one JSON line per second until killed
    python scripts/host_load.py --summary OUT.jsonl

Each line: seconds since start, the share of all cores busy over the last interval (from /proc/stat),
runnable and blocked processes. The summary prints the median and 90th percentile busy share, and the
share of seconds above 90 % busy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies over all cores since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def proc_counts() -> dict[str, int]:
    counts = {}
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(("procs_running", "procs_blocked")):
            name, value = line.split()
            counts[name] = int(value)
    return counts


def sample(out: Path, interval_s: float) -> None:
    start, (busy0, total0) = time.monotonic(), cpu_times()
    with out.open("w") as f:
        while True:
            time.sleep(interval_s)
            busy, total = cpu_times()
            row = {"t": round(time.monotonic() - start, 1), "busy_pct": round(100 * (busy - busy0) / max(1, total - total0), 1),
                   "cores": os.cpu_count(), **proc_counts()}  # fmt: skip
            f.write(json.dumps(row) + "\n")
            f.flush()
            busy0, total0 = busy, total


def summary(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    busy = sorted(r["busy_pct"] for r in rows)
    if not busy:
        print(f"{path}: no samples")
        return
    p90 = busy[int(0.9 * (len(busy) - 1))]
    high = sum(b > 90 for b in busy) / len(busy)
    running = statistics.median(r.get("procs_running", 0) for r in rows)
    print(f"{path}: {len(rows)} s sampled on {rows[0]['cores']} cores; CPU busy median {statistics.median(busy):.0f} %, "
          f"p90 {p90:.0f} %, max {busy[-1]:.0f} %; {100 * high:.0f} % of seconds above 90 %; "
          f"runnable processes median {running:.0f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--summary", action="store_true", help="summarise a finished sample file")
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    if args.summary:
        summary(args.path)
    else:
        sample(args.path, args.interval)


if __name__ == "__main__":
    main()
