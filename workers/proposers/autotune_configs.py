"""A kernel tuned with ``@triton.autotune``, written as plain launches the knob space can search.

An autotuned kernel takes its block sizes, warps and stages from the config list at run time, so its
launches carry none of them and the tuner reads no knob. ``without_autotune`` removes the decorator and
writes the first config's values into every launch of that kernel as keyword literals
(``k[grid](x, n, BLOCK_SIZE=128, num_warps=4, num_stages=3)``); a grid that reads ``meta['BLOCK_SIZE']``
reads them there as it read the autotuner's. The other configs are kept as points for the search to try
first: the author's own shortlist, then the rest of the space.

Only what the autotuner does on the call itself is kept: ``key``, ``prune_configs_by``, ``reset_to_zero``,
``restore_value``, ``warmup`` and ``rep`` shape its benchmarking runs, which a fixed launch no longer
makes. The configs may be written out, made by a comprehension over literal lists or ``range``s, and
given by a module-level name or a module function that returns them (as Triton's tutorials do). A
decorator this module cannot read in full (anything else, a config with a ``pre_hook``, a launch it
cannot edit) leaves the source as it was: no knobs, as before, rather than a guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from workers.proposers.tuner import is_int, kernel_loops, launch_insertion, line_starts, single_assignment

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
    if "autotune" not in source:  # most kernels: no second parse on every render
        return Detuned(source)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return Detuned(source)
    kernels = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            decorator = next((d for d in node.decorator_list if _is_autotune(d)), None)
            configs = _configs(decorator, node, tree) if decorator is not None else None
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


def _configs(decorator: ast.expr, kernel: ast.FunctionDef, module: ast.Module) -> list[dict[str, int]] | None:
    """The decorator's configs as plain dicts, or None when any part is not one this module reads: a list of
    ``triton.Config`` calls, written out or made by a comprehension over literal lists or ``range``s,
    given inline, by a module-level name, or by a module function that returns it (Triton's tutorials)."""
    if not isinstance(decorator, ast.Call):
        return None
    listed = next((kw.value for kw in decorator.keywords if kw.arg == "configs"), None)
    if listed is None and decorator.args:
        listed = decorator.args[0]
    elements = _config_calls(_resolve(listed, module)) if listed is not None else None
    if not elements:
        return None
    loops = kernel_loops(module, kernel.name)
    configs = []
    for element, env in elements:
        if not (isinstance(element, ast.Call) and ast.unparse(element.func).split(".")[-1] == "Config"
                and element.args and isinstance(element.args[0], ast.Dict) and len(element.args) <= 3):  # fmt: skip
            return None  # past 3 positional: num_ctas, maxnreg or a hook
        values: dict[str, int] = {}
        for key, value in zip(element.args[0].keys, element.args[0].values, strict=True):
            number = _int(value, env)
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and number is not None):
                return None
            values[key.value] = number
        options = dict(CONFIG_DEFAULTS)
        for name, value in [*zip(("num_warps", "num_stages"), element.args[1:3], strict=False),
                            *((kw.arg, kw.value) for kw in element.keywords)]:  # fmt: skip
            if name in CONFIG_DEFAULTS and (number := _int(value, env)) is not None:
                options[name] = number
            elif not (name in ("num_ctas", "maxnreg") and isinstance(value, ast.Constant)
                      and value.value in (1, None)):  # the defaults: nothing to carry  # fmt: skip
                return None
        if not loops:
            options.pop("num_stages")  # pipelines loops only: no knob without one
        configs.append(values | options)
    if any(c.keys() != configs[0].keys() for c in configs):
        return None  # configs that set different names: the launch could carry only the first's
    return configs


def _resolve(node: ast.expr, module: ast.Module) -> ast.expr | None:
    """A module-level name's one assignment, or what a module function of no arguments returns (its body a
    single ``return``, after a docstring); else ``node`` itself."""
    if isinstance(node, ast.Name):
        return single_assignment(node.id, module, top_level=True)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args and not node.keywords:
        func = next((f for f in module.body if isinstance(f, ast.FunctionDef) and f.name == node.func.id), None)
        body = func.body if func is not None else []
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        return body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
    return node


def _config_calls(listed: ast.expr | None) -> list[tuple[ast.expr, dict[str, int]]] | None:
    """Each element of a config list with the loop variables it sees: a literal list's elements, or a
    comprehension's element once per combination of its ``for`` clauses (no ``if``s)."""
    if isinstance(listed, (ast.List, ast.Tuple)):
        return [(e, {}) for e in listed.elts]
    if not isinstance(listed, ast.ListComp):
        return None
    envs: list[dict[str, int]] = [{}]
    for generator in listed.generators:
        values = _ints(generator.iter)
        if generator.ifs or generator.is_async or values is None or not isinstance(generator.target, ast.Name):
            return None
        envs = [env | {generator.target.id: v} for env in envs for v in values]
    return [(listed.elt, env) for env in envs]


def _ints(node: ast.expr) -> list[int] | None:
    """A literal list or tuple of ints, or ``range`` of int literals."""
    if isinstance(node, (ast.List, ast.Tuple)) and all(is_int(e) for e in node.elts):
        return [e.value for e in node.elts]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" and not node.keywords
            and 1 <= len(node.args) <= 3 and all(is_int(a) for a in node.args)):  # fmt: skip
        return list(range(*(a.value for a in node.args)))
    return None


def _int(node: ast.expr, env: dict[str, int]) -> int | None:
    """An int literal, or a loop variable's value."""
    if is_int(node):
        return node.value
    return env.get(node.id) if isinstance(node, ast.Name) else None


def _edit(source: str, edits: list[tuple[int, int, int, int, str]]) -> str:
    """Apply (line, col, end line, end col, text) replacements, byte offsets within 1-based lines."""
    starts = line_starts(source)
    raw = source.encode()
    for line, col, end_line, end_col, text in sorted(edits, reverse=True):
        start, end = starts[min(line, len(starts)) - 1] + col, starts[min(end_line, len(starts)) - 1] + end_col
        raw = raw[:start] + text.encode() + raw[end:]
    return raw.decode()
