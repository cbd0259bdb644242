"""Where a verification's checks spend their time at a problem's full size, each step timed alone on one GPU.

    python scripts/check_cost.py --problem 26_GELU_ [--repeat 3]

Times, for one seed, the steps of ``workers.harness.verify_child``'s checks that do not run the kernel:
making the inputs, the reference one precision up, the snapshot of the inputs and its comparison (the
inputs-unchanged check), and the output's comparison with the reference (``compare``, with the
reference's own rounding to the output dtype standing in for a kernel's output). Each is the median of
``--repeat`` runs, synchronised. A step far above the problem's memory traffic at the GPU's bandwidth
is where a faster check would pay.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from beamsearch.records.problems import resolve_problem  # noqa: E402
from beamsearch.records.schema import DEFAULT_TOLERANCES, RunSpec  # noqa: E402
from workers.harness.compare import compare  # noqa: E402
from workers.harness.problem_instance import instantiate, load_problem_module, reference_output  # noqa: E402
from workers.harness.verify_child import Checks, _check_unchanged, _snapshot  # noqa: E402


def timed(step: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The median seconds of ``repeat`` synchronised runs of ``step``, and its last result."""
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    times, out = [], None
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        out = step()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", required=True)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", default="cuda", help="cpu with --shapes small: the plumbing, on no GPU")
    parser.add_argument("--shapes", default="full", choices=["full", "small"])
    args = parser.parse_args(argv)
    spec = RunSpec(problem_path=resolve_problem(args.problem).problem_path, shapes=args.shapes, device=args.device,
                   dtype=args.dtype)  # fmt: skip
    module = load_problem_module(spec)
    rows: list[tuple[str, float]] = []
    s, instance = timed(lambda: instantiate(module, spec, 1), args.repeat)
    rows.append(("inputs", s))
    s, reference = timed(lambda: reference_output(instance, spec), args.repeat)
    rows.append(("reference", s))
    values = {}
    s, snapshot = timed(lambda: _snapshot(instance.inputs, values), args.repeat)
    rows.append(("snapshot of the inputs", s))
    s, _ = timed(lambda: _check_unchanged(snapshot, Checks(), "probe"), args.repeat)
    rows.append(("inputs unchanged", s))
    refs = reference if isinstance(reference, (list, tuple)) else [reference]
    outs = [r.to(instance.inputs[0].dtype) if r.is_floating_point() else r.clone() for r in refs]
    tolerance = DEFAULT_TOLERANCES[args.dtype]
    s, _ = timed(lambda: [compare(o, r, tolerance) for o, r in zip(outs, refs, strict=True)], args.repeat)
    rows.append(("compare", s))
    in_bytes = sum(t.numel() * t.element_size() for t in instance.inputs if isinstance(t, torch.Tensor))
    out_bytes = sum(o.numel() * o.element_size() for o in outs)
    where = torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device
    print(f"{args.problem} on {where}: inputs {in_bytes / 1e9:.2f} GB, output {out_bytes / 1e9:.2f} GB")
    for name, seconds in rows:
        print(f"  {name:24s} {seconds * 1e3:9.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
