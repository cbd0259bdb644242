"""The compiler seed through the real command line on the CPU (Ray, child processes, Triton's interpreter):
Inductor's own GELU kernel, from a recording, verified and timed beside the input kernel and searched;
and on the CPU with no recording, a clear word that the seed needs a GPU, and a run that goes on."""

from __future__ import annotations

import json
import shutil

import pytest

from beamsearch.records.state import BeamState, TaskResult
from tests.conftest import DATA
from tests.test_search import _events, run_cli

pytestmark = pytest.mark.slow  # full searches from the compiler seed: CI runs these (pytest -m slow)

RECORDED = DATA / "inductor_small" / "26_GELU_"  # Inductor's wrapper at the problem's small shapes


def _recording(tmp_path):
    """The small-shape recording with the config an autotuner would have chosen (the CPU path has none)."""
    folder = tmp_path / "recording"
    shutil.copytree(RECORDED, folder)
    chosen = {"triton_poi_fused_gelu_0": {"config": {"XBLOCK": 512, "num_warps": 4, "num_stages": 1}}}
    (folder / "chosen_configs.json").write_text(json.dumps(chosen))
    return folder


def test_the_compiler_seed_joins_the_beam_and_its_knobs_are_searched(tmp_path) -> None:
    out = tmp_path / "run"
    done = run_cli("--problem", "26", "--compiler-recording", str(_recording(tmp_path)), "--out", str(out),
                   "--rounds", "1", "--workers", "2", "--candidates-per-round", "4", "--beam-width", "2",
                   "--quiet", timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seed = TaskResult.model_validate_json((out / "optimization_trace" / "compiler-seed" / "result.json").read_text())
    assert seed.status == "ok" and seed.kernel.origin == "compiler", seed.reason
    assert "XBLOCK" in seed.kernel.note and "triton_poi_fused_gelu_0" in seed.kernel.note
    said = [e for e in _events(done.stdout.splitlines()) if e["event"] == "compiler_seed"]
    assert [e["status"] for e in said][0] == "reading" and said[-1]["status"] == "in the beam", said
    state = BeamState.model_validate_json((out / "state.json").read_text())
    assert state.config.compiler_seed is True  # the run's own decision is saved with it
    assert any(a.kernel_hash == seed.kernel.hash for a in state.history)  # never proposed again
    searched = {s.root_id for s in state.optimiser.searches.values()}
    assert "compiler-seed" in searched, searched  # Inductor's XBLOCK and warps are knobs now


def test_on_the_cpu_without_a_recording_the_seed_is_unavailable_and_the_run_goes_on(tmp_path) -> None:
    out = tmp_path / "run"
    done = run_cli("--problem", "26", "--compiler-seed", "--out", str(out), "--rounds", "1", "--workers", "2",
                   "--candidates-per-round", "2", "--quiet", timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    said = [e for e in _events(done.stdout.splitlines()) if e["event"] == "compiler_seed"]
    assert said[-1]["status"] == "unavailable" and "--compiler-recording" in said[-1]["reason"], said
    assert not (out / "optimization_trace" / "compiler-seed").exists()
    assert (out / "summary.json").is_file()


def test_a_problem_with_no_input_kernel_is_searched_from_the_seed_alone(tmp_path) -> None:
    problem = tmp_path / "gelu" / "problem.py"
    problem.parent.mkdir()
    shutil.copy(DATA.parent.parent / "artifacts" / "26_GELU_" / "problem.py", problem)
    out = tmp_path / "run"
    done = run_cli("--problem", str(problem), "--compiler-recording", str(_recording(tmp_path)), "--out", str(out),
                   "--rounds", "1", "--workers", "2", "--candidates-per-round", "2", "--quiet", timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    start = TaskResult.model_validate_json((out / "optimization_trace" / "input" / "result.json").read_text())
    assert start.status == "ok" and start.kernel.origin == "compiler"
    assert not (out / "optimization_trace" / "compiler-seed").exists()  # the seed is the start, once
    state = BeamState.model_validate_json((out / "state.json").read_text())
    assert [r.tasks for r in state.rounds] == [2]


def test_with_no_input_kernel_and_no_seed_the_run_says_both(tmp_path) -> None:
    problem = tmp_path / "gelu" / "problem.py"
    problem.parent.mkdir()
    shutil.copy(DATA.parent.parent / "artifacts" / "26_GELU_" / "problem.py", problem)
    done = run_cli("--problem", str(problem), "--out", str(tmp_path / "run"), "--quiet", timeout=300)
    assert done.returncode == 2 and "--kernel" in done.stderr and "--compiler-seed" in done.stderr, done.stderr


def test_a_recording_folder_that_is_not_there_stops_the_run_before_it_starts(tmp_path) -> None:
    done = run_cli("--problem", "26", "--compiler-recording", str(tmp_path / "nowhere"), "--out", str(tmp_path / "run"),
                   "--quiet", timeout=120)  # fmt: skip
    assert done.returncode == 2 and "--compiler-recording" in done.stderr and "not a folder" in done.stderr, done.stderr
    assert not (tmp_path / "run").exists()


def test_a_recording_and_no_seed_contradict_each_other(tmp_path) -> None:
    done = run_cli("--problem", "26", "--compiler-recording", str(tmp_path), "--no-compiler-seed", "--out",
                   str(tmp_path / "run"), "--quiet", timeout=120)  # fmt: skip
    assert done.returncode == 2 and "--no-compiler-seed" in done.stderr, done.stderr
    assert not (tmp_path / "run").exists()


def _portfolio_recording(tmp_path):
    """The cross-entropy's CPU recordings of three variants, each with the configs an autotuner would have
    chosen: the default, the multi-kernel (its looped reductions picked), and turning persistent
    reductions off, which gives the multi-kernel's code again."""
    from workers.proposers.inductor_code import parse_output_code

    folder = tmp_path / "portfolio"
    for variant in ("default", "multi_kernel", "no_persistent_reductions"):
        dest = folder / variant
        shutil.copytree(DATA / "inductor_portfolio" / "cross_entropy_problem" / variant, dest)
        kernels = parse_output_code((dest / "output_code.py").read_text()).kernels
        chosen = {name: {"config": {c: 1 if c == "XBLOCK" else 64 for c in k.constexprs} | {"num_warps": 4}}
                  for name, k in kernels.items()}  # fmt: skip
        (dest / "chosen_configs.json").write_text(json.dumps(chosen))
    return folder


@pytest.mark.slow
def test_each_distinct_variant_of_a_portfolio_is_measured_and_repeats_are_merged(tmp_path) -> None:
    """A problem with no input kernel starts from the default variant's seed; the multi-kernel's joins
    it in round 0 and the repeat of its code is said and left out."""
    out = tmp_path / "run"
    done = run_cli("--problem", str(DATA / "cross_entropy_problem.py"), "--compiler-recording",
                   str(_portfolio_recording(tmp_path)), "--out", str(out), "--rounds", "1", "--workers", "2",
                   "--candidates-per-round", "2", "--beam-width", "2", "--quiet", timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    start = TaskResult.model_validate_json((out / "optimization_trace" / "input" / "result.json").read_text())
    assert start.status == "ok" and start.kernel.origin == "compiler", start.reason
    multi = TaskResult.model_validate_json(
        (out / "optimization_trace" / "compiler-seed-multi_kernel" / "result.json").read_text())
    assert multi.status == "ok", multi.reason
    assert "triton.multi_kernel=1" in multi.kernel.note and "no_persistent_reductions" in multi.kernel.note
    said = [e for e in _events(done.stdout.splitlines()) if e["event"] == "compiler_seed"]
    assert said[0]["variants"] == ["default", "multi_kernel", "no_persistent_reductions"], said
    repeats = [e for e in said if e["status"] == "duplicate"]
    assert [e["seed"] for e in repeats] == ["compiler-seed-no_persistent_reductions"], said
    assert "the same code as compiler-seed-multi_kernel" in repeats[0]["reason"]
    assert not (out / "optimization_trace" / "compiler-seed-no_persistent_reductions").exists()
    state = BeamState.model_validate_json((out / "state.json").read_text())
    assert any(a.kernel_hash == multi.kernel.hash for a in state.history)
