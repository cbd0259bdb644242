"""The beam search end to end on the CPU: real Ray, real child processes, Triton's interpreter.

Each test is a whole run on the tiny scale_rows problem, so they are few and each checks a lot:
the offline tuner with a worker and then the driver killed and resumed; the LLM path against the
local scripted server (bad rewrites refined, a hung kernel timed out); a two-node cluster; and the
command line's errors.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from beamsearch.records.config import SearchConfig
from beamsearch.records.schema import RunSpec
from beamsearch.records.state import BeamState, RoundRecord, Summary, TaskResult
from beamsearch.run import PRIVATE_RAY_PREFIX
from tests.conftest import DATA
from tests.llm_server import Reply, Respond, ScriptedLLMServer, Slow

pytestmark = pytest.mark.slow  # full searches: CI runs these (pytest -m slow)

PROBLEM = str(DATA / "scale_rows_problem.py")
START = DATA / "search" / "input_kernel.py"
ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``beamsearch.run`` with ``args``; ``env``: variables set on top of the test environment."""
    return subprocess.run([sys.executable, "-m", "beamsearch.run", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**_env(), **(env or {})})  # fmt: skip


# Marks every process a run of this test session starts (see runs_verify_children).
RUN_TAG = f"BEAMSEARCH_TEST_RUN={os.getpid()}-{uuid.uuid4().hex}".encode()


def remove_private_ray(pid: int) -> int:
    """A driver killed with SIGKILL leaves its private Ray's folder in /tmp: the test that killed it removes
    it. How many were removed."""
    folders = list(Path("/tmp").glob(f"{PRIVATE_RAY_PREFIX}{pid}-*"))
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    return len(folders)


def _env() -> dict[str, str]:
    tag, _, value = RUN_TAG.decode().partition("=")
    own = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # each run starts its own Ray
    return {**own, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-test", tag: value}


def check_trace(out: Path, rounds: int) -> tuple[Summary, dict[str, TaskResult]]:
    """Every invariant of a finished trace; returns the summary and all candidates by id."""
    summary = Summary.model_validate_json((out / "summary.json").read_text())
    assert [r.round for r in summary.rounds] == list(range(1, rounds + 1))
    assert not list(out.rglob("*.tmp")), "a temporary file was left behind"
    candidates = {"input": TaskResult.model_validate_json((out / "optimization_trace/input/result.json").read_text())}
    for record in summary.rounds:
        folder = out / "optimization_trace" / f"round_{record.round}"
        assert RoundRecord.model_validate_json((folder / "round.json").read_text()) == record
        found = [TaskResult.model_validate_json(p.read_text()) for p in sorted(folder.glob("candidates/*/result.json"))]
        assert len(found) == record.tasks
        for r in found:
            assert r.task_id not in candidates, f"{r.task_id} appears twice"
            assert r.parent_id in candidates, f"{r.task_id}'s parent {r.parent_id} is not an earlier candidate"
            assert r.round == record.round
            if r.status == "ok":
                assert (folder / "candidates" / r.task_id / "kernel.py").read_text() == r.kernel.source
            if r.screened:  # its timing stopped early: it was too slow for the beam, and stays out of it
                assert r.ranked_ms > r.timing.timing.screened_above_ms and r.task_id not in record.beam
        assert record.screened == sum(r.screened for r in found)
        candidates |= {r.task_id: r for r in found}
        if record.best_id:
            best = candidates[record.best_id]
            assert record.best_ms == best.ranked_ms == min(r.ranked_ms for r in found if r.status == "ok")
            assert (folder / "kernel.py").read_text() == best.kernel.source
            bench = json.loads((folder / "benchmark_results.json").read_text())
            assert bench["time_ms"] == best.ranked_ms and bench["id"] == best.task_id
    assert summary.candidates == sum(r.tasks for r in summary.rounds) == len(candidates) - 1
    timed = [t for t in summary.final_retime if t.median_ms is not None]
    assert summary.best_ms == min(t.median_ms for t in timed)
    best_source = (out / "optimized_kernel_beam_search.py").read_text()
    best = candidates[summary.best_id]
    assert best_source == best.kernel.source
    assert summary.speedup_vs_input == pytest.approx(summary.input_ms / summary.best_ms)
    return summary, candidates


def _events(lines: list[str]) -> list[dict]:
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_tuner_run_survives_a_killed_worker_and_a_killed_driver(tmp_path) -> None:
    """Kill a worker mid-round 1 (its task is retried), kill the driver mid-round 2, resume: nothing lost
    or repeated, and the run ends with a correct summary."""
    out, temp = tmp_path / "run", tmp_path / "temp"
    temp.mkdir()  # processes killed with SIGKILL leave their temporary folders: in this test's folder, not /tmp
    args = ["--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--rounds", "3", "--workers", "2",
            "--candidates-per-round", "4", "--quiet"]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "beamsearch.run", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, env={**_env(), "TMPDIR": str(temp)}, start_new_session=True)  # fmt: skip
    lines: list[str] = []
    killed_worker = round1_closed = seen_r2 = False
    try:
        deadline = time.monotonic() + 400
        for line in proc.stdout:
            lines.append(line)
            event = json.loads(line) if line.startswith("{") else {}
            if event.get("event") == "start":
                worker_pids = [int(w.split(" pid ")[1].split()[0]) for w in event["workers"]]
            if event.get("event") == "round_start" and event["round"] == 1:
                time.sleep(1.5)  # both workers are inside their first task's verification
                os.kill(worker_pids[0], signal.SIGKILL)
                killed_worker = True
            round1_closed = round1_closed or (event.get("event") == "round_end" and event["round"] == 1)
            seen_r2 = seen_r2 or (event.get("event") == "candidate" and event["id"].startswith("r2-"))
            if round1_closed and seen_r2:
                break  # rounds overlap: round 2's candidates may all come before round 1 closes
            assert time.monotonic() < deadline, "the run took too long"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        ray_folders = remove_private_ray(proc.pid)
    # none: the run had ended on its own (a clean exit removes the folder); say how
    others = sorted(p.name for p in Path("/tmp").glob(f"{PRIVATE_RAY_PREFIX}*"))
    assert ray_folders == 1, (proc.pid, others, lines[-6:], proc.stderr.read()[-3000:])  # left by the kill, removed
    assert killed_worker
    events = _events(lines)
    lost = [e for e in events if e["event"] == "worker_lost"]
    assert lost and lost[0]["retried"], events
    round1 = [e for e in events if e["event"] == "candidate" and e["id"].startswith("r1-")]
    assert len(round1) == 4 and all(e["status"] != "failed" for e in round1), round1  # from the input's space

    state = BeamState.model_validate_json((out / "state.json").read_text())
    assert state.round in (1, 2)  # round 2 may close right after round 1, before the kill lands
    assert state.config.compiler_seed is False  # a CPU run with no recording settles on none, and says so
    before = {p.parent.name: TaskResult.model_validate_json(p.read_text()).finished_at
              for p in (out / "optimization_trace").glob("round_[23]/candidates/*/result.json")}  # fmt: skip
    assert any(i.startswith("r2-") for i in before), "the driver was killed after a round-2 candidate was written"

    again = run_cli("--resume", "--out", str(out), "--quiet", timeout=400, env={"TMPDIR": str(temp)})
    assert again.returncode == 0, again.stderr[-3000:]
    resumed = _events(again.stdout.splitlines())
    first = state.round + 1  # the resume goes on from the first round not closed
    start = next(e for e in resumed if e["event"] == "round_start" and e["round"] == first)
    assert start["reused"] == sum(i.startswith(f"r{first}-") for i in before)
    assert not [e for e in resumed if e["event"] == "candidate" and e["id"] in before], "finished candidates redone"
    summary, candidates = check_trace(out, rounds=3)
    for task_id, finished_at in before.items():
        assert candidates[task_id].finished_at == finished_at
    assert summary.best_ms is not None and summary.config.rounds == 3
    assert (out / "events.jsonl").read_text().count('"event": "round_end"') == 3


def _llm_replies(prompt: str) -> Reply:
    """A scripted model: two bottlenecks; the first gets a good rewrite, the second a wrong one whose
    refinement hangs (the task times out)."""
    source = START.read_text()
    if "Reply with the word OK" in prompt:
        return Reply("OK")
    if "what limits its speed" in prompt:
        return Reply(json.dumps([
            {"category": "memory", "summary": "ROWS-TOO-FEW per program", "reasoning": "r"},
            {"category": "compute", "summary": "MATH-SLOW multiply", "reasoning": "r"},
        ]))  # fmt: skip
    if "failed verification" in prompt:
        hang = source.replace("    out = torch.empty_like(x)", "    while True:\n        pass")
        return Reply(f"```python\n{hang}```")
    if "Look back at it" in prompt:
        return Reply(json.dumps({"expected": "more rows per program", "observed": "as planned",
                                 "lesson": "LESSON-ONE keep 8 rows"}))  # fmt: skip
    if "ROWS-TOO-FEW" in prompt.split("# The bottleneck")[-1][:2000]:
        return Reply(f"Sure.\n```python\n{source.replace('BLOCK_R = 4', 'BLOCK_R = 8')}```")
    return Reply(f"```python\n{source.replace('(x * w)', '(x * w * 2.0)')}```")


def test_llm_run_refines_times_out_and_records_every_exchange(tmp_path) -> None:
    out = tmp_path / "llm"
    with ScriptedLLMServer(default=Respond(_llm_replies)) as server:
        done = run_cli("--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--rounds", "1", "--workers", "2",
                       "--beam-width", "1", "--llm", "openai/test-model", "--api-base", server.api_base,
                       "--task-timeout", "45", "--refine-tries", "1", "--quiet", timeout=400)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary, candidates = check_trace(out, rounds=1)
    good, bad = candidates["r1-t0"], candidates["r1-t1"]
    assert good.status == "ok" and "BLOCK_R = 8" in good.kernel.source
    assert good.reflection is not None and good.lesson == "LESSON-ONE keep 8 rows"
    purposes = [e.purpose for e in good.exchanges]
    assert purposes[-2:] == ["optimize", "reflect"]
    assert bad.status == "failed" and "timed out" in bad.reason
    # what the timed-out task paid for is kept (issue 24 point 7): its rewrite and refinement requests
    assert {"optimize", "refine"} <= {e.purpose for e in bad.exchanges}, bad.exchanges
    assert (out / "optimization_trace/round_1/candidates/r1-t1/llm_calls.txt").is_file()
    assert summary.tokens > 0
    folder = out / "optimization_trace/round_1"
    assert "ROWS-TOO-FEW" in (folder / "strategy.json").read_text()
    assert (folder / "opt_prompt.txt").is_file() and (folder / "opt_reply.txt").is_file()
    events = _events(done.stdout.splitlines())
    assert any(e["event"] == "task_timeout" and e["task"] == "r1-t1" for e in events)
    assert not _orphans(), "a hung kernel's process outlived its task"


def _orphans(patience_s: float = 60.0) -> list[str]:
    """Verification children of this test's runs still alive ``patience_s`` after the run. The run's
    spares that were still importing when it ended exit once they read the closed stdin, seconds later
    on a loaded machine; the hung kernel's child would spin forever. Other beamsearch runs on the
    machine, and this test process's own pre-started spares, are not counted."""
    deadline = time.monotonic() + patience_s
    while (left := runs_verify_children()) and time.monotonic() < deadline:
        time.sleep(1)
    return left


def runs_verify_children() -> list[str]:
    """``workers.harness.verify_child`` processes started by a ``run_cli`` of this test session. Ray's workers
    and their children outlive the run and are re-parented, so they are found by the RUN_TAG that
    ``_env`` puts into the run's environment (and every process under it inherits), not by parentage."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if "workers.harness.verify_child" in command and RUN_TAG in (proc / "environ").read_bytes().split(b"\0"):
                found.append(f"{proc.name} {command}")
        except (OSError, ValueError):
            continue  # exited meanwhile, or another user's
    return found


def test_only_this_sessions_runs_count_as_orphans() -> None:
    """A verification child of another run on the machine (no tag) is not this test's orphan; one that
    carries this session's tag is, even with no parent of ours."""
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)", "workers.harness.verify_child"]
    foreign = subprocess.Popen(sleeper, env={**os.environ, "BEAMSEARCH_TEST_RUN": "another-session"})
    ours = subprocess.Popen(sleeper, env=_env())
    try:
        # Just after a spawn, the child's /proc environ and cmdline can still read empty: look until it shows.
        deadline = time.monotonic() + 10
        while not (found := runs_verify_children()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [line.split()[0] for line in found] == [str(ours.pid)], found
    finally:
        for proc in (foreign, ours):
            proc.kill()
            proc.wait()
    assert runs_verify_children() == []


def test_a_run_on_a_two_node_cluster(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()  # both nodes registered before the driver places its workers
    try:
        out = tmp_path / "cluster"
        done = run_cli("--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--rounds", "1",
                       "--workers", "2", "--candidates-per-round", "4", "--address", cluster.address, "--quiet")  # fmt: skip
    finally:
        cluster.shutdown()
    assert done.returncode == 0, done.stderr[-3000:]
    start = next(e for e in _events(done.stdout.splitlines()) if e["event"] == "start")
    # Ray's SPREAD is best effort: under CI load both workers sometimes land on one node, so the test
    # checks that the run works through the cluster's address and names each worker's node.
    assert all(" node " in w for w in start["workers"]), start["workers"]
    check_trace(out, rounds=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--problem", "no_such_problem"], "Bundled problems:\n  04_Matrix_vector_multiplication"),
        (["--problem", "43", "--kernel", "/nonexistent/k.py"], "--kernel /nonexistent/k.py: No such file"),
        (["--problem", "43", "--address", "127.0.0.1:1", "--out", "{tmp}"], "cannot reach the Ray cluster at 127.0.0.1:1"),
        (["--problem", "43", "--device", "cuda", "--out", "{tmp}"], "the Ray cluster has no GPU"),
        (["--problem", "43", "--resume", "--out", "{tmp}"], "no run to resume"),
        (["--problem", "43", "--config", "{tmp}/missing.toml"], "config file"),
        (["--problem", "43", "--llm", "openai/m", "--api-base", "http://127.0.0.1:9/v1", "--out", "{tmp}"], "LLM 'openai/m' at http://127.0.0.1:9/v1 is unavailable"),
    ],
)
def test_clear_errors(args: list[str], message: str, tmp_path) -> None:
    done = run_cli(*[a.replace("{tmp}", str(tmp_path)) for a in args], timeout=120)
    assert done.returncode == 2
    assert message in done.stderr, done.stderr[-2000:]


def test_a_failing_starting_kernel_says_which_check(tmp_path) -> None:
    wrong = tmp_path / "wrong.py"
    wrong.write_text(START.read_text().replace("(x * w)", "(x + w)"))
    done = run_cli("--problem", PROBLEM, "--kernel", str(wrong), "--out", str(tmp_path / "o"), "--rounds", "1",
                   "--workers", "1", "--quiet")  # fmt: skip
    assert done.returncode == 1
    assert "starting kernel" in done.stderr and "incorrect" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "o" / "state.json").exists()


def test_an_autotuned_starting_kernel_on_the_cpu_says_it_needs_a_gpu(tmp_path) -> None:
    kernel = DATA / "kernels" / "autotuned_scale.py"
    done = run_cli("--problem", PROBLEM, "--kernel", str(kernel), "--out", str(tmp_path / "o"), "--rounds", "1",
                   "--workers", "1", "--quiet")  # fmt: skip
    assert done.returncode == 1
    assert "autotuner needs a GPU" in done.stderr and "starting kernel" in done.stderr, done.stderr[-2000:]


def test_an_existing_run_is_not_overwritten(tmp_path) -> None:
    state = BeamState(config=SearchConfig(problem=PROBLEM), problem="p",
                      spec=RunSpec(problem_path=PROBLEM, shapes="small", device="cpu"))  # fmt: skip
    (tmp_path / "state.json").write_text(state.model_dump_json())
    done = run_cli("--problem", PROBLEM, "--kernel", str(START), "--out", str(tmp_path), timeout=120)
    assert done.returncode == 2 and "already holds a run" in done.stderr and "--resume" in done.stderr


def _bad_model(prompt: str) -> Reply | Slow:
    """A model that answers the pre-flight, then diagnoses in garbage and rewrites too slowly."""
    if "Reply with the word OK" in prompt:
        return Reply("OK")
    if "what limits its speed" in prompt or "could not be used" in prompt:
        return Reply("I think it is memory bound, probably. {category: memory")
    return Slow(6.0)


def test_full_disk_and_a_garbage_model_lose_nothing(tmp_path, monkeypatch, capsys) -> None:
    """The trace folder's disk fills up in round 2: the run stops with a clear message and an intact
    trace; with space again, --resume finishes it. The model answers garbage or times out throughout:
    every task ends with a reason, and the summary is still correct."""
    import tempfile as real_tempfile

    from beamsearch import run, trace

    class FullDisk:
        full = True

        def mkstemp(self, dir: str, **kw: object) -> tuple[int, str]:  # noqa: A002 - tempfile's name
            if self.full and "round_2" in str(dir):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_tempfile.mkstemp(dir=dir, **kw)

    disk = FullDisk()
    monkeypatch.setattr(trace, "tempfile", disk)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = tmp_path / "run.toml"
    out = tmp_path / "full"
    with ScriptedLLMServer(default=Respond(_bad_model)) as server:
        config.write_text(f'problem = "{PROBLEM}"\nkernel = "{START}"\nout = "{out}"\nrounds = 2\nworkers = 2\nbeam_width = 1\n'
                          f'llm = "openai/test-model"\napi_base = "{server.api_base}"\nllm_timeout_s = 2.0\nquiet = true\n')  # fmt: skip
        with pytest.raises(SystemExit) as stopped:
            run.main(["--config", str(config)])
        assert stopped.value.code == 1
        err = capsys.readouterr().err
        assert "No space left on device" in err and "--resume" in err, err[-2000:]
        state = BeamState.model_validate_json((out / "state.json").read_text())
        # rounds overlap: round 2's plan is written as round 1's last task goes out, so round 1 may not have closed
        assert state.round in (0, 1)
        for path in out.rglob("*.json"):
            json.loads(path.read_text())  # no file half-written

        disk.full = False
        assert run.main(["--resume", "--out", str(out), "--quiet"]) == 0
    summary, _ = check_trace(out, rounds=2)
    round1 = [TaskResult.model_validate_json(p.read_text()) for p in out.glob("optimization_trace/round_1/candidates/*/result.json")]
    assert sorted(r.status for r in round1) == ["no_proposal", "no_proposal"]
    assert all(r.diagnosis.source == "rules" for r in round1)  # garbage diagnosis: one repair, then the rules
    reasons = " ".join(e.parse_error for r in round1 for e in r.exchanges)
    assert "no JSON" in reasons and "no reply: timeout" in reasons, reasons
    assert summary.best_id == "input" and summary.candidates_ok == 0


def test_a_missing_package_is_named_before_any_work(tmp_path, monkeypatch, capsys) -> None:
    """The tuner imports optuna only in its first model-based round: without the check a run failed there."""
    from beamsearch import run

    real = run.import_module

    def import_module(name: str) -> object:
        if name == "optuna":  # its own import of a dependency fails: a partial set of wheels
            raise ModuleNotFoundError("No module named 'colorlog'", name="colorlog")
        return real(name)

    monkeypatch.setattr(run, "import_module", import_module)
    out = tmp_path / "o"
    with pytest.raises(SystemExit) as stopped:
        run.main(["--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--quiet"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "a run needs optuna, which cannot be imported (No module named 'colorlog')" in err and "pip install -e ." in err, err
    assert not out.exists()


def test_an_unexpected_error_keeps_the_finished_rounds(tmp_path, monkeypatch, capsys) -> None:
    """A fault of ours in round 2 stops the run with its traceback and the way to go on; --resume does."""
    from beamsearch import run
    from beamsearch.optimiser import Optimiser

    real = Optimiser.plan

    def plan(self, state, round_, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202 - Optimiser.plan's own
        if round_ == 2:
            raise RuntimeError("a planned fault")
        return real(self, state, round_, *args, **kwargs)

    monkeypatch.setattr(Optimiser, "plan", plan)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    out = tmp_path / "o"
    args = ["--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--rounds", "2", "--workers", "1", "--quiet"]
    with pytest.raises(SystemExit) as stopped:
        run.main(args)
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "unexpected error (RuntimeError: a planned fault)" in err, err[-2000:]
    assert f"consistent up to round 1; continue with --resume --out {out}" in err, err[-2000:]
    assert BeamState.model_validate_json((out / "state.json").read_text()).round == 1

    monkeypatch.setattr(Optimiser, "plan", real)
    assert run.main(["--resume", "--out", str(out), "--quiet"]) == 0
    check_trace(out, rounds=2)
