"""Where runs go: a new untracked runs/<problem>/<UTC time>/ each time; --resume alone finds the latest."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from datetime import UTC, datetime

import pytest

from beamsearch import publish
from beamsearch.records.state import Summary
from beamsearch.run_folders import NoRunFound, latest_run_dir, new_run_dir
from tests.conftest import DATA
from tests.test_search import _env

pytestmark = pytest.mark.slow  # full searches: CI runs these (pytest -m slow)

PROBLEM = DATA / "scale_rows_problem.py"
START = DATA / "search" / "input_kernel.py"


def test_every_run_gets_a_new_folder_and_resume_takes_the_latest(tmp_path) -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    first, second = new_run_dir("p", tmp_path, now), new_run_dir("p", tmp_path, now)
    assert first.name == "20260102T030405Z" and second.name == "20260102T030405Z-2"
    with pytest.raises(NoRunFound, match="no run of p to resume"):
        latest_run_dir("p", tmp_path)  # folders without a state.json are not runs yet
    for folder in (first, second, new_run_dir("p", tmp_path, now.replace(year=2025))):
        (folder / "state.json").write_text("{}")
    assert latest_run_dir("p", tmp_path) == second
    for _ in range(3, 11):
        (new_run_dir("p", tmp_path, now) / "state.json").write_text("{}")
    assert latest_run_dir("p", tmp_path).name == "20260102T030405Z-10"  # not "-9", which sorts later as text


def _run(cwd, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "beamsearch.run", "--problem", str(PROBLEM), "--workers", "1", "--quiet"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=600, cwd=cwd, env=_env())


def test_the_default_output_is_a_new_run_folder_and_resume_finds_it(tmp_path) -> None:
    """Run twice from one working folder with no --out: two folders under runs/; --resume alone continues
    the newer. Nothing is written next to the problem; publishing the run copies its rounds, not its
    candidates."""
    assert "no run of scale_rows_problem to resume" in _run(tmp_path, "--resume").stderr
    problem_files = sorted(p.name for p in DATA.iterdir())
    first = _run(tmp_path, "--kernel", str(START), "--rounds", "1", "--baselines", "")
    assert first.returncode == 0, first.stderr[-3000:]
    second = _run(tmp_path, "--kernel", str(START), "--rounds", "1", "--baselines", "")
    assert second.returncode == 0, second.stderr[-3000:]
    runs = sorted((tmp_path / "runs" / "scale_rows_problem").iterdir())
    assert len(runs) == 2 and all((r / "summary.json").is_file() for r in runs)
    assert f"run folder: {runs[1]}" in second.stderr
    assert "not one to publish" in second.stderr  # an interpreter run is no offer for artifacts/
    resumed = _run(tmp_path, "--resume", "--rounds", "2")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    rounds = [len(Summary.model_validate_json((r / "summary.json").read_text()).rounds) for r in runs]
    assert rounds == [1, 2]
    assert sorted(p.name for p in DATA.iterdir()) == problem_files
    assert publish.main([str(runs[1]), "--to", str(tmp_path / "published")]) == 0
    published = [
        p.relative_to(tmp_path / "published").as_posix() for p in (tmp_path / "published").rglob("*.*")
    ]
    with tarfile.open(tmp_path / "published" / "optimization_trace.tar.xz") as tar:
        published += tar.getnames()
    assert {"optimization_trace/round_2/round.json", "summary.json", "README.md", "problem.py"} <= set(
        published
    )
    assert not [p for p in published if "candidates" in p or p.endswith("plan.json")]
