"""The LLM path of one task (workers/actor/task.py), with the real client against the scripted server and no
Ray: what the user sees when the model gives nothing usable, what the prompts carry, what is asked again.
These tasks end before any kernel runs, so they are quick on the CPU."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from beamsearch.display import Display
from beamsearch.records.config import SearchConfig
from beamsearch.records.schema import Floor, Kernel, RunSpec, Work
from beamsearch.records.state import BeamEntry, Task
from beamsearch.trace import published_files
from tests.conftest import DATA
from tests.llm_server import HttpError, Reply, Respond, ScriptedLLMServer
from workers.actor import task as task_fns

KEY_ENV = "BEAMSEARCH_TEST_LLM_KEY"
PROBLEM = str(DATA / "scale_rows_problem.py")
SOURCE = (DATA / "search" / "input_kernel.py").read_text()
FLOOR = Floor(work=Work(bytes_moved=1_000_000, flops=0), dram_gbps=3000.0, tflops=700.0, memory_ms=0.25,
              compute_ms=0.0, floor_ms=0.25, bound="memory", peaks_source="test")  # fmt: skip
DIAGNOSIS = json.dumps([{"category": "memory", "summary": "ROWS-TOO-FEW per program"},
                        {"category": "compute", "summary": "MATH-SLOW multiply"}])  # fmt: skip


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test-dummy")
    with ScriptedLLMServer() as s:
        yield s


def make_task(
    server: ScriptedLLMServer, direction: int = 0, history: list | None = None, **config: object
) -> Task:
    settings = dict(problem=PROBLEM, llm="openai/test-model", api_base=server.api_base, api_key_env=KEY_ENV,
                    llm_timeout_s=2.0, llm_retries=0) | config  # fmt: skip
    parent = BeamEntry(id="input", kernel=Kernel(source=SOURCE, origin="input"), ranked_ms=4.8, round=0)
    return Task(id=f"r1-t{direction}", round=1, direction=direction, parent=parent, floor=FLOOR,
                spec=RunSpec(problem_path=PROBLEM, shapes="small", device="cpu"), config=SearchConfig(**settings),
                history=history or [])  # fmt: skip


def prompts_of(server: ScriptedLLMServer, marker: str) -> list[str]:
    texts = ["\n".join(m["content"] for m in r.body["messages"]) for r in server.chat_requests()]
    return [t for t in texts if marker in t]


@pytest.mark.slow
def test_the_cause_of_no_kernel_is_in_the_reason_the_console_and_the_folder(server) -> None:
    """Point 1: the reply's fault, not "see the exchanges", in the reason and the console's line; the
    folder says what came back instead of an empty opt_reply.txt; a panel in a terminal still shows the
    line, and counts the candidate as not ok."""
    server.script(Reply(DIAGNOSIS), Reply("Sorry, I cannot help with that."))
    prose = task_fns.run_task(make_task(server), task_fns.WorkerContext("t"))
    assert prose.status == "no_proposal"
    assert "has no ```python code block" in prose.reason and "see the exchanges" not in prose.reason

    server.script(Reply(DIAGNOSIS), HttpError(500, "upstream exploded"))
    down = task_fns.run_task(make_task(server), task_fns.WorkerContext("t"))
    assert "no reply: server_error" in down.reason and "upstream exploded" in down.reason
    files = published_files(down, "p")
    assert "no reply: server_error" in files["opt_reply.txt"]
    calls = files["llm_calls.txt"].splitlines()
    assert (
        calls[0].startswith("diagnose  ok") and "server_error" in calls[1] and "upstream exploded" in calls[1]
    )

    screen = io.StringIO()
    display = Display(False, lambda event: None, Console(file=screen, force_terminal=True, width=200))
    assert display.live is not None
    display.round_start(1, 2, 0)
    display.candidate(prose)
    display.candidate(down)
    display.close()
    text = screen.getvalue()
    assert "has no ```python code block" in text and "no reply: server_error" in text
    assert display.not_ok[prose.round] == {"no_proposal": 2}


def test_the_rewrite_prompt_carries_the_parents_time_and_the_floor(server) -> None:
    """Point 4: not "Measured time: unknown"."""
    server.script(Reply(DIAGNOSIS), Reply("no code"))
    task_fns.run_task(make_task(server), task_fns.WorkerContext("t"))
    prompt = prompts_of(server, "# The bottleneck")[0]
    assert "Measured time: 4.8000 ms (in Triton's interpreter on a CPU" in prompt  # point 12: said so
    assert "floor 0.2500 ms (memory-bound)" in prompt
    diagnosis = prompts_of(server, "what limits its speed")[0]
    assert "Measured time: 4.8000 ms (in Triton's interpreter on a CPU" in diagnosis


def test_a_failed_diagnosis_is_asked_for_again_by_the_next_task(server) -> None:
    """Point 3: a 429 on the diagnosis gives the rules' stand-in for this task only."""
    ctx = task_fns.WorkerContext("t")
    server.script(HttpError(429, "slow down"), Reply("no code"))
    first = task_fns.run_task(make_task(server), ctx)
    assert first.diagnosis.source == "rules"
    server.script(Reply(DIAGNOSIS), Reply("no code"))
    second = task_fns.run_task(make_task(server, direction=1), ctx)
    assert second.diagnosis.source == "llm" and len(prompts_of(server, "what limits its speed")) == 2
    server.script(Reply("no code"))  # a diagnosis that worked is kept
    task_fns.run_task(make_task(server), ctx)
    assert len(prompts_of(server, "what limits its speed")) == 2


def test_without_a_bottleneck_the_directions_ask_for_different_changes(server) -> None:
    """Point 3: no profile on the CPU and no diagnosis: the two directions still send different asks."""
    server.default = Respond(
        lambda p: HttpError(429, "no") if "what limits its speed" in p else Reply("no code")
    )
    for direction in (0, 1):
        task_fns.run_task(make_task(server, direction=direction), task_fns.WorkerContext("t"))
    first, second = (
        p.split("# The bottleneck")[-1][:400]
        for p in prompts_of(server, "# The bottleneck")
        if "had no usable kernel" not in p
    )
    assert first != second


def test_a_repeated_kernel_is_asked_for_again_and_said_in_the_reason(server) -> None:
    """Point 5: a reply that repeats the parent gets one more request saying so; a second repeat is the reason."""
    changed = SOURCE.replace("BLOCK_R = 4", "BLOCK_R = 8")
    server.script(Reply(DIAGNOSIS), Reply(f"```python\n{SOURCE}```"), Reply(f"```python\n{SOURCE}```"))
    task = make_task(server)
    result = task_fns.run_task(task, task_fns.WorkerContext("t"))
    assert result.status == "no_proposal" and "repeats its parent kernel" in result.reason, result.reason
    again = prompts_of(server, "# The bottleneck")[-1]
    assert "same code as its parent kernel" in again

    llm = task_fns.make_llm(task.config, task.spec)
    server.script(Reply(f"```python\n{SOURCE}```"), Reply(f"```python\n{changed}```"))
    (kernel,) = llm.propose(task.parent.kernel, task_fns.rules_diagnosis(None), [])
    assert "BLOCK_R = 8" in kernel.source
    assert [e.parse_error for e in llm.exchanges] == ["repeats its parent kernel", ""]


def test_a_rejected_kernels_reflection_is_its_lesson(server) -> None:
    """Point 9: the reflection paid for on a rejected kernel is the lesson later prompts see, with its
    suggestion for the next try; not a fixed string."""
    wrong = SOURCE.replace("(x * w)", "(x * w * 2.0)")

    def model(prompt: str) -> Reply:
        if "what limits its speed" in prompt:
            return Reply(DIAGNOSIS)
        if "Look back at it" in prompt:
            return Reply(
                json.dumps({"expected": "e", "observed": "o", "lesson": "LESSON-R", "try_next": "TRY-R"})
            )
        return Reply(f"```python\n{wrong}```")

    server.default = Respond(model)
    result = task_fns.run_task(make_task(server, refine_tries=0), task_fns.WorkerContext("t"))
    assert result.status == "rejected", result.reason
    assert result.lesson == "LESSON-R Try next: TRY-R"


def test_a_reply_without_code_gets_one_repair_request(server) -> None:
    """Point 12: like a diagnosis, a rewrite with no usable code is asked for once more, quoting the error."""
    changed = SOURCE.replace("BLOCK_R = 4", "BLOCK_R = 8")
    server.script(Reply("I would use wider blocks."), Reply(f"```python\n{changed}```"))
    task = make_task(server)
    llm = task_fns.make_llm(task.config, task.spec)
    (kernel,) = llm.propose(task.parent.kernel, task_fns.rules_diagnosis(None), [])
    assert "BLOCK_R = 8" in kernel.source
    first, second = llm.exchanges
    assert "has no ```python code block" in first.parse_error and not second.parse_error
    assert "had no usable kernel" in second.prompt and "I would use wider blocks." in second.prompt


def _blocks(*sources: str) -> str:
    return "Options:\n" + "".join(f"Option {i}:\n```python\n{s}```\n" for i, s in enumerate(sources, 1))


def test_every_new_kernel_of_a_reply_is_proposed_and_the_repeats_are_noted(server) -> None:
    """Point 10: each new kernel of a reply, in its order; a kernel repeated in the reply, or repeating the
    parent, is noted and not asked for again (the reply had new ones)."""
    a, b = (SOURCE.replace("BLOCK_R = 4", f"BLOCK_R = {n}") for n in (8, 2))
    server.script(Reply(_blocks(a, a, b, SOURCE)))
    task = make_task(server)
    llm = task_fns.make_llm(task.config, task.spec)
    kernels = llm.propose(task.parent.kernel, task_fns.rules_diagnosis(None), [])
    assert [k.source for k in kernels] == [a, b]
    assert "(kernel 1 of 4 in the reply" in kernels[0].note and "(kernel 3 of 4 in the reply" in kernels[1].note
    assert llm.reply_notes == [
        "kernel 2 of the reply repeats kernel 1 of the same reply: not tried again",
        "kernel 4 of the reply repeats its parent kernel: not tried again",
    ]
    assert len(server.chat_requests()) == 1 and not llm.exchanges[0].parse_error


def test_a_reply_repeating_one_kernel_twice_gives_one_kernel_and_a_note(server) -> None:
    a = SOURCE.replace("BLOCK_R = 4", "BLOCK_R = 8")
    server.script(Reply(_blocks(a, a + "\n")))  # the same code, up to trailing whitespace
    task = make_task(server)
    llm = task_fns.make_llm(task.config, task.spec)
    (kernel,) = llm.propose(task.parent.kernel, task_fns.rules_diagnosis(None), [])
    assert kernel.source == a
    assert llm.reply_notes == ["kernel 2 of the reply repeats kernel 1 of the same reply: not tried again"]


def test_at_most_four_kernels_of_a_reply_are_proposed_and_the_rest_noted(server) -> None:
    variants = [SOURCE.replace("BLOCK_R = 4", f"BLOCK_R = {n}") for n in (1, 2, 8, 16, 32, 64)]
    server.script(Reply(_blocks(*variants)))
    task = make_task(server)
    llm = task_fns.make_llm(task.config, task.spec)
    kernels = llm.propose(task.parent.kernel, task_fns.rules_diagnosis(None), [])
    assert [k.source for k in kernels] == variants[:4]
    assert llm.reply_notes == [f"kernel {i} of the reply not tried: at most 4 kernels of a reply are" for i in (5, 6)]
