"""Whole CPU runs on the LLM path against the scripted server: a model lost mid-run (after the
pre-flight), with each choice of ``--on-model-lost``."""

from __future__ import annotations

import json
import threading

from beamsearch.state import BeamState, TaskResult
from tests.llm_server import HttpError, Reply, Respond, ScriptedLLMServer, Slow
from tests.test_search import PROBLEM, START, _events, run_cli

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
