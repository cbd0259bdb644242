"""What each argument of the graph torch.compile hands Inductor is: a forward input or a model value.

Inductor's wrapper names its arguments ``arg0_1``, ``primals_1``...; the compiler seed must know which is
the problem's input and which the model's ``weight`` or ``bias`` (bound by keyword, as workers/harness/binding.py
binds them). Dynamo knows: each placeholder of the graph it passes to Inductor carries its source
(``L['x']``, ``L['self']._modules['gn']._parameters['weight']``). ``observed_graph_args`` watches that
hand-over without changing the compile, and gives the list the seed takes as ``graph_args``:
an int for the forward input of that position, a model value's name, or None for anything else.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Iterator
from typing import Any

from workers.harness.binding import model_values

MODULE_STEP = re.compile(r"\._modules\['([^']+)'\]")
VALUE = re.compile(r"\._(?:parameters|buffers)\['([^']+)'\]$")
FORWARD_ARG = re.compile(r"L\['([^']+)'\]")


@contextlib.contextmanager
def observed_graph_args(model: Any) -> Iterator[list[list[int | str | None]]]:
    """While open, every graph torch.compile passes to Inductor for ``model`` is read: the yielded list
    gets one ``graph_args`` list per graph, in order."""
    import torch._inductor.compile_fx as compile_fx_module

    original = compile_fx_module.compile_fx
    seen: list[list[int | str | None]] = []
    depth = 0

    def observing(graph: Any, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal depth
        if depth == 0:  # compile_fx calls itself again with its config applied: one graph, read once
            seen.append(graph_args_of(graph, model))
        depth += 1
        try:
            return original(graph, example_inputs, *args, **kwargs)
        finally:
            depth -= 1

    compile_fx_module.compile_fx = observing
    try:
        yield seen
    finally:
        compile_fx_module.compile_fx = original


def graph_args_of(graph: Any, model: Any) -> list[int | str | None]:
    """Each placeholder of Dynamo's graph module: its forward input's index, its model value's name (when
    binding would hand that very tensor), else None."""
    forward = [p.name for p in inspect.signature(model.forward).parameters.values()]
    values = model_values(model)
    out: list[int | str | None] = []
    for node in graph.graph.nodes:
        if node.op != "placeholder":
            continue
        grapharg = node.meta.get("grapharg")
        source = grapharg.source.name if grapharg is not None and grapharg.source is not None else ""
        out.append(_describe(source, forward, values, model))
    return out


def _describe(source: str, forward: list[str], values: dict[str, Any], model: Any) -> int | str | None:
    arg = FORWARD_ARG.fullmatch(source)
    if arg and arg.group(1) in forward:
        return forward.index(arg.group(1))
    value = VALUE.search(source)
    if not (source.startswith("L['self']") and value):
        return None
    module = model
    steps = MODULE_STEP.findall(source)
    for step in steps:
        module = getattr(module, "_modules", {}).get(step)
        if module is None:
            return None
    name = value.group(1)
    tensor = getattr(module, name, None)
    if tensor is None:
        return None
    # its short name where binding hands that very tensor, else its qualified one (``pointwise_weight``)
    return next((n for n in (name, "_".join([*steps, name])) if values.get(n) is tensor), None)


def input_values(inputs: list[Any]) -> dict[str, Any]:
    """The forward inputs that are plain numbers (``A * s`` with ``s = 3.14``), by position: Dynamo bakes
    such a value into the kernels (no graph argument takes it), so the seed checks it is the recorded one."""
    return {str(i): v for i, v in enumerate(inputs) if type(v) in (int, float, bool)}
