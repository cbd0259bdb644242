"""The child-process runner: one fresh process per job, a spare importing in the background."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from beamsearch.records.schema import RunSpec
from tests.conftest import KERNELS
from workers.harness import child_process
from workers.harness.verify import verify_kernel


def spare_of(module: str) -> child_process._Child:
    """The idle spare for CPU jobs of ``module`` (other tests may have left spares for other devices)."""
    return child_process._spares[child_process.spare_key(module, child_process.child_env("cpu"))]


@pytest.mark.slow
def test_each_job_gets_a_fresh_process_and_a_spare_waits(scale_spec: RunSpec) -> None:
    verify_kernel(scale_spec, str(KERNELS / "good.py"))
    spare = spare_of("workers.harness.verify_child")
    assert spare.proc.poll() is None  # alive, waiting for a job
    verdict = verify_kernel(scale_spec, str(KERNELS / "good.py"))
    assert verdict.passed
    assert spare.proc.poll() == 0  # it was used for that job, and exited
    assert not spare.folder.exists()  # its folder is gone
    assert spare_of("workers.harness.verify_child") is not spare
    child_process._kill_spares()
    assert not child_process._spares


def test_spares_started_ahead_serve_the_first_jobs(scale_spec: RunSpec) -> None:
    child_process._kill_spares()
    child_process.start_spares(["workers.harness.verify_child", "workers.harness.timing_child"], "cpu")
    spares = {m: spare_of(m) for m in ("workers.harness.verify_child", "workers.harness.timing_child")}
    child_process.start_spares(["workers.harness.verify_child"], "cpu")  # one is there: no second
    assert spare_of("workers.harness.verify_child") is spares["workers.harness.verify_child"]
    assert verify_kernel(scale_spec, str(KERNELS / "good.py")).passed
    assert spares["workers.harness.verify_child"].proc.poll() == 0  # the first job ran in it
    assert spares["workers.harness.timing_child"].proc.poll() is None  # still waiting for its job
    child_process._kill_spares()


def kernel_doing(tmp_path, body: str):
    """good.py, plus ``body`` run at import time inside the child."""
    source = (KERNELS / "good.py").read_text().replace("os.path.dirname(os.path.abspath(__file__))", repr(str(KERNELS)))
    path = tmp_path / "kernel.py"
    path.write_text(source.replace("def kernel_function", body + "\n\n\ndef kernel_function"))
    return str(path)


def test_the_kernels_cwd_and_what_it_wrote_there_are_removed(scale_spec: RunSpec, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BEAMSEARCH_SANDBOX", "0")  # the kernel reports back through a file outside its folder
    record = tmp_path / "cwd.txt"
    kernel = kernel_doing(tmp_path, f"open('junk.txt', 'w').write('x')\nopen({str(record)!r}, 'w').write(os.getcwd())")
    assert verify_kernel(scale_spec, kernel).passed
    cwd = record.read_text()
    assert "beamsearch-child-" in cwd and not os.path.exists(cwd)


@pytest.mark.slow
def test_processes_a_kernel_starts_are_rejected_and_do_not_outlive_its_job(
    scale_spec: RunSpec, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("BEAMSEARCH_SANDBOX", "0")
    record = tmp_path / "pid.txt"
    body = f"import subprocess\nopen({str(record)!r}, 'w').write(str(subprocess.Popen(['sleep', '60']).pid))"
    verdict = verify_kernel(scale_spec, kernel_doing(tmp_path, body))
    assert verdict.status == "incorrect" and "background_work" in verdict.reason and "process" in verdict.reason
    pid = int(record.read_text())
    time.sleep(0.5)
    status = Path(f"/proc/{pid}/status")
    # Gone, or a zombie waiting for init to reap it: either way no longer running.
    assert not status.exists() or "State:\tZ" in status.read_text()


def test_a_module_in_a_childs_working_folder_is_not_imported(tmp_path) -> None:
    """The kernel may write its working folder: the judge started in it must not import from it."""
    import subprocess
    import sys

    (tmp_path / "planted_by_a_kernel.py").write_text("raise SystemExit('imported')\n")
    env = child_process.child_env("cpu")
    done = subprocess.run([sys.executable, "-c", "import planted_by_a_kernel"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr, done.stderr[-500:]


def test_the_kernel_writes_only_its_own_folder(scale_spec: RunSpec, tmp_path) -> None:
    from workers.harness.sandbox import landlock_abi

    if landlock_abi() < 1:
        pytest.skip("Landlock is not available on this kernel")
    outside = tmp_path / "planted.txt"
    verdict = verify_kernel(scale_spec, kernel_doing(tmp_path, f"open('fine.txt', 'w').write('x')\n"
                                                               f"open({str(outside)!r}, 'w').write('x')"))  # fmt: skip
    assert verdict.status == "compile_failed" and "PermissionError" in verdict.reason
    assert not outside.exists() and verdict.sandbox.startswith("landlock")


def test_a_result_the_child_did_not_sign_is_rejected(monkeypatch) -> None:
    key = "k" * 64
    good = child_process.signed_envelope(key, '{"a": 1}')
    assert child_process.open_envelope(key, good) == '{"a": 1}'
    forged = good.replace('{\\"a\\": 1}', '{\\"a\\": 2}')
    assert forged != good and child_process.open_envelope(key, forged) is None
    assert child_process.open_envelope("other" * 13, good) is None
    assert child_process.open_envelope(key, "not json") is None


@pytest.mark.slow
def test_a_spare_from_another_environment_is_not_reused(scale_spec: RunSpec, monkeypatch) -> None:
    child_process._kill_spares()  # others' spares of other environments would count against the two kept
    verify_kernel(scale_spec, str(KERNELS / "good.py"))
    old_spares = set(child_process._spares)
    monkeypatch.setenv("BEAMSEARCH_LOCK_DIR", "/tmp/beamsearch-test-other-locks")
    verify_kernel(scale_spec, str(KERNELS / "good.py"))
    assert old_spares <= set(child_process._spares)  # the first spare is still there, unused
    assert len(set(child_process._spares) - old_spares) == 1
    child_process._kill_spares()


def test_gpu_jobs_start_cuda_on_their_gpu_while_they_wait_and_cpu_jobs_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    assert child_process.child_env("cuda:1")[child_process.EARLY_CUDA_INIT] == "cuda:1"
    assert child_process.EARLY_CUDA_INIT not in child_process.child_env("cpu")
    import torch

    calls: list[str] = []
    monkeypatch.setattr(torch.cuda, "init", lambda: calls.append("init"))
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: calls.append(f"set {d}"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: calls.append("context"))
    monkeypatch.delenv(child_process.EARLY_CUDA_INIT, raising=False)
    child_process.start_cuda_early()
    assert calls == []
    monkeypatch.setenv(child_process.EARLY_CUDA_INIT, "cuda")
    child_process.start_cuda_early()
    assert calls == ["init", "context"]  # the current GPU: the only one Ray lets a worker see
    calls.clear()
    monkeypatch.setenv(child_process.EARLY_CUDA_INIT, "cuda:1")
    child_process.start_cuda_early()
    assert calls == ["init", "set cuda:1", "context"]
    monkeypatch.setattr(torch.cuda, "init", lambda: 1 / 0)
    child_process.start_cuda_early()  # a failure is left for the job to meet and report


def test_a_process_keeps_spares_for_its_newest_environments_only(monkeypatch) -> None:
    """A process whose environment changes between jobs (a test's settings, a bench's lock folder) keeps
    the newest ``SPARES_PER_MODULE`` spares of a module; the older ones are stopped, not left waiting."""
    module = "workers.harness.timing_child"
    child_process._kill_spares()
    started = []
    for n in range(3):
        monkeypatch.setenv("BEAMSEARCH_TEST_SPARE_ENV", str(n))
        child_process.start_spares([module], "cpu")
        started.append(spare_of(module))
    try:
        kept = [k for k in child_process._spares if k[0] == module]
        assert len(kept) == child_process.SPARES_PER_MODULE == 2
        assert started[0].proc.poll() is not None and not started[0].folder.exists()  # stopped, cleaned up
        assert all(s.proc.poll() is None for s in started[1:])
    finally:
        child_process._kill_spares()


def test_a_cpu_child_starts_no_cuda_and_a_failed_warm_up_is_only_logged(monkeypatch) -> None:
    ran = []
    monkeypatch.setenv(child_process.EARLY_CUDA_INIT, "cpu")
    assert child_process.start_cuda_early() is False  # a CPU job: no context, so ``serve`` runs no warm-up

    def broken() -> None:
        ran.append(True)
        raise RuntimeError("no GPU after all")

    child_process.warm_up_early(broken)  # a failed warm-up only costs the job that time
    assert ran == [True]
