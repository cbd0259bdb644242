"""``python -m beamsearch.suite``: many problems, each a search, over every GPU of the machine or a Ray cluster.

    python -m beamsearch.suite --problems 43,36,04 --out runs/suite/a -- --budget-minutes 3
    python -m beamsearch.suite --bundled --per-gpu 2 --out runs/suite/b
    python -m beamsearch.suite --problems-dir KernelBench/level1 --out /shared/suite --ray-address HEAD:6379

Each search is its own ``python -m beamsearch.run --problem P --out OUT/<problem> --quiet`` process (the
options after ``--`` go to every one), on one GPU (``--per-gpu N`` searches share one), or on the CPU
(``--parallel N`` at once) where there is no GPU; the next problem starts on a place as soon as it is free.
Run again with the same ``--out`` (or ``--resume`` for the latest suite under runs/suite/), the suite skips
the problems whose search finished and resumes those that did not. A problem that fails is a row with its
reason, and the others go on. At the end: one table (stdout, OUT/suite.md, OUT/suite.json) with each
problem's best time, its ratio to every baseline, % of the floor, and the geometric means. docs/suite.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import sys
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from beamsearch.cli_common import EXIT_FAILED, EXIT_PASSED, fail, one_line
from beamsearch.records.problems import PROBLEM_FILE, ProblemNotFound, bundled_problem_names, resolve_problem
from beamsearch.records.suite import SuiteRow, SuiteTable
from beamsearch.run_folders import RUNS_DIR, new_run_dir
from beamsearch.suite_schedule import Place, local_places, run_local, visible_gpus
from beamsearch.suite_search import RUN_COMMAND, Ended, SearchJob, run_search, search_argv
from beamsearch.suite_table import build_table, finished_row, markdown, read_summary
from beamsearch.trace import write_atomic

SUITE_RUNS = "suite"  # runs/suite/<UTC time>/ when no --out is given
PLAN_FILE = "suite-plan.json"  # the problems and options of the suite in a folder, for a plain rerun
TABLE_JSON, TABLE_MD = "suite.json", "suite.md"
LOGS = "suite-logs"  # each search's stdout and stderr, appended over its sessions
STATE_FILE = "state.json"  # a search's resume point (beamsearch.trace)
EXIT_INTERRUPTED = 130
# set by the suite on every search: a search's own options after -- must not
SUITE_SETS = ("--problem", "--out", "--resume", "--quiet")


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """The suite's options, and the options after ``--`` that every search gets."""
    argv = list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    own, search_options = argv[:cut], argv[cut + 1 :]
    p = argparse.ArgumentParser(prog="python -m beamsearch.suite", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    which = p.add_mutually_exclusive_group()
    which.add_argument("--problems", help="comma-separated problems, as run --problem takes them: bundled names, "
                       "unique prefixes (43) or paths")  # fmt: skip
    which.add_argument("--problems-dir", help="every KernelBench problem .py file, and every folder with a "
                       f"{PROBLEM_FILE}, in this folder")  # fmt: skip
    which.add_argument("--bundled", action="store_true", help="every bundled problem (artifacts/)")
    p.add_argument("--out", help=f"the suite's folder, one run folder per problem in it (default: a new "
                   f"runs/{SUITE_RUNS}/<UTC time>/); a folder that holds a suite is continued")  # fmt: skip
    p.add_argument("--resume", action="store_true", help=f"continue the suite in --out, else the latest under "
                   f"runs/{SUITE_RUNS}/, with its problems and options unless given")  # fmt: skip
    p.add_argument("--per-gpu", type=_positive, default=1, help="searches sharing one GPU (default 1)")
    p.add_argument(
        "--parallel", type=_positive, default=1, help="searches at once on a machine with no GPU (default 1)"
    )
    p.add_argument("--gpus", help="comma-separated GPU ids to use (default: every visible GPU)")
    p.add_argument(
        "--search-timeout-minutes",
        type=float,
        default=None,
        help="stop a search after this many minutes: a timed_out row, resumable (default: no limit)",
    )
    p.add_argument("--ray-address", default=None, help="run each search as a Ray task on this cluster "
                   "(default: RAY_ADDRESS, if set; else this machine's GPUs)")  # fmt: skip
    p.add_argument("--search-command", default=None, help="the command that runs one search, given the run's "
                   "options (default: python -m beamsearch.run); a wrapper, or a test's fake")  # fmt: skip
    args = p.parse_args(own)
    clash = [o for o in search_options if o.split("=")[0] in SUITE_SETS]
    if clash:
        p.error(f"{', '.join(clash)} after --: the suite sets them for every search")
    return args, search_options


def main(argv: Sequence[str] | None = None) -> int:
    args, options = parse_args(sys.argv[1:] if argv is None else argv)
    out = _suite_folder(args)
    specs, options = _planned(args, options, out)
    if not specs:
        fail("no problems: give --problems, --problems-dir or --bundled (or --out of a suite to continue)")
    write_atomic(out / PLAN_FILE, json.dumps({"problems": specs, "search_options": options}, indent=1))
    command = shlex.split(args.search_command) if args.search_command else list(RUN_COMMAND)
    timeout_s = args.search_timeout_minutes * 60 if args.search_timeout_minutes else None
    suite = Suite(out, options, timeout_s)
    jobs = suite.plan(specs)
    address = args.ray_address or os.environ.get("RAY_ADDRESS")
    _say(f"suite folder: {out}; {len(jobs)} of {len(specs)} problems to search")
    with _sigterm_as_interrupt():
        try:
            if not jobs:
                left = []
            elif address:
                left = suite.run_on_ray(jobs, command, args.per_gpu, address)
            else:
                gpus = [g for g in args.gpus.split(",") if g] if args.gpus else visible_gpus()
                left = suite.run_here(jobs, command, local_places(gpus, args.per_gpu, args.parallel))
            interrupted = False
        except KeyboardInterrupt:
            left, interrupted = [j for j in jobs if j.name not in suite.rows], True
    table = suite.finish(left, interrupted)
    print(markdown(table), end="", flush=True)
    _say(f"table: {out / TABLE_MD}, {out / TABLE_JSON}")
    if interrupted:
        _say(f"interrupted: run the same command again (or --resume --out {out}) to go on")
        return EXIT_INTERRUPTED
    return EXIT_PASSED if all(r.status == "ok" for r in table.rows) else EXIT_FAILED


class Suite:
    """The suite's rows as its searches end, written to OUT/suite.json and suite.md after each one."""

    def __init__(self, out: Path, options: list[str], timeout_s: float | None) -> None:
        self.out, self.options, self.timeout_s = out, options, timeout_s
        self.order: list[str] = []
        self.rows: dict[str, SuiteRow] = {}
        self.places: list[str] = []
        self.started = time.time()
        self.lock = threading.Lock()

    def plan(self, specs: Sequence[str]) -> list[SearchJob]:
        """A job for each problem still to search; a row now for one not found or finished earlier."""
        jobs, seen = [], {}
        for spec in specs:
            try:
                ref = resolve_problem(spec)
            except ProblemNotFound as e:
                self.order.append(spec)
                self._add(SuiteRow(problem=spec, status="failed", reason=one_line(str(e))), spec)
                continue
            if ref.problem_path in seen.values():
                continue  # the same problem listed twice
            name = _free_name(ref.name, seen)
            seen[name] = ref.problem_path
            folder = self.out / name
            bundled = not Path(spec).expanduser().exists()  # by name: the same on every node of a cluster
            job = SearchJob(name=name, problem=ref.name if bundled else ref.problem_path, out=folder,
                            resume=(folder / STATE_FILE).is_file())  # fmt: skip
            self.order.append(name)
            summary = read_summary(folder)
            if summary is not None:
                self._add(finished_row(name, folder, summary, earlier=True), name)
            else:
                jobs.append(job)
        return jobs

    def run_here(self, jobs: list[SearchJob], command: list[str], places: list[Place]) -> list[SearchJob]:
        self.places = [p.label for p in places]

        def launch(job: SearchJob, place: Place, stop: threading.Event) -> Ended:
            _say(f"{job.name}: {'resumed' if job.resume else 'started'} on {place.label}")
            return run_search(search_argv(command, job, self.options), os.environ | dict(place.env),
                              self.log_stem(job), self.timeout_s, stop)  # fmt: skip

        return run_local(jobs, places, launch, self.ended)

    def run_on_ray(
        self, jobs: list[SearchJob], command: list[str], per_gpu: int, address: str
    ) -> list[SearchJob]:
        import ray

        from beamsearch.suite_ray import run_on_ray

        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
        try:
            gpus = ray.cluster_resources().get("GPU", 0)
            if not gpus:
                fail(f"the Ray cluster at {address} has no GPU: a suite there needs GPU nodes")
            self.places = [f"ray {address}: {gpus:g} GPUs x {per_gpu}"]
            _say(
                f"submitted {len(jobs)} searches to the Ray cluster at {address} ({gpus:g} GPUs, {per_gpu} a GPU)"
            )
            return run_on_ray(jobs, lambda job: search_argv(command, job, self.options), self.log_stem, per_gpu,
                              self.timeout_s, self.ended)  # fmt: skip
        finally:
            ray.shutdown()

    def log_stem(self, job: SearchJob) -> Path:
        return self.out / LOGS / job.name

    def ended(self, job: SearchJob, place: Place, ended: Ended) -> None:
        """A search's row once its process ended: from its summary where it wrote one, else its failure."""
        row = row_of(job, place, ended, self.timeout_s)
        self._add(row, job.name)
        said = f"{row.status}" + (f": {row.reason}" if row.reason else "")
        if row.speedup_vs_best_baseline is not None:
            said += f", {row.speedup_vs_best_baseline:.3f}x vs {row.best_baseline}"
        _say(f"{job.name}: {said} ({ended.seconds / 60:.1f} min on {place.label})")

    def finish(self, left: Sequence[SearchJob], interrupted: bool) -> SuiteTable:
        """The table, with the jobs that never ended as rows: stopped mid-way, or never started."""
        for job in left:
            if job.name not in self.rows:
                started = (job.out / STATE_FILE).is_file()
                self._add(SuiteRow(problem=job.name, folder=str(job.out), status="interrupted" if started else "not_run",
                                   reason="the suite was stopped; run it again to go on" if interrupted else ""),
                          job.name)  # fmt: skip
        return self._write()

    def table(self) -> SuiteTable:
        rows = [self.rows[name] for name in self.order if name in self.rows]
        return build_table(rows, suite_wall_s=time.time() - self.started, places=self.places,
                           search_args=self.options, started_at=datetime.fromtimestamp(self.started, UTC).isoformat())  # fmt: skip

    def _add(self, row: SuiteRow, name: str) -> None:
        with self.lock:
            self.rows[name] = row
            self._write()

    def _write(self) -> SuiteTable:
        table = self.table()
        write_atomic(self.out / TABLE_JSON, table.model_dump_json(indent=1))
        write_atomic(self.out / TABLE_MD, markdown(table))
        return table


def row_of(job: SearchJob, place: Place, ended: Ended, timeout_s: float | None) -> SuiteRow:
    """A search's row: its summary's numbers where it finished; else timed out, interrupted or failed, why."""
    common = {
        "exit_code": ended.exit_code,
        "place": place.label,
        "process_s": ended.seconds,
        "resumed": job.resume,
    }
    summary = read_summary(job.out)
    if summary is not None:
        return finished_row(job.name, job.out, summary, **common)
    if ended.timed_out:
        minutes = (timeout_s or 0) / 60
        return SuiteRow(problem=job.name, folder=str(job.out), status="timed_out", **common,
                        reason=f"stopped after {minutes:g} min (--search-timeout-minutes); run the suite again to "
                        "resume it, with a longer limit")  # fmt: skip
    if ended.interrupted:
        return SuiteRow(problem=job.name, folder=str(job.out), status="interrupted", **common,
                        reason="the suite was stopped; run it again to go on")  # fmt: skip
    code = "did not start" if ended.exit_code is None else f"exit {ended.exit_code}"
    why = f"{code}: {ended.last_error}" if ended.last_error else code
    return SuiteRow(problem=job.name, folder=str(job.out), status="failed", reason=one_line(why), **common)


def problems_in(folder: Path) -> list[str]:
    """The problems in a folder: each KernelBench problem file (``*.py``; not ``__init__.py``, a private
    ``_x.py`` or an ``input_kernel.py``) and each subfolder with a problem.py, in KernelBench's order."""
    if not folder.is_dir():
        fail(f"--problems-dir {folder}: not a folder")
    found = [p for p in folder.iterdir()
             if (p.is_file() and p.suffix == ".py" and not p.name.startswith("_") and p.name != "input_kernel.py")
             or (p.is_dir() and (p / PROBLEM_FILE).is_file())]  # fmt: skip
    return [str(p) for p in sorted(found, key=_kernelbench_order)]


def _kernelbench_order(path: Path) -> tuple[int, str]:
    """``2_...`` before ``10_...``: KernelBench's problem numbers, then names."""
    number = re.match(r"\d+", path.name)
    return (int(number.group()) if number else sys.maxsize, path.name)


def _planned(args: argparse.Namespace, options: list[str], out: Path) -> tuple[list[str], list[str]]:
    """The problems and options: as given; with no problems given, those of the suite already in ``out``
    (its options too, unless some are given)."""
    if args.problems:
        return [p.strip() for p in args.problems.split(",") if p.strip()], options
    if args.problems_dir:
        return problems_in(Path(args.problems_dir).expanduser()), options
    if args.bundled:
        return bundled_problem_names(), options
    try:
        plan = json.loads((out / PLAN_FILE).read_text())
    except (OSError, ValueError):
        return [], options
    return list(plan.get("problems", [])), options or list(plan.get("search_options", []))


def _suite_folder(args: argparse.Namespace) -> Path:
    if args.out:
        out = Path(args.out).expanduser().resolve()
        out.mkdir(parents=True, exist_ok=True)
        return out
    if args.resume:
        return _latest_suite(RUNS_DIR / SUITE_RUNS)
    return new_run_dir(SUITE_RUNS)


def _latest_suite(parent: Path) -> Path:
    """The newest suite folder under runs/suite/ (names are UTC times, ``-2`` for a second in the same second)."""
    found = [p for p in parent.glob("*") if (p / PLAN_FILE).is_file()]
    if not found:
        fail(
            f"--resume: no suite under {parent.resolve()} (no folder with {PLAN_FILE}); give its folder with --out"
        )
    stamp = re.compile(r"(.*?)(?:-(\d+))?$")
    return max(found, key=lambda p: (stamp.match(p.name)[1], int(stamp.match(p.name)[2] or 1))).resolve()


def _free_name(name: str, taken: dict[str, str]) -> str:
    """The problem's folder name, ``-2``, ``-3`` added where another problem has it already."""
    n, free = 1, name
    while free in taken or free in (LOGS,):
        n += 1
        free = f"{name}-{n}"
    return free


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {text}")
    return value


def _say(line: str) -> None:
    """Progress for the person running the suite, on stderr: stdout holds the table."""
    print(f"suite: {line}", file=sys.stderr, flush=True)


class _sigterm_as_interrupt:
    """SIGTERM stops the suite as Ctrl-C does: every running search stopped with its trace kept."""

    def __enter__(self) -> None:
        self.before = signal.signal(signal.SIGTERM, self._raise)

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGTERM, self.before)

    @staticmethod
    def _raise(signum: int, frame: object) -> None:
        raise KeyboardInterrupt


if __name__ == "__main__":
    raise SystemExit(main())
