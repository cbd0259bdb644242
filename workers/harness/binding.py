"""How a problem's inputs and model parameters are passed to ``kernel_function``.

The rules (also in the README), applied to the function's signature in order:

1. The problem's inputs (``get_inputs()``) fill the leading positional parameters, in order, whatever
   their names. Left-over inputs go to ``*args`` if there is one, else it is an error.
2. Every later parameter whose name is a *model value* gets that value by keyword. Model values are the
   attributes ``weight, bias, kernel_size, stride, padding, dilation, output_padding, groups, eps`` of the
   model's modules (the model itself first, then submodules in registration order; the first module
   that has one wins; ``None`` counts as absent). A tuple whose elements are all equal becomes that one
   element (``(2, 2, 2)`` -> ``2``), as KernelAgent's harness does for square kernels. Every parameter
   and buffer is also a model value under its qualified name, dots as underscores (``conv_weight``,
   ``pointwise_bias``, ``bn_running_mean``): where two modules have a ``weight``, the second's is
   reachable only so.
3. A ``**kwargs`` parameter receives every model value not already bound.
4. A parameter with a default and no model value keeps its default; ``*args`` gets nothing more.
5. Anything else (a required parameter with no value, a positional-only parameter past the inputs) is a
   BindError that names the parameter and lists the model values there are.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MODEL_VALUE_NAMES = (
    "weight",
    "bias",
    "kernel_size",
    "stride",
    "padding",
    "dilation",
    "output_padding",
    "groups",
    "eps",
)


class BindError(TypeError):
    pass


@dataclass(frozen=True)
class BoundCall:
    """A ready call: ``fn(*inputs, **kwargs)``; ``inputs`` are the live tensors (mutable on purpose)."""

    fn: Callable[..., Any]
    inputs: list[Any]
    kwargs: dict[str, Any]

    def __call__(self) -> Any:
        return self.fn(*self.inputs, **self.kwargs)



def model_values(model: Any) -> dict[str, Any]:
    """The named values a kernel may ask for, read off ``model`` and its submodules."""
    found: dict[str, Any] = {}
    for module in model.modules():
        for name in MODEL_VALUE_NAMES:
            if name in found:
                continue
            value = getattr(module, name, None)
            if value is None or callable(value):  # methods and submodules are not values
                continue
            found[name] = _squeeze_uniform_tuple(value)
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        found.setdefault(name.replace(".", "_"), tensor)
    return found


def bind(fn: Callable[..., Any], inputs: list[Any], values: dict[str, Any]) -> BoundCall:
    """Bind ``fn`` by the rules above. Raises BindError with the reason."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError) as e:
        raise BindError(f"cannot read kernel_function's signature: {e}") from e
    kwargs: dict[str, Any] = {}
    remaining = len(inputs)
    P = inspect.Parameter
    for p in params:
        if remaining and p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD):
            remaining -= 1
            continue
        if remaining and p.kind is P.VAR_POSITIONAL:
            remaining = 0
            continue
        if p.kind is P.VAR_POSITIONAL:
            continue
        if p.kind is P.VAR_KEYWORD:
            kwargs.update({k: v for k, v in values.items() if k not in kwargs})
            continue
        if p.name in values and p.kind is not P.POSITIONAL_ONLY:
            kwargs[p.name] = values[p.name]
        elif p.default is P.empty:
            available = ", ".join(sorted(values)) or "none"
            raise BindError(
                f"kernel_function parameter '{p.name}' cannot be bound: the problem has {len(inputs)} "
                f"input(s), which fill the leading positional parameters, and no model value named "
                f"'{p.name}' (model values available: {available})"
            )
    if remaining:
        raise BindError(
            f"kernel_function takes fewer positional parameters than the problem's {len(inputs)} inputs"
        )
    return BoundCall(fn=fn, inputs=list(inputs), kwargs=kwargs)


def _squeeze_uniform_tuple(value: Any) -> Any:
    if isinstance(value, (tuple, list)) and value and all(v == value[0] for v in value):
        return value[0]
    return value

