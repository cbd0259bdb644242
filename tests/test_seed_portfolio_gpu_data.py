"""The compiler seed's portfolio on Inductor output recorded on GPUs: dedupe, extraction, multi-kernel picks.

tests/data/inductor_portfolio_gpu/<problem>/<variant>/ are recordings made by scripts/record_portfolio.py on
H200s (see its README): real autotuned configs and the multi-kernel picks Inductor made at run time. Nothing
here needs a GPU: reading a wrapper is text processing. The expected groups and reasons are what the
recording run's table (portfolio.txt, quoted in the README) said.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from workers.harness.inductor_portfolio import recorded_variant_folder, recorded_variants
from workers.proposers.compile_seed import SeedResult, seed_from_recording
from workers.proposers.inductor_code import Launch, parse_output_code
from workers.proposers.seed_portfolio import code_key, duplicates

DATA = Path(__file__).parent / "data" / "inductor_portfolio_gpu"

# portfolio.txt: each variant -> the earlier variant whose code it is (None: distinct)
TABLE: dict[str, dict[str, str | None]] = {
    "cross_entropy_problem": {"default": None, "multi_kernel": None, "no_online_softmax": None,
                              "cooperative_reductions": None, "no_persistent_reductions": None,
                              "no_split_reductions": None, "nd_tiling": "default"},
    "36_RMSNorm": {"default": None, "multi_kernel": "default", "no_persistent_reductions": None},
}  # fmt: skip
UNAVAILABLE: dict[tuple[str, str], str] = {}  # every recorded variant gives a seed
# the options each variant set, as the recording run's portfolio.json says (the bundled file may change since)
OPTIONS: dict[str, dict[str, bool | int]] = {
    "default": {}, "multi_kernel": {"triton.multi_kernel": 1}, "no_online_softmax": {"online_softmax": False},
    "cooperative_reductions": {"triton.cooperative_reductions": True},
    "no_persistent_reductions": {"triton.persistent_reductions": False},
    "no_split_reductions": {"split_reductions": False}, "nd_tiling": {"triton.prefer_nd_tiling": True},
}  # fmt: skip
RECORDINGS = [(problem, variant) for problem, variants in TABLE.items() for variant in variants]
AVAILABLE = [r for r in RECORDINGS if r not in UNAVAILABLE]


def _in_portfolio_order(problem: str) -> list[str]:
    """The recorded variants in the order the recording run deduped them (its portfolio's: TABLE's)."""
    names = recorded_variants(DATA / problem)
    assert set(names) == set(TABLE[problem]), names
    return list(TABLE[problem])


def _folder(problem: str, variant: str) -> Path:
    folder = recorded_variant_folder(DATA / problem, variant)
    assert folder is not None, (problem, variant)
    return folder


def _seed(problem: str, variant: str) -> SeedResult:
    return seed_from_recording(_folder(problem, variant))


def _json(problem: str, variant: str, name: str) -> dict:
    return json.loads((_folder(problem, variant) / f"{name}.json").read_text())


def test_the_recordings_are_the_gpu_runs_of_their_variants() -> None:
    for problem, table in TABLE.items():
        names = recorded_variants(DATA / problem)
        assert names[0] == "default" and set(names) == set(table), names
        for variant in names:
            meta = _json(problem, variant, "meta")
            assert (
                meta["device"] == "NVIDIA H200"
                and meta["torch"].startswith("2.11.")
                and meta["triton"] == "3.6.0"
            )
            assert (
                meta["variant"] == variant
                and meta["options"] == OPTIONS[variant]
                and not meta["skipped_options"]
            )
            assert (_folder(problem, variant) / "chosen_configs.json").is_file()


@pytest.mark.parametrize("problem", list(TABLE))
def test_the_dedupe_groups_the_variants_as_the_gpu_run_did(problem: str) -> None:
    seeds = {name: _seed(problem, name) for name in _in_portfolio_order(problem)}
    assert all(seed.code_key for seed in seeds.values())
    assert duplicates((name, seed.code_key or name) for name, seed in seeds.items()) == TABLE[problem]


def test_a_repeat_differs_from_the_default_in_its_text_and_configs_not_its_code() -> None:
    """nd_tiling wrote the default's kernels with other metadata, and its autotuner chose another config for
    the loss's reduction: one starting point, since the knob search tunes configs."""
    default, nd = _folder("cross_entropy_problem", "default"), _folder("cross_entropy_problem", "nd_tiling")
    assert (default / "output_code.py").read_text() != (nd / "output_code.py").read_text()
    loss = "triton_red_fused__log_softmax_nll_loss_forward_sub_1"
    chosen = _json("cross_entropy_problem", "default", "chosen_configs")[loss]["config"]
    assert chosen != _json("cross_entropy_problem", "nd_tiling", "chosen_configs")[loss]["config"]
    assert (
        _seed("cross_entropy_problem", "default").code_key
        == _seed("cross_entropy_problem", "nd_tiling").code_key
    )


def _steps_up_to_names(folder: Path) -> list[object]:
    """call()'s steps with each launched kernel (or multi-kernel) named by its order."""
    module = parse_output_code((folder / "output_code.py").read_text())
    order: dict[str, int] = {}
    return [("launch", order.setdefault(s.kernel, len(order)), s.args) if isinstance(s, Launch) else s
            for s in module.call.steps]  # fmt: skip


@pytest.mark.parametrize(("problem", "variants"), [
    ("cross_entropy_problem", ["default", "no_online_softmax", "no_persistent_reductions"]),
    ("36_RMSNorm", ["default", "no_persistent_reductions"]),
])  # fmt: skip
def test_variants_whose_calls_match_are_told_apart_by_their_kernel_bodies(
    problem: str, variants: list[str]
) -> None:
    """Online vs two-pass softmax, persistent vs looped reductions: call() allocates and launches the same,
    only the @triton.jit bodies differ; a key that left them out would merge these distinct variants."""
    steps = [_steps_up_to_names(_folder(problem, v)) for v in variants]
    assert all(s == steps[0] for s in steps), (
        "the calls differ: this test no longer isolates the kernel bodies"
    )
    keys = [_seed(problem, v).code_key for v in variants]
    assert len(set(keys)) == len(keys), dict(zip(variants, keys, strict=True))


@pytest.mark.parametrize(("problem", "variant"), RECORDINGS)
def test_each_variants_seed_extracts_or_says_why_not(problem: str, variant: str) -> None:
    seed = _seed(problem, variant)
    meta = _json(problem, variant, "meta")
    assert seed.variant == variant and seed.options == meta["options"]
    if (problem, variant) in UNAVAILABLE:
        assert not seed.available and seed.unavailable == UNAVAILABLE[problem, variant]
        return
    assert seed.available, seed.unavailable
    assert seed.source is not None
    tree = ast.parse(seed.source)
    jitted = [f.name for f in tree.body if isinstance(f, ast.FunctionDef)
              and any(ast.unparse(d) == "triton.jit" for d in f.decorator_list)]  # fmt: skip
    assert seed.kernels and jitted == seed.kernels, (jitted, seed.kernels)
    assert seed.input_shapes == meta["input_shapes"]
    assert any(isinstance(f, ast.FunctionDef) and f.name == "kernel_function" for f in tree.body)


def test_the_cooperative_seed_launches_the_loss_as_inductor_did() -> None:
    """The loss's mean over 32768 rows split across RSPLIT=64 programs that combine after a grid barrier:
    one launch of 64 programs, cooperative, RSPLIT a knob up to the 64 partials the workspace holds."""
    seed = _seed("cross_entropy_problem", "cooperative_reductions")
    assert seed.available and seed.source is not None, seed.unavailable
    loss = "triton_unk_fused__log_softmax_nll_loss_forward_sub_1"
    assert seed.configs[loss] == {"XBLOCK": 1, "RSPLIT": 64, "num_warps": 8, "num_stages": 1}
    assert (f"{loss}[lambda meta: _cooperative_grid(meta, [(1, 'XBLOCK')], [(64, 'RSPLIT'), (1, 'XBLOCK')])]("
            in seed.source)  # fmt: skip
    assert "XBLOCK=1, RSPLIT=64, num_warps=8, launch_cooperative_grid=True)" in seed.source
    assert "semaphores_cuda_0.zero_()" in seed.source  # the barrier's count starts at zero each call
    assert "triton_helpers.constexpr_next_power_of_2" not in seed.source


@pytest.mark.parametrize("problem", list(TABLE))
def test_the_multi_kernel_seed_launches_only_what_inductor_picked(problem: str) -> None:
    folder = _folder(problem, "multi_kernel")
    code = (folder / "output_code.py").read_text()
    choices = _json(problem, "multi_kernel", "multi_kernel_choices")
    module = parse_output_code(code)
    assert {name: list(m.kernels) for name, m in module.multi_kernels.items()} == \
        {name: entry["kernels"] for name, entry in choices.items()}  # fmt: skip
    seed = _seed(problem, "multi_kernel")
    assert seed.available and seed.source is not None, seed.unavailable
    for name, entry in choices.items():
        picked, others = entry["picked"], [k for k in entry["kernels"] if k != entry["picked"]]
        assert picked in seed.kernels and f"def {picked}(" in seed.source
        assert not any(k in seed.kernels or k in seed.source for k in others), (name, others)
        assert any(n.startswith(f"{name}: Inductor's multi-kernel picked {picked} of ") for n in seed.notes)
    assert len(seed.kernels) == sum(1 for s in module.call.steps if isinstance(s, Launch))  # one per launch


def test_the_cross_entropys_picks_are_neither_always_first_nor_always_last() -> None:
    """So the multi-kernel test above fails whichever fixed kernel a reader took instead of the pick."""
    choices = _json("cross_entropy_problem", "multi_kernel", "multi_kernel_choices")
    assert {entry["kernels"].index(entry["picked"]) for entry in choices.values()} == {0, 1}


def test_the_multi_kernel_pick_decides_which_variant_the_code_repeats() -> None:
    """RMSNorm's multi-kernel picked its persistent kernel: the default's code. Had it picked the looped one,
    it would be no_persistent_reductions' code."""
    folder = _folder("36_RMSNorm", "multi_kernel")
    code = (folder / "output_code.py").read_text()
    (entry,) = _json("36_RMSNorm", "multi_kernel", "multi_kernel_choices").values()
    (name,) = _json("36_RMSNorm", "multi_kernel", "multi_kernel_choices")
    (other,) = [k for k in entry["kernels"] if k != entry["picked"]]
    assert code_key(code, {name: entry["picked"]}) == _seed("36_RMSNorm", "default").code_key
    assert code_key(code, {name: other}) == _seed("36_RMSNorm", "no_persistent_reductions").code_key
    assert code_key(code, {name: other}) != code_key(code, {name: entry["picked"]})


def _launch_keywords(source: str, kernel: str) -> dict[str, int]:
    """The keywords of ``kernel[grid](...)``'s one launch in ``kernel_function``."""
    calls = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Subscript) and ast.unparse(node.func.value) == kernel]  # fmt: skip
    assert len(calls) == 1, (kernel, len(calls))
    return {k.arg: ast.literal_eval(k.value) for k in calls[0].keywords if k.arg is not None}


@pytest.mark.parametrize(("problem", "variant"), AVAILABLE)
def test_the_seeds_knobs_are_the_configs_the_autotuner_chose(problem: str, variant: str) -> None:
    """Each launch passes the chosen config (block constexprs and num_warps; num_stages where the kernel
    loops), and ``SeedResult.configs`` holds it: the knob search starts from the autotuner's choice."""
    seed = _seed(problem, variant)
    assert seed.source is not None, seed.unavailable
    chosen = _json(problem, variant, "chosen_configs")
    kernels = parse_output_code((_folder(problem, variant) / "output_code.py").read_text()).kernels
    for name in seed.kernels:
        config = chosen[name]["config"]
        assert seed.configs[name] == config, (name, seed.configs[name], config)
        kernel = kernels[name]
        wanted = {k: v for k, v in config.items() if k in kernel.constexprs or k == "num_warps"
                  or (k == "num_stages" and kernel.loops)}  # fmt: skip
        if kernel.grid_type == "CooperativeReductionGrid":  # its programs must all run at once
            wanted["launch_cooperative_grid"] = True
        assert _launch_keywords(seed.source, name) == wanted, name
