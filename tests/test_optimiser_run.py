"""The offline optimiser through the real command line on the CPU (Ray, child processes, Triton's
interpreter): a bundled problem searched, a run stopped by its budget, and scripts/sweep.py over a
space of a handful of points. Each is a whole run, so they are few and each checks a lot."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from beamsearch.records.state import BeamState
from tests.conftest import DATA
from tests.test_search import PROBLEM, ROOT, START, _env, _events, check_trace, run_cli

pytestmark = pytest.mark.slow  # full searches with the offline optimiser: CI runs these (pytest -m slow)


def test_a_bundled_problem_searched_by_the_optimiser_ends_no_slower_than_its_input(tmp_path) -> None:
    out = tmp_path / "maxpool"
    done = run_cli("--problem", "43", "--out", str(out), "--rounds", "2", "--workers", "2", "--candidates-per-round", "4",
                   "--quiet", timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary, candidates = check_trace(out, rounds=2)
    assert summary.best_ms <= summary.input_ms and summary.stop_reason == "2 rounds done"
    planned = [r for r in candidates.values() if r.task_id != "input"]
    assert len(planned) == 8 and all(r.kernel.origin == "tuner" for r in planned)
    assert len({r.kernel.hash for r in planned} | {candidates["input"].kernel.hash}) == 9, (
        "a kernel was tried twice"
    )
    state = BeamState.model_validate_json((out / "state.json").read_text())
    (search,) = state.optimiser.searches.values()  # one space: the input's, its children searched through it
    assert search.root_id == "input"
    told = search.searcher.observations
    assert len(told) >= 8 and sum(o.time_ms is not None for o in told) >= sum(
        r.status == "ok" for r in planned
    )


def test_the_candidate_budget_cuts_the_last_round_and_stops_the_run(tmp_path) -> None:
    out, temp = tmp_path / "budget", tmp_path / "temp"
    temp.mkdir()
    done = run_cli("--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--rounds", "5", "--workers", "2",
                   "--candidates-per-round", "4", "--budget-candidates", "6", "--quiet", timeout=600,
                   env={"TMPDIR": str(temp)})  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    # Workers and their children made folders there (scratch, one per child process): none outlives the run.
    assert not list(temp.iterdir()), f"left behind: {[p.name for p in temp.iterdir()]}"
    summary, _ = check_trace(out, rounds=2)
    assert [r.tasks for r in summary.rounds] == [4, 2] and summary.candidates == 6
    assert summary.stop_reason == "the budget of 6 candidates is spent"
    stop = next(e for e in _events(done.stdout.splitlines()) if e["event"] == "stop")
    assert stop["after_round"] == 2 and "6 candidates" in stop["reason"]
    assert "Stopped: the budget of 6 candidates is spent." in (out / "README.md").read_text()


def test_the_sweep_tries_every_point_of_a_tiny_space_and_compares_with_a_search(tmp_path) -> None:
    """The kernel's only knob is num_warps: the sweep runs every other value once, then stops with the
    space exhausted, and prints its best beside a search's."""
    search = tmp_path / "search"
    kernel = str(DATA / "search" / "warps_only_kernel.py")
    done = run_cli("--problem", PROBLEM, "--kernel", kernel, "--out", str(search), "--rounds", "1", "--workers", "2",
                   "--candidates-per-round", "2", "--quiet", timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "sweep"
    swept = subprocess.run([sys.executable, "scripts/sweep.py", "--problem", PROBLEM, "--kernel", kernel, "--out", str(out),
                            "--workers", "2", "--quiet", "--against", str(search)], capture_output=True, text=True,
                           timeout=600, cwd=ROOT, env=_env())  # fmt: skip
    assert swept.returncode == 0, swept.stderr[-3000:]
    summary, candidates = check_trace(
        out, rounds=len(json.loads((out / "summary.json").read_text())["rounds"])
    )
    state = BeamState.model_validate_json((out / "state.json").read_text())
    (sweep,) = state.optimiser.searches.values()
    (dim,) = sweep.space.dims
    assert dim.name.endswith("num_warps") and dim.start == 4
    warps = sorted(
        int(r.kernel.source.split("num_warps=")[1].split(")")[0])
        for r in candidates.values()
        if r.task_id != "input"
    )
    assert warps == [v for v in dim.values if v != 4], "every point but the input's, once"
    assert summary.stop_reason == "every knob space is exhausted: no new candidate to try"
    result = json.loads(swept.stdout.strip().splitlines()[-1])
    assert result["candidates"] == len(warps) == result["space_points"] - 1
    assert result["best_point_ms"] == min(
        o.time_ms for o in sweep.searcher.observations if o.time_ms is not None
    )
    assert result["search_candidates"] == 2 and result["candidate_share"] == 2 / len(warps)
    assert f"sweep of scale_rows_problem: {len(warps) + 1} points, {len(warps)} candidates in" in swept.stdout
    assert "of the sweep's" in swept.stdout


def test_a_replays_kernels_in_the_beam_are_tuned_beside_its_proposals(tmp_path) -> None:
    """A portfolio round: with a replay, a kernel it proposed that the beam kept gets knob variants in
    the next round (ids r2-u*), from that kernel's own space, for the places the replay's tasks leave."""
    trace = tmp_path / "recorded"
    warps_only = (DATA / "search" / "warps_only_kernel.py").read_text()
    (trace / "round_1").mkdir(parents=True)
    (trace / "round_1" / "kernel.py").write_text(warps_only)
    for name, warps in (("a", 2), ("b", 8)):  # round 2 recorded two kernels: one for each of its two tasks
        (trace / "round_2" / "candidates" / name).mkdir(parents=True)
        (trace / "round_2" / "candidates" / name / "kernel.py").write_text(
            warps_only.replace("num_warps=4", f"num_warps={warps}")
        )
    out = tmp_path / "run"
    done = run_cli("--problem", PROBLEM, "--kernel", str(START), "--replay", str(trace), "--out", str(out), "--rounds", "3",
                   "--workers", "2", "--beam-width", "2", "--directions", "1", "--quiet", timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary, candidates = check_trace(out, rounds=3)
    replayed = candidates["r1-t0"]
    assert replayed.status == "ok" and replayed.kernel.origin == "replay"
    assert not [i for i in candidates if i.startswith("r1-u")]  # round 1's beam held only the input
    model = [r for i, r in candidates.items() if i.startswith("r2-t")]
    assert len(model) == 2 and {r.kernel.note.split("/candidates/")[-1] for r in model} == {"a/kernel.py", "b/kernel.py"}
    # Rounds overlap: round 2 is planned when round 1's first result is back, so whether it tunes r1-t0 depends on
    # which came first; round 3 is planned once round 2 is out, with round 1 back. Two workers: an offline round's
    # eight places, two of them the replay's, the rest variants.
    tuned = {n: [r for i, r in candidates.items() if i.startswith(f"r{n}-u")] for n in (2, 3)}
    assert tuned[3] and all(len(t) <= 6 for t in tuned.values()), sorted(candidates)
    replays = {r.kernel.hash for r in candidates.values() if r.kernel is not None and r.kernel.origin == "replay"}
    variants = tuned[2] + tuned[3]
    assert all(r.kernel.origin == "tuner" and r.kernel.parent_hash in replays for r in variants)
    assert all("num_warps" in r.kernel.note for r in variants)
