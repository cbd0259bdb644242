"""What sampling a timed repetition's outputs costs inside the measurement lock, per repetition, and
whether the judge redraws the same positions (``workers.harness.timed_outputs.SampledOutputs``).

    python scripts/sample_cost.py [--device cuda] [--gb 3.76] [--dtype bf16] [--reps 200] [--json out.json]

An output of ``--gb`` gigabytes (36_RMSNorm's at full size by default) is offered to a sampler after
each of ``--reps`` repetitions, the device synchronised around each offer as the timing loop does; the
host time of one offer (a seed from the OS, one randint, one gather) is reported as median and 90th
percentile in microseconds, with the one stack at the end. Then the positions are redrawn from each
repetition's seed with a fresh generator, as the judge does, and the sampled values compared with the
output's values there: every repetition must match.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from workers.harness import timed_outputs  # noqa: E402
from workers.harness.timed_outputs import SampledOutputs, sample_positions  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--gb", type=float, default=3.76, help="the output's size in GB (1e9 bytes)")
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    device, dtype = torch.device(args.device), DTYPES[args.dtype]
    numel = int(args.gb * 1e9) // torch.empty((), dtype=dtype).element_size()
    out = torch.randn(numel, dtype=dtype, device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sampler = SampledOutputs(lambda: 0)
    offers_us = []
    for _ in range(args.reps):
        sync()
        start = time.perf_counter()
        sampler.offer(out)
        sync()
        offers_us.append((time.perf_counter() - start) * 1e6)
    start = time.perf_counter()
    sampled = sampler.sampled()
    sync()
    stack_us = (time.perf_counter() - start) * 1e6
    timed_outputs._generators.clear()  # the judge's generator is its own
    redrawn = sum(
        torch.equal(sampled.values[0][r.rep], torch.take(out, sample_positions(numel, r.seed, device)))
        for r in sampled.reps
    )
    report = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "output_gb": args.gb,
        "dtype": args.dtype,
        "reps": args.reps,
        "offer_median_us": statistics.median(offers_us),
        "offer_p90_us": statistics.quantiles(offers_us, n=10)[-1],
        "stack_us": stack_us,
        "samples_mb": sampled.values[0].numel() * sampled.values[0].element_size() / 1e6,
        "redrawn_equal": f"{redrawn} of {len(sampled.reps)}",
    }
    print(json.dumps(report, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0 if redrawn == len(sampled.reps) else 1


if __name__ == "__main__":
    sys.exit(main())
