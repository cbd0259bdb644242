from __future__ import annotations

from pathlib import Path

import pytest

from beamsearch.schema import RunSpec

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
