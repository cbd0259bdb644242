from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from beamsearch.records.schema import RunSpec

DATA = Path(__file__).parent / "data"
KERNELS = DATA / "kernels"
SHARED = Path(__file__).resolve().parents[2] / "shared"


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (`pytest -m gpu` on a GPU machine; recorded GPU runs are in docs/gpu-runs/)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def scale_spec() -> RunSpec:
    """The tiny test problem, on the CPU under Triton's interpreter."""
    return RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device="cpu", dtype="bf16")


@pytest.fixture
def detached_left(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[int]]:
    """Marks this test's processes in their environment; returns a function listing those that a test
    kernel detached (``tests/data/kernels/_detach.py``) and that are still alive. The harness's spares,
    started meanwhile, carry only the test's mark."""
    mark = f"detached-{os.getpid()}-{os.urandom(4).hex()}"
    monkeypatch.setenv("BEAMSEARCH_TEST_MARK", mark)

    def left() -> list[int]:
        found = []
        for environ in Path("/proc").glob("[0-9]*/environ"):
            try:
                text = environ.read_bytes()
            except OSError:
                continue
            if mark.encode() in text and b"BEAMSEARCH_DETACHED_BY_KERNEL=1" in text:
                found.append(int(environ.parent.name))
        return found

    return left


def small_seed(name: str, block: int | dict[str, int], folder: Path) -> str:
    """The seed of a CPU recording in ``tests/data/inductor_small`` with one config for every kernel (the CPU
    path has no autotuner): ``block`` for every block constexpr, or a value per constexpr name."""
    import json
    import shutil

    from workers.proposers.compile_seed import seed_from_recording
    from workers.proposers.inductor_code import parse_output_code

    recording = folder / name
    shutil.copytree(DATA / "inductor_small" / name, recording)
    module = parse_output_code((recording / "output_code.py").read_text())
    chosen = {
        kernel: {
            "config": {c: block if isinstance(block, int) else block[c] for c in k.constexprs}
            | {"num_warps": 4, "num_stages": 1}
        }
        for kernel, k in module.kernels.items()
    }
    (recording / "chosen_configs.json").write_text(json.dumps(chosen))
    result = seed_from_recording(recording)
    assert result.available, result.unavailable
    return result.source
