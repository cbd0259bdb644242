"""The tools as a user runs them: one exit-code table, one spelling per shared flag (docs/cli.md), JSON,
clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from beamsearch.records.schema import Floor, Profile, Timing, TimingResult, Work
from beamsearch.trace import TraceWriteError
from profiling.profile import KernelReport
from tests.conftest import DATA, KERNELS

PROBLEM = str(DATA / "scale_rows_problem.py")
RMSNORM = KERNELS.parents[2] / "artifacts" / "36_RMSNorm" / "problem.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_verify_exit_status_follows_the_verdict() -> None:
    good = run("beamsearch.verify", "--problem", PROBLEM, "--kernel", str(KERNELS / "good.py"), "--device", "cpu")
    assert good.returncode == 0 and "all checks passed" in good.stdout
    bad = run("beamsearch.verify", "--problem", PROBLEM, "--kernel", str(KERNELS / "unwritten.py"), "--json")
    assert bad.returncode == 1
    verdict = json.loads(bad.stdout)
    assert verdict["status"] == "incorrect" and "never written" in verdict["reason"]


@pytest.mark.slow
def test_unknown_problem_and_missing_gpu_are_clear_errors() -> None:
    unknown = run("beamsearch.verify", "--problem", "99_nope")
    assert unknown.returncode == 2 and "43_Max_Pooling_3D" in unknown.stderr
    import torch

    if not torch.cuda.is_available():
        no_gpu = run("beamsearch.verify", "--problem", "43", "--device", "cuda")
        assert no_gpu.returncode == 2 and "no CUDA GPU" in no_gpu.stderr


@pytest.mark.slow
def test_a_missing_kernel_file_is_named_before_any_work() -> None:
    missing = str(KERNELS / "no_such_kernel.py")
    verify = run("beamsearch.verify", "--problem", PROBLEM, "--device", "cpu", "--kernel", missing)
    profile = run("beamsearch.profile", "--problem", PROBLEM, "--device", "cpu", "--kernel", missing)
    bench = run("beamsearch.bench", "--problem", PROBLEM, "--device", "cpu", "--kernel", str(KERNELS / "good.py"),
                "--kernel", missing)  # fmt: skip
    for out in (verify, bench, profile):
        assert out.returncode == 2 and f"no such kernel file: {missing}" in out.stderr, out.stderr[-500:]
        assert "timing" not in out.stderr + out.stdout  # nothing was timed first


@pytest.mark.slow
def test_verify_takes_atol_and_rtol() -> None:
    """A kernel as accurate as PyTorch's bf16 forward where that misses bf16's default rule: told how to
    loosen the rule, it passes with it; a negative or infinite tolerance is refused before any work."""
    args = ("beamsearch.verify", "--problem", str(DATA / "cancel_problem.py"), "--device", "cpu",
            "--kernel", str(KERNELS / "cancel_as_bf16.py"))  # fmt: skip
    default = run(*args)
    assert default.returncode == 1 and "--atol" in default.stdout + default.stderr
    assert run(*args, "--atol", "1.5").returncode == 0
    for bad in ("-1", "inf"):
        refused = run(*args, "--atol", bad)
        assert refused.returncode == 2 and "must be finite and not negative" in refused.stderr, refused.stderr


@pytest.mark.slow
def test_bench_json_times_verified_kernels_only() -> None:
    wrong = str(KERNELS / "wrong_values.py")
    out = run("beamsearch.bench", "--problem", PROBLEM, "--baselines", "eager", "--json",
              "--kernel", str(KERNELS / "good.py"), "--kernel", wrong)  # fmt: skip
    assert out.returncode == 1  # a kernel failed verification
    assert f"error: {wrong}: incorrect: " in out.stderr, out.stderr[-2000:]
    report = json.loads(out.stdout)
    rows = {r["label"]: r for r in report["rows"]}
    assert rows["PyTorch eager"]["timing"]["status"] == "ok"
    assert rows["good.py"]["verdict"]["passed"] and rows["good.py"]["timing"]["timing"]["n"] >= 3
    assert rows["wrong_values.py"]["verdict"]["status"] == "incorrect" and rows["wrong_values.py"]["timing"] is None
    assert report["spec"]["device"] == "cpu" and report["spec"]["shapes"] == "small"


@pytest.mark.slow
def test_bench_table_says_cpu_times_are_not_comparable() -> None:
    out = run("beamsearch.bench", "--problem", PROBLEM, "--baselines", "eager", "--kernel", str(KERNELS / "good.py"))
    assert out.returncode == 0
    assert "interpreter" in out.stdout and "ratios are shown only for GPU runs" in out.stdout.replace("\n", " ")


def test_bench_exits_1_when_a_verified_kernel_fails_its_timing() -> None:
    """A kernel that does half the work only while a timing loop is on its stack: verified, its timing
    fails a check (timed_outputs), so the bench fails, naming the kernel and the check on stderr. (Not
    detects_guard.py: its empty calls fill the bench's 1000 repetitions, which a loaded CPU can take for a hang.)"""
    cheat = str(KERNELS / "adversarial" / "timed_by_stack.py")
    out = run("beamsearch.bench", "--problem", str(RMSNORM), "--device", "cpu", "--baselines", "", "--json",
              "--kernel", cheat)  # fmt: skip
    assert out.returncode == 1, out.stderr[-2000:]
    (row,) = json.loads(out.stdout)["rows"]
    assert row["verdict"]["passed"] and row["timing"]["status"] == "failed"
    (line,) = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: {cheat}: timing failed: timed_outputs: "), line


def test_list_flags_are_comma_separated_as_in_run() -> None:
    from beamsearch import bench, verify
    from beamsearch.run import parse_args as search_args

    for given, want in (("eager,compile", ["eager", "compile"]), ("compile-max-autotune", ["compile-max-autotune"]),
                        ("", [])):  # fmt: skip
        config, _, _ = search_args(["--problem", "43", "--baselines", given])
        assert config.baselines == want
        assert bench.build_parser().parse_args(["--problem", "43", "--baselines", given]).baselines == want
    assert verify.build_parser().parse_args(["--problem", "43", "--seeds", "4,5,6"]).seeds == [4, 5, 6]


def test_bench_takes_one_kernel_per_flag_repeated() -> None:
    from beamsearch import bench

    args = bench.build_parser().parse_args(["--problem", "43", "--kernel", "a,b.py", "--kernel", "c.py"])
    assert args.kernel == ["a,b.py", "c.py"]  # a path may hold a comma
    for refused in (["--kernel", "a.py", "b.py"], ["--baselines", "eager", "compile"], ["--baselines", "eager,nope"]):
        done = run("beamsearch.bench", "--problem", PROBLEM, "--device", "cpu", *refused)
        assert done.returncode == 2 and "error:" in done.stderr and "timing" not in done.stderr, done.stderr


def test_verify_takes_verify_timeout() -> None:
    """Its one timeout bounds one verification (not a search's whole task, run's --task-timeout)."""
    from beamsearch import verify

    assert verify.build_parser().parse_args(["--problem", "43", "--verify-timeout", "7"]).verify_timeout_s == 7.0
    assert verify.build_parser().parse_args(["--problem", "43", "--timeout", "7"]).verify_timeout_s == 7.0  # old name
    kernel = str(KERNELS / "good.py")
    out = run("beamsearch.verify", "--problem", PROBLEM, "--device", "cpu", "--kernel", kernel, "--verify-timeout", "0.01")
    assert out.returncode == 1 and f"error: {kernel}: timeout: no verdict within 0 s" in out.stderr, out.stderr[-2000:]


def _kernel_report(*, suspect: bool = False, timed: str = "ok", profiled: bool = True) -> KernelReport:
    timing = Timing(median_ms=0.5, mean_ms=0.5, std_ms=0, min_ms=0.5, n=10, warmup_n=1, method="x",
                    device_name="NVIDIA H100", on_gpu=True, dtype="bf16", shapes="full")  # fmt: skip
    floor = Floor(work=Work(bytes_moved=10**9, flops=0), dram_gbps=1000, tflops=500, memory_ms=1.25 if suspect else 0.25,
                  compute_ms=0, floor_ms=1.25 if suspect else 0.25, bound="memory", peaks_source="datasheet")  # fmt: skip
    return KernelReport(problem="p", kernel_path="k.py", floor=floor, pct_of_floor=250.0 if suspect else 50.0, suspect=suspect,
                        timing=TimingResult(target="k.py", status=timed, reason="timed_outputs: wrong answer",
                                            timing=timing if timed == "ok" else None),
                        profile=Profile(available=profiled, reason="" if profiled else "ncu not found"))  # fmt: skip


@pytest.mark.parametrize(("report", "reason"), [
    (_kernel_report(), None),
    (_kernel_report(suspect=True), "k.py: suspect: 0.5000 ms, under the floor's 1.2500 ms"),
    (_kernel_report(timed="failed"), "k.py: timing failed: timed_outputs: wrong answer"),
    (_kernel_report(profiled=False), "k.py: no profile: ncu not found"),
], ids=["ok", "suspect", "timing", "no-profile"])  # fmt: skip
def test_profile_exits_1_on_a_suspect_time_a_failed_timing_or_no_profile(monkeypatch, capsys, report, reason) -> None:
    from beamsearch import profile

    monkeypatch.setattr(profile, "report_kernel", lambda *a: report)
    with pytest.raises(SystemExit) as exit_:
        profile.main(["--problem", PROBLEM, "--device", "cpu", "--kernel", str(KERNELS / "good.py"), "--json"])
    err = capsys.readouterr().err
    assert exit_.value.code == (0 if reason is None else 1)
    assert (reason is None and "error:" not in err) or f"error: {reason}" in err, err


def test_publish_and_report_exit_1_when_a_file_cannot_be_written(monkeypatch, capsys, tmp_path) -> None:
    """Bad input is 2 (tests/test_publish.py); a write that fails once the work began is 1, said in one line."""
    from beamsearch import publish, report

    def full(*args: object, **kw: object) -> None:
        raise TraceWriteError("No space left on device")

    monkeypatch.setattr(publish, "publish", full)
    with pytest.raises(SystemExit) as exit_:
        publish.main([str(tmp_path)])
    assert exit_.value.code == 1 and "No space left on device" in capsys.readouterr().err
    monkeypatch.setattr(report, "write_report", full)
    with pytest.raises(SystemExit) as exit_:
        report.main([str(tmp_path)])
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 1 and line == f"error: no report for {tmp_path}: No space left on device"
    with pytest.raises(SystemExit) as exit_:
        report.main(["99_nope"])
    assert exit_.value.code == 2 and "error: no problem '99_nope'" in capsys.readouterr().err
