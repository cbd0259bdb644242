"""Profiling a kernel with Nsight Compute, in a child process, filtered to the kernel's own launches.

    ncu --clock-control none --csv --page raw --print-units base --metrics <schema>
        --profile-from-start off --log-file <job folder>/ncu.csv  python -m profiling.ncu_child

The profiled process is a ``workers.harness.child_process`` job: started ahead as a spare (ncu, Python and
torch take seconds to start, more under ncu), handed its request on stdin, killed with its process
group afterwards. Only one call of ``kernel_function`` is profiled (the child brackets it with
cudaProfilerStart/Stop after a warm-up call), under the GPU lock, and only the Triton kernels that
call launched are kept.
Any failure (no ncu, no permission to the counters, a timeout, a crash, nothing profiled) gives an
unavailable Profile with the reason: the search carries on without it.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from beamsearch.records.schema import Profile, ProfiledCall, ProfileRequest, RunSpec
from profiling.metrics import metric_keys
from profiling.ncu_parse import combine, is_own_kernel, kernel_profiles, parse_raw_csv
from workers.harness.child_process import Prefix, run_child, start_spares

DEFAULT_NCU_TIMEOUT_S = 300.0
NCU_CANDIDATES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")


def find_ncu() -> str | None:
    return shutil.which("ncu") or next((c for c in NCU_CANDIDATES if os.access(c, os.X_OK)), None)


NCU_LOG = "ncu.csv"


def ncu_prefix(ncu: str, folder: Path) -> list[str]:
    """ncu's part of the profiled process's command line; its report goes to the job's folder."""
    return [
        ncu, "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
        "--metrics", ",".join(metric_keys()), "--profile-from-start", "off", "--log-file", str(folder / NCU_LOG),
    ]  # fmt: skip


_prefixes: dict[str, Prefix] = {}


def _prefix_for(ncu: str) -> Prefix:
    """One prefix object per ncu binary, so the spare started for one job serves the next."""
    return _prefixes.setdefault(ncu, functools.partial(ncu_prefix, ncu))


def start_ncu_spare(device: str) -> None:
    """Start the process the next profile on ``device`` runs in (ncu, Python, torch: seconds), if ncu is here."""
    ncu = find_ncu()
    if ncu is not None and device.startswith("cuda"):
        start_spares(["profiling.ncu_child"], device, prefix=_prefix_for(ncu))


def profile_kernel(
    spec: RunSpec, kernel_path: str, *, seed: int = 0, lock_dir: str = "", timeout_s: float = DEFAULT_NCU_TIMEOUT_S
) -> Profile:
    """Profile one call of ``kernel_path``'s kernel_function. Never raises for what ncu or the kernel do."""
    if not spec.device.startswith("cuda"):
        return Profile(available=False, reason="profiling needs a CUDA GPU; this run is on the CPU")
    ncu = find_ncu()
    if ncu is None:
        return Profile(available=False, reason="ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin")
    request = ProfileRequest(spec=spec, kernel_path=str(Path(kernel_path).resolve()), seed=seed, lock_dir=lock_dir,
                             handed_over_at=time.time())  # fmt: skip
    prefix = _prefix_for(ncu)
    command = [*prefix(Path("<job folder>")), sys.executable, "-m", "profiling.ncu_child"]
    try:
        run = run_child("profiling.ncu_child", request, timeout_s, spec.device, prefix=prefix, read_back=NCU_LOG)
    except OSError as e:  # the process could not be started (no memory for a fork, ncu gone)
        return Profile(available=False, reason=f"could not start ncu: {e}", command=command)
    common = {"command": command, "duration_s": run.duration_s, "ncu_version": ncu_version(ncu)}
    if run.status == "timeout":
        return Profile(available=False, reason=f"ncu did not finish within {timeout_s:.0f} s", **common)
    problem = _ncu_problem(run.read_back + run.output_tail)
    if problem:
        return Profile(available=False, reason=problem, **common)
    if run.status == "crashed":
        return Profile(available=False, reason=f"the profiled process: {run.describe_death()}", **common)
    try:
        call = ProfiledCall.model_validate_json(run.result_json)
    except ValueError as e:  # pydantic's ValidationError included
        return Profile(available=False, reason=f"unreadable result from the profiled process: {e}", **common)
    common["steps_s"] = call.steps_s | {"ncu_done": round(time.time() - request.handed_over_at, 3)}
    if call.status != "ok":
        return Profile(available=False, reason=f"the profiled call failed: {call.reason}", **common)
    return _profile_from(parse_raw_csv(run.read_back), call, common)


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


_versions: dict[str, str] = {}


def ncu_version(ncu: str) -> str:
    if ncu not in _versions:
        try:
            text = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=30).stdout
            _versions[ncu] = (text.strip().splitlines() or [""])[-1]
        except (OSError, subprocess.SubprocessError) as e:
            _versions[ncu] = f"unknown ({e})"
    return _versions[ncu]
