"""The suite: every place kept busy, a failing problem a row with its reason, a killed suite resumed,
the table's geometric means, the Ray mode's GPU shares, and one real suite of two tiny CPU searches.

Searches here are ``tests/suite_fake_search.py`` (``--search-command``): each problem file says how its
fake search behaves, and the fake records when it ran, where, and with which options.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from beamsearch import suite
from beamsearch.records.suite import SuiteRow, SuiteTable
from beamsearch.suite_search import SearchJob, last_meaningful_line, search_argv
from beamsearch.suite_table import build_table, finished_row, geomean, markdown, summary_fields
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parent.parent
FAKE = Path(__file__).parent / "suite_fake_search.py"
FAKE_COMMAND = f"{sys.executable} {FAKE}"


def problem(folder: Path, name: str, **plan: object) -> Path:
    """A problem file whose fake search does what ``plan`` says (see tests/suite_fake_search.py)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(f'"""Fake problem {name}."""\n# FAKE {json.dumps(plan)}\n')
    return path


def calls(out: Path, name: str) -> list[dict]:
    """The fake search's records of ``name``: starts and ends, in order."""
    path = out / name / "fake_calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def span(out: Path, name: str) -> tuple[float, float]:
    found = calls(out, name)
    return next(c["start"] for c in found if "start" in c), next(c["end"] for c in found if "end" in c)


def table(out: Path) -> SuiteTable:
    return SuiteTable.model_validate_json((out / "suite.json").read_text())


def rows(out: Path) -> dict[str, SuiteRow]:
    return {r.problem: r for r in table(out).rows}


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # CPU places, and no torch child to count GPUs
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


def test_every_place_stays_busy_while_problems_remain(tmp_path, no_gpu, capsys) -> None:
    """Two places: while the long search runs on one, the short ones follow each other on the other,
    each starting when the one before it ends, not when the long one does."""
    problems = tmp_path / "problems"
    problem(problems, "1_long", sleep=6.0)
    for name in ("2_short", "3_short", "4_short"):
        problem(problems, name, sleep=0.5)
    out = tmp_path / "suite"
    code = suite.main(["--problems-dir", str(problems), "--out", str(out), "--parallel", "2",
                       "--search-command", FAKE_COMMAND, "--", "--rounds", "1"])  # fmt: skip
    assert code == 0
    long_start, long_end = span(out, "1_long")
    previous_end = None
    for name in ("2_short", "3_short", "4_short"):
        start, end = span(out, name)
        assert end < long_end, f"{name} waited for the long search"
        if previous_end is not None:
            assert previous_end <= start < previous_end + 3.0, f"{name} did not start when its place was free"
        previous_end = end
    assert span(out, "2_short")[0] - long_start < 3.0  # both places started at once
    assert {
        c["options"] == ["--rounds", "1"]
        for n in ("1_long", "2_short")
        for c in calls(out, n)
        if "start" in c
    } == {True}
    found = rows(out)
    assert [r.status for r in found.values()] == ["ok"] * 4
    assert {r.place for r in found.values()} == {"cpu 0", "cpu 1"}
    assert "| 1_long | ok |" in capsys.readouterr().out
    assert (out / "suite.md").read_text().startswith("| problem |")


def test_gpu_places_set_each_search_s_gpu(tmp_path, monkeypatch) -> None:
    """--per-gpu 2 on two GPUs: four places, each search with one GPU in CUDA_VISIBLE_DEVICES, two a GPU."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    problems = tmp_path / "problems"
    for i in range(4):
        problem(problems, f"{i}_p", sleep=2.0)
    out = tmp_path / "suite"
    code = suite.main(["--problems-dir", str(problems), "--out", str(out), "--gpus", "3,5", "--per-gpu", "2",
                       "--search-command", FAKE_COMMAND])  # fmt: skip
    assert code == 0
    seen = [next(c["cuda"] for c in calls(out, f"{i}_p") if "start" in c) for i in range(4)]
    assert sorted(seen) == ["3", "3", "5", "5"]
    assert {r.place for r in table(out).rows} == {"gpu 3 #0", "gpu 5 #0", "gpu 3 #1", "gpu 5 #1"}
    assert table(out).places == ["gpu 3 #0", "gpu 5 #0", "gpu 3 #1", "gpu 5 #1"]


@pytest.mark.slow
def test_a_failing_problem_is_a_row_with_its_reason_and_the_others_finish(tmp_path, no_gpu) -> None:
    problems = tmp_path / "problems"
    good = problem(problems, "good", sleep=0.1)
    crash = problem(problems, "crash", exit=1, stderr=["Traceback (most recent call last):",
                                                        '  File "x.py", line 1, in <module>',
                                                        "ValueError: the kernel blew up"])  # fmt: skip
    refused = problem(problems, "refused", exit=2, stderr=["error: problem refused has no input_kernel.py next "
                                                            "to it: give a starting kernel with --kernel",
                                                            "(raylet) some noise after it"])  # fmt: skip
    slow = problem(problems, "slow", sleep=60.0)
    listed = ",".join([str(crash), "no_such_problem_zz", str(refused), str(slow), str(good)])
    out = tmp_path / "suite"
    code = suite.main(["--problems", listed, "--out", str(out), "--parallel", "2", "--search-timeout-minutes",
                       "0.05", "--search-command", FAKE_COMMAND])  # fmt: skip
    assert code == 1
    found = rows(out)
    assert list(found) == ["crash", "no_such_problem_zz", "refused", "slow", "good"]  # in the order given
    assert found["good"].status == "ok" and found["good"].best_ms == 1.0
    assert found["crash"].status == "failed" and found["crash"].exit_code == 1
    assert found["crash"].reason == "exit 1: ValueError: the kernel blew up"
    assert found["refused"].reason.startswith("exit 2: problem refused has no input_kernel.py")
    assert found["no_such_problem_zz"].status == "failed" and "no problem 'no_such_problem_zz'" in found[
        "no_such_problem_zz"].reason  # fmt: skip
    assert found["slow"].status == "timed_out" and "--search-timeout-minutes" in found["slow"].reason
    assert found["slow"].process_s is not None and found["slow"].process_s < 30
    assert (out / "slow" / "state.json").is_file()  # stopped as Ctrl-C stops it: resumable
    assert "ValueError: the kernel blew up" in (out / "suite-logs" / "crash.stderr").read_text()
    md = (out / "suite.md").read_text()
    assert "exit 1: ValueError: the kernel blew up" in md and "timed_out" in md


def test_the_last_meaningful_line_of_stderr() -> None:
    assert last_meaningful_line("error: no problem 'x'\n") == "no problem 'x'"
    traceback = 'Traceback (most recent call last):\n  File "a", line 1\n    boom()\nRuntimeError: bad\n'
    assert last_meaningful_line(traceback + "(pid=12) WARNING something\n") == "RuntimeError: bad"
    assert last_meaningful_line("") == ""
    job = SearchJob(name="p", problem="43", out=Path("/o/p"), resume=True)
    assert search_argv(["run"], job, ["--rounds", "1"]) == ["run", "--problem", "43", "--out", "/o/p", "--quiet",
                                                            "--resume", "--rounds", "1"]  # fmt: skip


@pytest.mark.slow
def test_a_killed_suite_skips_finished_problems_and_resumes_unfinished_ones(tmp_path) -> None:
    """SIGTERM mid-way: the finished search stays finished, the running one is stopped with its trace kept;
    the same command again searches only the unfinished one, with --resume, and the table has both."""
    problems = tmp_path / "problems"
    problem(problems, "1_quick", sleep=0.2)
    problem(problems, "2_long", sleep=120.0, resume_sleep=0.2)
    problem(problems, "3_later", sleep=0.2)  # never started the first time: one place, behind 2_long
    out = tmp_path / "suite"
    command = [sys.executable, "-m", "beamsearch.suite", "--problems-dir", str(problems), "--out", str(out),
               "--search-command", FAKE_COMMAND]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"CUDA_VISIBLE_DEVICES": ""}
    first = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 60
    while not calls(out, "2_long") and time.time() < deadline:
        time.sleep(0.1)
    assert calls(out, "2_long"), "the second search never started"
    first.send_signal(signal.SIGTERM)
    stdout, stderr = first.communicate(timeout=60)
    assert first.returncode == 130, stderr
    assert "interrupted" in stderr
    before = rows(out)
    assert before["1_quick"].status == "ok"
    assert before["2_long"].status == "interrupted" and before["3_later"].status == "not_run"
    assert (out / "1_quick" / "summary.json").is_file() and not (out / "2_long" / "summary.json").exists()

    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert len([c for c in calls(out, "1_quick") if "start" in c]) == 1  # not run again
    long_starts = [c for c in calls(out, "2_long") if "start" in c]
    assert [c["resume"] for c in long_starts] == [False, True]
    after = rows(out)
    assert after["1_quick"].earlier and after["2_long"].resumed and after["3_later"].status == "ok"
    assert [r.status for r in after.values()] == ["ok", "ok", "ok"]


def _row(problem: str, vs_bar: float | None, baseline_pct: float | None, vs_input: float = 1.0,
         status: str = "ok") -> SuiteRow:  # fmt: skip
    return SuiteRow(problem=problem, status=status, speedup_vs_best_baseline=vs_bar,
                    best_baseline_pct_of_floor=baseline_pct, speedup_vs_input=vs_input, search_wall_s=60.0)  # fmt: skip


def test_the_table_s_geometric_means() -> None:
    rows_ = [_row("a", 2.0, 50.0, vs_input=4.0), _row("b", 0.5, 90.0), _row("c", 4.0, 79.9, vs_input=1.0),
             _row("d", None, None), _row("e", 100.0, 10.0, status="failed")]  # fmt: skip
    t = build_table(rows_, suite_wall_s=120.0, places=["cpu 0"])
    assert t.vs_best_baseline.count == 3 and math.isclose(
        t.vs_best_baseline.value, (2.0 * 0.5 * 4.0) ** (1 / 3)
    )
    assert t.vs_best_baseline_headroom.count == 2 and math.isclose(
        t.vs_best_baseline_headroom.value, math.sqrt(8.0)
    )
    assert t.vs_input.count == 4 and math.isclose(t.vs_input.value, 4.0 ** (1 / 4))
    assert t.searches_wall_s == 4 * 60.0  # the failed row's is not counted
    assert geomean([]) == (None, 0) and geomean([None, 0.0, float("nan")]) == (None, 0)
    md = markdown(t)
    assert "the finished problems with a best baseline (3): **1.587x**" in md
    assert "whose best baseline runs below 80 % of the floor (2): **2.828x**" in md


def test_a_row_from_real_summaries() -> None:
    """A published GPU summary from before best_baseline was written, and a summary with every field missing."""
    old = json.loads((ROOT / "artifacts" / "43_Max_Pooling_3D" / "summary.json").read_text())
    row = finished_row("43", Path("x"), old)
    fields = summary_fields(old)
    bar = min((b for b in old["baselines"] if b["median_ms"]), key=lambda b: b["median_ms"])
    if old["spec"]["device"].startswith("cuda"):
        assert row.best_baseline == bar["label"]
        assert math.isclose(row.speedup_vs_best_baseline, bar["median_ms"] / old["best_ms"])
        assert math.isclose(row.best_baseline_pct_of_floor, 100 * old["floor"]["floor_ms"] / bar["median_ms"])
    assert row.status == "ok" and fields["candidates"] == old["candidates"]
    assert {b.label for b in row.baselines} == {b["label"] for b in old["baselines"]}
    empty = finished_row("e", Path("x"), {})
    assert empty.status == "no_result" and empty.best_ms is None and empty.reason


def test_a_row_names_the_vendor_library_its_best_baseline_runs() -> None:
    summary = {"best_ms": 0.6257, "best_baseline": "compile", "spec": {"device": "cuda"},
               "baselines": [{"label": "compile", "median_ms": 0.5955, "library_ops": ["addmm (cuBLAS)"]},
                             {"label": "compile-max-autotune", "median_ms": 0.6013, "library_ops": None}]}  # fmt: skip
    row = finished_row("45", Path("x"), summary)
    assert row.best_baseline_library == ["addmm (cuBLAS)"]
    assert "| 0.5955 (compile; addmm (cuBLAS)) | 0.952x |" in markdown(build_table([row], suite_wall_s=1.0, places=["gpu 0"]))
    older = finished_row("45", Path("x"), {**summary, "baselines": [{"label": "compile", "median_ms": 0.5955}]})
    assert older.best_baseline_library == []


@pytest.fixture
def fake_gpu_ray(monkeypatch: pytest.MonkeyPatch):
    """A local Ray on this CPU machine that says it has two GPUs, whose workers have RAY_ADDRESS set (as
    on a cluster), in a folder of its own."""
    import ray

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with tempfile.TemporaryDirectory(prefix="bsray-", dir="/tmp") as tmp:
        ray.init(_temp_dir=tmp, _node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2, num_gpus=2,
                 logging_level=logging.WARNING, log_to_driver=False,
                 runtime_env={"env_vars": {"RAY_ADDRESS": "10.0.0.1:6379"}})  # fmt: skip
        try:
            yield
        finally:
            ray.shutdown()


@pytest.mark.slow
def test_on_ray_each_search_is_a_task_with_its_gpu_share(tmp_path, fake_gpu_ray) -> None:
    """Two fake GPUs, two searches a GPU: four run at once, the fifth when one ends; each search sees the
    GPU Ray gave its task and no RAY_ADDRESS (so it would start its own Ray)."""
    import ray

    from beamsearch.suite_ray import run_on_ray

    assert (
        ray.get(ray.remote(lambda: os.environ.get("RAY_ADDRESS")).remote()) == "10.0.0.1:6379"
    )  # as on a cluster
    problems = tmp_path / "problems"
    jobs = [SearchJob(name=f"p{i}", problem=str(problem(problems, f"p{i}", sleep=4.0)), out=tmp_path / "suite" / f"p{i}")
            for i in range(5)]  # fmt: skip
    ended = {}
    left = run_on_ray(jobs, lambda job: search_argv([sys.executable, str(FAKE)], job, []),
                      lambda job: tmp_path / "suite" / "suite-logs" / job.name, per_gpu=2, timeout_s=120,
                      on_ended=lambda job, place, e: ended.setdefault(job.name, (place, e)))  # fmt: skip
    assert left == [] and sorted(ended) == [f"p{i}" for i in range(5)]
    assert all(e.exit_code == 0 for _, e in ended.values())
    starts = [next(c for c in calls(tmp_path / "suite", j.name) if "start" in c) for j in jobs]
    assert not any(c["ray_address"] for c in starts)
    assert sorted(c["cuda"] for c in starts).count("0") >= 2 and {c["cuda"] for c in starts} == {"0", "1"}
    spans = sorted(span(tmp_path / "suite", j.name) for j in jobs)
    at_once = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert at_once == 4  # a fifth share does not exist: it waited for one to end
    assert all(place.label.endswith(("gpu 0", "gpu 1")) for place, _ in ended.values())


def test_options_after_the_double_dash_go_to_every_search_and_the_suite_s_own_are_refused() -> None:
    args, options = suite.parse_args(
        ["--bundled", "--out", "o", "--", "--budget-minutes", "3", "--workers", "2"]
    )
    assert args.bundled and options == ["--budget-minutes", "3", "--workers", "2"]
    with pytest.raises(SystemExit):
        suite.parse_args(["--bundled", "--", "--out", "x"])


def test_a_folder_s_problems_in_kernelbench_order(tmp_path) -> None:
    for name in ("10_b.py", "2_a.py", "__init__.py", "_helper.py", "notes.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "1_folder").mkdir()
    (tmp_path / "1_folder" / "problem.py").write_text("")
    (tmp_path / "empty").mkdir()
    assert [Path(p).name for p in suite.problems_in(tmp_path)] == ["1_folder", "2_a.py", "10_b.py"]


@pytest.mark.slow
def test_a_real_suite_of_two_tiny_cpu_searches(tmp_path) -> None:
    """Two copies of the tiny test problem, each a real search of one round on the CPU, one after the other
    on one place; the table has both, with the search's own numbers."""
    problems = tmp_path / "problems"
    for name in ("scale_a", "scale_b"):
        (problems / name).mkdir(parents=True)
        shutil.copy(DATA / "scale_rows_problem.py", problems / name / "problem.py")
        shutil.copy(DATA / "search" / "input_kernel.py", problems / name / "input_kernel.py")
    out = tmp_path / "suite"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"CUDA_VISIBLE_DEVICES": "",
                                                                         "RAY_AUTH_MODE": "disabled"}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "beamsearch.suite", "--problems-dir", str(problems), "--out",
                           str(out), "--", "--rounds", "1", "--workers", "1", "--budget-candidates", "2"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = rows(out)
    assert [r.status for r in found.values()] == ["ok", "ok"], done.stderr[-3000:]
    for name, row in found.items():
        summary = json.loads((out / name / "summary.json").read_text())
        assert row.best_ms == summary["best_ms"] and row.candidates == summary["candidates"] <= 2
        assert row.place == "cpu 0" and row.search_wall_s == summary["wall_s"]
    assert "| scale_a | ok |" in done.stdout and "vs the input kernel, geometric mean" in done.stdout
