"""Timing in a child process, labelled CPU times, and the per-device lock."""

from __future__ import annotations

import subprocess
import sys
import time

from beamsearch.schema import RunSpec
from tests.conftest import KERNELS
from workers.gpu_lock import device_key, gpu_lock
from workers.timing import time_target


def test_kernel_and_eager_are_timed_the_same_way_and_labelled_cpu(scale_spec: RunSpec, tmp_path) -> None:
    kernel = time_target(scale_spec, str(KERNELS / "good.py"), lock_dir=str(tmp_path))
    eager = time_target(scale_spec, "eager", lock_dir=str(tmp_path))
    for r in (kernel, eager):
        assert r.status == "ok", r.reason
        t = r.timing
        assert not t.on_gpu and "CPU" in t.method and t.device_name == "cpu"
        assert t.n >= 3 and t.min_ms <= t.median_ms and t.std_ms >= 0 and t.dtype == "bf16"
    assert kernel.timing.method == eager.timing.method


def test_a_failing_target_is_a_value_not_an_exception(scale_spec: RunSpec) -> None:
    result = time_target(scale_spec, str(KERNELS / "syntax_error.py"))
    assert result.status == "failed" and "SyntaxError" in result.reason and result.timing is None


def test_a_hanging_target_is_killed(scale_spec: RunSpec) -> None:
    result = time_target(scale_spec, str(KERNELS / "hangs.py"), timeout_s=10)
    assert result.status == "timeout"


def test_lock_is_shared_across_processes(tmp_path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from workers.gpu_lock import gpu_lock\n"
         f"with gpu_lock('cpu', {str(tmp_path)!r}):\n    print('held', flush=True); time.sleep(2)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    start = time.perf_counter()
    with gpu_lock("cpu", str(tmp_path)) as waited_s:
        pass
    holder.wait()
    assert waited_s > 1.0 and time.perf_counter() - start > 1.0
    assert device_key("cpu").startswith("cpu-")
