"""The compiled-code hash the timing child reports on a GPU: sources that compile to the same kernel
share it, whatever their file, line numbers and names; a different block size does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from beamsearch.records.schema import RunSpec
from tests.conftest import DATA
from workers.harness.timing import time_target

GPU_SPEC = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="full", device="cuda")

TEMPLATE = '''"""A scale_rows kernel for the compiled-code tests."""
{padding}
import torch
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, w_ptr, out_ptr, {rows}, cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)[:, None]
    c = tl.arange(0, BLOCK_C)[None, :]
    mask = (r < {rows}) & (c < cols)
    x = tl.load(x_ptr + r * cols + c, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + c, mask=c < cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + r * cols + c, (x * w).to(out_ptr.dtype.element_ty), mask=mask)


def kernel_function(x, weight):
    out = torch.empty_like(x)
    rows, cols = x.shape
    {name}[(triton.cdiv(rows, {block_r}),)](x, weight, out, rows, cols, BLOCK_R={block_r},
        BLOCK_C=triton.next_power_of_2(cols){extra})
    return out
'''


def _hash(tmp_path: Path, file: str, **fields: object) -> str | None:
    values = {"padding": "", "name": "scale_kernel", "rows": "rows", "block_r": 8, "extra": ""} | fields
    path = tmp_path / file
    path.write_text(TEMPLATE.format(**values))
    result = time_target(GPU_SPEC, str(path), lock_dir=str(tmp_path))
    assert result.status == "ok", result.reason
    return result.compiled_hash


@pytest.mark.gpu
def test_same_code_from_another_file_and_names_has_the_same_hash(tmp_path) -> None:
    base = _hash(tmp_path, "a.py")
    assert base is not None
    moved = _hash(tmp_path, "b.py", padding="# three\n# more\n# lines\n", name="renamed_kernel", rows="n_rows")
    assert moved == base
    assert _hash(tmp_path, "c.py", block_r=16) != base  # another tile (and grid): another kernel


@pytest.mark.gpu
def test_num_stages_in_a_kernel_without_a_loop_compiles_to_the_same_code(tmp_path) -> None:
    """What the hash is for: a knob the compiler ignores here makes a new source, not a new kernel."""
    assert _hash(tmp_path, "a.py", extra=", num_stages=1") == _hash(tmp_path, "b.py", extra=", num_stages=4")


@pytest.mark.gpu
def test_a_call_that_launches_no_triton_kernel_has_no_hash(tmp_path) -> None:
    path = tmp_path / "torch_only.py"
    path.write_text("def kernel_function(x, weight):\n    return x * weight\n")
    result = time_target(GPU_SPEC, str(path), lock_dir=str(tmp_path))
    assert result.status == "ok", result.reason
    assert result.compiled_hash is None
