"""The five bundled input kernels pass every check under Triton's interpreter (small shapes)."""

from __future__ import annotations

import pytest

from beamsearch.records.problems import bundled_problem_names, resolve_problem
from beamsearch.records.schema import RunSpec
from workers.harness.verify import verify_kernel

pytestmark = pytest.mark.slow  # every bundled input kernel through the judge: CI runs these (pytest -m slow)


@pytest.mark.parametrize("name", bundled_problem_names())
def test_input_kernel_passes(name: str) -> None:
    problem = resolve_problem(name)
    spec = RunSpec(problem_path=problem.problem_path, shapes="small", device="cpu", dtype="bf16")
    verdict = verify_kernel(spec, problem.input_kernel_path)
    assert verdict.passed, f"{verdict.status}: {verdict.reason}"
    assert len(verdict.seeds) >= 3
