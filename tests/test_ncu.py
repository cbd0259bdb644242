"""ncu runner: every failure is an unavailable Profile with its reason (CPU, with fake ncu programs);
and on a GPU, a real profile filtered to the kernel's own Triton kernels."""

from __future__ import annotations

import stat

import pytest

from beamsearch.records.problems import resolve_problem
from beamsearch.records.schema import RunSpec
from profiling import ncu
from profiling.metrics import COMPUTE_SOL, DURATION, MEMORY_SOL
from tests.conftest import DATA, KERNELS

GPU_SPEC = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="full", device="cuda")


def fake_ncu(tmp_path, body: str) -> str:
    path = tmp_path / "ncu"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_cpu_run_has_no_profile(scale_spec: RunSpec) -> None:
    profile = ncu.profile_kernel(scale_spec, str(KERNELS / "good.py"))
    assert not profile.available and "CUDA GPU" in profile.reason


def test_missing_ncu(monkeypatch) -> None:
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    profile = ncu.profile_kernel(GPU_SPEC, str(KERNELS / "good.py"))
    assert not profile.available and "ncu (Nsight Compute) not found" in profile.reason


def test_no_permission_to_counters(monkeypatch, tmp_path) -> None:
    script = fake_ncu(tmp_path, 'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"; exit 1')
    monkeypatch.setattr(ncu, "find_ncu", lambda: script)
    profile = ncu.profile_kernel(GPU_SPEC, str(KERNELS / "good.py"))
    assert not profile.available and "ERR_NVGPUCTRPERM" in profile.reason and "permission" in profile.reason


@pytest.mark.slow
def test_ncu_timeout_is_killed(monkeypatch, tmp_path) -> None:
    script = fake_ncu(tmp_path, "sleep 60")
    monkeypatch.setattr(ncu, "find_ncu", lambda: script)
    profile = ncu.profile_kernel(GPU_SPEC, str(KERNELS / "good.py"), timeout_s=2)
    assert not profile.available and "within 2 s" in profile.reason and profile.duration_s < 10


def test_command_profiles_one_call_with_the_schema_metrics() -> None:
    from pathlib import Path

    cmd = ncu.ncu_prefix("ncu", Path("/job"))
    assert cmd[:9] == ["ncu", "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base", "--metrics"]
    assert DURATION in cmd[9] and COMPUTE_SOL in cmd[9]
    assert "--profile-from-start" in cmd and cmd[cmd.index("--profile-from-start") + 1] == "off"
    assert cmd[-2:] == ["--log-file", "/job/ncu.csv"]


# Runs the profiled command as ncu would, then writes its "report" ($REPORT) to the --log-file.
PASS_THROUGH = '''while [ "$1" != "--log-file" ]; do shift; done
log="$2"; shift 2
"$@"
echo "$REPORT" > "$log"'''


@pytest.mark.slow
def test_the_profiled_process_gets_its_job_on_stdin_and_ncus_report_is_read_back(monkeypatch, tmp_path) -> None:
    """On the CPU the profiled call itself fails (no CUDA), but that answer has to come through the job's
    signed result, and the report through the job's folder; a spare waits for the next job."""
    from workers.harness import child_process

    script = fake_ncu(tmp_path, PASS_THROUGH)
    monkeypatch.setattr(ncu, "find_ncu", lambda: script)
    monkeypatch.setenv("REPORT", "no error here")
    profile = ncu.profile_kernel(GPU_SPEC, str(KERNELS / "good.py"))
    assert not profile.available and profile.reason.startswith("the profiled call failed:"), profile.reason
    assert profile.command[0] == script and profile.command[-2:] == ["-m", "profiling.ncu_child"]
    key = child_process.spare_key("profiling.ncu_child", child_process.child_env("cuda"), ncu._prefix_for(script))
    assert child_process._spares[key].proc.poll() is None
    child_process._kill_spares()
    monkeypatch.setenv("REPORT", "==ERROR== the counters are busy")
    profile = ncu.profile_kernel(GPU_SPEC, str(KERNELS / "good.py"))
    assert profile.reason == "==ERROR== the counters are busy"
    child_process._kill_spares()


@pytest.mark.slow
def test_a_workers_ncu_process_started_ahead_serves_its_first_profile(monkeypatch, tmp_path) -> None:
    from workers.harness import child_process

    script = fake_ncu(tmp_path, PASS_THROUGH)
    monkeypatch.setattr(ncu, "find_ncu", lambda: script)
    monkeypatch.setenv("REPORT", "no error here")
    child_process._kill_spares()
    ncu.start_ncu_spare("cpu")
    assert child_process._spares == {}  # nothing to profile on the CPU
    ncu.start_ncu_spare("cuda")
    key = child_process.spare_key("profiling.ncu_child", child_process.child_env("cuda"), ncu._prefix_for(script))
    ahead = child_process._spares[key]
    assert ahead.proc.poll() is None
    profile = ncu.profile_kernel(GPU_SPEC, str(KERNELS / "good.py"))
    assert profile.reason.startswith("the profiled call failed:"), profile.reason
    assert ahead.proc.poll() is not None and child_process._spares[key] is not ahead  # used, and replaced
    child_process._kill_spares()


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["43_Max_Pooling_3D", "04_Matrix_vector_multiplication"])
def test_real_profile_keeps_only_the_kernels_own_launches(name: str) -> None:
    problem = resolve_problem(name)
    spec = RunSpec(problem_path=problem.problem_path, shapes="full", device="cuda")
    profile = ncu.profile_kernel(spec, problem.input_kernel_path)
    assert profile.available, profile.reason
    assert all(not k.name.startswith("void ") for k in profile.kernels)  # no PyTorch kernels
    assert profile.combined[DURATION] > 0 and 0 < profile.combined[MEMORY_SOL] <= 100
    assert profile.duration_s < 60


@pytest.mark.gpu
def test_pytorch_conversion_kernels_are_not_mistaken_for_the_candidate() -> None:
    profile = ncu.profile_kernel(GPU_SPEC, str(KERNELS / "converts_first.py"))
    assert profile.available, profile.reason
    assert [k.name for k in profile.kernels] == ["scale_kernel"]
    assert any("copy" in name or "elementwise" in name for name in profile.ignored_kernels), profile.ignored_kernels
