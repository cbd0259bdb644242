"""Bench's floor column: % of floor for every timed row, rows faster than physics flagged, and what fails it."""

from __future__ import annotations

import pytest

from beamsearch.bench import failures, fmt_pct, fmt_ratio, speedup, with_floor
from beamsearch.records.problems import resolve_problem
from beamsearch.records.schema import BenchReport, BenchRow, RunSpec, Timing, TimingResult, Verdict

SPEC = RunSpec(problem_path=resolve_problem("36").problem_path, shapes="full", device="cuda")


def row(label: str, median_ms: float, device: str = "NVIDIA H200", on_gpu: bool = True) -> BenchRow:
    t = Timing(median_ms=median_ms, mean_ms=median_ms, std_ms=0, min_ms=median_ms, n=10, warmup_n=1,
               method="x", device_name=device, on_gpu=on_gpu, dtype="bf16", shapes="full")  # fmt: skip
    return BenchRow(label=label, target=label, timing=TimingResult(target=label, status="ok", timing=t))


def test_pct_of_floor_and_suspect(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("BEAMSEARCH_CACHE_DIR", str(tmp_path))  # datasheet peaks, not a cached measurement
    report = with_floor(BenchReport(problem="36", spec=SPEC, rows=[row("honest", 3.1316), row("cheat", 0.5)]))
    # RMSNorm moves 7.516 GB; at the H200's 4800 GB/s that is 1.5659 ms.
    assert report.floor.floor_ms == pytest.approx(7.516192768 / 4800 * 1e3)
    honest, cheat = report.rows
    assert honest.pct_of_floor == pytest.approx(50.0, abs=0.01) and not honest.suspect
    assert cheat.suspect


def test_no_floor_on_cpu_or_unknown_gpu(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("BEAMSEARCH_CACHE_DIR", str(tmp_path))
    cpu = with_floor(BenchReport(problem="36", spec=SPEC, rows=[row("k", 1.0, "cpu", on_gpu=False)]))
    assert cpu.floor is None and "CPU" in cpu.floor_note and cpu.rows[0].pct_of_floor is None
    odd = with_floor(BenchReport(problem="36", spec=SPEC, rows=[row("k", 1.0, "NVIDIA Imaginary X1")]))
    assert odd.floor is None and "Imaginary" in odd.floor_note


def test_speedup_only_on_gpu_and_only_when_both_are_timed() -> None:
    gpu = BenchReport(problem="36", spec=SPEC, rows=[row("eager", 2.0), row("k", 0.5)])
    assert speedup(gpu, gpu.rows[1], "eager") == pytest.approx(4.0)
    assert speedup(gpu, gpu.rows[1], "compile") is None  # no such baseline in the report
    cpu = BenchReport(problem="36", spec=SPEC, rows=[row("eager", 2.0, "cpu", False), row("k", 0.5, "cpu", False)])
    assert speedup(cpu, cpu.rows[1], "eager") is None
    assert (fmt_ratio(None), fmt_ratio(4.0), fmt_pct(None), fmt_pct(49.6), fmt_pct(0.29)) == ("-", "4.00x", "-", "50%", "0.3%")


def test_failures_name_each_row_that_fails_the_bench(monkeypatch, tmp_path) -> None:
    """What makes the bench exit 1 (docs/cli.md), one line each: a suspect time, a timing that failed a check
    or crashed (a baseline's too: it was asked for), a failed verdict; a timed row that passed is none."""
    monkeypatch.setenv("BEAMSEARCH_CACHE_DIR", str(tmp_path))
    cheat, honest = row("cheat.py", 0.5), row("honest.py", 3.1316)
    timed = row("timed.py", 1.0).model_copy(update={"timing": TimingResult(
        target="timed.py", status="failed", reason="timed_outputs: timed repetition 2 of 9 gave a wrong answer")})
    crashed = BenchRow(label="PyTorch eager", target="eager", timing=TimingResult(target="eager", status="crashed",
                                                                                  reason="exited with status 1"))
    wrong = BenchRow(label="wrong.py", target="wrong.py", verdict=Verdict(
        kernel_path="wrong.py", passed=False, status="incorrect", reason="seed 0: output 0 differs"))
    report = with_floor(BenchReport(problem="36", spec=SPEC, rows=[honest, cheat, timed, crashed, wrong]))
    assert failures(report) == [
        "cheat.py: suspect: 0.5000 ms, under the floor's 1.5659 ms: faster than physics allows",
        "timed.py: timing failed: timed_outputs: timed repetition 2 of 9 gave a wrong answer",
        "eager: timing crashed: exited with status 1",
        "wrong.py: incorrect: seed 0: output 0 differs",
    ]
    assert failures(with_floor(BenchReport(problem="36", spec=SPEC, rows=[honest]))) == []
