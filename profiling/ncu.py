"""Profiling a kernel with Nsight Compute, in a child process, filtered to the kernel's own launches.

    ncu --clock-control none --csv --page raw --print-units base --metrics <schema>
        --profile-from-start off --log-file ncu.csv  python -m profiling.ncu_child request result

Only one call of ``kernel_function`` is profiled (the child brackets it with cudaProfilerStart/Stop
after a warm-up call), under the GPU lock, and only the Triton kernels that call launched are kept.
Any failure (no ncu, no permission to the counters, a timeout, a crash, nothing profiled) gives an
unavailable Profile with the reason: the search carries on without it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from beamsearch.schema import Profile, ProfiledCall, ProfileRequest, RunSpec
from profiling.metrics import metric_keys
from profiling.ncu_parse import combine, is_own_kernel, kernel_profiles, parse_raw_csv
from workers.child_process import ONE_WORK_QUEUE, child_env, kill_group

DEFAULT_NCU_TIMEOUT_S = 300.0
NCU_CANDIDATES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")


def find_ncu() -> str | None:
    return shutil.which("ncu") or next((c for c in NCU_CANDIDATES if os.access(c, os.X_OK)), None)


def ncu_command(ncu: str, log_path: Path, request_path: Path, result_path: Path) -> list[str]:
    return [
        ncu, "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
        "--metrics", ",".join(metric_keys()), "--profile-from-start", "off", "--log-file", str(log_path),
        sys.executable, "-m", "profiling.ncu_child", str(request_path), str(result_path),
    ]  # fmt: skip


def profile_kernel(
    spec: RunSpec, kernel_path: str, *, seed: int = 0, lock_dir: str = "", timeout_s: float = DEFAULT_NCU_TIMEOUT_S
) -> Profile:
    """Profile one call of ``kernel_path``'s kernel_function. Never raises for what ncu or the kernel do."""
    if not spec.device.startswith("cuda"):
        return Profile(available=False, reason="profiling needs a CUDA GPU; this run is on the CPU")
    ncu = find_ncu()
    if ncu is None:
        return Profile(available=False, reason="ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin")
    request = ProfileRequest(spec=spec, kernel_path=str(Path(kernel_path).resolve()), seed=seed, lock_dir=lock_dir)
    with tempfile.TemporaryDirectory(prefix="beamsearch-ncu-") as tmp:
        folder = Path(tmp)
        log, req, res, out = (folder / n for n in ("ncu.csv", "request.json", "result.json", "output.txt"))
        command = ncu_command(ncu, log, req, res)
        start, launched_at = time.perf_counter(), time.time()
        req.write_text(request.model_copy(update={"launched_at": launched_at}).model_dump_json())
        returncode, timed_out = _run(command, out, timeout_s, spec.device, folder)
        duration = time.perf_counter() - start
        text = log.read_text(errors="replace") if log.is_file() else ""
        output = out.read_text(errors="replace")
        common = {"command": command, "duration_s": duration, "ncu_version": ncu_version(ncu)}
        if timed_out:
            return Profile(available=False, reason=f"ncu did not finish within {timeout_s:.0f} s", **common)
        problem = _ncu_problem(text + output)
        if problem:
            return Profile(available=False, reason=problem, **common)
        if not res.is_file():
            tail = (output.strip().splitlines() or [""])[-1][:300]
            return Profile(available=False, reason=f"the profiled process died (exit {returncode}): {tail}", **common)
        try:
            call = ProfiledCall.model_validate_json(res.read_text())
        except ValueError as e:  # pydantic's ValidationError included
            return Profile(available=False, reason=f"unreadable result from the profiled process: {e}", **common)
        if call.status != "ok":
            return Profile(available=False, reason=f"the profiled call failed: {call.reason}", **common)
        common["steps_s"] = call.steps_s | {"ncu_done": round(duration, 3)}
        return _profile_from(parse_raw_csv(text), call, common)


def _profile_from(launches: list, call: ProfiledCall, common: dict) -> Profile:
    if not call.own_kernels:
        return Profile(available=False, reason="kernel_function launched no Triton kernel", **common)
    own = [launch for launch in launches if is_own_kernel(launch.kernel_name, call.own_kernels)]
    ignored = sorted({launch.kernel_name for launch in launches if launch not in own})
    if not own:
        return Profile(available=False, reason=f"ncu reported no launch of {', '.join(call.own_kernels)}",
                       ignored_kernels=ignored, **common)  # fmt: skip
    kernels = kernel_profiles(own)
    return Profile(
        available=True,
        kernels=kernels,
        combined=combine([launch.metrics for launch in own]),
        ignored_kernels=ignored,
        gpu_name=own[0].device_name,
        **common,
    )


def _ncu_problem(text: str) -> str:
    if "ERR_NVGPUCTRPERM" in text:
        return ("no permission to the GPU performance counters (ERR_NVGPUCTRPERM): run as root or set "
                "NVreg_RestrictProfilingToAdminUsers=0; see https://developer.nvidia.com/ERR_NVGPUCTRPERM")  # fmt: skip
    errors = [ln for ln in text.splitlines() if ln.startswith("==ERROR==")]
    return errors[0][:500] if errors else ""


def _run(command: list[str], output: Path, timeout_s: float, device: str, cwd: Path) -> tuple[int | None, bool]:
    with open(output, "wb") as out:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=ONE_WORK_QUEUE | child_env(device), cwd=cwd, start_new_session=True)  # fmt: skip
        try:
            return proc.wait(timeout=timeout_s), False
        except subprocess.TimeoutExpired:
            return None, True
        finally:
            kill_group(proc)  # also whatever the profiled process left running


_versions: dict[str, str] = {}


def ncu_version(ncu: str) -> str:
    if ncu not in _versions:
        try:
            text = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=30).stdout
            _versions[ncu] = (text.strip().splitlines() or [""])[-1]
        except (OSError, subprocess.SubprocessError) as e:
            _versions[ncu] = f"unknown ({e})"
    return _versions[ncu]
