"""The verification checks on a real GPU (CUDA faults differ from the interpreter's). Marker: gpu."""

from __future__ import annotations

import threading
import time

import pytest
from filelock import FileLock, Timeout

from beamsearch.records.schema import RunSpec, TimingKnobs
from tests.conftest import DATA, KERNELS
from tests.test_verify import BAD_KERNELS
from workers.harness.clock import FIRST_LOOK_REPS
from workers.harness.gpu_lock import gpu_lock
from workers.harness.timing import time_target
from workers.harness.verify import verify_kernel

pytestmark = pytest.mark.gpu


@pytest.fixture
def gpu_spec() -> RunSpec:
    return RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="full", device="cuda", dtype="bf16")


@pytest.mark.parametrize("name", sorted(BAD_KERNELS))
def test_bad_kernel_is_rejected_on_gpu(name: str, gpu_spec: RunSpec) -> None:
    status, check, words = BAD_KERNELS[name]
    verdict = verify_kernel(gpu_spec, str(KERNELS / name))
    assert verdict.status == status and words in verdict.reason, verdict.reason
    if check is not None:
        assert [c.name for c in verdict.checks if not c.passed] == [check]


def test_illegal_memory_access_is_a_failed_verdict(gpu_spec: RunSpec) -> None:
    verdict = verify_kernel(gpu_spec, str(KERNELS / "illegal_address.py"))
    assert verdict.status in ("runtime_error", "crashed") and not verdict.passed
    assert "illegal memory access" in verdict.reason or "CUDA" in verdict.reason, verdict.reason


def test_invalid_triton_kernel_is_compile_failed(gpu_spec: RunSpec) -> None:
    verdict = verify_kernel(gpu_spec, str(KERNELS / "triton_error.py"))
    assert verdict.status == "compile_failed", verdict.reason


def test_hang_is_killed_on_gpu(gpu_spec: RunSpec) -> None:
    assert verify_kernel(gpu_spec, str(KERNELS / "hangs.py"), timeout_s=20).status == "timeout"


@pytest.mark.parametrize("name", ["good.py", "kernelagent_varargs.py"])
def test_good_kernels_pass_and_time_on_gpu(name: str, gpu_spec: RunSpec) -> None:
    """Both timing paths: the timing child, and the runner after the checks (what a search uses)."""
    verdict = verify_kernel(gpu_spec, str(KERNELS / name), timing=TimingKnobs())
    assert verdict.passed, verdict.reason
    child = time_target(gpu_spec, str(KERNELS / name))
    for timing in (child, verdict.timing):
        assert timing.status == "ok" and timing.timing.on_gpu and timing.timing.n >= 10, timing.reason
    assert {c.name for c in verdict.timing.checks} == {c.name for c in child.checks}
    assert all(c.passed for c in verdict.timing.checks)
    assert verdict.timing.compiled_hash is not None and verdict.timing.compiled_hash == child.compiled_hash
    assert verdict.timing.lock_wait_s >= 0 and "measured" in verdict.timing.steps_s


def test_a_timing_slower_than_the_screen_stops_early_on_gpu(gpu_spec: RunSpec) -> None:
    """Both timing paths stop after a first look of a few repetitions far above the screen, skip the host
    clock's cross-check, and still check the repetitions' stream; the judge confirms the stop was above
    the screen."""
    knobs = TimingKnobs(screen_above_ms=1e-6)
    verdict = verify_kernel(gpu_spec, str(KERNELS / "good.py"), timing=knobs)
    child = time_target(gpu_spec, str(KERNELS / "good.py"), screen_above_ms=1e-6)
    for timing in (verdict.timing, child):
        assert timing.status == "ok", timing.reason
        t = timing.timing
        assert t.screened_above_ms == 1e-6 and t.n == FIRST_LOOK_REPS and t.host_batch_ms is None
        assert t.host_enqueue_ms is not None and t.sync_margin_ms is None and t.warmup_n == 0
        checks = {c.name: c.passed for c in timing.checks}
        assert checks["stopped_early_when_slower"] and checks["current_stream"] and "clocks_agree" not in checks
    assert verify_kernel(gpu_spec, str(KERNELS / "good.py"), timing=TimingKnobs(screen_above_ms=1e6)).timing.timing.n > 10


def test_a_kernel_that_dies_when_timed_fails_its_timing_on_gpu(gpu_spec: RunSpec) -> None:
    verdict = verify_kernel(gpu_spec, str(KERNELS / "exits_when_timed.py"), timing=TimingKnobs())
    assert verdict.passed and verdict.timing.status == "crashed", (verdict.reason, verdict.timing)


def test_a_kernel_that_dies_in_the_compile_pass_is_a_crash_that_says_so_on_gpu(gpu_spec: RunSpec) -> None:
    verdict = verify_kernel(gpu_spec, str(KERNELS / "exits_when_compiled_ahead.py"), timing=TimingKnobs())
    assert verdict.status == "crashed" and "compiled ahead of its first call" in verdict.reason, verdict.reason
    assert "exited with status 0" in verdict.reason, verdict.reason


def test_a_kernel_that_spins_forever_when_timed_is_killed_holding_the_lock_on_gpu(gpu_spec: RunSpec, tmp_path) -> None:
    """A device-side hang under the measurement lock: the runner is killed before the lock is given up,
    and the GPU times the next kernel normally."""
    start = time.monotonic()
    verdict = verify_kernel(gpu_spec, str(KERNELS / "hangs_when_timed.py"), timing=TimingKnobs(lock_dir=str(tmp_path)))
    took_s = time.monotonic() - start
    timing = verdict.timing
    assert verdict.passed and timing.status == "timeout", (verdict.reason, timing)
    assert "kernel_function hung (timed)" in timing.reason and "locked" in timing.steps_s, timing
    assert took_s < 60, f"{took_s:.0f} s"
    good = verify_kernel(gpu_spec, str(KERNELS / "good.py"), timing=TimingKnobs(lock_dir=str(tmp_path)))
    assert good.passed and good.timing.status == "ok" and good.timing.lock_wait_s < 1.0, good.timing


def _slot_busy(lock_dir) -> bool:
    """Whether the GPU's single verification place is held (by a child: filelock locks per open file)."""
    files = list(lock_dir.glob("verify-*-0.lock"))
    if not files:
        return False
    try:
        FileLock(str(files[0])).acquire(timeout=0)
    except Timeout:
        return True
    FileLock(str(files[0])).release(force=True)
    return False


def test_a_verification_keeps_its_memory_place_through_its_timing(gpu_spec, tmp_path, monkeypatch) -> None:
    """Behind another worker's profile, begun once the verification has its place, the verification waits
    (its checks' steps for the GPU's use, which the profile holds alone, or its timing for the measurement
    lock) still holding its verification place (one here): the place is a memory budget, and its inputs,
    copies and kept outputs are on the GPU meanwhile. (Before its place, at the kernel's import, it waits
    holding none.) The verdict says how much memory the job used and how long it waited."""
    monkeypatch.setenv("BEAMSEARCH_LOCK_DIR", str(tmp_path))
    done: dict = {}
    job = threading.Thread(target=lambda: done.update(verdict=verify_kernel(
        gpu_spec, str(KERNELS / "good.py"), timing=TimingKnobs(), slots=1)))  # fmt: skip
    job.start()
    deadline = time.time() + 120
    while time.time() < deadline and not _slot_busy(tmp_path):
        time.sleep(0.005)
    with gpu_lock(gpu_spec.device):  # another worker's profile
        time.sleep(3.0)
        assert job.is_alive() and _slot_busy(tmp_path), "the waiting verification holds the place"
    job.join(120)
    verdict = done["verdict"]
    assert verdict.passed and verdict.timing.status == "ok", (verdict.reason, verdict.timing)
    assert verdict.use_wait_s + verdict.timing.lock_wait_s >= 0.3 and "slot_taken" in verdict.steps_s
    assert not _slot_busy(tmp_path)
    assert verdict.gpu_peak_gb is not None and verdict.gpu_peak_gb > 0


def test_a_first_call_past_its_limit_is_a_timeout_on_gpu(gpu_spec: RunSpec) -> None:
    verdict = verify_kernel(gpu_spec, str(KERNELS / "slow_first_call.py"), timeout_s=120, first_call_limit_s=3)
    assert verdict.status == "timeout" and "compile time limit" in verdict.reason, verdict.reason
    assert verdict.duration_s < 30


def test_variants_share_a_session_and_an_idle_one_holds_no_tensors_on_gpu(tmp_path) -> None:
    """Two variants of GELU's kernel (3.2 GB of input at full size) in one session: both pass and time, in
    one judge; each verdict's memory peak is its own; once the first has passed, its runner holds none of
    its tensors (``release``): the memory in use falls back to the contexts of the judge, the runner and
    the next spare, where a runner still holding the input and output would hold over 6 GB more."""
    import torch

    from workers.harness.verify import VerifySession

    gelu = DATA.parent.parent / "artifacts" / "26_GELU_"
    spec = RunSpec(problem_path=str(gelu / "problem.py"), shapes="full", device="cuda", dtype="bf16")
    source = (gelu / "input_kernel.py").read_text()
    (tmp_path / "v1.py").write_text(source)
    (tmp_path / "v2.py").write_text(source + "\n# a second variant\n")
    session = VerifySession("cuda")
    try:
        free_before = torch.cuda.mem_get_info()[0]
        first = verify_kernel(spec, str(tmp_path / "v1.py"), seeds=[1, 2, 3], timing=TimingKnobs(seed=1), session=session)
        assert first.passed and first.timing.status == "ok" and "released" in first.steps_s, first.reason
        idle_gb = (free_before - torch.cuda.mem_get_info()[0]) / 1e9
        assert idle_gb < 3.0, f"an idle session holds {idle_gb:.1f} GB: more than three CUDA contexts"
        second = verify_kernel(spec, str(tmp_path / "v2.py"), seeds=[4, 5, 6], timing=TimingKnobs(seed=4), session=session)
        assert second.passed and second.timing.status == "ok" and session.processes == 1, second.reason
        assert second.gpu_peak_gb < 1.5 * first.gpu_peak_gb  # its own peak, not the two added up
    finally:
        session.close()


def test_a_kernel_running_code_already_timed_stops_as_a_duplicate_and_keeps_its_session_on_gpu(
    gpu_spec: RunSpec, tmp_path
) -> None:
    """A variant whose first call launches compiled code the run has timed is a ``duplicate``: hashed after
    its first seed's checks, neither checked further nor timed; the session's runner goes on to the next."""
    from workers.harness.verify import VerifySession

    source = (KERNELS / "good.py").read_text()
    (tmp_path / "_scale.py").write_text((KERNELS / "_scale.py").read_text())  # good.py's launch
    for k in range(3):
        (tmp_path / f"v{k}.py").write_text(source + f"\n# variant {k}\n")
    session = VerifySession("cuda")
    try:
        first = verify_kernel(gpu_spec, str(tmp_path / "v0.py"), seeds=[1, 2, 3], timing=TimingKnobs(seed=1), session=session)
        assert first.passed and first.timing is not None, first.reason
        code = first.timing.compiled_hash
        assert code is not None, first.timing.reason
        again = verify_kernel(gpu_spec, str(tmp_path / "v1.py"), seeds=[4, 5, 6], timing=TimingKnobs(seed=4),
                              session=session, known_compiled={code: "r1-t0"})  # fmt: skip
        assert again.status == "duplicate" and "r1-t0" in again.reason and again.compiled_hash == code, again.reason
        assert again.timing is None and "cache_checks" not in again.steps_s and "runner_kept" in again.steps_s
        other = verify_kernel(gpu_spec, str(tmp_path / "v2.py"), seeds=[7, 8, 9], timing=TimingKnobs(seed=7),
                              session=session, known_compiled={"0" * 16: "r1-t1"})  # fmt: skip
        assert other.passed and other.timing.status == "ok" and other.compiled_hash == code, other.reason
        assert session.processes == 1, "the duplicate's runner went on to the next kernel"
    finally:
        session.close()


def _own_kernel(tag: str, guard: str = "pass") -> str:
    """_scale.py's kernel under a name and a comment of its own (a source Triton has not compiled before),
    launched twice: into a workspace kept by shape at module level, then into the output."""
    source = (KERNELS / "_scale.py").read_text().replace("scale_kernel", f"scale_{tag}")
    source = source.replace("    r = tl.program_id(0)", f"    # {tag}\n    r = tl.program_id(0)", 1)
    return source + f"""

_workspaces = {{}}


def kernel_function(x, weight):
    {guard}
    launch(x, weight, _workspaces.setdefault(tuple(x.shape), torch.empty_like(x)))
    return launch(x, weight, torch.empty_like(x))
"""


def test_a_kernel_is_compiled_before_its_place_and_its_first_call_only_loads_it_on_gpu(gpu_spec, tmp_path) -> None:
    """The compile happens in ``compile_ahead``, outside the place and the GPU's use lock; the checked first
    call then loads it from Triton's cache. A workspace the kernel keeps by shape at module level is made
    in the checked import only (the pass's import is dropped), so the checked calls never meet meta tensors.
    The first variant warms Triton's launcher for this signature; the second is timed."""
    import uuid

    for k in range(2):
        path = tmp_path / f"v{k}.py"
        path.write_text(_own_kernel("k" + uuid.uuid4().hex[:12]))
        verdict = verify_kernel(gpu_spec, str(path), first_call_limit_s=60)
        assert verdict.passed and verdict.compile_ahead_stopped == "", (verdict.reason, verdict.compile_ahead_stopped)
        assert len(verdict.compiled_ahead) == 2  # both launches of its kernel
    ahead_s = verdict.steps_s["compiled_ahead"] - verdict.steps_s["kernel_imported"]
    assert verdict.first_call_s < 0.5 * ahead_s, (verdict.first_call_s, ahead_s, verdict.steps_s)


def test_a_kernel_that_refuses_meta_tensors_compiles_in_its_first_call_and_passes_on_gpu(gpu_spec, tmp_path) -> None:
    guard = 'if not x.is_cuda:\n        raise ValueError("x must be a CUDA tensor")'
    path = tmp_path / "k.py"
    path.write_text(_own_kernel("guarded", guard))
    verdict = verify_kernel(gpu_spec, str(path), timing=TimingKnobs())
    assert verdict.passed and verdict.timing.status == "ok", verdict.reason
    assert "CUDA tensor" in verdict.compile_ahead_stopped and verdict.compiled_ahead == []


def test_an_autotuned_kernel_compiles_in_its_first_call_and_passes_on_gpu(gpu_spec) -> None:
    verdict = verify_kernel(gpu_spec, str(KERNELS / "autotuned_scale.py"), timing=TimingKnobs())
    assert verdict.passed and verdict.timing.status == "ok", verdict.reason
    assert "autotuned" in verdict.compile_ahead_stopped
