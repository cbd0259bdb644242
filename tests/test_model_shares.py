"""The rotation of several models (beamsearch/model_shares.py): the share rule, who asks what, the counts,
a model taken out, its saved state; with results made here and a stand-in for the one-line check."""

from __future__ import annotations

import pytest

from beamsearch.model_shares import OUT_AFTER, ModelRotation, failed_task, share_floor, shares
from beamsearch.records.config import SearchConfig
from beamsearch.records.llm import Exchange, LLMCall, ModelEndpoint, ModelsState, ModelStats
from beamsearch.records.schema import Kernel, RunSpec, Timing, TimingResult, Verdict
from beamsearch.records.state import BeamEntry, BeamState, Task, TaskResult, VerifyTry
from workers.proposers.llm_client import LLMUnavailable

MODELS = ["openai/good", "openai/garbage", "openai/slow"]
SPEC = RunSpec(problem_path="p.py", device="cpu", shapes="small")
PARENT = BeamEntry(id="input", kernel=Kernel(source="k0", origin="input"), ranked_ms=1.0, round=0)


def config(models: list[str] = MODELS) -> SearchConfig:
    return SearchConfig(problem="p", llm=models[0], models=[ModelEndpoint(model=m, api_base=f"http://h/{m}")
                                                            for m in models] if len(models) > 1 else [])  # fmt: skip


def task(i: int, round_: int = 1, **kw: object) -> Task:
    return Task(
        id=f"r{round_}-t{i}", round=round_, direction=i, parent=PARENT, spec=SPEC, config=config(), **kw
    )


def answered(text: str = "```python\n...```") -> Exchange:
    return Exchange(purpose="optimize", prompt="p", call=LLMCall(status="ok", text=text, prompt_tokens=10,
                                                                completion_tokens=5))  # fmt: skip


PROSE = Exchange(purpose="optimize", prompt="p", call=LLMCall(status="ok", text="prose", prompt_tokens=10,
                                                            completion_tokens=5),
                 parse_error="the reply has no ```python code block")  # fmt: skip


def no_reply(status: str = "server_error") -> Exchange:
    return Exchange(purpose="optimize", prompt="p", call=LLMCall(status=status, reason="HTTP 500: down"))


def result(t: Task, status: str = "ok", ms: float | None = 0.5, exchanges: list[Exchange] | None = None,
           from_task: str = "") -> TaskResult:  # fmt: skip
    kernel = Kernel(source=f"k-{t.id}", origin="llm") if status not in ("no_proposal", "failed") else None
    tries = [VerifyTry(kernel=kernel, verdict=Verdict(passed=status == "ok", reason="", kernel_path="k.py", status="ok" if status == "ok"
                                                      else "incorrect"))] if kernel else []  # fmt: skip
    r = TaskResult(task_id=t.id, parent_id="input", round=t.round, direction=t.direction, status=status, reason=status,
                   kernel=kernel, tries=tries, exchanges=exchanges if exchanges is not None else [answered()],
                   from_task=from_task, model=t.model)  # fmt: skip
    if ms is not None and status == "ok":
        t = Timing(median_ms=ms, mean_ms=ms, std_ms=0, min_ms=ms, n=5, warmup_n=1, method="m", device_name="cpu",
                   on_gpu=False, dtype="bf16", shapes="small")  # fmt: skip
        r = r.model_copy(update={"timing": TimingResult(target="k", status="ok", timing=t)})
    return r


def test_equal_shares_until_each_model_has_its_evidence_then_the_rule_with_a_floor() -> None:
    fresh = [ModelStats(model=m, tasks=1) for m in MODELS]
    assert shares(fresh) == pytest.approx({m: 1 / 3 for m in MODELS})
    good = ModelStats(model="a", tasks=6, verified=6, entered_beam=3)
    bad = ModelStats(model="b", tasks=6, failed=6)
    got = shares([good, bad, ModelStats(model="c", tasks=6, verified=2)])
    assert sum(got.values()) == pytest.approx(1.0)
    assert got["a"] > got["c"] > got["b"] >= share_floor(3) == 0.1
    # one out of rotation gets nothing; the others share all
    out = shares([good, bad.model_copy(update={"out_reason": "x"})])
    assert out["b"] == 0.0 and out["a"] == pytest.approx(1.0)
    assert share_floor(20) == pytest.approx(0.025)


def test_tasks_are_spread_by_the_shares_and_keep_their_model_when_handed_out_again() -> None:
    rotation = ModelRotation(ModelsState(), config())
    models = [rotation.assign(task(i)).model for i in range(6)]
    assert models == MODELS * 2  # equal shares: in turn
    assert rotation.assign(task(4)).model == models[4]  # a retry asks the same model
    # a kernel handed back asks the model whose reply held it; a knob variant the largest share's
    back = task(9, from_task="r1-t1", kernel=Kernel(source="kb", origin="llm"))
    assert rotation.assign(back).model == "openai/garbage"
    variant = Task(id="r1-u0", round=1, direction=0, parent=PARENT, spec=SPEC, config=config(),
                   kernel=Kernel(source="kv", origin="tuner"))  # fmt: skip
    assert rotation.assign(variant).model == "openai/good" and "r1-u0" not in rotation.assigned


def test_one_model_is_left_alone() -> None:
    rotation = ModelRotation(ModelsState(), config(["openai/one"]))
    assert (
        rotation.assign(task(0)).model == "" and rotation.state() == ModelsState() and rotation.table() == []
    )


def test_the_counts_follow_the_results_and_the_shares_move_toward_the_good_model() -> None:
    rotation = ModelRotation(ModelsState(), config())
    events: list[dict] = []
    made: list[TaskResult] = []
    for round_ in (1, 2, 3):
        tasks = [rotation.assign(task(i, round_)) for i in range(6)]
        results = []
        for t in tasks:
            r = {"openai/good": result(t, "ok", 0.5 - 0.01 * round_ - 0.001 * t.direction),
                 "openai/garbage": result(t, "no_proposal", exchanges=[PROSE, PROSE]),
                 "openai/slow": result(t, "rejected")}[t.model]  # fmt: skip
            assert rotation.watch(r, t.config, lambda kind, **d: events.append({"event": kind, **d})) == ""
            results.append(r)
        good = [r for r in results if r.model == "openai/good"]
        made += good
        beam = [
            BeamEntry(id=r.task_id, kernel=r.kernel, ranked_ms=r.ranked_ms, round=round_) for r in good[:1]
        ]
        rotation.end_round(round_, results, beam)
        rotation.end_round(round_, results, beam)  # a round is counted once
    stats = {s.model: s for s in rotation.table()}
    good, garbage, slow = stats["openai/good"], stats["openai/garbage"], stats["openai/slow"]
    assert good.tasks + garbage.tasks + slow.tasks == 18
    assert (
        good.verified == good.kernels == good.tasks and good.entered_beam == 3 and good.replies == good.tasks
    )
    fastest = min(made, key=lambda r: r.ranked_ms)
    assert (good.best_id, good.best_ms) == (fastest.task_id, fastest.ranked_ms) and fastest.round == 3
    assert good.tokens == 15 * good.tasks
    assert slow.kernels == slow.tasks and slow.verified == 0 and slow.failed == 0
    # the garbage model's tasks in a row with no code took it out, and said why
    assert (
        garbage.out_reason.startswith(f"{OUT_AFTER} tasks in a row got no usable kernel")
        and garbage.share == 0
    )
    (out,) = [e for e in events if e["event"] == "model_out"]
    assert out["model"] == "openai/garbage" and out["left"] == ["openai/good", "openai/slow"]
    assert good.share > slow.share >= share_floor(2)
    later = [rotation.assign(task(i, 4)).model for i in range(10)]
    assert later.count("openai/good") > later.count("openai/slow") >= 1 and "openai/garbage" not in later


def test_a_model_that_does_not_answer_is_out_at_once_and_the_last_one_lost_says_why() -> None:
    down: set[str] = {"openai/slow"}

    def check(c: SearchConfig, model: str) -> None:
        if model in down:
            raise LLMUnavailable(f"LLM {model!r} is unavailable: the address is unreachable")

    rotation = ModelRotation(ModelsState(), config(), check=check)
    events: list[dict] = []
    tasks = [rotation.assign(task(i)) for i in range(3)]
    said = rotation.watch(result(tasks[2], "no_proposal", exchanges=[no_reply()]), tasks[2].config,
                          lambda kind, **d: events.append(d))  # fmt: skip
    assert said == "" and "unreachable" in rotation.stats["openai/slow"].out_reason
    assert rotation.active == ["openai/good", "openai/garbage"] and events[0]["model"] == "openai/slow"
    down |= {"openai/good", "openai/garbage"}
    rotation.watch(
        result(tasks[0], "no_proposal", exchanges=[no_reply()]), tasks[0].config, lambda *a, **d: None
    )
    last = rotation.watch(
        result(tasks[1], "no_proposal", exchanges=[no_reply()]), tasks[1].config, lambda *a, **d: None
    )
    assert last.startswith("every model is out of rotation: openai/good: ") and "openai/slow: " in last
    # offline after that (the driver drops the model): nothing more to say
    assert rotation.watch(result(tasks[1], "no_proposal"), tasks[1].config.model_copy(update={"llm": None}),
                          lambda *a, **d: None) == ""  # fmt: skip


def test_the_saved_state_brings_back_the_shares_counts_and_assignments(tmp_path) -> None:
    rotation = ModelRotation(ModelsState(), config())
    tasks = [rotation.assign(task(i)) for i in range(6)]
    results = [result(t, "ok" if t.model == "openai/good" else "rejected") for t in tasks]
    rotation.end_round(1, results, [])
    state = BeamState(config=config(), problem="p", spec=SPEC, models=rotation.state())
    path = tmp_path / "state.json"
    path.write_text(state.model_dump_json())
    again = ModelRotation(BeamState.model_validate_json(path.read_text()).models, config())
    assert again.table() == rotation.table() and again.credit == rotation.credit
    assert [again.assign(task(i, 2)).model for i in range(4)] == [
        rotation.assign(task(i, 2)).model for i in range(4)
    ]
    assert again.assign(task(1)).model == tasks[1].model
    # a resumed round's results, their assignment made by the stopped session, count by the model they name
    fresh = ModelRotation(ModelsState(), config())
    fresh.end_round(1, results, [])
    assert fresh.table() == rotation.table()


def test_an_old_state_file_loads_with_no_models() -> None:
    old = BeamState(config=SearchConfig(problem="p", llm="openai/x"), problem="p", spec=SPEC).model_dump()
    del old["models"], old["config"]["models"], old["config"]["samples"]
    state = BeamState.model_validate(old)
    assert state.models == ModelsState() and state.config.endpoints() == [ModelEndpoint(model="openai/x")]


def test_a_reply_that_repeats_earlier_kernels_is_no_failure_of_its_model() -> None:
    t = task(0).model_copy(update={"model": "openai/good"})
    repeat = answered().model_copy(update={"parse_error": "repeats its parent kernel"})
    assert not failed_task(result(t, "no_proposal", exchanges=[repeat, repeat]))
    prose = answered("prose").model_copy(update={"parse_error": "the reply has no ```python code block"})
    assert failed_task(result(t, "no_proposal", exchanges=[prose, prose]))
    assert failed_task(result(t, "no_proposal", exchanges=[no_reply("timeout")]))
