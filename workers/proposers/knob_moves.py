"""The knobs beyond a launch's blocks, warps, stages and grid: load hints, a loop's own stages, unrolling,
maxnreg, and fast approximate transcendentals. Each is a rewrite found in the source (``find_moves``) and
written back (``apply_all``, for a point with knobs of any kind; ``maxnreg`` is a literal the tuner writes).
All but the last leave what the kernel computes alone; fast math changes its values within the
approximations' error, which the verifier's tolerance judges as for any candidate.

Imports point one way: this module uses the tuner's, the tuner never imports this one.
"""

from __future__ import annotations

import ast

from workers.proposers.tuner import (
    CODE_KINDS,
    Knob,
    apply_literals,
    is_int,
    jit_functions,
    launch_insertion,
    launches,
    line_starts,
    source_lines,
    swap_grids,
)

# The ``loads`` knob's values: what every ``tl.load`` of one jit function passes as (cache_modifier,
# eviction_policy). -1 is the loads as written where they differ from one another or pass another hint.
LOAD_HINTS = {0: ("", ""), 1: ("", "evict_first"), 2: ("", "evict_last"), 3: (".cg", "")}
LOADS_AS_WRITTEN = -1
LOOP_STAGES = [0, 1, 2, 3, 4]  # a loop's own num_stages; 0: none (the launch's num_stages applies)
UNROLL = [1, 2, 4]  # a loop's loop_unroll_factor; Triton unrolls nothing below 2, so 1 is the loop as written
MAXNREG = [0, 64, 96, 128]  # registers a thread may take; 0: no cap (ptxas's choice, up to 255)
# The ``math`` knob: 0 the function's transcendental calls as written, 1 each replaced by a fast
# approximation (a special-function-unit instruction or two in place of a polynomial of dozens: a kernel
# that computes two logs an element is compute-bound with the precise ones): libdevice's ``fast_*``, PTX's
# ``tanh.approx`` (CUDA's libdevice has no fast tanh), and for erf (GELU's) Abramowitz and Stegun's 7.1.26,
# one fast exp and one division; log1p and expm1 (softplus's, ELU's) as the fast log of 1 + x and the fast
# exp less 1. Errors of a few ulp, growing with the argument for exp; tanh's relative error is about 2^-11,
# erf's absolute error below 1.5e-7, log1p's and expm1's about 1e-7 absolute (relative, large near 0).
# tl.exp is approximate already; tl.log, tl.log2, tl.erf and libdevice's exp are not.
MATH = [0, 1]
FAST_MATH = {"log": "fast_logf", "log2": "fast_log2f", "log10": "fast_log10f", "exp": "fast_expf",
             "exp10": "fast_exp10f", "tanh": "fast_tanhf", "erf": "fast_erff", "log1p": "fast_log1pf",
             "expm1": "fast_expm1f"}  # fmt: skip
PRECISE_IN_TRITON = ("log", "log2", "erf")  # of FAST_MATH, what tl and tl.math compute precisely; libdevice's all
# Written once under the imports by the math knob: the fast functions as module globals, which Triton's
# compiler takes (a builtin, a jit function). Triton's interpreter runs neither libdevice's calls (they
# return None there) nor inline PTX, so on the CPU the precise functions stand in: the rewrite is checked
# there, its speed and error only on a GPU. Lambdas, so the interpreter's patched tl.math is looked up at
# each call.
FAST_MATH_MARK = "# Fast approximate transcendentals (the math knob)"  # the header's opening words
_FAST_MATH_HEADER = """# Fast approximate transcendentals (the math knob): libdevice's and PTX's on a GPU, precise stand-ins on
# Triton's interpreter.
if os.environ.get("TRITON_INTERPRET") == "1":
    fast_logf = lambda x: {tl}.math.log(x)  # noqa: E731
    fast_log2f = lambda x: {tl}.math.log2(x)  # noqa: E731
    fast_log10f = lambda x: {tl}.math.log2(x) * 0.30102999566398120  # noqa: E731
    fast_expf = lambda x: {tl}.math.exp(x)  # noqa: E731
    fast_exp10f = lambda x: {tl}.math.exp2(x * 3.3219280948873623)  # noqa: E731
    fast_tanhf = lambda x: 1.0 - 2.0 / ({tl}.math.exp(2.0 * x) + 1.0)  # noqa: E731
    fast_erff = lambda x: {tl}.math.erf(x)  # noqa: E731
    fast_log1pf = lambda x: {tl}.math.log(1.0 + x)  # noqa: E731
    fast_expm1f = lambda x: {tl}.math.exp(x) - 1.0  # noqa: E731
else:
    from triton.language.extra import libdevice as _libdevice

    fast_logf, fast_log2f, fast_log10f = _libdevice.fast_logf, _libdevice.fast_log2f, _libdevice.fast_log10f
    fast_expf, fast_exp10f = _libdevice.fast_expf, _libdevice.fast_exp10f

    @triton.jit
    def fast_tanhf(x):
        return {tl}.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [x], dtype={tl}.float32, is_pure=True,
                                           pack=1)

    @triton.jit
    def fast_erff(x):
        # Abramowitz and Stegun 7.1.26: one exp (ex2.approx) and one division (div.full)
        a = {tl}.abs(x)
        t = 1.0 / (1.0 + 0.3275911 * a)
        p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
        y = 1.0 - p * {tl}.exp(-a * a)
        return {tl}.where(x < 0, -y, y)

    @triton.jit
    def fast_log1pf(x):
        return _libdevice.fast_logf(1.0 + x)

    @triton.jit
    def fast_expm1f(x):
        return _libdevice.fast_expf(x) - 1.0
"""


def uses_fast_math(source: str) -> bool:
    """Whether a kernel's source holds the math knob's fast functions (its header, which the knob writes
    with them): its values are within the approximations' error of the precise functions', not equal."""
    return FAST_MATH_MARK in source


def find_moves(source: str, maxnreg: bool = False) -> list[Knob]:
    """The knobs beyond a launch's blocks, warps, stages and grid, each a rewrite (all but ``math`` leave what
    the kernel computes alone): every jit function's ``tl.load`` hint (``loads``: one knob for all its loads,
    ``LOAD_HINTS``), each of its loops' own ``num_stages`` (``loop_stages``: a ``range``/``tl.range`` loop;
    a ``tl.static_range`` one is unrolled before compiling), its loops' ``loop_unroll_factor`` (``unroll``,
    one knob for them all, where they agree), its precise transcendental calls (``math``: 0 as written, 1
    fast approximations, ``FAST_MATH``), and with ``maxnreg`` (a run on an NVIDIA GPU) each launch's
    register cap. A load or loop that passes one of these in a way the rewrite cannot read (a name, a
    positional option, ``*args``) keeps its function's knob out. Loads and loops need Triton's language
    imported under a name (``tl``). Empty if ``source`` does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    jits = jit_functions(tree)
    lang = _language_name(tree)
    math_modules = _math_modules(tree, lang) if lang is not None else {}
    # A fast function's name the module binds itself would be shadowed by the header the knob writes.
    foreign_fast_math = (any(name in source for name in FAST_MATH.values())
                         and _FAST_MATH_HEADER.format(tl=lang) not in source)  # fmt: skip
    knobs: list[Knob] = []
    for func in tree.body if lang is not None else []:
        if not (isinstance(func, ast.FunctionDef) and func.name in jits):
            continue
        value = _loads_value(_loads(func, lang))
        if value is not None:
            knobs.append(Knob("loads", "loads", value, func.lineno, func.col_offset, func.col_offset, func.name))
        loops = _range_loops(func, lang)
        for i, loop in enumerate(loops, start=1):
            if (value := _range_option(loop, "num_stages")) is not None:
                knobs.append(Knob(f"loop{i}_stages", "loop_stages", value, loop.lineno, loop.col_offset, loop.col_offset,
                                  func.name, ordinal=i))  # fmt: skip
        # One unroll factor for all of a function's loops (as one loads hint): per loop, a two-pass
        # reduction's space would grow nine-fold for a lever that moves loops alike.
        if len(unrolls := {_range_option(loop, "loop_unroll_factor") for loop in loops}) == 1 and None not in unrolls:
            knobs.append(Knob("unroll", "unroll", unrolls.pop(), loops[0].lineno, loops[0].col_offset, loops[0].col_offset,
                              func.name))  # fmt: skip
        if _precise_math_calls(func, math_modules) and not foreign_fast_math:
            knobs.append(Knob("math", "math", 0, func.lineno, func.col_offset, func.col_offset, func.name))
    for scope in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)] + [tree] if maxnreg else []:
        for call in launches(scope, set(jits)):
            site, written = (call.lineno, call.col_offset), next((k for k in call.keywords if k.arg == "maxnreg"), None)
            if written is not None and (is_int(written.value) or _is_none(written.value)):
                v = written.value
                knobs.append(Knob("maxnreg", "maxnreg", v.value or 0, v.lineno, v.col_offset, v.end_col_offset,
                                  call.func.value.id, site))  # fmt: skip
            elif written is None and not jits[call.func.value.id].autotuned and [*call.args, *call.keywords]:
                line, col = launch_insertion(source, call)
                knobs.append(Knob("maxnreg", "maxnreg", 0, line, col, col, call.func.value.id, site))
    return knobs


def apply_all(source: str, changes: dict[Knob, int]) -> str:
    """``source`` with knobs of every kind at their new values: the literal knobs first (``tuner.apply_literals``),
    then the code knobs (``apply_moves``), then grid swaps (``tuner.swap_grids``)."""
    return swap_grids(apply_moves(apply_literals(source, changes), changes), changes)


def apply_moves(source: str, changes: dict[Knob, int]) -> str:
    """``source`` with the loads and loop knobs of ``changes`` (``CODE_KINDS``; the others are left alone) at their
    new values, each on the re-parsed result (found again by function and loop)."""
    code = {k: v for k, v in changes.items() if k.kind in CODE_KINDS}
    for knob, value in sorted(code.items(), key=lambda kv: (kv[0].line, kv[0].col, kv[0].kind)):
        source = _apply_code(source, knob, value)
    return source


def _language_name(tree: ast.Module) -> str | None:
    """The name the module's code reaches ``triton.language`` by (``tl``), or None."""
    names = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [a.asname or a.name for a in node.names if a.name == "triton.language"]
            names += ["triton.language" for a in node.names if a.name == "triton" and a.asname is None]
        elif isinstance(node, ast.ImportFrom) and node.module == "triton":
            names += [a.asname or a.name for a in node.names if a.name == "language"]
    return next((n for n in names if n != "triton.language"), names[0] if names else None)


def _loads(func: ast.FunctionDef, lang: str) -> list[ast.Call]:
    """``func``'s ``tl.load`` calls, in source order."""
    calls = [n for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "load" and ast.unparse(n.func.value) == lang]  # fmt: skip
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))


def _loads_value(loads: list[ast.Call]) -> int | None:
    """The ``loads`` knob's start: the ``LOAD_HINTS`` code every load passes, ``LOADS_AS_WRITTEN`` where they
    differ or pass another hint, None without loads or with one the rewrite cannot edit."""
    hints = set()
    for call in loads:
        # pointer, mask, other, boundary_check and padding_option may come by position; a sixth is the cache's
        if len(call.args) > 5 or any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        pair = []
        for option in ("cache_modifier", "eviction_policy"):
            kw = next((k for k in call.keywords if k.arg == option), None)
            if kw is not None and not (isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)):
                return None
            pair.append(kw.value.value if kw is not None else "")
        hints.add(tuple(pair))
    if not hints:
        return None
    codes = {hint: code for code, hint in LOAD_HINTS.items()}
    return codes.get(hints.pop(), LOADS_AS_WRITTEN) if len(hints) == 1 else LOADS_AS_WRITTEN


def _range_loops(func: ast.FunctionDef, lang: str) -> list[ast.For]:
    """``func``'s ``for ... in range(...)`` and ``tl.range(...)`` loops, in source order (``Knob.ordinal``)."""
    loops = []
    for node in ast.walk(func):
        call = node.iter if isinstance(node, ast.For) else None
        if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args) \
                or any(k.arg is None for k in call.keywords):  # fmt: skip
            continue
        builtin = isinstance(call.func, ast.Name) and call.func.id == "range" and not call.keywords
        language = isinstance(call.func, ast.Attribute) and call.func.attr == "range" and ast.unparse(call.func.value) == lang
        if (builtin and 1 <= len(call.args) <= 3) or (language and len(call.args) <= 3):
            loops.append(node)
    return sorted(loops, key=lambda n: (n.lineno, n.col_offset))


def _range_option(loop: ast.For, option: str) -> int | None:
    """A loop's ``num_stages`` or ``loop_unroll_factor`` as written: its int literal, the default when absent
    or None (0 stages: the launch's; an unroll factor of 1: none), None when set otherwise."""
    default = 0 if option == "num_stages" else 1
    kw = next((k for k in loop.iter.keywords if k.arg == option), None)
    if kw is None or _is_none(kw.value):
        return default
    return kw.value.value if is_int(kw.value) and kw.value.value >= 0 else None


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _apply_code(source: str, knob: Knob, value: int) -> str:
    """``source`` with a loads or loop knob at ``value``, found again by its function and loop; a function
    or loop it cannot find leaves ``source`` as it was. A builtin ``range`` loop becomes ``tl.range``."""
    tree = ast.parse(source)
    lang = _language_name(tree)
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == knob.launch), None)
    if func is None or lang is None:
        return source
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []  # (start, end) as (line, byte col), text
    if knob.kind == "math":
        if value == 1:
            for call in _precise_math_calls(func, _math_modules(tree, lang)):
                edits.append(((call.func.lineno, call.func.col_offset), (call.func.end_lineno, call.func.end_col_offset),
                              FAST_MATH[call.func.attr]))  # fmt: skip
    elif knob.kind == "loads":
        for call in _loads(func, lang):
            if value != LOADS_AS_WRITTEN:
                edits += _keyword_edits(source, call, dict(zip(("cache_modifier", "eviction_policy"),
                                                               (f'"{h}"' for h in LOAD_HINTS[value]), strict=True)))  # fmt: skip
    else:
        loops = _range_loops(func, lang)
        if knob.kind == "loop_stages":
            if not 0 < knob.ordinal <= len(loops):
                return source
            loops = [loops[knob.ordinal - 1]]
        option = "num_stages" if knob.kind == "loop_stages" else "loop_unroll_factor"
        for call in (loop.iter for loop in loops):
            edits += _keyword_edits(source, call, {option: "None" if option == "num_stages" and value == 0 else str(value)})
            if isinstance(call.func, ast.Name):
                edits.append(((call.func.lineno, call.func.col_offset), (call.func.end_lineno, call.func.end_col_offset),
                              f"{lang}.range"))  # fmt: skip
    starts, raw = line_starts(source), source.encode()
    for (line, col), (end_line, end_col), text in sorted(edits, reverse=True):
        start, end = starts[line - 1] + col, starts[end_line - 1] + end_col
        raw = raw[:start] + text.encode() + raw[end:]
    return _with_fast_math_header(raw.decode(), lang) if knob.kind == "math" and edits else raw.decode()


def _math_modules(tree: ast.Module, lang: str) -> dict[str, bool]:
    """The names the module's code reaches Triton's math functions by, each with whether it is libdevice
    (every ``FAST_MATH`` function precise) or ``triton.language``/its ``math`` (only ``PRECISE_IN_TRITON``)."""
    names = {lang: False, f"{lang}.math": False, f"{lang}.extra.libdevice": True, f"{lang}.extra.cuda.libdevice": True}
    libdevices = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("triton.language", "triton.language.extra",
                                                                "triton.language.extra.cuda"):  # fmt: skip
            for alias in node.names:
                if alias.name in ("math", "libdevice"):
                    names[alias.asname or alias.name] = alias.name == "libdevice"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "triton.language.math" or alias.name in libdevices:
                    names[alias.asname or alias.name] = alias.name in libdevices
    return names


def _precise_math_calls(func: ast.FunctionDef, modules: dict[str, bool]) -> list[ast.Call]:
    """``func``'s calls of a transcendental the knob has a fast approximation of (``FAST_MATH``) that its
    module computes precisely, in source order."""
    calls = []
    for n in ast.walk(func):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in FAST_MATH:
            libdevice = modules.get(ast.unparse(n.func.value))
            if libdevice or (libdevice is False and n.func.attr in PRECISE_IN_TRITON):
                calls.append(n)
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))


def _with_fast_math_header(source: str, lang: str) -> str:
    """``source`` with ``_FAST_MATH_HEADER`` after its last top-level import (and the imports the header
    needs), unless it holds the header already."""
    header = _FAST_MATH_HEADER.format(tl=lang)
    if header in source:
        return source
    tree = ast.parse(source)
    imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    needed = "".join(f"import {m}\n" for m in ("os", "triton") if m not in imported)
    last = max((n.end_lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))), default=0)
    lines = source_lines(source)
    return "".join(lines[:last]) + needed + "\n" + header + "".join(lines[last:])


def _keyword_edits(source: str, call: ast.Call, values: dict[str, str]) -> list[tuple[tuple[int, int], tuple[int, int], str]]:
    """Edits that set ``call``'s keywords to ``values`` (source text): a written one's value replaced, a
    missing one added, unless its value is Triton's default (``""``, ``None``)."""
    edits, added = [], ""
    for option, text in values.items():
        kw = next((k for k in call.keywords if k.arg == option), None)
        if kw is not None:
            edits.append(((kw.value.lineno, kw.value.col_offset), (kw.value.end_lineno, kw.value.end_col_offset), text))
        elif text not in ('""', "None"):
            added += f", {option}={text}"
    if added:
        at = launch_insertion(source, call)
        edits.append((at, at, added))
    return edits
