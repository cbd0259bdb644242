"""Record what torch.compile(mode="max-autotune-no-cudagraphs") makes of a problem, on a GPU.

    python -m workers.harness.record_inductor --problem P --out DIR [--dtype bf16] [--variant NAME --option KEY=VALUE ...]

Writes DIR/<problem>/: ``output_code.py`` (the wrapper Inductor generated, with every Triton kernel's
source and the configs it considered), ``chosen_configs.json`` (each Triton kernel's name, the config its
autotuner launched, and its source), ``graph_args.json`` (what each of the graph's arguments is: a
forward input's index or a model value's name, see inductor_graph_args.py), ``best_configs.json`` (the
``.best_config`` files of Inductor's cache, keyed by a hash, kept as a cross-check), and ``meta.json``
(versions, device, shapes, dtype, compile seconds). The model runs under torch.no_grad(), so Inductor
compiles the inference graph. Its GEMM and convolution backends are limited to Triton: where max-autotune
would pick cuBLAS or cuDNN (which no seed can hold), the recording keeps Inductor's fastest Triton matmul or
convolution template instead; one with no Triton template ends the recording with exit 3 and says so. The compiler-seed
extraction (issue 23) is tested on the CPU against such recordings: on the CPU Inductor makes C++, not
Triton. One problem per process, so one problem's
compile cache and autotuning never leak into the next one's.

``--option key=value`` (repeated) sets a ``torch._inductor.config`` option on top of these settings: one
variant of the compiler seed's portfolio (workers/harness/inductor_portfolio.py); an option this torch
lacks is skipped and named in ``meta.json``. Where the code picks among kernels at run time (Inductor's
multi-kernel: a persistent and a looped reduction, the faster kept after a first run),
``multi_kernel_choices.json`` says which kernel each multi-kernel picked at the problem's shapes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problem", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    add_variant_args(parser)
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="inductor-cache-"))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache)  # fresh: every kernel compiles and autotunes here

    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor.utils import run_and_get_code

    from beamsearch.records.problems import resolve_problem
    from beamsearch.records.schema import RunSpec
    from workers.harness.inductor_graph_args import input_values, observed_graph_args
    from workers.harness.inductor_portfolio import apply_options
    from workers.harness.problem_instance import instantiate, load_problem_module

    problem = resolve_problem(args.problem)
    spec = RunSpec(problem_path=problem.problem_path, shapes="full", device="cuda", dtype=args.dtype)
    module = load_problem_module(spec)
    instance = instantiate(module, spec, 0)
    triton_choices_only(inductor_config)
    applied, skipped = apply_options(inductor_config, dict(args.option))
    compiled = torch.compile(instance.model, mode="max-autotune-no-cudagraphs")
    start = time.perf_counter()
    # no_grad: the inference graph, as the verifier and timing call the model (a training graph would
    # also return what its backward saves)
    try:
        with torch.no_grad(), observed_graph_args(instance.model) as graph_args:
            _, codes = run_and_get_code(compiled, *instance.inputs)
    except Exception as e:  # Inductor wraps its own errors; the name is what tells them apart
        if "NoValidChoicesError" not in f"{type(e).__name__} {e}":
            raise
        print("Inductor has no Triton template for a GEMM or convolution of this problem (max-autotune would "
              "call an extern library there): no compiler seed", file=sys.stderr)  # fmt: skip
        raise SystemExit(3) from e
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - start

    dest = args.out / problem.name
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "output_code.py").write_text("\n\n# ---- next module ----\n\n".join(codes))
    best = {}
    for path in sorted(cache.rglob("*.best_config")):
        kernel_source = path.with_suffix(".py")
        best[path.stem] = {"config": json.loads(path.read_text()),
                           "kernel_source": kernel_source.read_text() if kernel_source.is_file() else None}  # fmt: skip
    (dest / "best_configs.json").write_text(json.dumps(best, indent=1))
    if len(graph_args) == 1:  # one graph, as the seed needs; several (a graph break) make it unavailable
        (dest / "graph_args.json").write_text(json.dumps(graph_args[0]) + "\n")
    chosen = chosen_configs(codes)
    (dest / "chosen_configs.json").write_text(json.dumps(chosen, indent=1))
    picked = multi_kernel_choices()
    if picked:
        (dest / "multi_kernel_choices.json").write_text(json.dumps(picked, indent=1))
    shapes = [list(t.shape) for t in instance.inputs if isinstance(t, torch.Tensor)]
    meta = {"problem": problem.name, "dtype": args.dtype, "input_shapes": shapes,
            "input_values": input_values(instance.inputs), "compile_s": round(compile_s, 2),
            "device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": __import__("triton").__version__, "gemm_backends": inductor_config.max_autotune_gemm_backends,
            "kernels_with_best_config": len(best), "variant": args.variant, "options": applied,
            "skipped_options": skipped, "multi_kernel_choices": picked,
            "kernels": {name: k["config"] for name, k in chosen.items()}}  # fmt: skip
    (dest / "meta.json").write_text(json.dumps(meta, indent=1))
    print(json.dumps(meta))


def add_variant_args(parser: argparse.ArgumentParser) -> None:
    """The portfolio's arguments, shared with record_inductor_cpu.py."""
    from workers.harness.inductor_portfolio import DEFAULT_VARIANT

    parser.add_argument("--variant", default=DEFAULT_VARIANT, help="the portfolio variant's name, kept in meta.json")
    parser.add_argument("--option", action="append", default=[], type=_option, metavar="KEY=VALUE",
                        help="a torch._inductor.config option (dotted: triton.multi_kernel=1), a TOML value; "
                        "repeat for several")  # fmt: skip


def _option(text: str) -> tuple[str, object]:
    from workers.harness.inductor_portfolio import parse_option

    try:
        return parse_option(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def triton_choices_only(inductor_config: Any) -> None:
    """Max-autotune's choices limited to what a seed can hold: where it would pick cuBLAS or cuDNN, the
    recording keeps Inductor's fastest Triton matmul or convolution template (one with no Triton template
    ends the recording, exit 3). Options older torch lacks are left alone."""
    inductor_config.max_autotune_gemm_backends = "TRITON"
    if hasattr(inductor_config, "max_autotune_conv_backends"):
        inductor_config.max_autotune_conv_backends = "TRITON"
    # Its decompose-K choice runs the split products as an extern bmm.
    if hasattr(inductor_config.triton, "num_decompose_k_splits"):
        inductor_config.triton.num_decompose_k_splits = 0
    # The persistent TMA matmul template joins the choices (off by default; used only where the GPU has TMA).
    if hasattr(inductor_config.triton, "enable_persistent_tma_matmul"):
        inductor_config.triton.enable_persistent_tma_matmul = True


def chosen_configs(codes: Sequence[str] = ()) -> dict[str, dict]:
    """Every Triton kernel of the loaded output code: the config its autotuner settled on (its one
    launcher after autotuning) and the kernel's source. ``codes``: the output code's own modules' sources."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    found = []
    for module in list(PyCodeCache.modules):
        own = _source_of(module) in codes
        for name, value in vars(module).items():
            if not isinstance(value, CachingAutotuner):
                continue
            launchers = getattr(value, "launchers", None) or []
            config = launchers[0].config if len(launchers) == 1 else None
            found.append((own, name, {"config": None if config is None else {**config.kwargs, "num_warps": config.num_warps,
                                                                             "num_stages": config.num_stages},
                                      "candidates": len(getattr(value, "configs", []) or []),
                                      "source": getattr(value.fn, "src", None) if hasattr(value, "fn") else None}))  # fmt: skip
    return settled_configs(found)


def settled_configs(found: list[tuple[bool, str, dict]]) -> dict[str, dict]:
    """One entry per kernel name from (in the output code's own module, name, entry), in load order.
    max-autotune also loads modules it only benchmarks (a GEMM's epilogue fusions), whose kernels share
    names with the output code's and never ran, so have no config: the output code's own entry wins,
    then any with a config, then the last."""
    best: dict[str, tuple[tuple[bool, bool], dict]] = {}
    for own, name, entry in found:
        rank = (own, entry.get("config") is not None)
        if name not in best or rank >= best[name][0]:
            best[name] = rank, entry
    return {name: entry for name, (_, entry) in best.items()}


def _source_of(module: Any) -> str | None:
    try:
        return Path(module.__file__).read_text()
    except (AttributeError, OSError, TypeError):
        return None


def multi_kernel_choices() -> dict[str, dict[str, object]]:
    """Each multi-kernel of the loaded output code (Inductor's ``MultiKernelCall``, which times its
    sub-kernels on its first run and keeps the fastest): the sub-kernel it picked, by the name the
    wrapper gives it, and the names of all of them."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.codegen.multi_kernel import MultiKernelCall

    out: dict[str, dict[str, object]] = {}
    for module in list(PyCodeCache.modules):
        names = {id(v): n for n, v in vars(module).items()}  # the wrapper's variable of each sub-kernel
        for name, value in vars(module).items():
            if not isinstance(value, MultiKernelCall):
                continue
            kernels = [names.get(id(k), k.inductor_meta.get("kernel_name")) for k in value.kernels]
            index = value.picked_kernel
            out[name] = {"picked": None if index is None else kernels[index], "kernels": kernels}
    return out


if __name__ == "__main__":
    main()
