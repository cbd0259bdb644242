"""scripts/benchmark.py: one bundled problem end to end on the CPU, and its tables from made-up GPU reports."""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from beamsearch.records.problems import resolve_problem
from beamsearch.records.schema import BenchReport, BenchRow, RunSpec, Timing, TimingResult, Verdict

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "benchmark.py"


def load_script():
    spec = importlib.util.spec_from_file_location("benchmark_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations through it
    spec.loader.exec_module(module)
    return module


bm = load_script()


@pytest.mark.slow
def test_one_bundled_problem_on_the_cpu(tmp_path) -> None:
    out, md = tmp_path / "run.json", tmp_path / "run.md"
    proc = subprocess.run([sys.executable, str(SCRIPT), "36", "--device", "cpu", "--targets", "eager", "input",
                           "--json", str(out), "--markdown", str(md)],
                          capture_output=True, text=True, timeout=240, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[1/1] 36_RMSNorm" in proc.stdout and "CPU run" in proc.stdout
    run = bm.BenchmarkRun.model_validate_json(out.read_text())
    (report,) = run.reports
    assert [r.label for r in report.rows] == ["PyTorch eager", "input kernel"]
    assert report.rows[1].verdict.passed and all(r.ranked_ms for r in report.rows)
    assert report.spec.shapes == "small" and run.environment["torch"] and run.environment["gpu"] == "cpu"
    assert f"| 36_RMSNorm | input kernel | {report.rows[1].ranked_ms:.3f} |" in md.read_text()


def test_optimized_kernel_is_timed_when_the_folder_has_one(tmp_path, monkeypatch) -> None:
    problem = tmp_path / "p"
    problem.mkdir()
    src = Path(resolve_problem("36").problem_path)
    (problem / "problem.py").write_text(src.read_text())
    (problem / "input_kernel.py").write_text("def kernel_function(x): ...\n")
    asked = []

    def fake_run_bench(name, spec, kernels, baselines, console):
        asked.append((kernels, baselines))
        rows = [BenchRow(label=b, target=b) for b in baselines] + [BenchRow(label=Path(k).name, target=k) for k in kernels]
        return BenchReport(problem=name, spec=spec, rows=rows)

    monkeypatch.setattr(bm, "run_bench", fake_run_bench)
    args = argparse.Namespace(device="cpu", shapes="small", dtype="bf16", targets=list(bm.TARGETS))
    report, notes = bm.bench_problem(str(problem), args)
    assert notes == ["no optimized kernel"] and len(asked[0][0]) == 1
    assert asked[0][1] == ["eager", "compile", "compile-max-autotune"]
    (problem / "optimized_kernel_beam_search.py").write_text("def kernel_function(x): ...\n")
    report, notes = bm.bench_problem(str(problem), args)
    assert notes == [] and [r.label for r in report.rows][-2:] == ["input kernel", "optimized kernel"]


def _gpu_row(label: str, target: str, ms: float | None, verdict_ok: bool | None = None) -> BenchRow:
    verdict = None
    if verdict_ok is not None:
        verdict = Verdict(passed=verdict_ok, status="ok" if verdict_ok else "incorrect",
                          reason="fine" if verdict_ok else "values: 3 of 9 outside", kernel_path=target)  # fmt: skip
    if ms is None:
        return BenchRow(label=label, target=target, verdict=verdict)
    t = Timing(median_ms=ms, mean_ms=ms, std_ms=0.01, min_ms=ms, n=100, warmup_n=10, method="cuda events",
               device_name="NVIDIA H200", on_gpu=True, dtype="bf16", shapes="full")  # fmt: skip
    return BenchRow(label=label, target=target, verdict=verdict, timing=TimingResult(target=target, status="ok", timing=t),
                    pct_of_floor=25.0 * 2.0 / ms)  # fmt: skip


def test_tables_show_speedups_floor_and_failures() -> None:
    spec = RunSpec(problem_path=resolve_problem("36").problem_path, shapes="full", device="cuda")
    rows = [_gpu_row("PyTorch eager", "eager", 2.0), _gpu_row("torch.compile", "compile", 1.0),
            _gpu_row("input kernel", "/x/input_kernel.py", 4.0, True),
            _gpu_row("optimized kernel", "/x/optimized_kernel_beam_search.py", None, False)]  # fmt: skip
    run = bm.BenchmarkRun(environment={"gpu": "NVIDIA H200", "driver": "580.1", "torch": "2.11", "triton": "3.6.0"},
                          targets=list(bm.TARGETS), reports=[BenchReport(problem="36_RMSNorm", spec=spec, rows=rows)])  # fmt: skip
    md = bm.markdown(run)
    assert "| 36_RMSNorm | input kernel | 4.000 | 4.000 | 0.010 | 100 | 0.50x | 0.25x | 12% |" in md
    assert "| 36_RMSNorm | optimized kernel | incorrect: values: 3 of 9 outside |" in md
    assert "GPU NVIDIA H200; driver 580.1" in md
    console = Console(record=True, width=200)
    bm.render(run, console)
    text = console.export_text()
    assert "0.50x" in text and "incorrect" in text and "CPU run" not in text
    line = bm.progress_line(1, 5, run.reports[0], ["no thing"], 12.0)
    assert line == ("[1/5] 36_RMSNorm (12 s): PyTorch eager 2.0000 ms, torch.compile 1.0000 ms, "
                    "input kernel 4.0000 ms, optimized kernel incorrect, no thing")  # fmt: skip


def test_unknown_target_is_an_argparse_error(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        bm.main(["--targets", "nope"])
    assert e.value.code == 2
