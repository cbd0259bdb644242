"""A kernel tuned with ``@triton.autotune``, written as plain launches the knob space can search.

An autotuned kernel takes its block sizes, warps and stages from the config list at run time, so its
launches carry none of them and the tuner reads no knob. ``without_autotune`` removes the decorator and
writes the first config's values into every launch of that kernel as keyword literals
(``k[grid](x, n, BLOCK_SIZE=128, num_warps=4, num_stages=3)``); a grid that reads ``meta['BLOCK_SIZE']``
reads them there as it read the autotuner's. The other configs are kept as points for the search to try
first: the author's own shortlist, then the rest of the space.

Only what the autotuner does on the call itself is kept: ``key``, ``prune_configs_by``, ``reset_to_zero``,
``restore_value``, ``warmup`` and ``rep`` shape its benchmarking runs, which a fixed launch no longer
makes. A decorator this module cannot read in full (configs not a literal list of
``triton.Config({...}, num_warps=.., num_stages=..)`` with int values, a config with a ``pre_hook``, a
launch it cannot edit) leaves the source as it was: no knobs, as before, rather than a guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from workers.proposers.tuner import launch_insertion, source_lines

CONFIG_DEFAULTS = {"num_warps": 4, "num_stages": 3}  # triton.Config's own defaults


@dataclass(frozen=True)
class Detuned:
    """``source`` with its autotuned kernels' decorators removed and their first configs in the launches;
    ``configs``: per kernel, every config as ``{name: value}`` (constexprs, ``num_warps``, and ``num_stages``
    for kernels that loop), in the decorator's order."""

    source: str
    configs: dict[str, list[dict[str, int]]] = field(default_factory=dict)


def without_autotune(source: str) -> Detuned:
    """``source`` as plain launches (see the module's docstring); unchanged when it has no autotuned kernel
    this module can read, or does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return Detuned(source)
    kernels = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            decorator = next((d for d in node.decorator_list if _is_autotune(d)), None)
            configs = _configs(decorator, node) if decorator is not None else None
            if configs:
                kernels[node.name] = (decorator, configs)
    if not kernels:
        return Detuned(source)
    edits: list[tuple[int, int, int, int, str]] = []  # (line, col, end line, end col, text), 1-based lines
    for name, (decorator, configs) in kernels.items():
        launches = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == name]  # fmt: skip
        uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name]
        if not launches or len(uses) != len(launches):  # launched through another name: not ours to rewrite
            return Detuned(source)
        for call in launches:
            if not [*call.args, *call.keywords] or any(kw.arg in configs[0] for kw in call.keywords):
                return Detuned(source)
            line, col = launch_insertion(source, call)
            edits.append((line, col, line, col, "".join(f", {k}={v}" for k, v in configs[0].items())))
        # the decorator's whole lines, from its '@' to its closing parenthesis
        edits.append((decorator.lineno, 0, decorator.end_lineno + 1, 0, ""))
    return Detuned(_edit(source, edits), {name: configs for name, (_, configs) in kernels.items()})


def _is_autotune(decorator: ast.expr) -> bool:
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(func, (ast.Attribute, ast.Name)) and ast.unparse(func).split(".")[-1] == "autotune"


def _configs(decorator: ast.expr, kernel: ast.FunctionDef) -> list[dict[str, int]] | None:
    """The decorator's configs as plain dicts, or None when any part is not a literal this module reads."""
    if not isinstance(decorator, ast.Call):
        return None
    listed = next((kw.value for kw in decorator.keywords if kw.arg == "configs"), None)
    if listed is None and decorator.args:
        listed = decorator.args[0]
    if not isinstance(listed, ast.List) or not listed.elts:
        return None
    loops = any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(kernel))
    configs = []
    for element in listed.elts:
        if not (isinstance(element, ast.Call) and ast.unparse(element.func).split(".")[-1] == "Config"
                and element.args and isinstance(element.args[0], ast.Dict)):  # fmt: skip
            return None
        values: dict[str, int] = {}
        for key, value in zip(element.args[0].keys, element.args[0].values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and _is_int(value)):
                return None
            values[key.value] = value.value
        if len(element.args) > 3:  # num_ctas, maxnreg or a hook by position
            return None
        options = dict(CONFIG_DEFAULTS)
        for i, value in enumerate(element.args[1:3]):  # Config(kwargs, num_warps, num_stages) by position
            if not _is_int(value):
                return None
            options[("num_warps", "num_stages")[i]] = value.value
        for kw in element.keywords:
            if kw.arg in CONFIG_DEFAULTS and _is_int(kw.value):
                options[kw.arg] = kw.value.value
            elif not (kw.arg in ("num_ctas", "maxnreg") and isinstance(kw.value, ast.Constant)
                      and kw.value.value in (1, None)):  # the defaults: nothing to carry  # fmt: skip
                return None
        if not loops:
            options.pop("num_stages")  # pipelines loops only: no knob without one
        configs.append(values | options)
    if any(c.keys() != configs[0].keys() for c in configs):
        return None  # configs that set different names: the launch could carry only the first's
    return configs


def _is_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _edit(source: str, edits: list[tuple[int, int, int, int, str]]) -> str:
    """Apply (line, col, end line, end col, text) replacements, byte offsets within 1-based lines."""
    lines = source_lines(source)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode()))
    raw = source.encode()

    def offset(line: int, col: int) -> int:
        return starts[min(line, len(lines) + 1) - 1] + col

    for line, col, end_line, end_col, text in sorted(edits, reverse=True):
        raw = raw[: offset(line, col)] + text.encode() + raw[offset(end_line, end_col) :]
    return raw.decode()
