"""Whole CPU runs on the LLM path against the scripted server: a model lost mid-run (after the
pre-flight), with each choice of ``--on-model-lost``; a reply with several kernels, through a resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from beamsearch.records.state import BeamState, TaskResult
from tests.llm_server import HttpError, Reply, Respond, ScriptedLLMServer, Slow
from tests.test_search import PROBLEM, ROOT, START, _env, _events, check_trace, remove_private_ray, run_cli

pytestmark = pytest.mark.slow  # full searches against scripted model servers: CI runs these (pytest -m slow)

DIAGNOSIS = json.dumps([{"category": "memory", "summary": "rows per program"}])


def dies_after_the_preflight(server_box: list[ScriptedLLMServer]):
    """Answer the pre-flight, then stop the whole server: every later request is refused."""

    def choose(prompt: str) -> Reply | HttpError:
        if "Reply with the word OK" in prompt:
            return Reply("OK")
        threading.Thread(target=server_box[0].stop, daemon=True).start()
        return HttpError(503, "shutting down")

    return choose


def lost_model_run(tmp_path, *extra: str):
    box: list[ScriptedLLMServer] = []
    server = ScriptedLLMServer()
    box.append(server)
    server.default = Respond(dies_after_the_preflight(box))
    out = tmp_path / "run"
    with server:
        done = run_cli("--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--rounds", "1",
                       "--workers", "1", "--directions", "2", "--beam-width", "1", "--llm", "openai/test-model",
                       "--api-base", server.api_base, "--llm-retries", "1", "--quiet", *extra, timeout=400)  # fmt: skip
    return out, done


def test_a_model_lost_mid_run_stops_it_resumably(tmp_path) -> None:
    out, done = lost_model_run(tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "the model stopped answering in round 1" in done.stderr and "--resume --out" in done.stderr, (
        done.stderr
    )
    assert "unreachable" in done.stderr, done.stderr  # the driver's own check says what is wrong
    lost = [e for e in _events(done.stdout.splitlines()) if e["event"] == "model_lost"]
    assert lost and lost[0]["action"] == "stop"
    assert BeamState.model_validate_json((out / "state.json").read_text()).round == 0
    # the task that found the model gone is not recorded as finished: a resumed run asks again, at the
    # model's new address
    assert not list(out.glob("optimization_trace/round_1/candidates/*/result.json"))
    with ScriptedLLMServer(default=Respond(_back_again)) as server:
        again = run_cli("--resume", "--out", str(out), "--api-base", server.api_base, "--quiet", timeout=400)
    assert again.returncode == 0, again.stderr[-3000:]
    results = [
        TaskResult.model_validate_json(p.read_text())
        for p in out.glob("optimization_trace/round_1/candidates/*/result.json")
    ]
    assert len(results) == 2 and all("BACK-AGAIN" in r.exchanges[-1].call.text for r in results), [
        r.reason for r in results
    ]


def _back_again(prompt: str) -> Reply:
    return Reply("OK" if "Reply with the word OK" in prompt else "BACK-AGAIN, but no code")


def test_a_model_lost_mid_run_hands_the_rest_to_the_offline_optimiser(tmp_path) -> None:
    out, done = lost_model_run(
        tmp_path, "--on-model-lost", "offline", "--rounds", "2", "--candidates-per-round", "1"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lost = [e for e in _events(done.stdout.splitlines()) if e["event"] == "model_lost"]
    assert lost and lost[0]["action"] == "offline" and "unreachable" in lost[0]["reason"]
    trace = out / "optimization_trace"
    first = TaskResult.model_validate_json((trace / "round_1/candidates/r1-t0/result.json").read_text())
    second = TaskResult.model_validate_json((trace / "round_1/candidates/r1-t1/result.json").read_text())
    assert first.status == "no_proposal" and "no reply" in first.reason
    assert second.status == "no_proposal" and "model was lost" in second.reason and not second.exchanges
    # the round after is the offline optimiser's (its time budget is the run's as it was with the model)
    planned = [
        TaskResult.model_validate_json(p.read_text()) for p in trace.glob("round_2/candidates/*/result.json")
    ]
    assert len(planned) == 1, planned
    assert planned[0].kernel is not None and planned[0].kernel.origin == "tuner" and not planned[0].exchanges
    state = BeamState.model_validate_json((out / "state.json").read_text())
    assert state.config.llm is None and state.config.budget_minutes is None and state.optimiser.searches


def _slow_model(prompt: str) -> Reply | Slow:
    """Answers the pre-flight at once; the diagnosis and the rewrites (prose, no code) slowly, so the two
    workers' requests would overlap."""
    if "Reply with the word OK" in prompt:
        return Reply("OK")
    if "what limits its speed" in prompt:
        return Slow(1.0, Reply(DIAGNOSIS))
    return Slow(1.5, Reply("I would change the block size."))


def test_one_concurrency_limit_and_one_diagnosis_per_run(tmp_path) -> None:
    """Points 6 and 8: two workers, --llm-concurrency 1: never two requests at once; the parent is
    diagnosed once, and both candidates' folders hold that diagnosis's prompt; its tokens count once."""
    out = tmp_path / "run"
    with ScriptedLLMServer(default=Respond(_slow_model)) as server:
        done = run_cli("--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--rounds", "1",
                       "--workers", "2", "--directions", "2", "--beam-width", "1", "--llm", "openai/test-model",
                       "--api-base", server.api_base, "--llm-concurrency", "1", "--quiet", timeout=400)  # fmt: skip
        texts = ["\n".join(m["content"] for m in r.body["messages"]) for r in server.chat_requests()]
        assert server.max_in_flight == 1
    assert done.returncode == 0, done.stderr[-3000:]
    assert sum("what limits its speed" in t for t in texts) == 1
    folder = out / "optimization_trace/round_1/candidates"
    results = [TaskResult.model_validate_json((folder / f"r1-t{i}/result.json").read_text()) for i in (0, 1)]
    made, reused = sorted(results, key=lambda r: bool(r.diagnosis_by))
    assert reused.diagnosis_by == made.task_id and reused.shared_diagnosis
    for r in results:
        assert "what limits its speed" in (folder / r.task_id / "bottleneck_prompt.txt").read_text()
        assert r.diagnosis.source == "llm" and r.status == "no_proposal"
    summary = json.loads((out / "summary.json").read_text())
    # one diagnosis, two rewrites and their repair requests; the pre-flight is not a task's
    assert summary["tokens"] == 5 * (11 + 7)


def _variant(rows: int) -> str:
    return START.read_text().replace("BLOCK_R = 4", f"BLOCK_R = {rows}")


def _three_kernels(prompt: str) -> Reply:
    """One reply with three new kernels, the first of them twice; a reflection for each candidate."""
    if "Reply with the word OK" in prompt:
        return Reply("OK")
    if "what limits its speed" in prompt:
        return Reply(DIAGNOSIS)
    if "Look back at it" in prompt:
        return Reply(json.dumps({"expected": "e", "observed": "o", "lesson": "L"}))
    if "# The bottleneck" in prompt:
        blocks = [_variant(8), _variant(2), _variant(8), _variant(16)]
        return Reply("Options:\n" + "".join(f"```python\n{b}```\n" for b in blocks))
    return Reply("no code")


def test_every_kernel_of_a_reply_is_a_candidate_now_or_in_the_next_round(tmp_path) -> None:
    """Point 10: a reply with three kernels (and a repeat) on a round of one place: its task tries the first,
    the second takes the round's place for handed-back kernels, the third waits in the resume point and,
    the run resumed for one more round, opens it; the repeat is a note."""
    out = tmp_path / "run"
    with ScriptedLLMServer(default=Respond(_three_kernels)) as server:
        args = ["--api-base", server.api_base, "--quiet"]
        done = run_cli("--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--rounds", "1", "--workers",
                       "1", "--directions", "1", "--beam-width", "1", "--llm", "openai/test-model", *args, timeout=400)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        summary, candidates = check_trace(out, rounds=1)
        assert sorted(candidates) == ["input", "r1-t0", "r1-t0-k1"]
        first, second = candidates["r1-t0"], candidates["r1-t0-k1"]
        assert first.status == second.status == "ok", (first.reason, second.reason)
        assert "BLOCK_R = 8" in first.kernel.source and "BLOCK_R = 2" in second.kernel.source
        assert second.from_task == "r1-t0" and second.parent_id == "input" and second.timing is not None
        assert first.reply_notes == [
            "kernel 3 of the reply repeats kernel 1 of the same reply: not tried again",
            "r1-t0-k1: tried in round 1",
            "r1-t0-k2: no place left in round 1; waits for the next round",
        ], first.reply_notes
        assert "r1-t0's reply" in (out / "optimization_trace/round_1/candidates/r1-t0-k1/opt_reply.txt").read_text()
        assert summary.not_tried == ["r1-t0-k2 (a kernel of r1-t0's reply)"]
        (waiting,) = BeamState.model_validate_json((out / "state.json").read_text()).pending
        assert waiting.id == "r1-t0-k2" and "BLOCK_R = 16" in waiting.kernel.source

        asked = len(server.chat_requests())
        again = run_cli("--resume", "--out", str(out), "--rounds", "2", *args, timeout=400)
        assert again.returncode == 0, again.stderr[-3000:]
    _, candidates = check_trace(out, rounds=2)
    third = candidates["r1-t0-k2"]
    assert third.round == 2 and third.from_task == "r1-t0" and third.status == "ok", third.reason
    state = BeamState.model_validate_json((out / "state.json").read_text())
    # the round had no place for a rewrite; when round 1's beam kept a model's kernel (which kernel is fastest
    # on the interpreter is the clock's to say), knob variants of it take the worker's other three places
    tuned = sorted(i for i in candidates if i.startswith("r2-u"))
    assert len(tuned) == (3 if state.rounds[0].beam != ["input"] else 0), (tuned, state.rounds[0].beam)
    assert sorted(candidates) == ["input", "r1-t0", "r1-t0-k1", "r1-t0-k2", *tuned], state.rounds[0].beam
    assert state.pending == []
    texts = ["\n".join(m["content"] for m in r.body["messages"]) for r in server.chat_requests()[asked:]]
    assert not [t for t in texts if "# The bottleneck" in t and "Look back at it" not in t]  # no rewrite asked for
    assert any("Look back at it" in t for t in texts)  # the kernel reflected on like any other


def test_a_round_cut_short_after_the_reply_tries_its_handed_back_kernels_on_resume(tmp_path) -> None:
    """The driver killed once the reply's own candidate is written: the resumed round reuses it, derives its
    handed-back kernels from its result.json, tries the one the round has a place for, keeps the other."""
    out = tmp_path / "run"
    temp = tmp_path / "tmp"
    temp.mkdir()  # the killed driver's workers leave their temporary folders: in this test's folder, not /tmp
    with ScriptedLLMServer(default=Respond(_three_kernels)) as server:
        args = ["--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--rounds", "1", "--workers", "1",
                "--directions", "1", "--beam-width", "1", "--llm", "openai/test-model", "--api-base", server.api_base,
                "--quiet"]  # fmt: skip
        proc = subprocess.Popen([sys.executable, "-m", "beamsearch.run", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**_env(), "TMPDIR": str(temp)},
                                start_new_session=True)  # fmt: skip
        try:
            deadline = time.monotonic() + 400
            for line in proc.stdout:
                if line.startswith("{") and json.loads(line).get("id") == "r1-t0":
                    break
                assert time.monotonic() < deadline, "the run took too long"
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            ray_folders = remove_private_ray(proc.pid)
        assert ray_folders == 1  # its private Ray's, left by the kill and removed
        folder = out / "optimization_trace/round_1/candidates"
        first = TaskResult.model_validate_json((folder / "r1-t0/result.json").read_text())
        assert not (folder / "r1-t0-k1").exists() and len(first.handed_back) == 2
        again = run_cli("--resume", "--out", str(out), "--api-base", server.api_base, "--quiet", timeout=400,
                        env={"TMPDIR": str(temp)})  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    start = next(e for e in _events(again.stdout.splitlines()) if e["event"] == "round_start")
    assert (start["tasks"], start["reused"]) == (2, 1)
    _, candidates = check_trace(out, rounds=1)
    assert sorted(candidates) == ["input", "r1-t0", "r1-t0-k1"]
    assert candidates["r1-t0"].finished_at == first.finished_at  # reused, not asked again
    assert candidates["r1-t0-k1"].from_task == "r1-t0" and candidates["r1-t0-k1"].status == "ok"
    (waiting,) = BeamState.model_validate_json((out / "state.json").read_text()).pending
    assert waiting.id == "r1-t0-k2"


def _hang_then_good(prompt: str) -> Reply:
    """A reply whose first kernel hangs and whose second is good."""
    if "Reply with the word OK" in prompt:
        return Reply("OK")
    if "what limits its speed" in prompt:
        return Reply(DIAGNOSIS)
    if "Look back at it" in prompt:
        return Reply(json.dumps({"expected": "e", "observed": "o", "lesson": "L"}))
    if "# The bottleneck" in prompt:
        hang = START.read_text().replace("    out = torch.empty_like(x)", "    while True:\n        pass")
        return Reply("".join(f"```python\n{b}```\n" for b in (hang, _variant(8))))
    return Reply("no code")


def test_a_task_cut_off_by_its_timeout_still_hands_back_its_replys_other_kernels(tmp_path) -> None:
    out = tmp_path / "run"
    with ScriptedLLMServer(default=Respond(_hang_then_good)) as server:
        done = run_cli("--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--rounds", "1", "--workers",
                       "1", "--directions", "1", "--beam-width", "1", "--llm", "openai/test-model", "--api-base",
                       server.api_base, "--task-timeout", "30", "--quiet", timeout=400)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    _, candidates = check_trace(out, rounds=1)
    cut, good = candidates["r1-t0"], candidates["r1-t0-k1"]
    assert cut.status == "failed" and "timed out" in cut.reason, cut.reason
    assert cut.reply_notes[0].startswith("the task failed while trying the reply's first new kernel (block at line 1)")
    assert cut.reply_notes[1:] == ["r1-t0-k1: tried in round 1"]
    assert good.status == "ok" and good.from_task == "r1-t0" and "BLOCK_R = 8" in good.kernel.source
