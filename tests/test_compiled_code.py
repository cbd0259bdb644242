"""The compiled-code hash the timing child reports on a GPU: sources that compile to the same kernel
share it, whatever their file, line numbers and names; a different block size does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from beamsearch.schema import RunSpec
from tests.conftest import DATA, KERNELS
from workers.timing import time_target

GPU_SPEC = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="full", device="cuda")

SCALE = (KERNELS / "_scale.py").read_text()  # the scale_rows kernel and its launcher


def _hash(tmp_path: Path, file: str, padding: str = "", name: str = "scale_kernel", block_r: int = 8,
          extra: str = "") -> str | None:  # fmt: skip
    """The compiled-code hash of _scale.py's kernel, moved down by ``padding``, renamed, with another
    row block or extra launch options, timed from its own file."""
    source = (padding + SCALE).replace("scale_kernel", name)
    source = source.replace("cdiv(rows, 8)", f"cdiv(rows, {block_r})").replace("BLOCK_R=8", f"BLOCK_R={block_r}")
    source = source.replace("next_power_of_2(cols))", f"next_power_of_2(cols){extra})")
    path = tmp_path / file
    path.write_text(source + "\n\ndef kernel_function(x, weight):\n    return launch(x, weight, torch.empty_like(x))\n")
    result = time_target(GPU_SPEC, str(path), lock_dir=str(tmp_path))
    assert result.status == "ok", result.reason
    return result.compiled_hash


@pytest.mark.gpu
def test_same_code_from_another_file_and_names_has_the_same_hash(tmp_path) -> None:
    base = _hash(tmp_path, "a.py")
    assert base is not None
    moved = _hash(tmp_path, "b.py", padding="# three\n# more\n# lines\n", name="renamed_kernel")
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
