"""Options shared by the command-line tools, turning them into a RunSpec, and how every tool exits.

The conventions (one spelling and format per shared flag, one table of exit codes) are docs/cli.md's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TypeVar

from pydantic import ValidationError

from beamsearch.records.config import SearchConfig
from beamsearch.records.problems import ProblemNotFound, ProblemRef, resolve_problem
from beamsearch.records.schema import RunSpec, given_tolerance

# Every tool's exit codes (docs/cli.md): argparse's own 2 for bad usage, so scripts can tell a refused
# command (nothing ran) from a kernel that failed.
EXIT_PASSED = 0  # everything asked passed
EXIT_FAILED = 1  # a kernel failed verification or a timing, its time is suspect, or the work asked failed
EXIT_USAGE = 2  # bad usage or input (an unknown problem, a missing file), found before any work

T = TypeVar("T")


def add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--problem", required=True, help="bundled problem name (or unique prefix) or a path")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N, or auto (cuda if there is a GPU)")
    parser.add_argument(
        "--shapes", default="auto", choices=["auto", "full", "small"],
        help="problem size: auto = full on a GPU, small on the CPU (Triton's interpreter is slow)",
    )  # fmt: skip
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    for name in ("atol", "rtol"):  # as the search's own options say them
        parser.add_argument(f"--{name}", type=float, default=None, help=SearchConfig.model_fields[name].description)
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")


def resolve_run(args: argparse.Namespace) -> tuple[ProblemRef, RunSpec]:
    """The problem and the run spec; exits with a clear message on an unknown problem or missing GPU."""
    try:
        problem = resolve_problem(args.problem)
    except ProblemNotFound as e:
        fail(str(e))
    device = args.device
    if device == "auto" or device.startswith("cuda"):
        import torch

        has_gpu = torch.cuda.is_available()
        if device == "auto":
            device = "cuda" if has_gpu else "cpu"
        elif not has_gpu:
            fail(f"--device {device}: no CUDA GPU is visible here (use --device cpu for Triton's interpreter)")
    shapes = args.shapes if args.shapes != "auto" else ("full" if device.startswith("cuda") else "small")
    try:
        # a tool that builds its own namespace without the options (scripts/benchmark.py) gets the default
        tolerance = given_tolerance(args.dtype, getattr(args, "atol", None), getattr(args, "rtol", None))
    except ValidationError:
        fail(f"--atol and --rtol must be finite and not negative (got {args.atol}, {args.rtol})")
    return problem, RunSpec(problem_path=problem.problem_path, shapes=shapes, device=device, dtype=args.dtype,
                            tolerance=tolerance)  # fmt: skip


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code)


def finish(failures: list[str]) -> NoReturn:
    """Exit 0 when nothing failed; else each failure on its own line of stderr, then exit 1."""
    for failure in failures:
        print(f"error: {one_line(failure)}", file=sys.stderr)
    raise SystemExit(EXIT_FAILED if failures else EXIT_PASSED)


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line (a reason may span several), cut at ``limit`` characters: the JSON has it whole."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def comma_list(choices: Sequence[str] | None = None, item: Callable[[str], T] = str) -> Callable[[str], list[T]]:
    """An argparse ``type`` for a list flag: ``a,b`` is [a, b] and the empty string none, as in ``run``'s
    ``--baselines``; a name outside ``choices`` or an item ``item`` refuses is a usage error."""

    def parse(text: str) -> list[T]:
        names = [name.strip() for name in text.split(",") if name.strip()]
        unknown = [name for name in names if choices is not None and name not in choices]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(unknown)}: choose from {', '.join(choices or [])}, "
                                             "comma-separated")  # fmt: skip
        try:
            return [item(name) for name in names]
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None

    return parse


def require_files(paths: list[str], what: str) -> None:
    """Exits with the missing ones named before any work starts (a bench's baselines take minutes)."""
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        fail(f"no such {what}: {', '.join(missing)}")
