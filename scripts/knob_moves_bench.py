"""Does the knob space's moves beyond the launch knobs pay? Searches with and without them, side by side.

    python scripts/knob_moves_bench.py --problems 36_RMSNorm 24_LogSoftmax 26_GELU_ --out DIR \\
        [--budget-minutes 5] [any other option of beamsearch.run, e.g. --workers 4]

For each problem, in one process, two offline searches from its input kernel (``python -m
beamsearch.run``), one after the other: ``with``, the knob space as the optimiser builds it (loads hints,
each loop's own stages, unrolling, and on a GPU ``maxnreg``: docs/optimiser.md, "Moves beyond the launch
knobs", patched into the optimiser as ``space_of(moves=True)``, as a GPU run builds its spaces), and
``without``, the launch knobs only (``moves=False``). Both arms get the same options, so the same time budget; their order alternates
from one problem to the next, so neither always runs first on a warm machine. Prints each arm's best
ms (re-timed at the end, side by side with the input kernel), its candidates and minutes, and the
ratio ``without / with`` (above 1: the moves paid), then one JSON line for the table. The runs stay in
``DIR/<problem>/{with,without}`` for their traces.

Meant for a GPU (the moves' values are hints to the GPU's compiler; the CPU's interpreter ignores them
all). On the CPU, ``--shapes small`` checks the plumbing only.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from beamsearch.records.problems import ProblemNotFound, resolve_problem  # noqa: E402
from beamsearch.records.state import Summary  # noqa: E402

ARMS = ("with", "without")


@contextmanager
def knob_moves(on: bool) -> Iterator[None]:
    """The optimiser's knob spaces with the moves beyond the launch knobs or without, inside the block only."""
    import beamsearch.optimiser as optimiser
    from workers.proposers.knob_space import space_of

    optimiser.space_of = functools.partial(space_of, moves=on)
    try:
        yield
    finally:
        optimiser.space_of = space_of


def run_arm(problem: str, arm: str, out: Path, rest: list[str]) -> dict:
    """One search of ``problem`` into ``out``; its best, candidates and minutes from its summary."""
    from beamsearch.run import main as run_main

    args = ["--problem", problem, "--out", str(out), *rest]
    with knob_moves(arm == "with"):
        code = run_main(args)
    if not (out / "summary.json").is_file():
        return {"arm": arm, "run": str(out), "exit_code": code, "best_ms": None}
    s = Summary.model_validate_json((out / "summary.json").read_text())
    return {"arm": arm, "run": str(out), "exit_code": code, "best_ms": s.best_ms, "input_ms": s.input_ms,
            "candidates": s.candidates, "minutes": s.wall_s / 60, "stop_reason": s.stop_reason}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problems", nargs="+", required=True, help="bundled problem names (or unique prefixes)")
    p.add_argument("--out", type=Path, required=True, help="a new folder: DIR/<problem>/{with,without}")
    p.add_argument("--budget-minutes", default="5", help="each arm's time budget (beamsearch.run's option)")
    args, rest = p.parse_known_args(argv)
    try:
        names = [resolve_problem(name).name for name in args.problems]
    except ProblemNotFound as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rest = ["--budget-minutes", args.budget_minutes, *rest]
    results = []
    for i, name in enumerate(names):
        arms = ARMS if i % 2 == 0 else ARMS[::-1]
        by_arm = {arm: run_arm(name, arm, args.out / name / arm, rest) for arm in arms}
        with_ms, without_ms = by_arm["with"]["best_ms"], by_arm["without"]["best_ms"]
        ratio = without_ms / with_ms if with_ms and without_ms else None
        for arm in ARMS:
            r = by_arm[arm]
            print(f"{name} {arm:>7}: best {r['best_ms']} ms, {r.get('candidates')} candidates "
                  f"in {r.get('minutes') or 0:.1f} min ({r['run']})")  # fmt: skip
        print(f"{name}: without / with = {ratio:.3f}" if ratio else f"{name}: no ratio (an arm found no kernel)")
        results.append({"problem": name, "with": by_arm["with"], "without": by_arm["without"], "without_over_with": ratio})
    print(json.dumps(results))
    return 0 if all(r["without_over_with"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
