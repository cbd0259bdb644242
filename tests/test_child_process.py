"""The child-process runner: one fresh process per job, a spare importing in the background."""

from __future__ import annotations

from beamsearch.schema import RunSpec
from tests.conftest import KERNELS
from workers import child_process
from workers.verify import verify_kernel


def test_each_job_gets_a_fresh_process_and_a_spare_waits(scale_spec: RunSpec) -> None:
    verify_kernel(scale_spec, str(KERNELS / "good.py"))
    spare = child_process._spares[("workers.verify_child", True)]
    assert spare.proc.poll() is None  # alive, waiting for a job
    verdict = verify_kernel(scale_spec, str(KERNELS / "good.py"))
    assert verdict.passed
    assert spare.proc.poll() == 0  # it was used for that job, and exited
    assert not spare.folder.exists()  # its folder is gone
    assert child_process._spares[("workers.verify_child", True)] is not spare
    child_process._kill_spares()
    assert not child_process._spares


def test_files_a_kernel_writes_to_its_cwd_are_removed(scale_spec: RunSpec, tmp_path, monkeypatch) -> None:
    kernel = tmp_path / "writes_cwd.py"
    source = (KERNELS / "good.py").read_text().replace("os.path.dirname(os.path.abspath(__file__))", repr(str(KERNELS)))
    kernel.write_text(source.replace("def kernel_function", "open('junk.txt', 'w').write('x')\n\n\ndef kernel_function"))
    monkeypatch.chdir(tmp_path)
    assert verify_kernel(scale_spec, str(kernel)).passed
    assert not (tmp_path / "junk.txt").exists()
