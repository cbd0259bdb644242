"""Record the Triton wrapper Inductor writes for a problem at its SMALL shapes, on a machine with no GPU.

    python -m workers.harness.record_inductor_cpu --problem P --out DIR [--dtype bf16] [--max-autotune]
        [--variant NAME --option KEY=VALUE ...]

Inductor makes C++ on the CPU unless ``cpu_backend = "triton"``; then it writes Triton kernels and a
wrapper like the GPU's, but cannot compile them without a Triton CPU backend. This script lets Inductor
generate the code (standing in a fixed hash for the backend it asks about) and keeps the wrapper's text
the moment Inductor loads it, before anything compiles. The kernels are Inductor's own, for the small
shapes, so the compiler seed can be verified end to end with Triton's interpreter. There is no
autotuning on this path: the recording has no configs, and its tests choose them. With ``--max-autotune``
Inductor also writes its matmul templates (GEMM backends limited to Triton, as workers/harness/record_inductor.py
records on a GPU); nothing can be timed here, so each template's first config stands in for the
autotuner's choice (the template carries its config in its body).

Writes DIR/<problem>/output_code.py, graph_args.json (what each graph argument is: a forward input's
index or a model value's name) and meta.json (problem, dtype, input shapes, torch version).

``--option key=value`` applies a portfolio variant's Inductor options as record_inductor.py does. A
multi-kernel's choice is made by running it, which cannot happen here: ``multi_kernel_choices.json``
names each multi-kernel's first sub-kernel as a stand-in (tests may choose another).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from workers.harness.record_inductor import add_variant_args

# ``name = async_compile.multi_kernel('name', [first, ...`` in Inductor's wrapper
MULTI_KERNEL = re.compile(r"^(\w+) = async_compile\.multi_kernel\('\w+', \[\s*([\w\s,]+?),?\s*\]", re.MULTILINE)


class _Captured(Exception):
    pass


class Generated(NamedTuple):
    code: str  # Inductor's wrapper
    input_shapes: list[list[int]]
    graph_args: list[int | str | None]  # what each graph argument is (workers/harness/inductor_graph_args.py)
    input_values: dict[str, Any]  # the forward inputs that are plain numbers
    options: dict[str, Any]  # the Inductor options applied
    skipped_options: dict[str, str]  # those this torch lacks, with the reason


def generate(problem: str, dtype: str, max_autotune: bool = False, options: dict[str, Any] | None = None) -> Generated:
    """Inductor's wrapper for ``problem`` at small shapes on the CPU, with ``options`` (a portfolio
    variant's Inductor options) set on top of this recorder's settings."""
    import itertools
    import os
    import tempfile

    # a fresh cache: no choice from an earlier recording is reused
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cache-")
    import torch
    import torch._inductor.codecache as codecache
    import torch._inductor.config as inductor_config
    import torch.utils._triton as torch_triton

    from beamsearch.records.problems import resolve_problem
    from beamsearch.records.schema import RunSpec
    from workers.harness.inductor_graph_args import input_values, observed_graph_args
    from workers.harness.inductor_portfolio import apply_options
    from workers.harness.problem_instance import instantiate, load_problem_module
    from workers.harness.record_inductor import triton_choices_only

    inductor_config.cpu_backend = "triton"
    if max_autotune:
        from torch._inductor.select_algorithm import AlgorithmSelectorCache

        inductor_config.max_autotune = True
        triton_choices_only(inductor_config)  # as workers/harness/record_inductor.py records on a GPU
        inductor_config.benchmark_epilogue_fusion = False  # its benchmark module does not load on the CPU
        order = itertools.count(1)  # the first choice benchmarks fastest: nothing can run here to time it
        AlgorithmSelectorCache.benchmark_choice = classmethod(
            lambda cls, choice, *args, **kwargs: float(next(order))
        )
    applied, skipped = apply_options(inductor_config, options or {})
    torch_triton.triton_backend = lambda: None  # no Triton driver here; the hash only keys Inductor's cache
    torch_triton.triton_hash_with_backend = lambda: "0" * 64
    captured: list[str] = []

    load = codecache.PyCodeCache.load_by_key_path

    def capture(key: str, path: str, *args: object, **kwargs: object) -> object:
        text = Path(path).read_text()
        # not the wrapper: a template's or an epilogue's benchmark module, loaded while choosing
        if "class Runner" not in text:
            return load(key, path, *args, **kwargs)
        captured.append(text)
        raise _Captured

    codecache.PyCodeCache.load_by_key_path = capture
    spec = RunSpec(
        problem_path=resolve_problem(problem).problem_path, shapes="small", device="cpu", dtype=dtype
    )
    instance = instantiate(load_problem_module(spec), spec, 0)
    torch._dynamo.reset()
    try:
        with torch.no_grad(), observed_graph_args(instance.model) as graphs:
            torch.compile(instance.model)(*instance.inputs)
    except Exception:  # Inductor wraps the capture in its own error
        if not captured:
            raise
    shapes = [list(t.shape) for t in instance.inputs if isinstance(t, torch.Tensor)]
    return Generated(captured[0], shapes, graphs[0], input_values(instance.inputs), applied, skipped)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problem", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    parser.add_argument("--max-autotune", action="store_true", help="also Inductor's Triton matmul templates")
    add_variant_args(parser)
    args = parser.parse_args()
    import torch

    from beamsearch.records.problems import resolve_problem

    made = generate(args.problem, args.dtype, args.max_autotune, dict(args.option))
    code = made.code
    dest = args.out / resolve_problem(args.problem).name
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "output_code.py").write_text(code)
    (dest / "graph_args.json").write_text(json.dumps(made.graph_args) + "\n")
    picked = stand_in_multi_kernel_choices(code)
    if picked:
        (dest / "multi_kernel_choices.json").write_text(json.dumps(picked, indent=1) + "\n")
    meta = {"problem": dest.name, "dtype": args.dtype, "input_shapes": made.input_shapes,
            "input_values": made.input_values, "shapes": "small", "device": "cpu (code only)",
            "torch": torch.__version__, "max_autotune": args.max_autotune, "variant": args.variant,
            "options": made.options, "skipped_options": made.skipped_options,
            "multi_kernel_choices": picked}  # fmt: skip
    (dest / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(json.dumps(meta))


def stand_in_multi_kernel_choices(code: str) -> dict[str, dict[str, Any]]:
    """Each multi-kernel of ``code`` with its first sub-kernel as the pick (nothing runs here to choose),
    in record_inductor.py's form."""
    out: dict[str, dict[str, Any]] = {}
    for found in MULTI_KERNEL.finditer(code):
        kernels = [k.strip() for k in found.group(2).split(",") if k.strip()]
        out[found.group(1)] = {"picked": kernels[0], "kernels": kernels, "stand_in": True}
    return out


if __name__ == "__main__":
    main()
