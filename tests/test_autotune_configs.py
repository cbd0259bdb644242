"""An @triton.autotune kernel as plain launches: its configs become knobs and the search's first points."""

from __future__ import annotations

import pytest

from beamsearch.beam import code_hash
from beamsearch.optimiser import Optimiser
from beamsearch.records.schema import Kernel, RunSpec
from tests.conftest import DATA
from tests.test_optimiser import beam_state
from workers.harness.verify import verify_kernel
from workers.proposers.autotune_configs import without_autotune
from workers.proposers.knob_space import autotune_points, render, space_of
from workers.proposers.searcher import SearcherState

KERNEL = DATA / "kernels" / "autotuned_scale.py"
SIZES = {"rows": 48, "cols": 80}
CONFIGS = [{"_scale:BLOCK_SIZE": 64, "_scale:num_warps": 2}, {"_scale:BLOCK_SIZE": 256, "_scale:num_warps": 4},
           {"_scale:BLOCK_SIZE": 1024, "_scale:num_warps": 8}]  # fmt: skip


def test_the_decorator_goes_and_the_first_config_is_written_into_the_launch() -> None:
    detuned = without_autotune(KERNEL.read_text())
    assert "@triton.autotune(" not in detuned.source and "triton.Config" not in detuned.source
    assert 'x.shape[-1], BLOCK_SIZE=64, num_warps=2)' in detuned.source
    # num_stages only pipelines loops: this kernel has none, so no config's stages are a knob
    assert detuned.configs == {"_scale": [{"BLOCK_SIZE": 64, "num_warps": 2}, {"BLOCK_SIZE": 256, "num_warps": 4},
                                          {"BLOCK_SIZE": 1024, "num_warps": 8}]}  # fmt: skip


def test_stages_of_an_unrolled_loop_are_no_config_knob_and_a_helpers_loop_keeps_them() -> None:
    source = KERNEL.read_text()
    body = "    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
    assert body in source
    unrolled = source.replace(body, body + "    for _ in tl.static_range(2):\n        pass\n")
    assert all("num_stages" not in c for c in without_autotune(unrolled).configs["_scale"])
    looping = source.replace(body, body + "    _spin(4)\n").replace(
        "@triton.autotune(", "@triton.jit\ndef _spin(n):\n    for _ in range(n):\n        pass\n\n\n@triton.autotune(", 1)
    assert [c["num_stages"] for c in without_autotune(looping).configs["_scale"]] == [3, 2, 3]


@pytest.mark.slow
def test_every_config_is_a_point_of_the_space_and_each_verifies(tmp_path) -> None:
    source = KERNEL.read_text()
    space = space_of(source, SIZES)
    assert autotune_points(space) == CONFIGS
    assert {1024, 256, 64} <= set(space.dims[0].values)  # a config past the size's bound stays legal
    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device="cpu")
    for point in CONFIGS:
        path = tmp_path / f"at_{point['_scale:BLOCK_SIZE']}.py"
        path.write_text(render(source, space, point))
        verdict = verify_kernel(spec, str(path))
        assert verdict.passed, f"{point}: {verdict.status}: {verdict.reason}"


def test_the_search_tries_the_authors_configs_first() -> None:
    source = KERNEL.read_text()
    state = beam_state()
    entry = state.input.model_copy(update={"kernel": Kernel(source=source, origin="input")})
    state = state.model_copy(update={"beam": [entry], "input": entry, "seen": {code_hash(source): "input"}})
    tasks = Optimiser(state.optimiser, SIZES, seed=0, budget=64).plan(state, 1, 5)
    space = space_of(source, SIZES)
    assert [t.kernel.source for t in tasks[:3]] == [render(source, space, p) for p in CONFIGS]


@pytest.mark.parametrize("change", [
    ('configs=[', 'configs=CONFIGS, unused=['),  # not a literal list
    ('num_warps=2)', 'num_warps=2, pre_hook=print)'),  # a hook runs on every call: not ours to drop
    ('{"BLOCK_SIZE": 1024}', '{"BLOCK_SIZE": 1024, "EXTRA": 1}'),  # configs that set different names
    ('x.shape[-1])', 'x.shape[-1], BLOCK_SIZE=64)'),  # a launch that sets a config's value itself
])  # fmt: skip
def test_a_decorator_not_read_in_full_leaves_the_source_as_it_was(change: tuple[str, str]) -> None:
    source = KERNEL.read_text().replace(*change)
    assert change[1] in source
    assert without_autotune(source).source == source
    assert autotune_points(space_of(source, SIZES)) == []


def test_a_search_saved_over_another_reading_of_the_space_starts_again() -> None:
    """A run saved by code that read the root's knobs otherwise (before autotune configs were read, its
    space was empty of them) resumes over today's space instead of failing to render its points."""
    source = KERNEL.read_text()
    state = beam_state()
    entry = state.input.model_copy(update={"kernel": Kernel(source=source, origin="input")})
    state = state.model_copy(update={"beam": [entry], "input": entry, "seen": {code_hash(source): "input"}})
    opt = Optimiser(state.optimiser, SIZES, seed=0, budget=64)
    opt.plan(state, 1, 2)
    saved = opt.state()
    (key,) = saved.searches
    old = saved.searches[key].space.model_copy(update={"dims": saved.searches[key].space.dims[:1]})
    saved.searches[key] = saved.searches[key].model_copy(update={"space": old, "searcher": SearcherState(space=old)})
    resumed = Optimiser(saved, SIZES, seed=0, budget=64)
    tasks = resumed.plan(state.model_copy(update={"optimiser": saved}), 2, 3)
    assert len(tasks) == 3 and resumed.state().searches[key].space == space_of(source, SIZES)


def test_configs_from_a_comprehension_a_module_name_or_a_function_as_triton_tutorials_write_them() -> None:
    source = KERNEL.read_text()
    decorator = source[source.index("@triton.autotune(") : source.index("@triton.jit")]
    made = "[triton.Config({'BLOCK_SIZE': b}, num_warps=w) for b in [64, 256] for w in range(1, 3)]"
    expected = [{"_scale:BLOCK_SIZE": b, "_scale:num_warps": w} for b in (64, 256) for w in (1, 2)]
    for prelude, given in [
        ("", made),
        (f"CONFIGS = {made}\n\n\n", "CONFIGS"),
        (f'def shortlist():\n    """The configs."""\n    return {made}\n\n\n', "shortlist()"),
    ]:
        variant = source.replace(decorator, f"{prelude}@triton.autotune(configs={given}, key=['n'])\n")
        assert autotune_points(space_of(variant, SIZES)) == expected, given
    for unread in ["[triton.Config({'BLOCK_SIZE': b}) for b in SIZES]", "shortlist(2)", "make()"]:
        variant = source.replace(decorator, f"@triton.autotune(configs={unread}, key=['n'])\n")
        assert without_autotune(variant).source == variant, unread
