"""beamsearch.report on recorded trace folders of ours (fake but schema-valid), complete and partial."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from beamsearch import report as rep
from beamsearch.records.config import SearchConfig
from beamsearch.records.problems import resolve_problem
from beamsearch.records.schema import (
    Floor,
    Kernel,
    KernelProfile,
    Profile,
    RunSpec,
    Timing,
    TimingResult,
    Verdict,
    Work,
)
from beamsearch.records.state import (
    Baseline,
    BeamEntry,
    BeamState,
    FinalTiming,
    RoundRecord,
    Summary,
    TaskResult,
    VerifyTry,
)
from beamsearch.trace import TraceWriter
from profiling.metrics import COMPUTE_SOL, DURATION, MEMORY_SOL

PROBLEM = "36_RMSNorm"
HAND_WRITTEN = "# Problems and GPU results\n\nIntro kept.\n\n## Foundation run\n\nHand-written table kept.\n"


def spec(device: str = "cuda") -> RunSpec:
    return RunSpec(problem_path=resolve_problem("36").problem_path, shapes="full" if device == "cuda" else "small",
                   device=device)  # fmt: skip


def timing(ms: float, on_gpu: bool = True) -> TimingResult:
    t = Timing(median_ms=ms, mean_ms=ms, std_ms=0.01, min_ms=ms * 0.99, n=50, warmup_n=5, method="cuda events",
               device_name="NVIDIA H200" if on_gpu else "cpu", on_gpu=on_gpu, dtype="bf16",
               shapes="full" if on_gpu else "small")  # fmt: skip
    return TimingResult(target="k.py", status="ok", timing=t)


def profile(duration_ns: float, compute: float, memory: float) -> Profile:
    metrics = {DURATION: duration_ns, COMPUTE_SOL: compute, MEMORY_SOL: memory, "launch__registers_per_thread": 40.0}
    return Profile(available=True, kernels=[KernelProfile(name="_rmsnorm_kernel", launches=1, metrics=metrics)],
                   combined=metrics, gpu_name="NVIDIA H200", ncu_version="2025.3.1")  # fmt: skip


def result(task_id: str, round_: int, status: str, ms: float | None = None, prof: Profile | None = None,
           on_gpu: bool = True) -> TaskResult:  # fmt: skip
    kernel = Kernel(source=f"# {task_id}\ndef kernel_function(x): ...\n", origin="tuner", note=f"BLOCK change {task_id}")
    verdict = Verdict(passed=status == "ok", status="ok" if status == "ok" else "incorrect", reason="r", kernel_path="k.py")
    return TaskResult(task_id=task_id, parent_id="input", round=round_, direction=0, status=status,
                      reason="" if status == "ok" else "values: 3 of 9 outside", kernel=kernel,
                      tries=[VerifyTry(kernel=kernel, verdict=verdict)],
                      timing=timing(ms, on_gpu) if ms is not None else None, profile=prof, parent_ms=2.5)  # fmt: skip


def record_run(out: Path, *, device: str = "cuda", summary: bool = True) -> Summary | BeamState:
    """Input 2.5 ms; round 1 one ok (2.0, profiled) and one rejected; round 2 all failed; round 3 the best
    (1.6, profiled); round 4 ok but slower, its profile unavailable."""
    gpu = device == "cuda"
    trace = TraceWriter(out)
    config = SearchConfig(problem="36", rounds=4)
    inp = result("input", 0, "ok", 2.5, profile(2.5e6, 40.0, 70.0) if gpu else None, gpu)
    trace.write_candidate(inp, PROBLEM)
    plan = {
        1: [result("r1-t0", 1, "ok", 2.0, profile(2.0e6, 45.0, 80.0) if gpu else None, gpu), result("r1-t1", 1, "rejected")],
        2: [result("r2-t0", 2, "rejected"), result("r2-t1", 2, "failed")],
        3: [result("r3-t0", 3, "ok", 1.6, profile(1.6e6, 50.0, 93.5) if gpu else None, gpu)],
        4: [result("r4-t0", 4, "ok", 1.9, Profile(available=False, reason="ncu: ERR_NVGPUCTRPERM") if gpu else None, gpu)],
    }  # fmt: skip
    rounds, running = [], 2.5
    for n, results in plan.items():
        for r in results:
            trace.write_candidate(r, PROBLEM)
        ok = [r for r in results if r.status == "ok"]
        best = min(ok, key=lambda r: r.ranked_ms, default=None)
        running = min([running] + [r.ranked_ms for r in ok])
        rec = RoundRecord(round=n, tasks=len(results), ok=len(ok), failed=sum(r.status == "failed" for r in results),
                          best_id=best.task_id if best else None, best_ms=best.ranked_ms if best else None,
                          beam=["r3-t0"] if n >= 3 else ["r1-t0"], running_best_ms=running, wall_s=30.0 * n,
                          tokens=0, cost_usd=0.0)  # fmt: skip
        trace.write_round(rec, best, PROBLEM)
        rounds.append(rec)
    baselines = [Baseline(label="eager", target="eager", median_ms=8.4, status="ok"),
                 Baseline(label="compile", target="compile", median_ms=3.4, status="ok")]  # fmt: skip
    floor = Floor(work=Work(bytes_moved=7_516_192_768, flops=0), dram_gbps=4250.0, tflops=687.0, memory_ms=1.7685,
                  compute_ms=0.0, floor_ms=1.7685, bound="memory", peaks_source="measured") if gpu else None  # fmt: skip
    if not summary:
        entry = BeamEntry(id="r3-t0", kernel=plan[3][0].kernel, ranked_ms=1.6, round=3)
        state = BeamState(config=config, problem=PROBLEM, spec=spec(device), round=4, beam=[entry],
                          input=BeamEntry(id="input", kernel=inp.kernel, ranked_ms=2.5, round=0), baselines=baselines,
                          floor=floor, rounds=rounds, gpu_name="NVIDIA H200" if gpu else "", elapsed_s=600.0)  # fmt: skip
        trace.save_state(state)
        return state
    best_ms = 1.61  # re-timed at the end
    s = Summary(problem=PROBLEM, config=config, spec=spec(device),
                versions={"torch": "2.11.0+cu130", "triton": "3.6.0", "python": "3.12.3", "driver": "580.159.04",
                          "beamsearch": "0.1.0", "ray": "2.52.0"},
                gpu_name="NVIDIA H200" if gpu else "", baselines=baselines, input_ms=2.52, floor=floor, rounds=rounds,
                final_retime=[FinalTiming(id="r3-t0", median_ms=best_ms, status="ok"),
                              FinalTiming(id="input", median_ms=2.52, status="ok")],
                best_id="r3-t0", best_ms=best_ms, best_round=3, speedup_vs_input=2.52 / best_ms,
                speedup_vs_eager=8.4 / best_ms, speedup_vs_compile=3.4 / best_ms,
                pct_of_floor=100 * 1.7685 / best_ms if gpu else None, candidates=6, candidates_ok=3, tokens=0,
                cost_usd=0.0, wall_s=720.0, gpu_measure_s=40.0)  # fmt: skip
    trace.write_final(s, plan[3][0].kernel.source)
    return s


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and zlib.crc32(data[12:16 + length]) == struct.unpack(">I", data[16 + length:20 + length])[0]
    width, height = struct.unpack(">II", data[16:24])
    assert width > 400 and height > 300


def table_row(text: str, problem: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith((f"| [`{problem}`]", f"| `{problem}` |")))
    return [c.strip() for c in line.strip("|").split("|")]


def close(cell: str, value: float) -> bool:
    number = cell.split()[0].rstrip("x")
    decimals = len(number.split(".")[1]) if "." in number else 0
    return abs(float(number) - value) <= 0.5 * 10**-decimals + 1e-12


@pytest.fixture
def artifacts(tmp_path) -> Path:
    root = tmp_path / "artifacts"
    root.mkdir()
    (root / "README.md").write_text(HAND_WRITTEN)
    return root


def test_complete_gpu_run(artifacts) -> None:
    folder = artifacts / PROBLEM
    s = record_run(folder)
    readme = rep.write_report(folder, artifacts)
    assert readme == folder / "README.md"
    assert_png(folder / "convergence.png")
    text = readme.read_text()
    cells = table_row(text, PROBLEM)
    head = list(rep.TABLE_HEAD)
    expect = {"eager ms": 8.4, "torch.compile ms": 3.4, "input ms": s.input_ms, "best ms": s.best_ms,
              "vs input": s.speedup_vs_input, "vs eager": s.speedup_vs_eager, "vs torch.compile": s.speedup_vs_compile,
              "% of floor": s.pct_of_floor}  # fmt: skip
    for col, value in expect.items():
        assert close(cells[head.index(col)], value), (col, cells[head.index(col)], value)
    assert cells[head.index("best round")] == "3 (`r3-t0`)" and cells[head.index("candidates ok")] == "3/6"
    assert "NVIDIA H200, driver 580.159.04" in text and "torch 2.11.0+cu130, triton 3.6.0" in text
    # running best per round: recorded values, failed round marked
    rounds = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ") and "`" in line}
    assert "| 2.000 |" in rounds["1"] and "0 (none passed)" in rounds["2"] and "| 1.600 |" in rounds["3"]
    assert "Round 3: `r3-t0` at 1.610 ms" in text and "BLOCK change r3-t0" in text
    # ncu: input -> the best candidate's own profile
    ncu = text.split("### Nsight Compute")[1]
    assert "| Kernel duration | 2.500 ms | 1.600 ms | 0.64x |" in ncu
    assert "| Memory throughput (max of DRAM, L1, L2) | 70.0 % | 93.5 % | +23.5 pt |" in ncu
    # the index: hand-written content kept, table between the markers
    index = (artifacts / "README.md").read_text()
    assert index.startswith("# Problems and GPU results\n\nIntro kept.\n\n" + rep.START)
    assert index.rstrip().endswith("Hand-written table kept.")
    assert table_row(index, PROBLEM)[1:] == cells[1:] and f"[`{PROBLEM}`]({PROBLEM}/README.md)" in index
    assert "- `36`: NVIDIA H200, driver 580.159.04" in index
    # idempotent: a second run changes nothing
    rep.write_report(folder, artifacts)
    assert (artifacts / "README.md").read_text() == index and readme.read_text() == text


def test_best_without_profile_and_problem_readme_kept(artifacts) -> None:
    folder = artifacts / PROBLEM
    record_run(folder)
    # make the best candidate's profile unavailable, and the README hand-written
    (folder / "optimization_trace/round_3/candidates/r3-t0/optimized_ncu_metrics.json").write_text(
        '{"available": false, "reason": "ncu: ERR_NVGPUCTRPERM"}')  # fmt: skip
    (folder / "README.md").write_text("# RMSNorm notes\n\nMine.\n\n## Later\n\nAlso mine.\n")
    text = rep.write_report(folder, index=False).read_text()
    assert text.startswith("# RMSNorm notes\n\nMine.\n\n" + rep.START) and text.rstrip().endswith("Also mine.")
    assert "| Kernel duration | 2.500 ms | - | - |" in text and "ERR_NVGPUCTRPERM" in text
    assert (artifacts / "README.md").read_text() == HAND_WRITTEN  # index=False


def test_cpu_run_cut_short_without_summary(tmp_path) -> None:
    folder = tmp_path / "run"
    record_run(folder, device="cpu", summary=False)
    (folder / "optimization_trace/round_4/round.json").unlink()  # the last round only in state.json
    text = rep.write_report(folder).read_text()
    assert_png(folder / "convergence.png")
    assert "no summary.json" in text and "CPU run" in text
    cells = table_row(text, PROBLEM)
    head = list(rep.TABLE_HEAD)
    assert cells[head.index("device")] == "CPU (interpreter)" and cells[head.index("best ms")] == "1.600"
    assert cells[head.index("vs eager")] == "-" and cells[head.index("% of floor")] == "-"
    assert "No profiles: Nsight Compute needs a GPU" in text
    assert not (tmp_path / "README.md").exists()  # no index outside artifacts/ unless it has the markers


def test_a_runs_own_values_rule_is_in_its_report(tmp_path) -> None:
    from beamsearch.records.schema import Tolerance

    default, own = tmp_path / "default", tmp_path / "own"
    record_run(default, device="cpu", summary=False)
    state = record_run(own, device="cpu", summary=False)
    rule = state.spec.model_copy(update={"tolerance": Tolerance(atol=0.04, rtol=0.02)})
    TraceWriter(own).save_state(state.model_copy(update={"spec": rule}))
    assert "values within atol 0.04 + rtol 0.02" in rep.write_report(own).read_text()
    assert "values within" not in rep.write_report(default).read_text()  # the dtype's default goes unsaid


def test_empty_and_unreadable_folders(tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    text = rep.write_report(empty).read_text()
    assert "nothing recorded yet" in text and not (empty / "convergence.png").exists()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "summary.json").write_text('{"problem": "x"}')
    text = rep.write_report(broken).read_text()
    assert "summary.json unreadable" in text


def test_index_over_problems_and_cli(artifacts, capsys) -> None:
    record_run(artifacts / PROBLEM)
    (artifacts / "43_Max_Pooling_3D").mkdir()  # no run yet: not in the table
    (artifacts / "README.md").write_text(HAND_WRITTEN.replace("\n\n## Foundation", f"\n\n{rep.START}\nold\n{rep.END}\n\n## Foundation"))
    assert rep.main([str(artifacts / PROBLEM)]) == 0  # the markers make the parent the index
    index = (artifacts / "README.md").read_text()
    assert "old" not in index and table_row(index, PROBLEM) and "43_Max" not in index
    assert index.count(rep.START) == 1 and "Hand-written table kept." in index
    assert str(artifacts / PROBLEM / "README.md") in capsys.readouterr().out


def test_input_stayed_the_best(tmp_path) -> None:
    folder = tmp_path / "run"
    s = record_run(folder)
    (folder / "summary.json").write_text(s.model_copy(update={"best_id": "input", "best_round": 0, "best_ms": 2.52,
                                                             "speedup_vs_input": 1.0}).model_dump_json())  # fmt: skip
    text = rep.write_report(folder).read_text()
    assert "No candidate beat the starting kernel (2.520 ms) in the final re-timing." in text
    assert "The fastest candidate of the rounds was `r3-t0` (round 3, 1.600 ms as measured then)." in text
    # the ncu table then compares the input with that candidate
    assert "| metric | input | fastest candidate (`r3-t0`) | change |" in text
    assert "| Kernel duration | 2.500 ms | 1.600 ms | 0.64x |" in text
    assert_png(folder / "convergence.png")


def test_a_gpu_runs_summary_leads_with_the_best_baseline(tmp_path) -> None:
    """The bar users compare with comes first: the console's result line, the report and the plot's title name
    the fastest PyTorch baseline and the best kernel's ratio to it (torch.compile here, 3.4 ms)."""
    from beamsearch.display import result_line

    s = record_run(tmp_path / PROBLEM).model_copy(
        update={"best_baseline": "compile", "speedup_vs_best_baseline": 3.4 / 1.61})
    assert result_line(s).startswith("result: r3-t0 at 1.610 ms: 2.11x faster than the best baseline (compile, "
                                     "3.400 ms), 110 % of the physical floor (1.768 ms, memory-bound), 1.57x the "
                                     "input kernel (2.520 ms)")  # fmt: skip
    (tmp_path / PROBLEM / "summary.json").write_text(s.model_dump_json())
    title = rep.convergence(rep.load_run(tmp_path / PROBLEM)).title.splitlines()[-1]
    assert title.startswith("best 1.610 ms, 2.11x vs compile (the best baseline)"), title


def test_the_readme_leads_with_the_result_and_says_a_loss_and_why(tmp_path) -> None:
    """Issue 46 §3: a result slower than the best baseline says so in the report, with the reason the run knows;
    the re-timing's passes are shown, and where they disagree, by how much."""
    folder = tmp_path / PROBLEM
    s = record_run(folder)
    why = "the best baseline calls a vendor library (cuBLAS/cuDNN): Inductor's code calls extern kernels"
    lost = s.model_copy(update={
        "baselines": [*s.baselines, Baseline(label="compile-max-autotune", target="compile-max-autotune",
                                             median_ms=1.3, status="ok")],
        "best_baseline": "compile-max-autotune", "speedup_vs_best_baseline": 1.3 / 1.61,
        "slower_than_best_baseline": True, "loss_reason": why, "setup_s": 66.0, "search_s": 540.0,
        "final_retime": [FinalTiming(id="r3-t0", median_ms=1.61, status="ok", medians_ms=[1.60, 1.61, 1.62]),
                         FinalTiming(id="input", median_ms=2.52, status="ok", medians_ms=[2.5, 3.7, 2.52])],
    })  # fmt: skip
    (folder / "summary.json").write_text(lost.model_dump_json())
    text = rep.write_report(folder).read_text()
    section = text.split("## Beam search results", 1)[1]
    first = next(line for line in section.splitlines() if line and not line.startswith("_"))
    assert first.startswith("**Result:** r3-t0 at 1.610 ms: SLOWER than the best baseline (compile-max-autotune, "
                            "1.300 ms): 0.81x its speed")  # fmt: skip
    assert f"Why slower: {why}." in first
    assert "Time: setup 1.1 min, search 9.0 min, 12.0 min in all." in text
    assert "| `input` | 2.520 | 2.500 / 3.700 / 2.520 (disagree by 48 %) | ok | - |" in text
    assert "| `r3-t0` | 1.610 | 1.600 / 1.610 / 1.620 | ok | - |" in text


def test_a_run_that_tried_nothing_warns_in_its_report(tmp_path) -> None:
    folder = tmp_path / PROBLEM
    s = record_run(folder)
    warned = s.model_copy(update={"warnings": ["the search tried no candidate (rounds done): the result is a starting kernel"]})
    (folder / "summary.json").write_text(warned.model_dump_json())
    text = rep.write_report(folder).read_text()
    assert "**Warning:** the search tried no candidate (rounds done): the result is a starting kernel." in text
