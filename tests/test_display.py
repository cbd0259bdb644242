"""The round's console line, where main's and the LLM branch's additions meet: every status that is not
ok, by name (an inconclusive one with what it means), and the tokens and cost the round spent."""

from __future__ import annotations

import io

from rich.console import Console

from beamsearch.display import Display
from beamsearch.records.state import RoundRecord, Summary, TaskResult


def _result(task_id: str, status: str) -> TaskResult:
    return TaskResult(task_id=task_id, parent_id="input", round=1, direction=0, status=status, reason="why")


def _round_line(results: list[TaskResult], record: RoundRecord) -> str:
    screen = io.StringIO()
    display = Display(False, lambda event: None, Console(file=screen, force_terminal=False, width=300))
    display.round_start(1, len(results), 0)
    for r in results:
        display.candidate(r)
    display.round_end(record, speedup=None)
    return next(line for line in screen.getvalue().splitlines() if line.startswith("round 1"))


def test_the_round_line_names_each_status_not_ok_and_the_tokens_spent() -> None:
    results = [
        _result("r1-t0", "inconclusive"),
        _result("r1-t1", "no_proposal"),
        _result("r1-t2", "rejected"),
    ]
    record = RoundRecord(round=1, tasks=3, ok=0, failed=0, inconclusive=1, tokens=1234, cost_usd=0.5)
    line = _round_line(results, record)
    assert "0/3 ok" in line
    assert "1 inconclusive (disturbed by other processes on the GPU)" in line
    assert "1 no_proposal" in line and "1 rejected" in line
    assert "1234 tokens ($0.5000)" in line


def test_a_round_all_ok_and_without_a_model_says_none_and_no_tokens() -> None:
    line = _round_line([_result("r1-t0", "ok")], RoundRecord(round=1, tasks=1, ok=1, failed=0))
    assert "(not ok: none)" in line and "tokens" not in line and "inconclusive" not in line


def test_a_round_closing_after_the_next_began_names_its_own_candidates() -> None:
    """Rounds overlap: round 2 starts while round 1's last candidate runs, and round 1's line counts only
    round 1's candidates."""
    screen = io.StringIO()
    display = Display(False, lambda event: None, Console(file=screen, force_terminal=False, width=300))
    display.round_start(1, 2, 0)
    display.candidate(_result("r1-t0", "rejected"))
    display.round_start(2, 2, 0)
    display.candidate(_result("r2-t0", "no_proposal").model_copy(update={"round": 2}))
    display.candidate(_result("r1-t1", "ok"))
    display.round_end(RoundRecord(round=1, tasks=2, ok=1, failed=0), speedup=None)
    line = next(line for line in screen.getvalue().splitlines() if line.startswith("round 1"))
    assert "(not ok: 1 rejected)" in line


# ----------------------------------------------------------------------------------------- issue 48: the console


def _screens() -> tuple[Display, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    display = Display(False, lambda event: None, Console(file=out, force_terminal=False, width=80, soft_wrap=True),
                      Console(file=err, force_terminal=False, width=80, soft_wrap=True))  # fmt: skip
    return display, out, err


def test_every_event_is_a_sentence_with_units_not_the_records_fields() -> None:
    display, out, _ = _screens()
    display.event("start", problem="43_Max_Pooling_3D", gpu="cpu (Triton interpreter)", floor_ms=None,
                  floor_note="CPU run: no floor", workers=["vm node f822fd70 pid 3850", "vm node f822fd70 pid 3851"])  # fmt: skip
    display.event("baseline", label="eager", median_ms=0.0555, status="ok", reason="")
    display.event("baseline", label="compile", median_ms=None, status="failed", reason="no triton")
    display.event("setup", setup_s=74.2, measured=["the starting kernel", "the baselines"], budget_minutes=3.0)
    display.event("stop", after_round=3, reason="every knob space is exhausted: no new candidate to try")
    lines = out.getvalue().splitlines()
    assert lines == [
        "start: 43_Max_Pooling_3D on cpu (Triton interpreter); CPU run: no floor; workers: 2 on vm node f822fd70",
        "baseline eager: 0.0555 ms",
        "baseline compile: not timed (failed: no triton)",
        "setup took 74 s (the starting kernel, the baselines); the budget of 3 minutes counts the rounds from here",
        "stopped after round 3: every knob space is exhausted: no new candidate to try",
    ]
    assert "=" not in out.getvalue() and "[" not in out.getvalue()


def test_a_candidates_time_is_printed_once() -> None:
    display, out, _ = _screens()
    ok = TaskResult(task_id="r1-t0", parent_id="input", round=1, direction=0, status="ok",
                    reason="312.1581 ms (1.202x the parent)")  # fmt: skip
    ok = ok.model_copy(update={"timing": _timed(312.1581)})
    display.candidate(ok)
    assert out.getvalue().count("312.1581") == 1 and "1.202x the parent" in out.getvalue()


def _timed(ms: float):
    from beamsearch.records.schema import Timing, TimingResult

    t = Timing(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, n=10, warmup_n=1, method="m", device_name="cpu",
               on_gpu=False, dtype="bf16", shapes="small")  # fmt: skip
    return TimingResult(target="k.py", status="ok", timing=t)


def test_warnings_go_to_stderr_and_the_run_to_stdout() -> None:
    display, out, err = _screens()
    display.event("worker_lost", worker="w1", task="r2-t3", retried=True, error="ActorDiedError")
    display.event("no_candidate", warning="the search tried no candidate (rounds done): the result is a starting kernel")
    display.event("stop", after_round=0, reason="8 rounds done")
    assert err.getvalue().splitlines() == [
        "warning: worker w1 died running r2-t3 (ActorDiedError); the task was retried on it",
        "warning: the search tried no candidate (rounds done): the result is a starting kernel",
    ]
    assert out.getvalue() == "stopped after round 0: 8 rounds done\n"


def test_a_console_that_is_not_a_terminal_does_not_wrap_lines(monkeypatch) -> None:
    """Rich takes 80 columns where the output is a file: a long reason was cut into the next line."""
    from beamsearch.display import console_for

    file = io.StringIO()
    monkeypatch.setattr("sys.stdout", file)
    display = Display(False, lambda event: None, console_for())
    long = "stopped after 3 repetitions, slower than the 744.5362 ms the beam asked for; " * 3
    display.event("stop", after_round=1, reason=long)
    assert file.getvalue().count("\n") == 1 and long.strip() in file.getvalue()


def test_quiet_prints_only_json_lines_on_stdout(capsys) -> None:
    import json

    display = Display(True, lambda event: None)
    display.event("baseline", label="eager", median_ms=0.0555, status="ok", reason="")
    display.say("a line for a person")
    out = capsys.readouterr()
    record = json.loads(out.out)
    assert (record["event"], record["label"], record["median_ms"]) == ("baseline", "eager", 0.0555)
    assert out.err == ""


def _summary(device: str = "cuda", **update) -> Summary:
    from beamsearch.records.config import SearchConfig
    from beamsearch.records.schema import Floor, RunSpec, Work
    from beamsearch.records.state import Baseline

    spec = RunSpec(problem_path="/p/problem.py", shapes="full" if device == "cuda" else "small", device=device)
    floor = Floor(work=Work(bytes_moved=1, flops=0), dram_gbps=3350.0, tflops=989.0, memory_ms=1.2, compute_ms=0.0,
                  floor_ms=1.2, bound="memory", peaks_source="datasheet") if device == "cuda" else None  # fmt: skip
    bar = Baseline(label="compile-max-autotune", target="compile-max-autotune", median_ms=1.302, status="ok")
    s = Summary(problem="77", config=SearchConfig(problem="77"), spec=spec, versions={}, gpu_name="H100",
                baselines=[Baseline(label="eager", target="eager", median_ms=8.0, status="ok"), bar], input_ms=21.91,
                floor=floor, rounds=[], best_id="r4-t1", best_ms=5.501, best_round=4, speedup_vs_input=21.91 / 5.501,
                speedup_vs_eager=None, speedup_vs_compile=None, pct_of_floor=100 * 1.2 / 5.501 if floor else None,
                best_baseline="compile-max-autotune" if device == "cuda" else None,
                speedup_vs_best_baseline=1.302 / 5.501 if device == "cuda" else None, candidates=24, candidates_ok=20,
                tokens=0, cost_usd=0.0, wall_s=300.0, gpu_measure_s=0.0, stop_reason="8 rounds done")  # fmt: skip
    return s.model_copy(update=update)


def test_a_result_slower_than_the_best_baseline_says_so_and_why() -> None:
    from beamsearch.display import result_line

    why = "the best baseline calls a vendor library (cuBLAS/cuDNN): ..."
    line = result_line(_summary(slower_than_best_baseline=True, loss_reason=why))
    assert line == ("result: r4-t1 at 5.501 ms: SLOWER than the best baseline (compile-max-autotune, 1.302 ms): "
                    "0.24x its speed, 22 % of the physical floor (1.200 ms, memory-bound), 3.98x the input kernel "
                    f"(21.91 ms). Why slower: {why}")  # fmt: skip


def test_a_cpu_result_compares_with_the_input_only_and_says_why() -> None:
    from beamsearch.display import result_line

    line = result_line(_summary("cpu", best_ms=75.0, input_ms=118.0, speedup_vs_input=118.0 / 75.0))
    assert line == ("result: r4-t1 at 75.00 ms in Triton's interpreter: 1.57x the input kernel (118.0 ms). A CPU "
                    "run: no GPU baseline or floor to compare with, only the input kernel")  # fmt: skip


def test_the_end_of_a_run_says_the_result_and_why_it_stopped() -> None:
    display, out, _ = _screens()
    display.finish(_summary(setup_s=72.0, search_s=180.0))
    text = out.getvalue()
    assert text.splitlines()[-2].startswith("result: r4-t1 at 5.501 ms: SLOWER than the best baseline")
    assert text.splitlines()[-1] == ("24 candidates (20 ok) in 0 rounds; setup 1.2 min, search 3.0 min, 5.0 min in "
                                     "all; stopped: 8 rounds done")  # fmt: skip


def test_a_ratio_on_passes_that_disagree_is_said_to_be_uncertain() -> None:
    from beamsearch.display import result_line
    from beamsearch.records.state import FinalTiming

    final = [FinalTiming(id="r4-t1", median_ms=75.0, status="ok", medians_ms=[75.0, 74.8, 75.3]),
             FinalTiming(id="input", median_ms=118.0, status="ok", medians_ms=[115.6, 169.7, 118.0])]  # fmt: skip
    s = _summary("cpu", best_ms=75.0, input_ms=118.0, speedup_vs_input=118.0 / 75.0, final_retime=final)
    assert "1.57x the input kernel (118.0 ms) (uncertain: the re-timing's passes of input disagree by up to 47 %)" \
        in result_line(s)  # fmt: skip
    steady = s.model_copy(update={"final_retime": final[:1]})
    assert "uncertain" not in result_line(steady)


def test_the_compiler_seeds_events_name_the_variant_and_the_time() -> None:
    display, out, _ = _screens()
    display.event("compiler_seed", status="compiling", variants=["default", "coordinate-descent"])
    display.event("compiler_seed", status="unavailable", seed="compiler-seed-cd", reason="extern kernels (mm)")
    display.event("compiler_seed", status="in the beam", seed="compiler-seed", median_ms=1.351)
    assert out.getvalue().splitlines() == [
        "compiler seed: compiling the problem with torch.compile max-autotune (about a minute), 2 variants",
        "compiler seed compiler-seed-cd: unavailable: extern kernels (mm)",
        "compiler seed: in the beam at 1.351 ms",
    ]


def test_a_result_with_fast_approximate_math_says_so() -> None:
    from beamsearch.display import result_line

    line = result_line(_summary(best_ms=1.0, speedup_vs_best_baseline=1.302, approximate_math=True))
    assert line.endswith(". It computes with fast approximate transcendentals (the math knob): verified within the "
                         "problem's tolerance on fresh inputs, not equal to the precise functions' values")  # fmt: skip
    assert "approximate" not in result_line(_summary(best_ms=1.0, speedup_vs_best_baseline=1.302))
