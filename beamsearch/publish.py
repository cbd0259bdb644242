"""``python -m beamsearch.publish RUN_DIR``: a finished run's results into ``artifacts/<problem>/``.

A run writes everything to its own untracked folder (``runs/<problem>/<UTC time>/``); publishing copies
what a reader needs, in the published layout, next to the problem:

    artifacts/<problem>/problem.py, input_kernel.py          the inputs: kept, or added when missing
    artifacts/<problem>/optimization_trace.tar.xz            the trace, one archive (beamsearch.records.trace_archive):
        optimization_trace/input/                            the starting kernel, measured like a candidate
        optimization_trace/round_N/                          the round's best candidate: prompts, replies,
                                                             strategy, ncu metrics, kernel.py, round.json;
                                                             the overall best's round also its result.json
    artifacts/<problem>/optimized_kernel_beam_search.py, summary.json
    artifacts/<problem>/README.md, convergence.png           the report (beamsearch.report), and the
                                                             results table in artifacts/README.md

Every candidate's own folder (``round_N/candidates/``), the event log and the resume point (state.json,
each round's plan.json) stay in the run folder. The trace is one archive so that the repository holds a few files per published problem, not
a hundred; ``tar -xJf optimization_trace.tar.xz`` in the problem's folder unpacks the reference layout.
A destination that already holds published results is replaced only with ``--force``; its inputs and the
README's text outside the generated block are kept either way.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from beamsearch.cli_common import EXIT_FAILED, EXIT_PASSED, fail
from beamsearch.records.problems import ARTIFACTS_DIR, INPUT_KERNEL_FILE, PROBLEM_FILE
from beamsearch.records.state import Summary
from beamsearch.records.trace_archive import TRACE_ARCHIVE, pack_trace
from beamsearch.report import PLOT, README, write_report
from beamsearch.trace import BEST_KERNEL_FILE, PLAN_FILE, RESULT_FILE, SUMMARY_FILE, TRACE_DIR

INPUTS = (PROBLEM_FILE, INPUT_KERNEL_FILE, README)  # never removed from the destination
# what --force replaces (a trace folder too: an archive unpacked there by hand)
OUTPUTS = (TRACE_ARCHIVE, TRACE_DIR, SUMMARY_FILE, BEST_KERNEL_FILE, PLOT)
CANDIDATES = "candidates"


class PublishError(Exception):
    pass


def publish(run_dir: Path, dest: Path | None = None, *, force: bool = False) -> Path:
    """Copy the finished run in ``run_dir`` to ``dest`` (default: ``artifacts/<problem>/``) and write its
    report there. Returns the destination. Raises PublishError, before changing anything, on a run that
    did not finish or a destination holding published results without ``force``."""
    run_dir = Path(run_dir).expanduser().resolve()
    summary = _finished_run(run_dir)
    dest = (Path(dest).expanduser() if dest else ARTIFACTS_DIR / summary.problem).resolve()
    if dest == run_dir:  # replacing the outputs would delete the very files being published
        raise PublishError(
            f"{run_dir} is the run folder itself: copy it elsewhere first, then publish the copy"
        )
    present = [name for name in OUTPUTS if (dest / name).exists()]
    if present and not force:
        raise PublishError(f"{dest} already holds published results ({', '.join(present)}); --force replaces "
                           f"them ({', '.join(INPUTS)} are kept)")  # fmt: skip
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".publishing-") as tmp:
        staged = Path(tmp)
        _stage(run_dir, summary, staged)
        if (staged / TRACE_DIR).is_dir():
            pack_trace(staged)
        for name in present:
            path = dest / name
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        for path in staged.iterdir():
            if path.name in (PROBLEM_FILE, INPUT_KERNEL_FILE) and (dest / path.name).exists():
                continue  # the problem's own inputs win over the run's copies
            path.replace(dest / path.name)
    write_report(dest)
    return dest


def _finished_run(run_dir: Path) -> Summary:
    path = run_dir / SUMMARY_FILE
    if not path.is_file():
        raise PublishError(f"{run_dir}: no {SUMMARY_FILE}, so no finished run to publish (finish it with "
                           f"python -m beamsearch.run --resume --out {run_dir})")  # fmt: skip
    try:
        return Summary.model_validate_json(path.read_text())
    except (OSError, ValueError) as e:
        raise PublishError(f"{path}: unreadable: {str(e).splitlines()[0]}") from e


def _stage(run_dir: Path, summary: Summary, staged: Path) -> None:
    """The published files of ``run_dir`` under ``staged``: the trace without candidate folders."""
    trace = run_dir / TRACE_DIR
    for folder in sorted(p for p in trace.iterdir() if p.is_dir()) if trace.is_dir() else []:
        for file in folder.iterdir():
            # round_N/candidates/ is the only folder inside, and stays behind; so does a round's plan (a resume file)
            if file.is_file() and file.name != PLAN_FILE:
                (staged / TRACE_DIR / folder.name).mkdir(parents=True, exist_ok=True)
                shutil.copy2(file, staged / TRACE_DIR / folder.name / file.name)
    # The best's whole record (its change, its tries), for the report.
    best = trace / f"round_{summary.best_round}" / CANDIDATES / str(summary.best_id) / RESULT_FILE
    if summary.best_round and best.is_file():
        shutil.copy2(best, staged / TRACE_DIR / f"round_{summary.best_round}" / RESULT_FILE)
    for name in (SUMMARY_FILE, BEST_KERNEL_FILE):
        if (run_dir / name).is_file():
            shutil.copy2(run_dir / name, staged / name)
    problem = Path(summary.spec.problem_path)
    if problem.is_file():
        shutil.copy2(problem, staged / PROBLEM_FILE)
    if (trace / "input" / "kernel.py").is_file():
        shutil.copy2(trace / "input" / "kernel.py", staged / INPUT_KERNEL_FILE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m beamsearch.publish", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("run_dir", type=Path, help="a finished run's folder (runs/<problem>/<UTC time>/)")
    parser.add_argument("--to", type=Path, default=None, help="destination (default: artifacts/<problem>/)")
    parser.add_argument("--force", action="store_true", help="replace results already published there")
    args = parser.parse_args(argv)
    try:
        dest = publish(args.run_dir, args.to, force=args.force)
    except PublishError as e:  # refused before any change: a run not finished, results there without --force
        fail(str(e))
    except OSError as e:  # a full disk, a read-only destination: the run folder itself is never changed
        fail(f"could not publish {args.run_dir}: {e}; the run folder is intact: publish again with --force",
             code=EXIT_FAILED)  # fmt: skip
    print(dest / README)
    return EXIT_PASSED


if __name__ == "__main__":
    raise SystemExit(main())
