"""Whole CPU runs on the LLM path against the scripted server: a model lost mid-run (after the
pre-flight), with each choice of ``--on-model-lost``."""

from __future__ import annotations

import json
import threading

from beamsearch.state import BeamState, TaskResult
from tests.llm_server import HttpError, Reply, Respond, ScriptedLLMServer
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
    # the task that found the model gone is not recorded as finished: a resumed run asks again
    assert not list(out.glob("optimization_trace/round_1/candidates/*/result.json"))


def test_a_model_lost_mid_run_hands_the_rest_to_the_tuner(tmp_path) -> None:
    out, done = lost_model_run(tmp_path, "--on-model-lost", "offline")
    assert done.returncode == 0, done.stderr[-3000:]
    lost = [e for e in _events(done.stdout.splitlines()) if e["event"] == "model_lost"]
    assert lost and lost[0]["action"] == "offline" and "unreachable" in lost[0]["reason"]
    folder = out / "optimization_trace/round_1/candidates"
    first = TaskResult.model_validate_json((folder / "r1-t0/result.json").read_text())
    second = TaskResult.model_validate_json((folder / "r1-t1/result.json").read_text())
    assert first.status == "no_proposal" and "no reply" in first.reason
    assert second.kernel is not None and second.kernel.origin == "tuner" and not second.exchanges
