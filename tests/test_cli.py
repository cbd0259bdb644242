"""The two commands as a user runs them: exit codes, JSON, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import DATA, KERNELS

PROBLEM = str(DATA / "scale_rows_problem.py")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=300)


def test_verify_exit_status_follows_the_verdict() -> None:
    good = run("beamsearch.verify", "--problem", PROBLEM, "--kernel", str(KERNELS / "good.py"), "--device", "cpu")
    assert good.returncode == 0 and "all checks passed" in good.stdout
    bad = run("beamsearch.verify", "--problem", PROBLEM, "--kernel", str(KERNELS / "unwritten.py"), "--json")
    assert bad.returncode == 1
    verdict = json.loads(bad.stdout)
    assert verdict["status"] == "incorrect" and "never written" in verdict["reason"]


def test_unknown_problem_and_missing_gpu_are_clear_errors() -> None:
    unknown = run("beamsearch.verify", "--problem", "99_nope")
    assert unknown.returncode == 2 and "43_Max_Pooling_3D" in unknown.stderr
    import torch

    if not torch.cuda.is_available():
        no_gpu = run("beamsearch.verify", "--problem", "43", "--device", "cuda")
        assert no_gpu.returncode == 2 and "no CUDA GPU" in no_gpu.stderr


def test_a_missing_kernel_file_is_named_before_any_work() -> None:
    missing = str(KERNELS / "no_such_kernel.py")
    verify = run("beamsearch.verify", "--problem", PROBLEM, "--device", "cpu", "--kernel", missing)
    bench = run("beamsearch.bench", "--problem", PROBLEM, "--device", "cpu", "--kernel", str(KERNELS / "good.py"), missing)
    for out in (verify, bench):
        assert out.returncode == 2 and f"no such kernel file: {missing}" in out.stderr, out.stderr[-500:]
        assert "timing" not in out.stderr + out.stdout  # nothing was timed first


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


def test_bench_json_times_verified_kernels_only() -> None:
    out = run("beamsearch.bench", "--problem", PROBLEM, "--baselines", "eager", "--json",
              "--kernel", str(KERNELS / "good.py"), str(KERNELS / "wrong_values.py"))  # fmt: skip
    assert out.returncode == 1  # a kernel failed verification
    report = json.loads(out.stdout)
    rows = {r["label"]: r for r in report["rows"]}
    assert rows["PyTorch eager"]["timing"]["status"] == "ok"
    assert rows["good.py"]["verdict"]["passed"] and rows["good.py"]["timing"]["timing"]["n"] >= 3
    assert rows["wrong_values.py"]["verdict"]["status"] == "incorrect" and rows["wrong_values.py"]["timing"] is None
    assert report["spec"]["device"] == "cpu" and report["spec"]["shapes"] == "small"


def test_bench_table_says_cpu_times_are_not_comparable() -> None:
    out = run("beamsearch.bench", "--problem", PROBLEM, "--baselines", "eager", "--kernel", str(KERNELS / "good.py"))
    assert out.returncode == 0
    assert "interpreter" in out.stdout and "ratios are shown only for GPU runs" in out.stdout.replace("\n", " ")
