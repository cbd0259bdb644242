"""The beam's pure parts: code identity, planning, duplicates, selection; and the config file."""

from __future__ import annotations

import json

import pytest

from beamsearch.beam import (
    code_hash,
    mark_duplicate,
    mark_same_compiled,
    plan_round,
    screen_above_ms,
    select_beam,
)
from beamsearch.records.config import SearchConfig, load_config_file
from beamsearch.records.schema import Kernel, RunSpec, TimingResult
from beamsearch.records.state import BeamEntry, BeamState, TaskResult

SOURCE = '''
def kernel_function(x):
    """Doc."""
    y = x + 1  # add
    return y
'''


def test_code_hash_ignores_comments_docstrings_and_layout() -> None:
    same = 'def kernel_function(x):\n    y = (x +   1)\n\n\n    return y\n'
    assert code_hash(SOURCE) == code_hash(same)
    assert code_hash(SOURCE) != code_hash(SOURCE.replace("x + 1", "x + 2"))
    assert code_hash("def broken(:\n") == code_hash("def broken(:   \n")  # no crash on bad syntax


def _entry(id_: str, ms: float, source: str = SOURCE, round_: int = 1) -> BeamEntry:
    return BeamEntry(id=id_, kernel=Kernel(source=source, origin="tuner"), ranked_ms=ms, round=round_)


def _state(beam: list[BeamEntry], **config: object) -> BeamState:
    spec = RunSpec(problem_path="/p/problem.py", shapes="small", device="cpu")
    return BeamState(config=SearchConfig(problem="p", **config), problem="p", spec=spec, beam=beam)


def test_plan_is_beam_times_directions_with_stable_ids() -> None:
    state = _state([_entry("a", 1.0), _entry("b", 2.0, SOURCE + "\n#b"), _entry("c", 3.0)], beam_width=2, directions=3)
    tasks = plan_round(state, 4)
    assert [(t.id, t.parent.id, t.direction) for t in tasks] == [
        ("r4-t0", "a", 0), ("r4-t1", "a", 1), ("r4-t2", "a", 2), ("r4-t3", "b", 0), ("r4-t4", "b", 1), ("r4-t5", "b", 2)]
    assert [t.id for t in plan_round(state, 4)] == [t.id for t in tasks]


def test_a_short_beam_shares_the_rounds_tasks_out_over_the_parents_it_has() -> None:
    one = plan_round(_state([_entry("input", 1.0)], beam_width=4, directions=2), 1)
    assert [(t.parent.id, t.direction) for t in one] == [("input", d) for d in range(8)]
    state = _state([_entry("a", 1.0), _entry("b", 2.0, SOURCE + "\n#b"), _entry("c", 3.0, SOURCE + "\n#c")],
                   beam_width=4, directions=2)  # fmt: skip
    assert [(t.parent.id, t.direction) for t in plan_round(state, 2)] == [
        ("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2), ("c", 0), ("c", 1)]


def test_a_replays_tasks_each_take_their_own_recorded_kernel() -> None:
    """A recorded round's kernels belong to no parent: each task replays the one of its place in the round,
    so two parents' first tasks do not both replay the first kernel."""
    state = _state([_entry("a", 1.0), _entry("b", 2.0, SOURCE + "\n#b")], beam_width=2, directions=2,
                   replay="/recorded/run")  # fmt: skip
    assert [(t.parent.id, t.direction) for t in plan_round(state, 3)] == [("a", 0), ("a", 1), ("b", 2), ("b", 3)]
    with_model = state.model_copy(update={"config": state.config.model_copy(update={"llm": "openai/m"})})
    assert [t.direction for t in plan_round(with_model, 3)] == [0, 1, 0, 1]  # a model's: each parent's bottlenecks


def _result(id_: str, ms: float | None, source: str, status: str = "ok", compiled: str | None = None) -> TaskResult:
    from beamsearch.records.schema import Timing

    timing = None
    if ms is not None:
        t = Timing(median_ms=ms, mean_ms=ms, std_ms=0, min_ms=ms, n=5, warmup_n=1, method="m", device_name="cpu",
                   on_gpu=False, dtype="bf16", shapes="small")  # fmt: skip
        timing = TimingResult(target="k", status="ok", timing=t, compiled_hash=compiled)
    return TaskResult(task_id=id_, parent_id="input", round=1, direction=0, status=status, reason="",
                      kernel=Kernel(source=source, origin="tuner"), timing=timing)  # fmt: skip


def test_duplicates_are_marked_with_the_first_holder() -> None:
    seen: dict[str, str] = {}
    first = mark_duplicate(_result("r1-t0", 1.0, SOURCE), seen)
    second = mark_duplicate(_result("r1-t1", 0.5, SOURCE.replace("# add", "")), seen)
    assert first.status == "ok"
    assert second.status == "duplicate" and "r1-t0" in second.reason
    assert mark_duplicate(first, seen).status == "ok"  # a result seen again (resume) is not its own duplicate


def test_select_keeps_the_fastest_distinct_codes() -> None:
    beam = [_entry("input", 5.0, SOURCE, round_=0)]
    results = [
        _result("r1-t0", 4.0, SOURCE + "\nA = 1"),
        _result("r1-t1", 3.0, SOURCE + "\nA = 1  # same code, faster measurement"),
        _result("r1-t2", 1.0, SOURCE + "\nB = 1", status="suspect"),  # faster than physics: never kept
        _result("r1-t3", None, SOURCE + "\nC = 1", status="rejected"),
        _result("r1-t4", 4.5, SOURCE + "\nD = 1"),
    ]
    kept = select_beam(beam, results, width=3)
    assert [e.id for e in kept] == ["r1-t1", "r1-t4", "input"]
    assert [e.id for e in select_beam(beam, results, width=1)] == ["r1-t1"]


def test_the_screen_is_the_slowest_kernel_a_full_beam_would_keep_with_a_margin() -> None:
    beam = [_entry("input", 5.0, SOURCE, round_=0)]
    results = [_result("r1-t0", 4.0, SOURCE + "\nA = 1"), _result("r1-t1", 9.0, SOURCE + "\nB = 1", status="rejected")]
    assert screen_above_ms(beam, results, width=3, ratio=1.2) is None  # two kernels: any timed one enters
    results.append(_result("r1-t2", 6.0, SOURCE + "\nC = 1"))
    assert screen_above_ms(beam, results, width=3, ratio=1.2) == pytest.approx(7.2)
    results.append(_result("r1-t3", 2.0, SOURCE + "\nD = 1"))  # a faster result pushes r1-t2 out
    assert screen_above_ms(beam, results, width=3, ratio=1.2) == pytest.approx(6.0)
    assert screen_above_ms(beam, results, width=3, ratio=None) is None


def test_same_compiled_code_keeps_only_the_faster_kernel() -> None:
    fastest: dict[str, tuple[str, float]] = {}
    first = mark_same_compiled(_result("r1-t0", 1.0, SOURCE + "\nA = 1", compiled="c1"), fastest)
    slower = mark_same_compiled(_result("r1-t1", 1.2, SOURCE + "\nB = 1", compiled="c1"), fastest)
    faster = mark_same_compiled(_result("r1-t2", 0.9, SOURCE + "\nC = 1", compiled="c1"), fastest)
    other = mark_same_compiled(_result("r1-t3", 2.0, SOURCE + "\nD = 1", compiled="c2"), fastest)
    unknown = [mark_same_compiled(_result(f"r1-t{k}", 2.0, SOURCE + f"\nE = {k}"), fastest) for k in (4, 5)]
    assert first.status == faster.status == other.status == "ok" and all(u.status == "ok" for u in unknown)
    assert slower.status == "duplicate" and "same compiled code as r1-t0" in slower.reason
    assert fastest == {"c1": ("r1-t2", 0.9), "c2": ("r1-t3", 2.0)}
    assert mark_same_compiled(faster, fastest).status == "ok"  # seen again on resume: not its own duplicate
    # The beam holds one kernel per compiled code, the fastest, even where sources differ and the slower
    # one got there first (an earlier round, or marked before the faster one arrived).
    beam = [_entry("input", 5.0, SOURCE, round_=0).model_copy(update={"compiled_hash": "c1"})]
    kept = select_beam(beam, [faster, other, *unknown], width=5)
    assert [e.id for e in kept] == ["r1-t2", "r1-t3", "r1-t4", "r1-t5"]


def test_config_file_json_and_toml(tmp_path) -> None:
    (tmp_path / "c.json").write_text(json.dumps({"problem": "43", "beam_width": 3}))
    (tmp_path / "c.toml").write_text('problem = "43"\nrounds = 2\n')
    assert load_config_file(tmp_path / "c.json") == {"problem": "43", "beam_width": 3}
    assert SearchConfig(**load_config_file(tmp_path / "c.toml")).rounds == 2
    (tmp_path / "bad.json").write_text(json.dumps({"beam_widht": 3}))
    with pytest.raises(ValueError, match="unknown options.*beam_widht"):
        load_config_file(tmp_path / "bad.json")


def test_summary_table_gives_no_pytorch_ratio_for_interpreter_times() -> None:
    from rich.console import Console

    from beamsearch.display import _summary_table
    from beamsearch.records.state import Baseline, Summary

    def render(device: str) -> str:
        spec = RunSpec(problem_path="/p/problem.py", shapes="small", device=device)
        summary = Summary(problem="p", config=SearchConfig(problem="p"), spec=spec, versions={}, gpu_name="",
                          baselines=[Baseline(label="eager", target="eager", median_ms=0.05, status="ok")],
                          input_ms=120.0, rounds=[], best_id="r1-t0", best_ms=40.0, best_round=1,
                          speedup_vs_input=3.0, speedup_vs_eager=None, speedup_vs_compile=None, pct_of_floor=None,
                          candidates=2, candidates_ok=2, tokens=0, cost_usd=0.0, wall_s=1.0, gpu_measure_s=0.0)  # fmt: skip
        console = Console(width=120, record=True)
        console.print(_summary_table(summary))
        return console.export_text()

    cpu, gpu = render("cpu"), render("cuda")
    assert "3.00x faster" in cpu and "0.00x" not in cpu and "interpreter" in cpu
    assert "0.00x faster" in gpu  # on a GPU the ratio to eager is shown, however bad


def test_a_beam_entry_keeps_its_candidates_profile_even_unavailable_but_not_a_skipped_one() -> None:
    from beamsearch.beam import entry_of
    from beamsearch.records.schema import Profile

    failed = Profile(available=False, reason="ncu timed out")
    assert entry_of(_result("r1-t0", 1.0, SOURCE).model_copy(update={"profile": failed})).profile == failed  # not retried on resume
    skipped = Profile(available=False, skipped=True, reason="not profiled")
    assert entry_of(_result("r1-t0", 1.0, SOURCE).model_copy(update={"profile": skipped})).profile is None


def test_a_state_saved_before_ranked_ms_had_its_name_still_resumes() -> None:
    """state.json files written before the rename call a beam entry's ranking time ``median_ms``."""
    state = _state([_entry("r1-t0", 1.0), _entry("r1-t1", 2.0)])
    state = state.model_copy(update={"input": _entry("input", 3.0, round_=0)})
    old = state.model_dump_json().replace('"ranked_ms"', '"median_ms"')
    assert '"median_ms":1.0' in old.replace(" ", "") and '"ranked_ms"' not in old
    loaded = BeamState.model_validate_json(old)
    assert loaded == state and [e.ranked_ms for e in loaded.beam] == [1.0, 2.0] and loaded.input.ranked_ms == 3.0


def test_a_seed_far_slower_than_the_fastest_start_takes_no_beam_place_and_says_how_much() -> None:
    """82 conv depthwise on an H200: a Triton convolution template seed at 40.3 ms joined the beam beside the
    1.41 ms input and took half of the search's candidates."""
    from beamsearch.compiler_seeds import START_KEEP_RATIO, report_kept, within_reach

    start = [_entry("input", 1.41, SOURCE, round_=0)]
    template = _result("compiler-seed-multi_kernel", 40.3, SOURCE + "\nTEMPLATE = 1\n")
    near = _result("compiler-seed-nd_tiling", 1.41 * START_KEEP_RATIO, SOURCE + "\nND = 1\n")
    assert [r.task_id for r in within_reach([template, near], start)] == ["compiler-seed-nd_tiling"]
    beam = select_beam(start, within_reach([template, near], start), width=4)
    assert [e.id for e in beam] == ["input", "compiler-seed-nd_tiling"]
    events: list[dict] = []
    report_kept([template, near], beam, lambda kind, **data: events.append(data))
    assert events[0]["seed"] == "compiler-seed-multi_kernel" and events[0]["reason"] == "28.58x the fastest start's time"
    assert events[-1] == {"status": "in the beam", "seed": "compiler-seed-nd_tiling", "median_ms": near.ranked_ms}
    # a seed that is the fastest start brings the bar down for the others: the slow input stays (it is the beam's)
    fast = _result("compiler-seed", 0.2, SOURCE + "\nFAST = 1\n")
    assert [r.task_id for r in within_reach([fast, near], start)] == ["compiler-seed"]
