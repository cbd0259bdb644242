"""The dev set's evidence (issue 22): per problem, the search, the sweep and max-autotune side by side.

    python scripts/devset_eval.py --out DIR [--problems P ...] [--stages search sweep bench]
                                  [--search-args "..."] [--sweep-cmd "..."]
                                  [--cap-minutes search=10 sweep=10 bench=6] [--deadline-minutes M]
    python scripts/devset_eval.py --report DIR [DIR ...] [--json out.json]

For each problem (default: every bundled problem, the dev set's twelve), one after another in this
process tree, each as a child process with this checkout's code:

- search: ``python -m beamsearch.run --problem P --out DIR/P/search --quiet`` plus ``--search-args``
  (defaults otherwise); read from the run's summary.json, or from state.json if it was stopped at its cap,
  with max-autotune as the run timed it, and each candidate's in-round time from its events.jsonl;
- sweep: ``--sweep-cmd`` (default ``scripts/sweep.py``) with ``{python}``, ``{problem}`` and ``{out}``
  filled in; skipped with a note when a script it names is missing. Its result is the summary.json in its
  out folder (``scripts/sweep.py`` or ``beamsearch.run --sweep``; its fastest in-round time from its
  events.jsonl), else the last line of its stdout that is a JSON object, else the newest ``*.json`` at the
  top of its out folder; the best time is read from the first of SWEEP_MS_KEYS found and the candidate
  count from SWEEP_COUNT_KEYS;
- bench: ``python -m beamsearch.bench --problem P --baselines eager,compile,compile-max-autotune --json``:
  the input kernel and the three PyTorch baselines, verified and timed by one clock in one run.

Stages run one after another, never at once: on one GPU they would share its clock and its SMs, and
each stage's minutes would count the others' work. Minutes are each stage's wall clock, start-up
included. A stage past its cap is interrupted (SIGINT, so a search writes a consistent trace), then
killed after a grace period. ``--deadline-minutes`` bounds the whole invocation, grace included: a
stage is cut to the time left, or skipped with a note when less than a minute (and less than its cap)
is left, so one call fits a time-limited GPU session.

Every stage leaves DIR/P/<stage>.json (command, exit status, seconds, note) beside its own output, and
DIR/results.json holds the table's rows. ``--report`` rebuilds the table from one or more such DIRs
(several GPU calls, each covering some problems or stages; a later DIR wins for a stage both have).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's code, not an installed copy

from beamsearch.records.problems import ProblemNotFound, bundled_problem_names, resolve_problem  # noqa: E402
from beamsearch.records.schema import BenchReport, Record  # noqa: E402

STAGES = ("search", "sweep", "bench")
DEFAULT_CAP_MINUTES = {"search": 10.0, "sweep": 10.0, "bench": 6.0}
# The optimiser's brute-force mode: every point of the starting kernel's knob space, through the same
# verification and clock as the search, beam width 1 and no profiles (scripts/sweep.py).
DEFAULT_SWEEP_CMD = "{python} scripts/sweep.py --problem {problem} --out {out} --quiet"
BENCH_BASELINES = ("eager", "compile", "compile-max-autotune")
GRACE_S = 60.0  # after SIGINT: a search finishes its trace and shuts Ray down in this time
START_MARGIN_S = 60.0  # a stage cut short by the deadline needs at least this long to be worth starting
SWEEP_MS_KEYS = ("best_ms", "best_median_ms", "best_time_ms", "median_ms", "time_ms")
SWEEP_COUNT_KEYS = ("candidates", "n_candidates", "evaluated", "points_evaluated", "count")
RESULTS_FILE = "results.json"
SUMMARY_FILE = "summary.json"  # what beamsearch.run writes at the end of a search (or of its --sweep)
STATE_FILE = "state.json"  # its resume point, after every round
EVENTS_FILE = "events.jsonl"  # every candidate's outcome, in the order they came back
# The bar: a search counts as having found the sweep's best once a candidate is within 2 % of it.
WITHIN = 1.02


class StageRun(Record):
    """One stage of one problem: what ran, how it ended. Written as DIR/<problem>/<stage>.json."""

    problem: str
    stage: str
    command: list[str]
    returncode: int | None = None  # None: not started
    wall_s: float = 0.0
    stopped_at_cap: bool = False
    note: str = ""


class ProblemResult(Record):
    """One row of the table; None where a stage did not run or gave no number (its note says why)."""

    problem: str
    input_ms: float | None = None
    search_ms: float | None = None
    search_candidates: int | None = None
    search_minutes: float | None = None
    sweep_ms: float | None = None
    sweep_candidates: int | None = None
    sweep_minutes: float | None = None
    max_autotune_ms: float | None = None
    search_times_ms: list[
        float | None
    ] = []  # the search's candidates' in-round times, in the order they came back
    search_start_ms: float | None = (
        None  # its fastest starting kernel's (the input, the compiler seed) in-round time
    )
    sweep_round_ms: float | None = None  # the sweep's fastest in-round time (its input included)
    eager_ms: float | None = None
    compile_ms: float | None = None
    device: str = ""
    notes: list[str] = []

    @property
    def search_vs_input(self) -> float | None:
        return _ratio(self.input_ms, self.search_ms)

    @property
    def search_vs_sweep(self) -> float | None:
        return _ratio(self.sweep_ms, self.search_ms)

    @property
    def search_vs_max_autotune(self) -> float | None:
        return _ratio(self.max_autotune_ms, self.search_ms)

    @property
    def candidates_to_sweep(self) -> int | None:
        """How many of the search's candidates came back up to the first within WITHIN of the sweep's best
        (that one included); 0 when a starting kernel already was; None without a sweep, or when none got
        there. In-round times on both sides where the sweep's are at hand: one clock."""
        best = self.sweep_round_ms or self.sweep_ms
        if not best:
            return None
        if self.search_start_ms and self.search_start_ms <= WITHIN * best:
            return 0
        return next((i for i, ms in enumerate(self.search_times_ms, 1) if ms and ms <= WITHIN * best), None)


class EvalResults(Record):
    rows: list[ProblemResult]
    folders: list[str]


def _ratio(baseline_ms: float | None, ms: float | None) -> float | None:
    """baseline / ms: above 1 means ``ms`` is faster."""
    return baseline_ms / ms if baseline_ms and ms else None


# ---- running the stages ----


def stage_command(stage: str, problem: str, folder: Path, args: argparse.Namespace) -> tuple[list[str], str]:
    """The stage's command line, or an empty one and the reason it cannot run."""
    py = sys.executable
    if stage == "search":
        return [py, "-m", "beamsearch.run", "--problem", problem, "--out", str(folder / "search"), "--quiet",
                *shlex.split(args.search_args)], ""  # fmt: skip
    if stage == "bench":
        bench = [
            py,
            "-m",
            "beamsearch.bench",
            "--problem",
            problem,
            "--baselines",
            ",".join(BENCH_BASELINES),
            "--json",
        ]
        return bench, ""
    command = shlex.split(args.sweep_cmd.format(python=py, problem=problem, out=folder / "sweep"))
    missing = [t for t in command if t.endswith(".py") and not (ROOT / t).is_file() and not Path(t).is_file()]
    if missing:
        return [], f"sweep not run: {missing[0]} does not exist in this checkout (pass --sweep-cmd)"
    return command, ""


def run_stage(stage: str, problem: str, folder: Path, args: argparse.Namespace, timeout_s: float) -> StageRun:
    """Run one stage to completion or to its cap; its stdout and stderr go to <stage>.out / <stage>.err."""
    command, why_not = stage_command(stage, problem, folder, args)
    if not command:
        return StageRun(problem=problem, stage=stage, command=[], note=why_not)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    start = time.monotonic()
    with open(folder / f"{stage}.out", "w") as out, open(folder / f"{stage}.err", "w") as err:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=err, start_new_session=True)
        stopped = False
        try:
            returncode = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stopped = True
            returncode = _stop(proc)
    wall_s = time.monotonic() - start
    note = f"stopped at its cap of {timeout_s / 60:.1f} min" if stopped else ""
    if not stopped and returncode != 0:
        note = f"exit status {returncode}; see {stage}.err"
    return StageRun(problem=problem, stage=stage, command=command, returncode=returncode, wall_s=wall_s,
                    stopped_at_cap=stopped, note=note)  # fmt: skip


def _stop(proc: subprocess.Popen) -> int:
    """Interrupt the stage's process group, then kill it if it has not ended after the grace period."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        return proc.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait()
    except ProcessLookupError:
        return proc.wait()


def run_all(args: argparse.Namespace) -> None:
    out = Path(args.out).expanduser().resolve()
    deadline = time.monotonic() + args.deadline_minutes * 60 if args.deadline_minutes else None
    for problem in args.problems:
        folder = out / problem
        folder.mkdir(parents=True, exist_ok=True)
        for stage in args.stages:
            cap_s = args.cap_minutes[stage] * 60
            # The grace period after an interrupt must fit before the deadline too.
            left_s = deadline - time.monotonic() - GRACE_S if deadline is not None else cap_s
            if left_s < min(cap_s, START_MARGIN_S):
                record = StageRun(problem=problem, stage=stage, command=[],
                                  note=f"not started: {max(left_s, 0):.0f} s left before the deadline")  # fmt: skip
            else:
                cap_s = min(cap_s, left_s)
                print(f"{problem}: {stage} (cap {cap_s / 60:.1f} min) ...", flush=True)
                record = run_stage(stage, problem, folder, args, cap_s)
            (folder / f"{stage}.json").write_text(record.model_dump_json(indent=2))
            print(f"{problem}: {stage} {record.wall_s:.0f} s {record.note}".rstrip(), flush=True)


# ---- reading the results ----


def collect(folders: list[Path], problems: list[str] | None = None) -> list[ProblemResult]:
    """One row per problem found in ``folders``; for each stage the last folder that ran it wins."""
    stages: dict[str, dict[str, Path]] = {}
    for folder in folders:
        for record in _stage_files(folder):
            stages.setdefault(record.parent.name, {})[record.stem] = record.parent
    names = problems or sorted(stages)
    return [_row(name, stages.get(name, {})) for name in names]


def _stage_files(folder: Path) -> list[Path]:
    return sorted(p for stage in STAGES for p in folder.glob(f"*/{stage}.json"))


def _row(problem: str, where: dict[str, Path]) -> ProblemResult:
    values: dict = {"problem": problem}
    notes: list[str] = []
    for stage in STAGES:
        if stage not in where:
            notes.append(f"{stage}: no record")
            continue
        record = StageRun.model_validate_json((where[stage] / f"{stage}.json").read_text())
        if record.note:
            notes.append(f"{stage}: {record.note}")
        if record.returncode is None:
            continue
        reader = {"search": _read_search, "sweep": _read_sweep, "bench": _read_bench}[stage]
        found, note = reader(where[stage], record)
        values |= found
        if note:
            notes.append(f"{stage}: {note}")
    return ProblemResult(**values, notes=notes)


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _read_run(out: Path) -> tuple[dict, str] | None:
    """A beamsearch.run folder's best time, candidates, input time and GPU: from its summary.json, or from
    its state.json when it was stopped before writing one; None when neither holds a timed kernel."""
    summary = _read_json(out / SUMMARY_FILE)
    if summary is not None and summary.get("best_ms"):
        return {"ms": summary["best_ms"], "candidates": summary.get("candidates"), "input_ms": summary.get("input_ms"),
                "device": summary.get("gpu_name") or "", "max_autotune_ms": _max_autotune(summary)}, ""  # fmt: skip
    state = _read_json(out / STATE_FILE) or {}
    beam = [ms for e in state.get("beam", []) if isinstance(e, dict) and (ms := _ranked_ms(e))]
    if not beam:
        return None
    found = {"ms": min(beam), "candidates": sum(r.get("tasks", 0) for r in state.get("rounds", [])),
             "input_ms": _ranked_ms(state.get("input") or {}), "device": state.get("gpu_name") or "",
             "max_autotune_ms": _max_autotune(state)}  # fmt: skip
    return found, f"best of the beam after round {state.get('round')} (in-round time, no final re-timing)"


def _max_autotune(run: dict[str, Any]) -> float | None:
    """Max-autotune's time as a run (its summary or its state) measured it beside itself, if it did."""
    times = [b.get("median_ms") for b in run.get("baselines") or []
             if isinstance(b, dict) and b.get("target") == "compile-max-autotune" and b.get("status") == "ok"]  # fmt: skip
    return times[0] if times else None


def _ranked_ms(entry: dict[str, Any]) -> float | None:
    """A beam entry's time in state.json (``median_ms`` in files written before its rename)."""
    return entry.get("ranked_ms", entry.get("median_ms"))


def _read_search(folder: Path, record: StageRun) -> tuple[dict, str]:
    minutes = record.wall_s / 60
    run = _read_run(folder / "search")
    if run is None:
        return {"search_minutes": minutes}, f"no timed kernel in {SUMMARY_FILE} or {STATE_FILE}"
    found, note = run
    # max-autotune as the search timed it in its own run; a bench stage's, beside the input, wins
    candidates, starts = _event_times(folder / "search" / EVENTS_FILE)
    values = {"search_ms": found["ms"], "search_candidates": found["candidates"], "search_minutes": minutes,
              "input_ms": found["input_ms"], "device": found["device"], "max_autotune_ms": found.get("max_autotune_ms"),
              "search_times_ms": candidates, "search_start_ms": min(starts, default=None)}  # fmt: skip
    if not candidates and not starts:
        note = "; ".join(
            filter(None, [note, f"no {EVENTS_FILE}: no count of candidates to the sweep's best"])
        )
    return {k: v for k, v in values.items() if v not in (None, "", [])}, note


def _event_times(events: Path) -> tuple[list[float | None], list[float]]:
    """A run's candidates' in-round times (None: not timed) in the order they came back, and its starting
    kernels' (the input, the compiler seed), from its events file; empty lists without one."""
    candidates: list[float | None] = []
    starts: list[float] = []
    try:
        lines = events.read_text().splitlines()
    except OSError:
        return candidates, starts
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("event") != "candidate":
            continue
        ms = event.get("median_ms")
        ms = ms if isinstance(ms, (int, float)) and ms > 0 else None
        if str(event.get("id", "")).startswith("r"):  # a round's task: r3-t7
            candidates.append(ms)
        elif ms is not None:
            starts.append(ms)
    return candidates, starts


def _read_sweep(folder: Path, record: StageRun) -> tuple[dict, str]:
    """A beamsearch.run folder (``--sweep``), else the last JSON line of the sweep's stdout, else a JSON
    file at the top of its out folder; never a trace file deeper down."""
    minutes = record.wall_s / 60
    run = _read_run(folder / "sweep")
    if run is not None:
        found, note = run
        candidates, starts = _event_times(folder / "sweep" / EVENTS_FILE)
        timed = [ms for ms in [*candidates, *starts] if ms]
        return {
            "sweep_ms": found["ms"],
            "sweep_candidates": found["candidates"],
            "sweep_minutes": minutes,
            **({"sweep_round_ms": min(timed)} if timed else {}),
        }, note
    files = sorted((folder / "sweep").glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    found = [_last_json_line(folder / "sweep.out"), *(_read_json(p) for p in files)]
    result = next((d for d in found if d is not None and _first(d, SWEEP_MS_KEYS) is not None), None)
    if result is None:
        return {
            "sweep_minutes": minutes
        }, f"no result found (a JSON line on stdout with one of {SWEEP_MS_KEYS})"
    count = _first(result, SWEEP_COUNT_KEYS)
    return {
        "sweep_ms": _first(result, SWEEP_MS_KEYS),
        "sweep_candidates": count,
        "sweep_minutes": minutes,
    }, ""


def _last_json_line(path: Path) -> dict | None:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    return None


def _first(data: dict, keys: tuple[str, ...]):
    return next((data[k] for k in keys if isinstance(data.get(k), (int, float)) and data.get(k)), None)


def _read_bench(folder: Path, record: StageRun) -> tuple[dict, str]:
    try:
        report = BenchReport.model_validate_json((folder / "bench.out").read_text())
    except (OSError, ValueError):
        return {}, "no JSON report on stdout; see bench.err"
    names = {"eager": "eager_ms", "compile": "compile_ms", "compile-max-autotune": "max_autotune_ms"}
    found: dict = {}
    problems = []
    for row in report.rows:
        if row.target in names:
            found[names[row.target]] = row.ranked_ms
        elif row.verdict is not None:
            found["input_ms"] = (
                row.ranked_ms
            )  # the bench's clock, beside the baselines, wins over the search's
        if row.timing is not None and row.timing.timing is not None:
            found["device"] = row.timing.timing.device_name
        if row.ranked_ms is None:
            why = row.timing.reason if row.timing is not None else row.verdict.reason if row.verdict else ""
            problems.append(f"{row.label} has no time ({why or 'not timed'})")
        elif row.suspect:
            problems.append(f"{row.label} measured faster than the floor allows")
    return {k: v for k, v in found.items() if v is not None}, "; ".join(problems)


# ---- the table ----


def render(rows: list[ProblemResult]) -> str:
    """A markdown table of the rows, then their notes."""
    head = ["problem", "input ms", "search ms", "cands", "min", f"to {WITHIN - 1:.0%} of sweep", "sweep ms", "cands", "min",
            "max-autotune ms", "search vs input", "search vs sweep", "search vs max-autotune"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r.problem, _ms(r.input_ms), _ms(r.search_ms), _n(r.search_candidates), _min(r.search_minutes),
                 _n(r.candidates_to_sweep), _ms(r.sweep_ms), _n(r.sweep_candidates), _min(r.sweep_minutes), _ms(r.max_autotune_ms),
                 _x(r.search_vs_input), _x(r.search_vs_sweep), _x(r.search_vs_max_autotune)]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    notes = [f"- {r.problem}: {note}" for r in rows for note in r.notes]
    devices = sorted({r.device for r in rows if r.device})
    lines += [
        "",
        f"device: {', '.join(devices) or 'unknown'}; ratios: baseline ms / search ms (> 1: the search is faster); "
        f"to {WITHIN - 1:.0%} of sweep: the search's candidates up to its first within {WITHIN - 1:.0%} of the sweep's "
        "best (in-round times; 0: a starting kernel was)",
    ]
    return "\n".join(lines + ([""] + notes if notes else []))


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def _n(v: int | None) -> str:
    return "-" if v is None else str(v)


def _min(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


# ---- command line ----


def _caps(text: list[str]) -> dict[str, float]:
    caps = dict(DEFAULT_CAP_MINUTES)
    for item in text:
        stage, _, minutes = item.partition("=")
        if stage not in STAGES or not minutes:
            raise argparse.ArgumentTypeError(
                f"--cap-minutes: expected STAGE=MINUTES with STAGE in {STAGES}, got {item!r}"
            )
        try:
            caps[stage] = float(minutes)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"--cap-minutes {item!r}: {e}") from e
    return caps


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python scripts/devset_eval.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--out", help="folder for every stage's output (e.g. $OUT/devset)")
    p.add_argument(
        "--report", nargs="+", metavar="DIR", help="only rebuild the table from earlier --out folders"
    )
    p.add_argument(
        "--problems", nargs="+", help="bundled names or unique prefixes (default: every bundled problem)"
    )
    p.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    p.add_argument("--search-args", default="", help="extra options for beamsearch.run, one string")
    p.add_argument("--sweep-cmd", default=DEFAULT_SWEEP_CMD, help="the sweep's command line, with {python}, "
                   "{problem} and {out} filled in (default: %(default)s)")  # fmt: skip
    p.add_argument("--cap-minutes", nargs="+", default=[], metavar="STAGE=MIN",
                   help=f"per-stage wall-clock caps (default: {DEFAULT_CAP_MINUTES})")  # fmt: skip
    p.add_argument("--deadline-minutes", type=float, help="wall-clock limit of this whole invocation")
    p.add_argument("--json", help="write the rows here too (default with --out: OUT/results.json)")
    args = p.parse_args(argv)
    if bool(args.out) == bool(args.report):
        p.error("give --out (run the stages) or --report DIR ... (rebuild the table), not both")
    try:
        args.cap_minutes = _caps(args.cap_minutes)
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    try:
        args.problems = [resolve_problem(n).name for n in args.problems] if args.problems else None
    except ProblemNotFound as e:
        p.error(str(e))
    try:
        args.sweep_cmd.format(python="", problem="", out="")
    except (KeyError, IndexError, ValueError) as e:
        p.error(f"--sweep-cmd: only {{python}}, {{problem}} and {{out}} can be filled in ({e!r})")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report:
        folders = [Path(d).expanduser().resolve() for d in args.report]
        missing = [str(d) for d in folders if not d.is_dir()]
        if missing:
            print(f"error: not a folder: {', '.join(missing)}", file=sys.stderr)
            return 2
    else:
        args.problems = args.problems or bundled_problem_names()
        run_all(args)
        folders = [Path(args.out).expanduser().resolve()]
    rows = collect(folders, args.problems)
    print(render(rows))
    results = EvalResults(rows=rows, folders=[str(f) for f in folders]).model_dump_json(indent=2)
    json_path = Path(args.json) if args.json else (folders[0] / RESULTS_FILE if args.out else None)
    if json_path is not None:
        json_path.write_text(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
