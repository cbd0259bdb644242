"""What a run settles from its measurements: how many verifications share a GPU, and the bar it is measured against."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from beamsearch.driver import Driver, verifications_that_fit
from beamsearch.records.config import SearchConfig
from beamsearch.records.schema import DeviceFacts, Kernel, Verdict
from beamsearch.records.state import TaskResult, VerifyTry
from beamsearch.trace import TraceWriter
from tests.conftest import DATA


@pytest.mark.parametrize(
    ("peak_gb", "workers", "expected"),
    [
        (20.0, 4, 3),  # 0.9 * 80 - 4 * 3 = 60 GB usable: three 20 GB verifications
        (1.0, 4, 4),  # small problems: one place per worker, no more
        (0.5, 8, 8),
        (100.0, 4, 1),  # larger than the GPU: one at a time, and it retries alone if it runs out
        (31.0, 2, 2),  # 66 GB usable with two workers
    ],
)
def test_verifications_fit_the_gpu_memory_beside_the_workers_spares(peak_gb, workers, expected) -> None:
    assert verifications_that_fit(peak_gb, 80.0, workers) == expected


def _start(peak_gb: float | None) -> TaskResult:
    verdict = Verdict(passed=True, status="ok", reason="all checks passed", kernel_path="k.py", gpu_peak_gb=peak_gb)
    kernel = Kernel(source="def kernel_function(x):\n    return x\n", origin="input")
    return TaskResult(task_id="input", parent_id="", round=0, direction=0, status="ok", reason="",
                      tries=[VerifyTry(kernel=kernel, verdict=verdict)])  # fmt: skip


def _driver(config: SearchConfig, gpu_share: float) -> SimpleNamespace:
    events: list[tuple[str, dict]] = []
    display = SimpleNamespace(event=lambda kind, **data: events.append((kind, data)), events=events)
    return SimpleNamespace(state=SimpleNamespace(config=config), pool=SimpleNamespace(gpu_share=gpu_share), display=display)


def test_the_run_sets_the_places_from_the_starting_kernels_peak_and_says_so() -> None:
    driver = _driver(SearchConfig(problem="p"), gpu_share=0.25)  # four workers on the GPU
    facts = DeviceFacts(floor=None, gpu_name="NVIDIA H100 80GB HBM3", memory_gb=80.0)
    config = Driver._with_verify_slots(driver, _start(20.0), facts)
    assert config.verify_per_gpu == 3
    assert driver.display.events == [("verify_slots", {"verify_per_gpu": 3, "verification_peak_gb": 20.0,
                                                       "gpu_memory_gb": 80.0})]  # fmt: skip


def test_a_users_setting_and_a_cpu_run_are_left_as_they_are() -> None:
    gpu = DeviceFacts(floor=None, gpu_name="NVIDIA H100 80GB HBM3", memory_gb=80.0)
    cpu = DeviceFacts(floor=None, gpu_name="cpu (Triton interpreter)")
    assert Driver._with_verify_slots(_driver(SearchConfig(problem="p", verify_per_gpu=1), 0.25), _start(20.0), gpu).verify_per_gpu == 1
    assert Driver._with_verify_slots(_driver(SearchConfig(problem="p"), 0.0), _start(None), cpu).verify_per_gpu is None


def test_the_bar_is_the_fastest_timed_baseline_and_only_on_a_gpu() -> None:
    from beamsearch.outcome import best_baseline
    from beamsearch.records.state import Baseline

    runs = [Baseline(label="eager", target="eager", median_ms=8.4, status="ok"),
            Baseline(label="compile-max-autotune", target="compile-max-autotune", median_ms=1.3, status="ok"),
            Baseline(label="compile", target="compile", median_ms=None, status="failed", reason="no")]  # fmt: skip
    assert best_baseline(runs, "cuda").label == "compile-max-autotune"
    assert best_baseline(runs, "cpu") is None and best_baseline([], "cuda") is None


class _RecordingDriver(Driver):
    """Stands in for the Driver in ``run._search``: the start settles the places, the rounds note what they
    see; a resume is the Driver's own."""

    seen_by_rounds: list[tuple[int | None, int]] = []

    def __init__(self, state, pool, trace, display, problem, versions) -> None:
        self.state, self.pool, self.trace = state, pool, trace

    def measure_start(self, kernel) -> None:
        self.state = self.state.model_copy(update={"config": self.state.config.model_copy(update={"verify_per_gpu": 3})})

    def run_rounds(self) -> None:
        _RecordingDriver.seen_by_rounds.append((self.state.config.verify_per_gpu, self.state.config.rounds))

    def finish(self) -> SimpleNamespace:
        return SimpleNamespace(best_id="input")


@pytest.mark.parametrize("resumed", [False, True])
def test_the_rounds_use_the_places_the_start_measured(resumed: bool, tmp_path, monkeypatch) -> None:
    """A fresh run's rounds keep what its start measured (the command line left the places to the run); a
    resumed run keeps what its state says, with the options a resume may change."""
    import beamsearch.pool
    import beamsearch.report
    import beamsearch.run as run
    from beamsearch.records.schema import DeviceFacts, RunSpec
    from beamsearch.records.state import BeamState

    facts = DeviceFacts(floor=None, gpu_name="g", shared_bytes=232448)
    pool = SimpleNamespace(call=lambda method, *a: facts if method == "device_facts" else {},
                           start_profiling=lambda: None, shutdown=lambda: None)  # fmt: skip
    monkeypatch.setattr(beamsearch.pool.WorkerPool, "start", staticmethod(lambda workers, gpus: pool))
    monkeypatch.setattr(beamsearch.report, "write_report", lambda out: None)
    monkeypatch.setattr(run, "Driver", _RecordingDriver)
    _RecordingDriver.seen_by_rounds = []
    spec = RunSpec(problem_path=str(tmp_path / "problem.py"), device="cuda", dtype="bf16", shapes="full")
    config = SearchConfig(problem="p", rounds=4)
    previous = None
    if resumed:
        previous = BeamState(config=config.model_copy(update={"verify_per_gpu": 2}), problem="p", spec=spec, round=1)
        config = previous.config.model_copy(update={"rounds": 6})  # as main() merges a resume's options
    display = SimpleNamespace(event=lambda *a, **k: None, close=lambda: None)
    trace = TraceWriter(tmp_path)
    assert run._search(config, previous, None, spec, 4, 1, trace, display, "p") == 0
    assert _RecordingDriver.seen_by_rounds == [(2, 6) if resumed else (3, 4)]  # a resume's new rounds too


def test_a_gpu_run_also_starts_from_the_compiler_seed_unless_told_or_sweeping() -> None:
    from beamsearch.run import parse_args

    default = SearchConfig(problem="p")
    assert default.wants_compiler_seed("cuda") and not default.wants_compiler_seed("cpu")
    assert not SearchConfig(problem="p", sweep=True).wants_compiler_seed("cuda")  # the sweep stays on its own space
    assert SearchConfig(problem="p", compiler_seed=True).wants_compiler_seed("cpu")  # asked: said unavailable there
    assert SearchConfig(problem="p", compiler_recording="rec").wants_compiler_seed("cpu")
    off, _, given = parse_args(["--problem", "p", "--no-compiler-seed"])
    assert off.compiler_seed is False and "compiler_seed" in given and not off.wants_compiler_seed("cuda")
    on, _, _ = parse_args(["--problem", "p", "--compiler-seed"])
    assert on.compiler_seed is True


def test_atol_or_rtol_sets_the_runs_rule_and_the_other_keeps_the_dtypes_default() -> None:
    from beamsearch.records.schema import Tolerance
    from beamsearch.run import parse_args, run_spec

    assert parse_args(["--problem", "p"])[0].tolerance() is None  # the dtype's default, decided by the spec
    loose, _, _ = parse_args(["--problem", "p", "--atol", "0.05"])
    assert loose.tolerance() == Tolerance(atol=0.05, rtol=1e-2)
    fp16, _, _ = parse_args(["--problem", "p", "--dtype", "fp16", "--rtol", "0.002"])
    assert fp16.tolerance() == Tolerance(atol=1e-3, rtol=0.002)
    for bad in ("-1", "inf", "nan"):
        with pytest.raises(SystemExit):
            parse_args(["--problem", "p", "--atol", bad])
    spec = run_spec(loose, str(DATA / "cancel_problem.py"), "cpu")
    assert spec.tolerance == loose.tolerance() and spec.values_tolerance() == Tolerance(atol=0.05, rtol=1e-2)
    assert run_spec(parse_args(["--problem", "p"])[0], str(DATA / "cancel_problem.py"), "cuda").tolerance is None


def test_a_resume_takes_what_it_may_change_and_names_what_it_keeps() -> None:
    from beamsearch.run import parse_args, resumed_config

    saved = SearchConfig(problem="p", rounds=4, atol=0.04)
    given_config, _, given = parse_args(["--problem", "p", "--rounds", "6", "--atol", "0.1", "--dtype", "bf16",
                                         "--rtol", "0.02"])  # fmt: skip
    config, kept = resumed_config(saved, given_config, given)
    assert config.rounds == 6 and config.atol == 0.04 and config.rtol is None  # the run's own rule holds
    assert kept == ["atol", "rtol"]  # the dtype given is the run's own: nothing to say of it


def test_a_sweep_runs_to_its_last_point_unless_given_rounds_or_minutes() -> None:
    from beamsearch.records.config import SWEEP_ROUNDS
    from beamsearch.run import parse_args

    sweep, _, _ = parse_args(["--problem", "p", "--sweep"])
    assert sweep.rounds == SWEEP_ROUNDS and sweep.minutes_budget() is None
    told, _, _ = parse_args(["--problem", "p", "--sweep", "--rounds", "3", "--budget-minutes", "2"])
    assert told.rounds == 3 and told.minutes_budget() == 2.0
    search, _, _ = parse_args(["--problem", "p"])
    assert search.rounds == 8 and search.minutes_budget() is not None


@pytest.mark.parametrize(("round_", "seed_folder", "start_origin", "added"), [
    (0, False, "input", True),  # stopped during the seed's compile: it is measured now
    (0, True, "input", False),  # measured already
    (1, False, "input", False),  # the rounds have begun without it (it was unavailable): not again
    (0, False, "compiler", False),  # the seed is the start
])  # fmt: skip
def test_a_run_resumed_in_round_0_gets_the_seed_it_had_not_measured(round_, seed_folder, start_origin, added,
                                                                      tmp_path) -> None:  # fmt: skip
    from beamsearch.driver import COMPILER_SEED_ID
    from beamsearch.records.schema import DeviceFacts, RunSpec
    from beamsearch.records.state import BeamEntry, BeamState

    spec = RunSpec(problem_path=str(tmp_path / "problem.py"), device="cuda", dtype="bf16", shapes="full")
    kernel = Kernel(source="def kernel_function(x):\n    return x\n", origin=start_origin)
    start = BeamEntry(id="input", kernel=kernel, ranked_ms=1.0, round=0)
    config = SearchConfig(problem="p", compiler_seed=True)
    driver = Driver.__new__(Driver)
    driver.state = BeamState(config=config, problem="p", spec=spec, round=round_, input=start, beam=[start])
    driver.trace = TraceWriter(tmp_path)
    if seed_folder:
        (tmp_path / "optimization_trace" / COMPILER_SEED_ID).mkdir(parents=True)
        (tmp_path / "optimization_trace" / COMPILER_SEED_ID / "result.json").write_text("{}")
    calls: list[str] = []
    driver._add_compiler_seed = lambda: calls.append("seed")

    class FactsPool:  # a run saved before the device facts had the shared memory gets it on resume
        def call(self, method: str, *args: object) -> DeviceFacts:
            calls.append(method)
            return DeviceFacts(floor=None, gpu_name="g", shared_bytes=232448)

    driver.pool = FactsPool()
    driver.resume_with(config.model_copy(update={"rounds": 9}))
    assert driver.state.config.rounds == 9 and calls == ["device_facts", *(["seed"] if added else [])]
    assert driver.state.shared_bytes == 232448


# ----------------------------------------------------------------------------------------- issue 48: the budget


def _budget_driver(tmp_path, *, elapsed_s: float, round_walls: list[float], **config: object) -> Driver:
    from beamsearch.records.schema import RunSpec
    from beamsearch.records.state import BeamState, RoundRecord

    spec = RunSpec(problem_path=str(tmp_path / "problem.py"), device="cuda", dtype="bf16", shapes="full")
    rounds = [RoundRecord(round=i + 1, tasks=4, ok=4, failed=0, wall_s=w) for i, w in enumerate(round_walls)]
    state = BeamState(config=SearchConfig(problem="p", **config), problem="p", spec=spec, round=len(rounds),
                      rounds=rounds, elapsed_s=elapsed_s)  # fmt: skip
    events: list[tuple[str, dict]] = []
    display = SimpleNamespace(event=lambda kind, **data: events.append((kind, data)), events=events)
    # a pool of one worker that asks the driver for work once, as an idle worker does
    pool = SimpleNamespace(workers=["w0"], run=lambda tasks, timeout_s, notify, spare_work: iter([spare_work()][:0]))
    return Driver(state, pool, TraceWriter(tmp_path), display, "p", {})


def test_the_minutes_budget_counts_the_rounds_not_the_setup(tmp_path) -> None:
    """Issue 48: with --budget-minutes 3, setup (baselines, a minute of compiler seed, three searches on one GPU)
    spent the budget, and eight of nine runs tried no candidate."""
    setup_heavy = _budget_driver(tmp_path, elapsed_s=200.0, round_walls=[], budget_minutes=3.0)
    assert setup_heavy._budget_spent() == ""
    searched = _budget_driver(tmp_path, elapsed_s=400.0, round_walls=[100.0, 90.0], budget_minutes=3.0)
    assert searched._budget_spent() == "the budget of 3 minutes of search is spent (3.2 min in rounds)"


def test_the_start_says_how_long_setup_took_and_keeps_it(tmp_path) -> None:
    driver = _budget_driver(tmp_path, elapsed_s=72.0, round_walls=[], budget_minutes=3.0)
    driver._open_round = lambda number: None  # every space exhausted at once
    driver.run_rounds()
    kinds = [kind for kind, _ in driver.display.events]
    assert kinds == ["setup", "stop"] and driver.state.setup_s == pytest.approx(72.0, abs=1.0)
    assert driver.display.events[0][1]["budget_minutes"] == 3.0
    assert driver.display.events[0][1]["measured"] == ["the starting kernel", "the baselines", "the compiler seed"]
    assert driver.display.events[1][1]["reason"] == "every knob space is exhausted: no new candidate to try"


# ----------------------------------------------------------------------------------------- issue 46 §3: the loss


def _seed_events(out, *events: dict) -> None:
    import json

    out.mkdir(parents=True, exist_ok=True)
    (out / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def test_the_seeds_outcome_is_its_last_event_or_the_option_that_left_it_out(tmp_path) -> None:
    from beamsearch.outcome import SeedOutcome, seed_outcome

    gpu = SearchConfig(problem="p")
    assert seed_outcome(tmp_path, gpu, "cuda") is None  # no event recorded
    _seed_events(tmp_path, {"event": "compiler_seed", "status": "compiling"},
                 {"event": "compiler_seed", "status": "unavailable", "reason": "extern kernels (convolution)"},
                 {"event": "baseline", "status": "ok"})  # fmt: skip
    assert seed_outcome(tmp_path, gpu, "cuda") == SeedOutcome("unavailable", "extern kernels (convolution)")
    off = seed_outcome(tmp_path, SearchConfig(problem="p", compiler_seed=False), "cuda")
    assert off == SeedOutcome("left out", "--no-compiler-seed") and off.said == "left out: --no-compiler-seed"
    assert seed_outcome(tmp_path, SearchConfig(problem="p"), "cpu").reason == "on the CPU it needs --compiler-recording"
    settled = SearchConfig(problem="p", compiler_seed=False)  # as the start saves a CPU run's config
    assert seed_outcome(tmp_path, settled, "cpu").reason == "on the CPU it needs --compiler-recording"


@pytest.mark.parametrize(("seed", "best_id", "proposing", "expected"), [
    (("unavailable", "Inductor's call() runs PyTorch operators or extern kernels (extern_kernels.convolution)"),
     "r4-t1", False, "the best baseline calls a vendor library (cuBLAS/cuDNN): Inductor's code calls extern kernels, "
     "so there is no compiler seed to start from (Inductor's call() runs PyTorch operators or extern kernels "
     "(extern_kernels.convolution)); no structural move found: the offline optimiser tunes knobs (block sizes, warps, "
     "stages, grid order; on a GPU loads hints, loop options, register caps), not the algorithm"),
    (("unavailable", "Inductor has no Triton template for a GEMM or convolution of this problem"), "input", False,
     "the best baseline calls a vendor library: Inductor has no Triton template for this problem, so there is no "
     "compiler seed to start from (Inductor has no Triton template for a GEMM or convolution of this problem); no "
     "candidate beat the input kernel"),
    (("in the beam", ""), "compiler-seed", False, "the knob search tied the compiler seed: no configuration of "
     "max-autotune's own kernels, run standalone, beat them"),
    (("in the beam", ""), "compiler-seed-cd", False, "the knob search tied the compiler seed: no configuration of "
     "max-autotune's own kernels, run standalone, beat them"),
    (("left out", "--no-compiler-seed"), "r2-t0", True, "the run left out the compiler seed, torch.compile's own "
     "kernels (--no-compiler-seed); the model's rewrites found no faster structure"),
])  # fmt: skip
def test_a_loss_to_the_best_baseline_says_why_where_the_run_knows(seed, best_id, proposing, expected, tmp_path) -> None:
    from beamsearch.outcome import SeedOutcome, loss_reason
    from beamsearch.records.schema import RunSpec
    from beamsearch.records.state import BeamEntry, BeamState

    config = SearchConfig(problem="p", llm="openai/m" if proposing else None)
    state = BeamState(config=config, problem="p", spec=RunSpec(problem_path="/p/problem.py", device="cuda", shapes="full"))
    best = BeamEntry(id=best_id, kernel=Kernel(source="# k\n", origin="tuner"), ranked_ms=1.0, round=1)
    assert loss_reason(best, SeedOutcome(*seed), state) == expected


def test_a_loss_to_a_baseline_that_runs_a_vendor_library_names_its_operators_first(tmp_path) -> None:
    """45 Gemm+Sigmoid+LogSumExp on an H200: torch.compile (cuBLAS GEMMs, Triton epilogues) 0.5955 ms, ours
    (every kernel Triton) 0.6257; the reason given was only that the knob search tied the seed."""
    from beamsearch.outcome import SeedOutcome, loss_reason
    from beamsearch.records.schema import RunSpec
    from beamsearch.records.state import Baseline, BeamEntry, BeamState

    baselines = [Baseline(label="eager", target="eager", median_ms=0.679, status="ok", library_ops=["addmm (cuBLAS)"]),
                 Baseline(label="compile", target="compile", median_ms=0.5955, status="ok", library_ops=["addmm (cuBLAS)"]),
                 Baseline(label="compile-max-autotune", target="compile-max-autotune", median_ms=0.60, status="ok")]  # fmt: skip
    spec = RunSpec(problem_path="/p/problem.py", device="cuda", shapes="full")
    state = BeamState(config=SearchConfig(problem="p"), problem="p", spec=spec, baselines=baselines)
    best = BeamEntry(id="compiler-seed", kernel=Kernel(source="# k\n", origin="compiler"), ranked_ms=0.6257, round=0)
    assert loss_reason(best, SeedOutcome("in the beam"), state) == (
        "the best baseline (compile) runs addmm (cuBLAS): a vendor library's kernel, where this search's kernels are "
        "all Triton; the knob search tied the compiler seed: no configuration of max-autotune's own kernels, run "
        "standalone, beat them")  # fmt: skip
    # a problem with no input kernel starts from the seed, whose id is then "input"
    started = best.model_copy(update={"id": "input"})
    assert loss_reason(started, SeedOutcome("in the beam"), state).endswith("the knob search tied the compiler seed: "
                                                                             "no configuration of max-autotune's own "
                                                                             "kernels, run standalone, beat them")  # fmt: skip
    unknown = state.model_copy(update={"baselines": [b.model_copy(update={"library_ops": None}) for b in baselines]})
    assert loss_reason(best, SeedOutcome("in the beam"), unknown).startswith("the knob search tied")


def test_a_knob_variant_of_the_seed_that_loses_says_the_search_tied_it() -> None:
    from beamsearch.outcome import SeedOutcome, loss_reason
    from beamsearch.records.schema import RunSpec
    from beamsearch.records.search import KnobSpace, SearcherState
    from beamsearch.records.state import BeamEntry, BeamState, OptimiserState, SpaceSearch

    seed = Kernel(source="# the seed\n", origin="compiler")
    search = SpaceSearch.model_construct(root_id="compiler-seed", root=seed, space=KnobSpace.model_construct(),
                                         searcher=SearcherState.model_construct())  # fmt: skip
    state = BeamState(config=SearchConfig(problem="p"), problem="p",
                      spec=RunSpec(problem_path="/p/problem.py", device="cuda", shapes="full"),
                      optimiser=OptimiserState.model_construct(searches={seed.hash: search}, outcomes={}, compiled={}))  # fmt: skip
    variant = BeamEntry(id="r2-t3", kernel=Kernel(source="# v\n", origin="tuner", parent_hash=seed.hash), ranked_ms=1.0,
                        round=2)  # fmt: skip
    assert loss_reason(variant, SeedOutcome("in the beam"), state).startswith("the knob search tied the compiler seed")


class _FinalPool:
    """The pool at the end: the re-timing answered as given."""

    def __init__(self, timings) -> None:
        self.timings = timings

    def call(self, method: str, *args: object):
        assert method == "retime"
        return self.timings


def test_a_result_slower_than_the_best_baseline_is_said_in_the_summary(tmp_path) -> None:
    import json

    from beamsearch.display import Display
    from beamsearch.records.schema import RunSpec
    from beamsearch.records.state import Baseline, BeamEntry, BeamState, FinalTiming, RoundRecord, Summary

    out = tmp_path / "run"
    _seed_events(out, {"event": "compiler_seed", "status": "unavailable", "reason": "extern kernels (convolution)"})
    kernel = Kernel(source="# k\n", origin="tuner")
    best = BeamEntry(id="r4-t1", kernel=kernel, ranked_ms=5.5, round=4)
    start = BeamEntry(id="input", kernel=Kernel(source="# input\n", origin="input"), ranked_ms=21.9, round=0)
    state = BeamState(config=SearchConfig(problem="p"), problem="p", round=4, beam=[best], input=start,
                      spec=RunSpec(problem_path="/p/problem.py", device="cuda", shapes="full"), setup_s=70.0,
                      baselines=[Baseline(label="compile-max-autotune", target="compile-max-autotune", median_ms=1.3,
                                          status="ok")],
                      rounds=[RoundRecord(round=1, tasks=8, ok=8, failed=0, wall_s=60.0)])  # fmt: skip
    timings = [FinalTiming(id="r4-t1", median_ms=5.5, status="ok", medians_ms=[5.5, 5.5, 5.6]),
               FinalTiming(id="input", median_ms=21.9, status="ok", medians_ms=[21.9, 21.8, 22.0])]  # fmt: skip
    events: list[dict] = []
    driver = Driver(state, _FinalPool(timings), TraceWriter(out), Display(True, events.append), "p", {})
    driver.stop_reason = "8 rounds done"
    summary = driver.finish()
    saved = Summary.model_validate_json((out / "summary.json").read_text())
    assert saved.slower_than_best_baseline is True and saved.loss_reason.startswith("the best baseline calls a vendor")
    assert saved.compiler_seed == "unavailable: extern kernels (convolution)"
    assert (saved.setup_s, saved.search_s, saved.warnings) == (70.0, 60.0, [])
    finish = next(e for e in events if e["event"] == "finish")
    assert finish["slower_than_best_baseline"] is True and finish["loss_reason"] == summary.loss_reason
    old = json.loads((out / "summary.json").read_text())
    for key in ("setup_s", "search_s", "compiler_seed", "slower_than_best_baseline", "loss_reason", "warnings"):
        del old[key]
    assert Summary.model_validate(old).slower_than_best_baseline is None  # an older summary still loads


def test_a_search_that_tried_nothing_says_so_loudly(tmp_path) -> None:
    from beamsearch.display import Display
    from beamsearch.records.schema import RunSpec
    from beamsearch.records.state import BeamEntry, BeamState, FinalTiming

    start = BeamEntry(id="input", kernel=Kernel(source="# input\n", origin="input"), ranked_ms=2.0, round=0)
    state = BeamState(config=SearchConfig(problem="p"), problem="p", beam=[start], input=start,
                      spec=RunSpec(problem_path="/p/problem.py", device="cpu", shapes="small"))  # fmt: skip
    events: list[dict] = []
    pool = _FinalPool([FinalTiming(id="input", median_ms=2.0, status="ok", medians_ms=[2.0, 2.0, 2.0])])
    driver = Driver(state, pool, TraceWriter(tmp_path / "run"), Display(True, events.append), "p", {})
    driver.stop_reason = "every knob space is exhausted: no new candidate to try"
    summary = driver.finish()
    assert summary.warnings == ["the search tried no candidate (every knob space is exhausted: no new candidate to "
                                "try): the result is a starting kernel"]  # fmt: skip
    assert [e["warning"] for e in events if e["event"] == "no_candidate"] == summary.warnings
    assert summary.slower_than_best_baseline is None  # a CPU run has no bar


def test_only_a_gpu_run_at_full_shapes_is_offered_for_publishing(tmp_path) -> None:
    from beamsearch.records.schema import RunSpec
    from beamsearch.run import results_line

    gpu = results_line(tmp_path, RunSpec(problem_path="/p/problem.py", device="cuda", shapes="full"))
    assert gpu == f"results in {tmp_path}; publish them with: python -m beamsearch.publish {tmp_path}"
    cpu = results_line(tmp_path, RunSpec(problem_path="/p/problem.py", device="cpu", shapes="small"))
    assert "publish" not in cpu.replace("not one to publish", "") and "Triton's interpreter on the CPU" in cpu
    small = results_line(tmp_path, RunSpec(problem_path="/p/problem.py", device="cuda", shapes="small"))
    assert "beamsearch.publish" not in small and "small shapes" in small


def test_a_search_stops_on_sigint_even_where_it_inherited_sigint_ignored() -> None:
    """The suite and the dev-set evaluation stop a search with SIGINT; a process started from a shell's
    background job inherits SIGINT ignored, which Python keeps. The search takes Python's handler back."""
    import signal

    from beamsearch import run

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(SystemExit):
            run.main(["--problem", "no_such_problem_zz"])
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_no_portfolio_variant_starts_after_its_time_and_each_left_says_so(tmp_path) -> None:
    """A convolution's portfolio compiled for 6.5 minutes before its run searched anything: variants that
    have not started by PORTFOLIO_START_BY_S are left, each with the reason and what to do instead."""
    from beamsearch.compiler_seeds import PORTFOLIO_START_BY_S, seed_kernels
    from beamsearch.pool import NotStarted
    from beamsearch.records.schema import RunSpec
    from workers.proposers.compile_seed import SeedResult

    spec = RunSpec(problem_path=str(tmp_path / "problem.py"), device="cuda", dtype="bf16", shapes="full")
    events: list[tuple[str, dict]] = []
    asked: dict[str, object] = {}

    def call_each(method: str, calls: list[tuple[object, ...]], timeout_s: float, start_by_s: float | None = None):
        asked.update(method=method, calls=len(calls), start_by_s=start_by_s)
        first = SeedResult(unavailable="extern kernels (convolution)", variant=calls[0][2].name)
        return [first] + [NotStarted() for _ in calls[1:]]

    pool = SimpleNamespace(call_each=call_each)
    kept, why = seed_kernels(spec, SearchConfig(problem="p"), pool, lambda kind, **data: events.append((kind, data)))
    assert kept == [] and asked["method"] == "compiler_seed" and asked["start_by_s"] == PORTFOLIO_START_BY_S
    left = [data for kind, data in events if kind == "compiler_seed" and "not compiled" in data.get("reason", "")]
    assert len(left) == asked["calls"] - 1 > 0
    assert all("--compiler-recording" in data["reason"] and data["status"] == "unavailable" for data in left)
    assert "extern kernels (convolution)" in why


def test_a_resume_removes_the_temporary_files_a_killed_driver_left(tmp_path) -> None:
    """A driver killed between writing a file's temporary and renaming it leaves ``.<name>.*.tmp``; the file
    it was to replace is intact, and the resumed run's trace must hold no leftovers."""
    trace = TraceWriter(tmp_path)
    folder = trace.round_dir(2)
    folder.mkdir(parents=True)
    (folder / "strategy.json").write_text("{}")
    left = folder / ".strategy.json.3r8md9wu.tmp"
    left.write_text('{"half')
    kept = [folder / "notes.tmp.txt", folder / "data.tmp"]  # not write_atomic's: a hidden name ending .tmp
    for path in kept:
        path.write_text("x")
    assert trace.remove_partial_writes() == [left]
    assert not left.exists() and (folder / "strategy.json").read_text() == "{}"
    assert all(path.exists() for path in kept)


def test_the_seeds_beside_the_start_are_shown_in_order_as_they_come_and_bounded_in_time(tmp_path) -> None:
    """A level-2 problem's seeds were measured for 325 s with nothing shown, and the task timeout (15
    minutes) would have held the start past the run's limit: each seed is shown once those before it are
    in, and the seeds get SEED_MEASURE_TIMEOUT_S, not the task timeout."""
    from beamsearch.compiler_seeds import SEED_MEASURE_TIMEOUT_S
    from beamsearch.pool import failed
    from beamsearch.records.schema import RunSpec
    from beamsearch.records.state import BeamEntry, BeamState

    spec = RunSpec(problem_path=str(tmp_path / "problem.py"), device="cuda", dtype="bf16", shapes="full")
    start = BeamEntry(id="input", kernel=Kernel(source="x = 1\n", origin="input"), ranked_ms=1.0, round=0)
    config = SearchConfig(problem="p", compiler_seed=True, task_timeout_s=900.0)
    state = BeamState(config=config, problem="p", spec=spec, round=0, input=start, beam=[start])
    arrived: list[str] = []
    shown: list[tuple[str, int]] = []  # (id, how many results had arrived when it was shown)
    asked: dict[str, float] = {}

    def run(tasks, timeout_s, method, notify):
        asked["timeout_s"] = timeout_s
        by_id = {t.id: t for t in tasks}
        for task_id in ["compiler-seed-b", "compiler-seed-a", "compiler-seed-c"]:  # not in the order given
            arrived.append(task_id)
            yield failed(by_id[task_id], "verification failed: not the reference's values")

    display = SimpleNamespace(event=lambda kind, **data: None,
                              candidate=lambda r: shown.append((r.task_id, len(arrived))))  # fmt: skip
    pool = SimpleNamespace(workers=["w0"], run=run)
    driver = Driver(state, pool, TraceWriter(tmp_path), display, "p", {})
    seeds = [(f"compiler-seed-{x}", Kernel(source=f"x = '{x}'\n", origin="compiler")) for x in "abc"]
    driver._add_compiler_seed(seeds)
    assert asked["timeout_s"] == min(900.0, SEED_MEASURE_TIMEOUT_S) < 900.0
    # a waits for itself (second in), b is shown right after it, c when it comes
    assert shown == [("compiler-seed-a", 2), ("compiler-seed-b", 2), ("compiler-seed-c", 3)]
