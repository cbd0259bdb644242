"""Kernels a reply held besides its task's own (beamsearch/handback.py): where each goes, pure records only."""

from __future__ import annotations

from beamsearch.beam import code_hash, plan_round
from beamsearch.handback import Handback
from beamsearch.records.config import SearchConfig
from beamsearch.records.llm import Exchange, LLMCall
from beamsearch.records.schema import Kernel, RunSpec, Verdict
from beamsearch.records.state import BeamEntry, BeamState, PendingKernel, TaskResult, VerifyTry

PARENT = "def kernel_function(x):\n    return x\n"


def _kernel(body: str) -> Kernel:
    return Kernel(source=f"def kernel_function(x):\n    return {body}\n", origin="llm")


def _round(places: int, finished: dict[str, TaskResult] | None = None,
           waiting: list[PendingKernel] = ()) -> tuple[BeamState, Handback]:  # fmt: skip
    spec = RunSpec(problem_path="/p/problem.py", shapes="small", device="cpu")
    entry = BeamEntry(id="input", kernel=Kernel(source=PARENT, origin="input"), ranked_ms=1.0, round=0)
    state = BeamState(config=SearchConfig(problem="p", beam_width=1, directions=2), problem="p", spec=spec,
                      beam=[entry])  # fmt: skip
    tasks = {t.id: t for t in plan_round(state, 1)}
    return state, Handback(state, 1, tasks, places, list(waiting), finished or {})


OK = Verdict(passed=True, status="ok", reason="", kernel_path="k")


def _result(
    task_id: str, kernel: Kernel, handed_back: list[Kernel] = (), first: Kernel | None = None
) -> TaskResult:
    """A finished candidate; ``first``: the kernel it started from, when refinement changed it."""
    tries = [VerifyTry(kernel=first or kernel, verdict=OK)]
    return TaskResult(task_id=task_id, parent_id="input", round=1, direction=1, status="ok", reason="",
                      kernel=kernel, tries=tries, handed_back=list(handed_back))  # fmt: skip


def test_handed_back_kernels_take_the_places_left_then_wait_for_the_next_round() -> None:
    b, c = _kernel("x * 2"), _kernel("x * 3")
    b_again = Kernel(source=b.source.replace("return", "# the same\n    return"), origin="llm")
    state, handback = _round(places=1)
    notes, reused = handback.take(_result("r1-t1", _kernel("x + 1"), [b, c, b_again]), seen={})
    assert notes == ["r1-t1-k1: tried in round 1", "r1-t1-k2: no place left in round 1; waits for the next round",
                     "r1-t1-k3 not tried: same code as r1-t1-k1, handed back too"] and reused == []  # fmt: skip
    task = handback.next_task()
    assert (task.id, task.kernel, task.from_task) == ("r1-t1-k1", b, "r1-t1")
    assert (task.direction, task.parent.id) == (1, "input")  # the reply's task's
    assert handback.next_task() is None and handback.taken == 1
    (waiting,) = handback.pending
    assert (waiting.id, waiting.kernel, waiting.from_task) == ("r1-t1-k2", c, "r1-t1")


def test_a_kernel_the_run_has_seen_is_not_tried_again() -> None:
    b = _kernel("x * 2")
    _, handback = _round(places=4)
    notes, _ = handback.take(_result("r1-t0", _kernel("x + 1"), [b]), seen={code_hash(b.source): "r0-t3"})
    assert notes == ["r1-t0-k1 not tried: same code as r0-t3"] and handback.next_task() is None


def test_a_kernel_waiting_from_an_earlier_round_is_not_handed_back_twice() -> None:
    b = _kernel("x * 2")
    parent = BeamEntry(id="input", kernel=Kernel(source=PARENT, origin="input"), ranked_ms=1.0, round=0)
    earlier = PendingKernel(id="r0-t9-k1", kernel=b, parent=parent, direction=0, from_task="r0-t9")
    _, handback = _round(places=4, waiting=[earlier])
    notes, _ = handback.take(_result("r1-t0", _kernel("x + 1"), [b]), seen={})
    assert notes == ["r1-t0-k1 not tried: same code as r0-t9-k1, handed back too"]
    assert handback.pending == [earlier]


def test_a_resumed_round_reuses_the_handed_back_candidates_that_finished() -> None:
    """Refined after a failed try, the finished candidate's final kernel differs: it is the one it started
    from that must match."""
    b, c = _kernel("x * 2"), _kernel("x * 3")
    done = _result("r1-t0-k1", _kernel("x * 2.0"), first=b)
    _, handback = _round(places=1, finished={"r1-t0-k1": done})
    notes, reused = handback.take(_result("r1-t0", _kernel("x + 1"), [b, c]), seen={})
    assert reused == [done] and handback.next_task() is None
    assert notes == [
        "r1-t0-k1: tried in round 1",
        "r1-t0-k2: no place left in round 1; waits for the next round",
    ]


def test_only_a_planned_task_hands_kernels_back() -> None:
    _, handback = _round(places=4)
    notes, _ = handback.take(_result("r1-t0-k1", _kernel("x + 1"), [_kernel("x * 2")]), seen={})
    assert notes == [] and handback.next_task() is None


def _timed_out(reply: str) -> TaskResult:
    exchange = Exchange(purpose="optimize", prompt="p", call=LLMCall(status="ok", text=reply))
    return TaskResult(task_id="r1-t0", parent_id="input", round=1, direction=0, status="failed",
                      reason="task timed out after 60 s; its worker was restarted", exchanges=[exchange])  # fmt: skip


def test_a_task_cut_off_by_its_timeout_hands_back_its_replys_other_kernels() -> None:
    """The kernel it was trying (the first new one) may be what hung: not again; the others are paid for."""
    a, b, c = (_kernel(body).source for body in ("x * 2", "x * 3", "x * 4"))
    reply = "".join(f"```python\n{s}```\n" for s in (PARENT, a, b, b, c))
    _, handback = _round(places=4)
    result = handback.recover(_timed_out(reply), seen={code_hash(PARENT): "input"})
    assert [k.source for k in result.handed_back] == [b, c]
    assert all(k.parent_hash == Kernel(source=PARENT, origin="input").hash for k in result.handed_back)
    assert result.reply_notes == [
        "the task failed while trying the reply's first new kernel (block at line 5); its 2 other new kernel(s) "
        "are handed back"
    ]
    notes, _ = handback.take(result, seen={})
    assert notes == ["r1-t0-k1: tried in round 1", "r1-t0-k2: tried in round 1"]


def test_nothing_is_recovered_from_a_result_that_did_not_fail_or_has_no_reply() -> None:
    _, handback = _round(places=4)
    two = "".join(f"```python\n{_kernel(body).source}```\n" for body in ("x * 2", "x * 3"))
    ok = _timed_out(two).model_copy(update={"status": "ok"})
    assert handback.recover(ok, seen={}) is ok
    prose = _timed_out("no code here")
    assert handback.recover(prose, seen={}) is prose
