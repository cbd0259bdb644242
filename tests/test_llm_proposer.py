"""The LLM proposer through the real litellm client against the scripted server: recorded replies,
one repair request on bad JSON, garbage and timeouts recorded without losing the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from beamsearch.records.problems import resolve_problem
from beamsearch.records.schema import Bottleneck, Diagnosis, Kernel, Roofline, Verdict
from profiling.peaks import effective_peaks
from tests.conftest import KERNELS, SHARED
from tests.llm_server import Garbage, HttpError, Reply, ScriptedLLMServer, Slow
from workers.proposers.llm import LLMProposer
from workers.proposers.llm_client import LLMClient, LLMConfig
from workers.proposers.rules import rules_diagnosis

KEY_ENV = "BEAMSEARCH_TEST_LLM_KEY"
DIAGNOSIS_REPLY = SHARED / "fixtures" / "kernelagent-traces" / "43_Max_Pooling_3D" / "round_1" / "bottleneck_response.txt"
ROOFLINE = Roofline(compute_sol_pct=90.6, memory_sol_pct=41.9, bottleneck="compute", at_roofline=True,
                    underutilized_below_pct=60, at_roofline_pct=90)  # fmt: skip
GOOD_SOURCE = (KERNELS / "good.py").read_text()


@pytest.fixture
def server():
    with ScriptedLLMServer() as s:
        yield s


@pytest.fixture
def proposer(server, monkeypatch, tmp_path) -> LLMProposer:
    monkeypatch.setenv(KEY_ENV, "sk-test-dummy")
    monkeypatch.setenv("BEAMSEARCH_CACHE_DIR", str(tmp_path))
    client = LLMClient(LLMConfig(model="openai/test-model", api_base=server.api_base, api_key_env=KEY_ENV,
                                 timeout_s=1.0, max_retries=1, backoff_s=0.01))  # fmt: skip
    problem = Path(resolve_problem("43").problem_path).read_text()
    return LLMProposer(client, problem, per_call=2)


def diagnose(proposer: LLMProposer) -> Diagnosis:
    return proposer.diagnose(Kernel(source=GOOD_SOURCE, origin="input"), peaks=effective_peaks("NVIDIA H100 80GB HBM3"),
                             profile=None, roofline=ROOFLINE, floor=None, measured_ms=4.8)  # fmt: skip


def test_diagnosis_from_a_recorded_reply(server, proposer) -> None:
    if not DIAGNOSIS_REPLY.is_file():
        pytest.skip(f"fixtures not found at {DIAGNOSIS_REPLY}")
    server.script(Reply(DIAGNOSIS_REPLY.read_text()))
    diagnosis = diagnose(proposer)
    assert diagnosis.source == "llm" and diagnosis.bottlenecks[0].category == "compute"
    (exchange,) = proposer.exchanges
    assert exchange.purpose == "diagnose" and "kernel_function" in exchange.prompt and exchange.call.prompt_tokens > 0


def test_bad_json_gets_one_repair_request(server, proposer) -> None:
    fixed = '[{"category": "memory", "summary": "loads are uncoalesced"}]'
    server.script(Reply("I think it is memory bound, {category: memory"), Reply(fixed))
    diagnosis = diagnose(proposer)
    assert diagnosis.source == "llm" and diagnosis.bottlenecks[0].summary == "loads are uncoalesced"
    assert [e.purpose for e in proposer.exchanges] == ["diagnose", "repair"]
    assert proposer.exchanges[0].parse_error and not proposer.exchanges[1].parse_error


def test_garbage_twice_falls_back_to_the_roofline_rules(server, proposer) -> None:
    server.script(Reply("no json here"), Reply("still none"))
    diagnosis = diagnose(proposer)
    assert diagnosis.source == "rules" and diagnosis.bottlenecks[0].category == "compute"
    assert all(e.parse_error for e in proposer.exchanges)


def test_rewrites_become_llm_kernels_and_bad_replies_are_recorded(server, proposer) -> None:
    rewritten = GOOD_SOURCE.replace("Good:", "Rewritten:")
    server.script(Reply(f"Here you go.\n```python\n{rewritten}```\n"), Reply("Sorry, I cannot help with that."))
    parent = Kernel(source=GOOD_SOURCE, origin="input")
    kernels = proposer.propose(parent, Diagnosis(bottlenecks=[Bottleneck(category="memory", summary="s")], source="llm"), [])
    (kernel,) = kernels
    assert kernel.origin == "llm" and kernel.parent_hash == parent.hash and "Rewritten:" in kernel.source
    assert "has no ```python code block" in proposer.exchanges[1].parse_error


def test_timeouts_and_errors_give_no_kernel_and_a_record(server, proposer) -> None:
    server.script(Slow(3.0), Slow(3.0), HttpError(500), HttpError(500))
    kernels = proposer.propose(Kernel(source=GOOD_SOURCE, origin="input"), rules_diagnosis(ROOFLINE), [])
    assert kernels == []
    statuses = [e.call.status for e in proposer.exchanges]
    assert statuses == ["timeout", "server_error"]


def test_refine_and_reflect(server, proposer) -> None:
    verdict = Verdict(passed=False, status="incorrect", reason="values: 3 of 720 elements outside atol", kernel_path="k.py")
    server.script(Reply(f"```python\n{GOOD_SOURCE}```"),
                  Reply('{"expected": "wider loads", "observed": "1.2x slower", "lesson": "keep BLOCK 256"}'),
                  Garbage("not_json"), Garbage("not_json"))  # fmt: skip
    broken = Kernel(source=GOOD_SOURCE + "\n# broken\n", origin="llm")  # any other code
    fixed = proposer.refine(broken, verdict)
    assert fixed is not None and fixed.source.strip() == GOOD_SOURCE.strip() and "refined after incorrect" in fixed.note
    reflection = proposer.reflect(Bottleneck(category="memory", summary="s"), parent=broken, child=fixed,
                                  parent_ms=1.0, child_ms=1.2, verdict=None)  # fmt: skip
    assert reflection is not None and reflection.lesson == "keep BLOCK 256"
    assert proposer.reflect(Bottleneck(category="memory", summary="s"), parent=broken, child=fixed,
                            parent_ms=1.0, child_ms=None, verdict=verdict) is None  # fmt: skip


def test_rules_diagnosis_follows_the_roofline() -> None:
    assert rules_diagnosis(ROOFLINE).bottlenecks[0].category == "compute"
    assert rules_diagnosis(None).bottlenecks == []


def test_structured_output_where_supported_and_the_wrapped_reply_parses(server, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-dummy")
    monkeypatch.setenv("BEAMSEARCH_CACHE_DIR", str(tmp_path))
    client = LLMClient(LLMConfig(model="openai/gpt-4o", api_base=server.api_base, api_key_env=KEY_ENV,
                                 timeout_s=2.0, max_retries=0))  # fmt: skip
    proposer = LLMProposer(client, "problem source")
    server.script(Reply('{"bottlenecks": [{"category": "memory", "summary": "strided loads"}]}'))
    diagnosis = diagnose(proposer)
    assert diagnosis.source == "llm" and diagnosis.bottlenecks[0].summary == "strided loads"
    (request,) = server.chat_requests()
    schema = request.body["response_format"]["json_schema"]["schema"]
    assert "bottlenecks" in schema["properties"]


def test_refinement_remembers_the_earlier_tries_and_skips_a_repeat(server, proposer) -> None:
    """Issue 24 point 11: the second refine request lists the first failure; a reply that repeats a kernel
    that already failed gives no kernel to verify again, and says so."""
    first = Kernel(source=GOOD_SOURCE + "\n# first\n", origin="llm")
    second = Kernel(source=GOOD_SOURCE + "\n# second\n", origin="llm")
    v1 = Verdict(passed=False, status="incorrect", reason="FIRST-FAILURE values differ", kernel_path="k.py")
    v2 = Verdict(passed=False, status="compile_failed", reason="SECOND-FAILURE no such name", kernel_path="k.py")
    server.script(Reply(f"```python\n{first.source}```"))
    assert proposer.refine(second, v2, earlier=[(first, v1)]) is None
    prompt = proposer.exchanges[-1].prompt
    assert "Earlier corrections that failed too" in prompt and "FIRST-FAILURE" in prompt
    assert "SECOND-FAILURE" in prompt  # the verdict being fixed
    assert "already failed verification" in proposer.no_kernel_reasons[0]
    assert proposer.exchanges[-1].parse_error.startswith("repeats")
