"""Problem lookup and instantiation: bundled names, paths, small shapes, seeded inputs on the device."""

from __future__ import annotations

import pytest
import torch

from beamsearch.records.problems import ProblemNotFound, bundled_problem_names, resolve_problem
from beamsearch.records.schema import RunSpec
from tests.conftest import DATA
from workers.harness.problem_instance import (
    ProblemLoadError,
    instantiate,
    load_problem_module,
    reference_output,
    shapes_instance,
)

FIVE = [
    "04_Matrix_vector_multiplication",
    "36_RMSNorm",
    "43_Max_Pooling_3D",
    "77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__",
    "82_conv_depthwise_2D_square_input_square_kernel",
]

FULL_INPUT_SHAPES = {
    "04_Matrix_vector_multiplication": [(2048, 1048576), (1048576, 1)],
    "36_RMSNorm": [(112, 64, 512, 512)],
    "43_Max_Pooling_3D": [(16, 32, 128, 128, 128)],
    "77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__": [(16, 32, 16, 32, 32)],
    "82_conv_depthwise_2D_square_input_square_kernel": [(16, 64, 512, 512)],
}


DEV_SET = [
    "2_Standard_matrix_multiplication_",
    "24_LogSoftmax",
    "26_GELU_",
    "35_GroupNorm_",
    "41_Max_Pooling_1D",
    "48_Mean_reduction_over_a_dimension",
    "89_cumsum",
]


def test_the_bundled_problems_come_with_input_kernels() -> None:
    assert bundled_problem_names() == sorted(FIVE + DEV_SET)
    for name in FIVE + DEV_SET:
        assert resolve_problem(name).input_kernel_path is not None


def test_lookup_by_prefix_folder_and_file() -> None:
    assert resolve_problem("43").name == "43_Max_Pooling_3D"
    ref = resolve_problem(str(DATA / "scale_rows_problem.py"))
    assert ref.name == "scale_rows_problem" and ref.input_kernel_path is None


def test_unknown_problem_lists_the_known_ones() -> None:
    with pytest.raises(ProblemNotFound, match="36_RMSNorm"):
        resolve_problem("99_nope")


@pytest.mark.parametrize("name", FIVE)
def test_full_shapes_match_kernelbench(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Build on the meta device: full-size inputs, no memory.
    spec = RunSpec(problem_path=resolve_problem(name).problem_path, shapes="full", device="meta")
    instance = instantiate(load_problem_module(spec), spec, seed=0)
    assert [tuple(t.shape) for t in instance.inputs] == FULL_INPUT_SHAPES[name]
    assert all(t.dtype == torch.bfloat16 and t.device.type == "meta" for t in instance.inputs)


@pytest.mark.parametrize("name", FIVE)
def test_small_shapes_are_seeded_bf16_and_smaller(name: str) -> None:
    spec = RunSpec(problem_path=resolve_problem(name).problem_path, shapes="small", device="cpu")
    module = load_problem_module(spec)
    a, b, c = (instantiate(module, spec, seed) for seed in (0, 0, 1))
    for x, y, z, full in zip(a.inputs, b.inputs, c.inputs, FULL_INPUT_SHAPES[name], strict=True):
        assert x.dtype == torch.bfloat16 and x.numel() < torch.Size(full).numel()
        assert torch.equal(x, y) and not torch.equal(x, z)
    for p in a.model.parameters():
        assert p.dtype == torch.bfloat16
    ref = reference_output(a, spec)
    assert ref.dtype == torch.float32


def test_problem_without_small_shapes_is_a_clear_error(tmp_path) -> None:
    path = tmp_path / "problem.py"
    path.write_text((DATA / "scale_rows_problem.py").read_text().replace("SMALL_SHAPES", "NOT_SMALL"))
    spec = RunSpec(problem_path=str(path), shapes="small", device="cpu")
    with pytest.raises(ProblemLoadError, match="no SMALL_SHAPES"):
        load_problem_module(spec)


def test_the_shapes_instance_is_meta_tensors_even_where_a_problem_names_its_own_device(tmp_path) -> None:
    """What ``compile_ahead`` is given: the inputs' and weights' shapes and dtypes, no memory anywhere,
    even for a problem that builds its inputs on a device of its own choosing."""
    path = tmp_path / "problem.py"
    path.write_text(
        "import numpy\n"
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lin = torch.nn.Linear(32, 16)\n"
        "    def forward(self, x):\n"
        "        return self.lin(x)\n"
        "def get_inputs():\n"
        "    return [torch.randn(64, 32, device='cpu'), 3, torch.from_numpy(numpy.ones((2, 2))).cuda()]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    spec = RunSpec(problem_path=str(path), shapes="full", device="cpu", dtype="bf16")
    module = load_problem_module(spec)
    shapes = shapes_instance(module, spec, seed=0)  # this CPU build has no .cuda(): only its meta path runs
    x, n, y = shapes.inputs
    assert n == 3 and x.device.type == y.device.type == "meta"
    assert (x.shape, y.shape, x.dtype, y.dtype) == ((64, 32), (2, 2), torch.bfloat16, torch.bfloat16)
    assert all(p.device.type == "meta" and p.dtype == torch.bfloat16 for p in shapes.model.parameters())
    text = path.read_text()
    start = text.index("    return [torch.randn")
    path.write_text(text[:start] + "    return [torch.randn(64, 32), int(torch.randint(1, 5, ()).item())]\n"
                    + text[text.index("def get_init_inputs"):])  # fmt: skip
    with pytest.raises(RuntimeError, match="meta"):
        shapes_instance(load_problem_module(spec), spec, seed=0)
