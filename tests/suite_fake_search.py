"""A stand-in for ``python -m beamsearch.run`` in the suite's tests: it takes the same options the suite
gives a search and does what its problem file says, in a line ``# FAKE {json}``:

    sleep        seconds before it ends (resume_sleep: on --resume)
    exit         its exit code (no summary.json unless 0)
    stderr       lines it writes to stderr before it ends
    summary      fields of the summary.json it writes (best_ms, baselines, floor, ...)

It records every call (its start and end, --resume, the options after the suite's, CUDA_VISIBLE_DEVICES,
whether RAY_ADDRESS was set) as a line of ``<out>/fake_calls.jsonl``, and its state.json as a search does.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path


def main() -> int:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as beamsearch.run does, whatever it inherited
    p = argparse.ArgumentParser()
    p.add_argument("--problem", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--resume", action="store_true")
    args, rest = p.parse_known_args()
    line = next(x for x in Path(args.problem).read_text().splitlines() if x.startswith("# FAKE "))
    plan = json.loads(line.removeprefix("# FAKE "))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "state.json").is_file() and not args.resume:
        print(f"error: {out} already holds a run (state.json)", file=sys.stderr)
        return 2
    call = {"start": time.time(), "resume": args.resume, "options": rest, "pid": os.getpid(),
            "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"), "ray_address": "RAY_ADDRESS" in os.environ}  # fmt: skip
    with open(out / "fake_calls.jsonl", "a") as f:
        f.write(json.dumps(call) + "\n")
    (out / "state.json").write_text("{}")
    try:
        time.sleep(plan.get("resume_sleep", 0.0) if args.resume else plan.get("sleep", 0.0))
    except KeyboardInterrupt:  # as a search does on Ctrl-C: its trace kept, exit 130
        print("interrupted", file=sys.stderr)
        return 130
    for text in plan.get("stderr", []):
        print(text, file=sys.stderr)
    code = plan.get("exit", 0)
    if code == 0:
        summary = {
            "problem": out.name,
            "best_id": "r1-t0",
            "best_ms": 1.0,
            "speedup_vs_input": 1.5,
            "wall_s": 60.0,
            "candidates": 4,
            "stop_reason": "rounds",
        }
        (out / "summary.json").write_text(json.dumps(summary | plan.get("summary", {})))
    with open(out / "fake_calls.jsonl", "a") as f:
        f.write(json.dumps({"end": time.time(), "pid": os.getpid()}) + "\n")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
