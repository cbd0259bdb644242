"""The real litellm client against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.llm_server import Empty, Garbage, HttpError, Reply, ScriptedLLMServer, Slow
from workers.proposers.llm_client import LLMCall, LLMClient, LLMConfig, LLMUnavailable

REPO = Path(__file__).resolve().parents[1]
KEY_ENV = "BEAMSEARCH_TEST_LLM_KEY"
TRACES = sorted((SHARED / "fixtures" / "kernelagent-traces").glob("*/round_1/bottleneck_response.txt"))


@pytest.fixture
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as s:
        yield s


@pytest.fixture(autouse=True)
def dummy_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-dummy")


@pytest.fixture(scope="module")
def recorded_replies() -> list[str]:
    if not TRACES:
        pytest.skip(f"no recorded KernelAgent replies under {SHARED / 'fixtures'}")
    return [p.read_text() for p in TRACES]


def make_client(server: ScriptedLLMServer, **overrides: object) -> LLMClient:
    knobs = dict(model="openai/test-model", api_base=server.api_base, api_key_env=KEY_ENV,
                 timeout_s=2.0, max_retries=2, backoff_s=0.01)  # fmt: skip
    return LLMClient(LLMConfig(**{**knobs, **overrides}))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed


def test_recorded_reply(server: ScriptedLLMServer, recorded_replies: list[str]) -> None:
    text = recorded_replies[0]
    server.script(Reply(text, prompt_tokens=1234, completion_tokens=567))
    call = make_client(server).complete("diagnose this kernel", system="you are a GPU expert")
    assert call.status == "ok", call.reason
    assert call.text == text and json.loads(call.text)[0]["category"]
    assert (call.prompt_tokens, call.completion_tokens, call.attempts) == (1234, 567, 1)
    assert call.latency_s > 0 and call.model == "openai/test-model"
    assert call.cost_usd == 0.0  # litellm has no price for test-model
    (req,) = server.chat_requests()
    assert req.path == "/v1/chat/completions"  # litellm appends /chat/completions to api_base as given
    assert req.headers["Authorization"] == "Bearer sk-test-dummy"
    assert [m["role"] for m in req.body["messages"]] == ["system", "user"]
    assert req.body["model"] == "test-model" and req.body["max_tokens"] == 8192
    assert round(LLMCall.model_validate_json(call.model_dump_json()).latency_s, 6) == round(call.latency_s, 6)


def test_response_format_only_where_litellm_knows_the_model_supports_it(
    server: ScriptedLLMServer, recorded_replies: list[str]
) -> None:
    schema = {"title": "Diagnosis list", "type": "object", "properties": {"bottlenecks": {"type": "array"}}}
    server.script(Reply(recorded_replies[1]), Reply(recorded_replies[1]))
    unknown = make_client(server).complete("p", json_schema=schema)
    known = make_client(server, model="openai/gpt-4o").complete("p", json_schema=schema)
    assert unknown.status == known.status == "ok"
    first, second = server.chat_requests()
    assert "response_format" not in first.body  # unknown model: the prompt carries the format
    fmt = second.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == schema
    assert fmt["json_schema"]["name"] == "Diagnosis_list"
    assert known.cost_usd > 0  # a model in litellm's price map is costed


def test_rate_limit_then_success_is_retried_after_retry_after(server: ScriptedLLMServer) -> None:
    server.script(HttpError(429, "slow down", retry_after_s=0.5), Reply("fine"))
    call = make_client(server).complete("p")
    assert (call.status, call.text, call.attempts) == ("ok", "fine", 2)
    assert call.latency_s >= 0.5  # Retry-After outweighs the 0.01 s backoff
    assert len(server.chat_requests()) == 2


def test_server_errors_exhaust_the_retries(server: ScriptedLLMServer) -> None:
    server.script(HttpError(500, "boom"), HttpError(503, "overloaded"), HttpError(500, "boom"))
    call = make_client(server, max_retries=2).complete("p")
    assert call.status == "server_error" and call.attempts == 3
    assert "500" in call.reason and "boom" in call.reason and "after 3 attempts" in call.reason
    assert len(server.chat_requests()) == 3 and call.text == ""


def test_slow_reply_times_out(server: ScriptedLLMServer) -> None:
    server.script(Slow(3.0), Slow(3.0))
    call = make_client(server, timeout_s=0.5, max_retries=1).complete("p")
    assert (call.status, call.attempts) == ("timeout", 2)
    assert 0.9 < call.latency_s < 2.5 and "timed out" in call.reason.lower()


@pytest.mark.parametrize("kind, words", [("not_json", "invalid response"), ("no_choices", "choices")])
def test_garbage_is_a_server_error_with_a_reason(server: ScriptedLLMServer, kind: str, words: str) -> None:
    server.script(Garbage(kind))  # type: ignore[arg-type]
    call = make_client(server, max_retries=0).complete("p")
    assert call.status == "server_error" and words in call.reason.lower()


def test_empty_content_is_an_error(server: ScriptedLLMServer) -> None:
    server.script(Empty())
    call = make_client(server).complete("p")
    assert (call.status, call.attempts) == ("error", 1) and "empty reply" in call.reason


@pytest.mark.parametrize(
    "status, expected", [(401, "auth_error"), (403, "auth_error"), (400, "bad_request"), (404, "bad_request")]
)
def test_client_errors_are_not_retried(server: ScriptedLLMServer, status: int, expected: str) -> None:
    server.script(HttpError(status, "nope"), Reply("must not be reached"))
    call = make_client(server).complete("p")
    assert (call.status, call.attempts) == (expected, 1) and f"HTTP {status}" in call.reason
    assert len(server.chat_requests()) == 1


def test_missing_key_env_fails_without_a_request(
    server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    call = make_client(server).complete("p")
    assert (call.status, call.attempts) == ("auth_error", 0) and KEY_ENV in call.reason
    assert server.chat_requests() == []


def test_max_concurrency_is_respected_across_threads(server: ScriptedLLMServer) -> None:
    server.script(*[Slow(0.4, Reply(f"r{i}")) for i in range(6)])
    client = make_client(server, max_concurrency=2)
    calls: list[LLMCall] = []
    threads = [threading.Thread(target=lambda: calls.append(client.complete("p"))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert len(calls) == 6 and all(c.status == "ok" for c in calls)
    assert server.max_in_flight == 2


def test_preflight_passes_against_a_live_server(server: ScriptedLLMServer) -> None:
    server.script(Reply("OK"))
    make_client(server).preflight()
    assert server.chat_requests()[0].body["max_tokens"] == 16


def test_preflight_closed_port_raises_a_clear_error(server: ScriptedLLMServer) -> None:
    base = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(LLMUnavailable) as err:
        make_client(server, api_base=base, max_retries=1).preflight()
    message = str(err.value)
    assert "openai/test-model" in message and base in message and "unreachable" in message
    assert "refused" in message.lower()


def test_preflight_rejected_key_raises_a_clear_error(server: ScriptedLLMServer) -> None:
    server.script(HttpError(401, "Incorrect API key provided"))
    with pytest.raises(LLMUnavailable) as err:
        make_client(server).preflight()
    message = str(err.value)
    assert "openai/test-model" in message and server.api_base in message
    assert "API key" in message and KEY_ENV in message and "Incorrect API key provided" in message
    assert len(server.chat_requests()) == 1


def test_preflight_timeout_names_the_limit(server: ScriptedLLMServer) -> None:
    server.script(Slow(3.0))
    with pytest.raises(LLMUnavailable, match=r"no answer within timeout_s=0.5"):
        make_client(server, timeout_s=0.5, max_retries=0).preflight()


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True,
                          text=True, timeout=60)  # fmt: skip


def test_importing_the_module_does_not_import_litellm() -> None:
    run = _run_python("""
        import sys
        import workers.proposers.llm_client
        print("litellm" in sys.modules)
    """)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


@pytest.mark.slow
def test_no_network_beyond_the_configured_server(server: ScriptedLLMServer) -> None:
    """Import, client creation and a call reach only 127.0.0.1: no price map, telemetry or callbacks."""
    server.script(Reply("local only"))
    run = _run_python(f"""
        import json, os, socket
        seen = []
        real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo
        def connect(self, address):
            seen.append(repr(address))
            return real_connect(self, address)
        def getaddrinfo(host, *args, **kwargs):
            seen.append(repr(host))
            return real_getaddrinfo(host, *args, **kwargs)
        socket.socket.connect, socket.getaddrinfo = connect, getaddrinfo
        os.environ.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
        os.environ["{KEY_ENV}"] = "sk-test"
        from workers.proposers.llm_client import LLMClient, LLMConfig
        call = LLMClient(LLMConfig(model="openai/test-model", api_base="{server.api_base}",
                                   api_key_env="{KEY_ENV}", timeout_s=5, max_retries=0)).complete("p")
        print(json.dumps({{"status": call.status, "seen": seen}}))
    """)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["status"] == "ok"
    assert result["seen"] and all("127.0.0.1" in a for a in result["seen"]), result["seen"]


def test_a_local_server_needs_no_key(server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24 point 8: an OpenAI-compatible server at api_base, no key variable named and none set."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.script(Reply("hello"))
    call = make_client(server, api_key_env=None).complete("hi")
    assert call.status == "ok", call.reason
    assert server.chat_requests()[0].headers["Authorization"] == "Bearer no-key"


def test_a_key_given_by_the_caller_is_sent(
    server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 point 12: the driver reads the key once and hands it over; the variable need not be set here."""
    monkeypatch.delenv(KEY_ENV)
    server.script(Reply("hello"))
    client = LLMClient(
        LLMConfig(model="openai/test-model", api_base=server.api_base, api_key_env=KEY_ENV),
        api_key="sk-from-driver",
    )
    assert client.complete("hi").status == "ok"
    assert server.chat_requests()[0].headers["Authorization"] == "Bearer sk-from-driver"


@pytest.mark.slow
def test_a_deadline_cuts_a_hanging_request_and_skips_retries(server: ScriptedLLMServer) -> None:
    """Issue 24 point 7: a task's requests end by its deadline, so the task returns what it paid for."""
    import time

    server.script(HttpError(500))
    call = make_client(server, timeout_s=10.0, backoff_s=20.0).complete("hi", deadline=time.time() + 12.0)
    assert call.status == "server_error" and "no time left in the task" in call.reason, call
    assert len(server.chat_requests()) == 1
    server.script(Slow(30.0))
    start = time.time()
    call = make_client(server, timeout_s=60.0).complete("hi", deadline=start + 8.0)
    assert call.status == "timeout" and time.time() - start < 20.0, call
