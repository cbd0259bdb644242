"""The compiler seed's portfolio: the file of Inductor variants, their options, multi-kernels and the dedupe.

tests/data/inductor_portfolio/<problem>/<variant>/ are CPU recordings (record_inductor_cpu.py at the small
shapes) of one problem under several variants of the bundled portfolio; see its README.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch._inductor.config as inductor_config

from beamsearch.records.schema import RunSpec
from workers.harness.inductor_portfolio import (
    BUNDLED_PORTFOLIO,
    PortfolioError,
    PortfolioVariant,
    apply_options,
    load_portfolio,
    parse_option,
    recorded_variant_folder,
    recorded_variants,
)
from workers.harness.record_inductor_cpu import stand_in_multi_kernel_choices
from workers.harness.verify import verify_kernel
from workers.proposers.compile_seed import SeedResult, seed_from_inductor, seed_from_recording
from workers.proposers.inductor_code import parse_output_code
from workers.proposers.seed_portfolio import code_key, duplicates

DATA = Path(__file__).parent / "data"
PORTFOLIO = DATA / "inductor_portfolio"
CROSS_ENTROPY = PORTFOLIO / "cross_entropy_problem"

@contextlib.contextmanager
def _config_kept() -> Iterator[None]:
    """Inductor's config as it was once the block ends: options a test sets must not reach the next test."""
    saved = inductor_config.save_config()
    try:
        yield
    finally:
        inductor_config.load_config(saved)


def test_the_bundled_portfolio_parses_with_the_default_first() -> None:
    variants = load_portfolio()
    assert variants[0] == PortfolioVariant(name="default")
    names = [v.name for v in variants]
    assert len(set(names)) == len(names) and "multi_kernel" in names and "no_online_softmax" in names
    assert load_portfolio(BUNDLED_PORTFOLIO) == variants
    multi = next(v for v in variants if v.name == "multi_kernel")
    assert multi.option_args() == ["--variant", "multi_kernel", "--option", "triton.multi_kernel=1"]


def test_every_bundled_option_exists_in_this_torch() -> None:
    for variant in load_portfolio():
        with _config_kept():
            _, skipped = apply_options(inductor_config, variant.options)
        assert not skipped, (variant.name, skipped)


def test_a_users_file_gets_the_default_first_and_bad_files_are_named(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('[[variant]]\nname = "eager_reductions"\noptions = { "split_reductions" = false }\n')
    assert [v.name for v in load_portfolio(path)] == ["default", "eager_reductions"]
    for text, said in (('[[variant]]\nname = "a b"\n', "letters, digits"),
                       ('[[variant]]\nname = "x"\n[[variant]]\nname = "x"\n', "repeat"),
                       ('[[variant]]\nname = "default"\noptions = { "online_softmax" = false }\n', "no options"),
                       ("[other]\n", "only [[variant]]"), ("not toml = \n", "mine.toml")):  # fmt: skip
        path.write_text(text)
        with pytest.raises(PortfolioError, match="mine.toml") as raised:
            load_portfolio(path)
        assert said in str(raised.value)


def test_options_this_torch_lacks_or_of_another_kind_are_skipped_with_a_reason() -> None:
    with _config_kept():
        applied, skipped = apply_options(inductor_config, {"triton.multi_kernel": 1, "triton.no_such_option": True,
                                                           "no_such_group.x": 1, "online_softmax": "no"})  # fmt: skip
        assert applied == {"triton.multi_kernel": 1} and inductor_config.triton.multi_kernel == 1
        assert "no option triton.no_such_option" in skipped["triton.no_such_option"]
        assert "no option no_such_group.x" in skipped["no_such_group.x"]
        assert "not of that kind" in skipped["online_softmax"]
    assert inductor_config.triton.multi_kernel == 0


@pytest.mark.parametrize(("text", "value"), [("a.b=1", 1), ("x=false", False), ('s="EXHAUSTIVE"', "EXHAUSTIVE"),
                                             ("s=EXHAUSTIVE", "EXHAUSTIVE"), ("f=0.5", 0.5)])  # fmt: skip
def test_an_option_is_read_as_a_toml_value(text: str, value: object) -> None:
    assert parse_option(text)[1] == value
    variant = PortfolioVariant(name="v", options={"k": value})
    assert parse_option(variant.option_args()[-1]) == ("k", value)


def _seeds(problem: Path) -> dict[str, SeedResult]:
    return {name: seed_from_recording(recorded_variant_folder(problem, name)) for name in recorded_variants(problem)}


def test_a_recording_folders_variants_come_in_the_portfolios_order(tmp_path: Path) -> None:
    """The dedupe keeps the first variant of each code: a folder's variants are read in the portfolio's
    order (not by name), so the kept seed is the one the portfolio lists first."""
    for name in ("no_epilogue_fusion", "tile_reductions", "default", "no_persistent_reductions", "zeta"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "output_code.py").write_text("# recorded\n")
    order = [v.name for v in load_portfolio()]
    assert recorded_variants(tmp_path, order) == ["default", "no_persistent_reductions", "tile_reductions",
                                                  "no_epilogue_fusion", "zeta"]  # fmt: skip


def test_a_portfolio_recording_lists_its_variants_default_first(tmp_path: Path) -> None:
    names = recorded_variants(CROSS_ENTROPY)
    assert names[0] == "default" and "multi_kernel" in names
    assert recorded_variants(CROSS_ENTROPY / "default") == ["default"]  # one recording is the default alone
    assert recorded_variant_folder(CROSS_ENTROPY / "default", "multi_kernel") is None
    assert recorded_variants(tmp_path) == []


def test_variants_of_the_same_code_are_merged() -> None:
    """On the CPU, at 6 x 300, most options leave the cross-entropy's code as it was; turning persistent
    reductions off gives the looped reduction, which is also the multi-kernel's first kernel (the CPU
    recorder's stand-in pick). Names, hashes and Inductor's metadata (which records the options) differ."""
    seeds = _seeds(CROSS_ENTROPY)
    assert {s.variant for s in seeds.values()} == set(seeds)
    same = duplicates((name, seed.code_key) for name, seed in seeds.items())
    distinct = [name for name, first in same.items() if first is None]
    assert distinct == ["default", "multi_kernel"], same
    assert same["no_persistent_reductions"] == "multi_kernel"
    assert same["no_online_softmax"] == "default" and same["coordinate_descent"] == "default"
    code = (CROSS_ENTROPY / "default" / "output_code.py").read_text()
    other = (CROSS_ENTROPY / "coordinate_descent" / "output_code.py").read_text()
    assert code != other  # the raw text differs (Inductor's metadata), the code does not


@pytest.mark.parametrize(("problem", "variants"), [("24_LogSoftmax", 4), ("26_GELU_", 3)])
def test_options_that_change_nothing_are_one_seed(problem: str, variants: int) -> None:
    seeds = _seeds(PORTFOLIO / problem)
    assert list(seeds)[0] == "default" and len(seeds) == variants
    assert set(duplicates((name, seed.code_key) for name, seed in seeds.items()).values()) == {None, "default"}
    assert len({seed.code_key for seed in seeds.values()}) == 1


def test_the_code_key_ignores_kernel_names_and_tells_a_changed_body_apart() -> None:
    code = (CROSS_ENTROPY / "default" / "output_code.py").read_text()
    renamed = code.replace("triton_per_fused__log_softmax_0", "triton_per_fused__log_softmax_7")
    assert code_key(renamed) == code_key(code)
    assert code_key(code.replace("tl.sum(", "tl.max(", 1)) != code_key(code)


def test_a_multi_kernel_seed_launches_the_kernel_it_picked_alone() -> None:
    """The cross-entropy's multi-kernel variant has two: the log-softmax's and the loss's, each a looped
    (red) and a persistent (per) reduction."""
    folder = CROSS_ENTROPY / "multi_kernel"
    code = (folder / "output_code.py").read_text()
    module = parse_output_code(code)
    assert sorted(module.multi_kernels) == ["multi_kernel_0", "multi_kernel_1"]
    assert stand_in_multi_kernel_choices(code) == json.loads((folder / "multi_kernel_choices.json").read_text())
    configs = {name: {"config": {c: 2 if c == "XBLOCK" else 64 for c in k.constexprs} | {"num_warps": 4}}
               for name, k in module.kernels.items()}  # fmt: skip
    for pick in (0, 1):
        choices = {name: multi.kernels[pick] for name, multi in module.multi_kernels.items()}
        seed = _seed_with(folder, configs, choices)
        assert seed.available, seed.unavailable
        assert seed.kernels == list(choices.values()), seed.kernels
        others = [m.kernels[1 - pick] for m in module.multi_kernels.values()]
        assert not any(f"def {k}(" in seed.source for k in others)
        assert sum("Inductor's multi-kernel picked" in n for n in seed.notes) == 2, seed.notes
    seed = _seed_with(folder, configs, {"multi_kernel_0": module.multi_kernels["multi_kernel_0"].kernels[0]})
    assert not seed.available and "multi-kernel multi_kernel_1 picks among" in seed.unavailable
    assert "does not say which" in seed.unavailable


def _seed_with(folder: Path, configs: dict, choices: dict[str, str]) -> SeedResult:
    meta = json.loads((folder / "meta.json").read_text())
    return seed_from_inductor((folder / "output_code.py").read_text(), chosen_configs=configs,
                              graph_args=json.loads((folder / "graph_args.json").read_text()),
                              input_shapes=meta["input_shapes"], multi_kernel_choices=choices)  # fmt: skip


def _with_configs(folder: Path, dest: Path, block: dict[str, int]) -> Path:
    """A copy of a CPU recording with a config for every kernel (the CPU path has no autotuner)."""
    shutil.copytree(folder, dest)
    module = parse_output_code((dest / "output_code.py").read_text())
    chosen = {name: {"config": {c: block[c] for c in k.constexprs} | {"num_warps": 4, "num_stages": 1}}
              for name, k in module.kernels.items()}  # fmt: skip
    (dest / "chosen_configs.json").write_text(json.dumps(chosen))
    return dest


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["default", "multi_kernel"])
def test_each_distinct_variants_seed_passes_verification(variant: str, tmp_path: Path) -> None:
    recording = _with_configs(CROSS_ENTROPY / variant, tmp_path / variant, {"XBLOCK": 1, "R0_BLOCK": 64})
    seed = seed_from_recording(recording)
    assert seed.available, seed.unavailable
    path = tmp_path / "seed.py"
    path.write_text(seed.source)
    spec = RunSpec(problem_path=str(DATA / "cross_entropy_problem.py"), shapes="small", device="cpu", dtype="bf16")
    verdict = verify_kernel(spec, str(path))
    assert verdict.passed, f"{verdict.status}: {verdict.reason}\n{verdict.traceback[-2000:]}"


def test_a_kernel_max_autotune_only_benchmarked_never_hides_the_config_the_output_code_ran() -> None:
    """On an H200, 45 Gemm+Sigmoid+LogSumExp's recordings said 'no recorded config' for its reduction under 8 of
    10 variants: a module max-autotune loaded to benchmark an epilogue fusion has a kernel of the same name
    that never ran (no config), loaded after the output code's own."""
    from workers.harness.record_inductor import settled_configs

    ran = {"config": {"XBLOCK": 8, "num_warps": 8, "num_stages": 1}, "candidates": 1}
    never_ran = {"config": None, "candidates": 1}
    assert settled_configs([(True, "k", ran), (False, "k", never_ran)])["k"] is ran
    assert settled_configs([(False, "k", ran), (False, "k", never_ran)])["k"] is ran  # the output code not found
    benchmarked = {"config": {"XBLOCK": 64, "num_warps": 4, "num_stages": 1}, "candidates": 1}
    assert settled_configs([(False, "k", benchmarked), (True, "k", ran), (False, "k", benchmarked)])["k"] is ran
    assert settled_configs([(False, "k", never_ran), (False, "j", ran)]) == {"k": never_ran, "j": ran}
