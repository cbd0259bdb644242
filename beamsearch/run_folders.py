"""Where a run writes: ``runs/<problem>/<UTC time>/`` under the working folder, a new folder every run.

Runs are outputs, so they go to an untracked folder (``runs/`` is in .gitignore); the tracked
``artifacts/<problem>/`` folders hold inputs and results published on purpose (``beamsearch.publish``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

RUNS_DIR = Path("runs")
STATE_FILE = "state.json"  # the resume point (beamsearch.trace writes it)
STAMP = "%Y%m%dT%H%M%SZ"


class NoRunFound(LookupError):
    pass


def new_run_dir(problem: str, runs: Path = RUNS_DIR, now: datetime | None = None) -> Path:
    """A folder of its own for a new run of ``problem``, created here so two runs never share one.

    Named by the UTC time so names sort in start order; a second run in the same second gets ``-2``.
    """
    stamp = (now or datetime.now(UTC)).strftime(STAMP)
    parent = (runs / problem).expanduser().resolve()
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        folder = parent / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise FileExistsError(f"{parent}: no free folder name for a run started at {stamp}")


def latest_run_dir(problem: str, runs: Path = RUNS_DIR) -> Path:
    """The newest folder under ``runs/<problem>/`` that holds a resumable run (a state.json)."""
    parent = (runs / problem).expanduser().resolve()
    found = sorted((p for p in parent.glob("*") if (p / STATE_FILE).is_file()), key=_start_order)
    if not found:
        raise NoRunFound(f"no run of {problem} to resume under {parent} (no folder with {STATE_FILE}); "
                         "give the run's folder with --out")  # fmt: skip
    return found[-1]


def _start_order(folder: Path) -> tuple[str, int]:
    """``20261125T064200Z-10`` after ``...-2`` after ``20261125T064200Z``."""
    stamp, _, n = folder.name.partition("-")
    return stamp, int(n) if n.isdigit() else 1
