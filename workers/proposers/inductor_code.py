"""Reading Inductor's generated wrapper (``output_code.py``): its Triton kernels and what ``call`` does.

Pure parsing, no torch: the wrapper is read as text with ``ast`` and never imported, because importing it
compiles every kernel through Inductor's runtime. Anything this reader does not understand becomes an
``InductorCodeError`` naming the statement, so a seed is never built from a half-read wrapper.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass, field

from workers.proposers.tuner import compiled_loop

# Kernel-side names Inductor imports into every Triton kernel module.
HELPER_NAMES = ("triton_helpers", "libdevice", "tl_math")
NEXT_MODULE_MARK = "# ---- next module ----"  # how workers/harness/record_inductor.py joins several graphs


class InductorCodeError(ValueError):
    """The wrapper holds something a standalone seed cannot reproduce; the message says what."""


@dataclass(frozen=True)
class TritonKernel:
    name: str
    heuristics: str  # pointwise, reduction, persistent_reduction, template, ...
    grid_type: str | None  # Inductor's grid class name from inductor_meta, e.g. "Grid1D"
    params: tuple[str, ...]  # every parameter, in order
    constexprs: tuple[str, ...]  # the parameters annotated tl.constexpr
    body_constexprs: dict[str, int]  # constexprs the body fixes itself (``R0_BLOCK: tl.constexpr = 64``)
    jit_source: str  # the function alone, decorated with plain ``@triton.jit``
    device_functions: tuple[
        tuple[str, str], ...
    ]  # (name, source) of the other @triton.jit functions it calls
    helpers: frozenset[str]  # which of HELPER_NAMES the body uses
    loops: bool  # whether the body loops (num_stages only matters then)
    unmasked: frozenset[str]  # axes ("x", "r0_") whose mask Inductor set all-true: its blocks divide them
    # the launch options its decorator fixes (a template's num_warps and num_stages: it has one config)
    options: dict[str, int] = field(default_factory=dict)
    # sizes the body assigns as literals (``M = 2048``)
    body_ints: dict[str, int] = field(default_factory=dict)

    @property
    def runtime_params(self) -> tuple[str, ...]:
        return tuple(p for p in self.params if p not in self.constexprs)


@dataclass(frozen=True)
class Alloc:
    name: str
    size: str  # Python source of the size tuple
    stride: str
    dtype: str  # e.g. "torch.bfloat16"


@dataclass(frozen=True)
class Launch:
    kernel: str
    args: tuple[str, ...]  # Python source of each positional argument


@dataclass(frozen=True)
class Plain:
    """A statement copied as written (``del buf0``, ``buf3 = buf0  # reuse``)."""

    source: str


Step = Alloc | Launch | Plain


@dataclass(frozen=True)
class InputCheck:
    name: str
    size: tuple[int, ...]
    stride: tuple[int, ...]


@dataclass
class CallPlan:
    """What Inductor's ``call(args)`` does, in order."""

    args: list[str] = field(default_factory=list)
    checks: list[InputCheck] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # Python source of each returned value
    foreign: list[str] = field(default_factory=list)  # extern/aten calls: each makes the seed unavailable


@dataclass(frozen=True)
class MultiKernel:
    """``name = async_compile.multi_kernel('name', [kernel, ...], arg_index=...)``: Inductor's choice among
    kernels made at run time (the first launch times each and keeps the fastest). ``call`` launches it
    with the union of its kernels' arguments; kernel ``i`` takes the slices ``arg_index[i]`` of them."""

    name: str
    kernels: tuple[str, ...]
    arg_index: dict[int, tuple[tuple[int | None, int | None], ...]]  # (start, stop) of each slice

    def args_of(self, index: int, args: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(a for start, stop in self.arg_index.get(index, ((None, None),)) for a in args[start:stop])


@dataclass(frozen=True)
class InductorModule:
    kernels: dict[str, TritonKernel]
    call: CallPlan
    training_forward: bool  # an AOT forward graph: it also returns what the backward saves
    multi_kernels: dict[str, MultiKernel] = field(default_factory=dict)  # launched as Launch(multi-kernel name)


def parse_output_code(text: str) -> InductorModule:
    """The kernels and call plan of one Inductor wrapper. Raises InductorCodeError with the reason."""
    if NEXT_MODULE_MARK in text:
        count = text.count(NEXT_MODULE_MARK) + 1
        raise InductorCodeError(
            f"the recording holds {count} compiled graphs (a graph break); a seed needs one"
        )
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise InductorCodeError(f"the output code does not parse: {e}") from e
    kernels: dict[str, TritonKernel] = {}
    multi_kernels: dict[str, MultiKernel] = {}
    other_kernels: list[str] = []
    arg_index: ast.expr | None = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["arg_index"]:
            arg_index = node.value  # written before each multi-kernel that reads it
            continue
        compiled = _async_compile(node)
        if compiled is None:
            continue
        name, method, call = compiled
        if method == "multi_kernel":
            multi_kernels[name] = _multi_kernel(name, call, arg_index)
            continue
        if method != "triton":
            other_kernels.append(f"{name} (async_compile.{method})")
            continue
        kernels[name] = parse_triton_kernel(name, _string_arg(call, 1, name))
    if other_kernels:
        raise InductorCodeError(f"Inductor compiled non-Triton kernels: {', '.join(other_kernels)}")
    call_fn = _find_call(tree)
    plan = _plan_call(call_fn, [*kernels, *multi_kernels])
    return InductorModule(kernels=kernels, call=plan, training_forward=_is_training_forward(text),
                          multi_kernels=multi_kernels)  # fmt: skip


def _multi_kernel(name: str, call: ast.Call, arg_index: ast.expr | None) -> MultiKernel:
    """A multi-kernel's definition: its kernels (names) and which of the launch's arguments each takes."""
    listed = call.args[1] if len(call.args) > 1 else None
    if not (isinstance(listed, ast.List) and listed.elts and all(isinstance(e, ast.Name) for e in listed.elts)):
        raise InductorCodeError(f"multi-kernel {name}: its kernels are not a list of names")
    kernels = tuple(e.id for e in listed.elts)  # type: ignore[attr-defined]
    keyword = next((kw.value for kw in call.keywords if kw.arg == "arg_index"), None)
    index = arg_index if isinstance(keyword, ast.Name) and keyword.id == "arg_index" else keyword
    return MultiKernel(name, kernels, _slices(name, index) if index is not None else {})


def _slices(name: str, index: ast.expr) -> dict[int, tuple[tuple[int | None, int | None], ...]]:
    """``{0: [slice(0, 4, None)], ...}`` read from the syntax (it holds calls, not literals)."""
    if not isinstance(index, ast.Dict):
        raise InductorCodeError(f"multi-kernel {name}: unreadable arg_index {ast.unparse(index)}")
    out = {}
    for key, value in zip(index.keys, index.values, strict=True):
        slices = value.elts if isinstance(value, ast.List) else []
        bounds = []
        for item in slices:
            parts = item.args if isinstance(item, ast.Call) and ast.unparse(item.func) == "slice" else []
            values = [p.value if isinstance(p, ast.Constant) else p for p in parts]
            if not (isinstance(key, ast.Constant) and 2 <= len(values) <= 3 and values[2:] in ([], [None])
                    and all(v is None or type(v) is int for v in values[:2])):  # fmt: skip
                raise InductorCodeError(f"multi-kernel {name}: unreadable arg_index {ast.unparse(index)}")
            bounds.append((values[0], values[1]))
        out[key.value] = tuple(bounds)  # type: ignore[union-attr]
    return out


def parse_triton_kernel(name: str, source: str) -> TritonKernel:
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise InductorCodeError(f"kernel {name} does not parse: {e}") from e
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        raise InductorCodeError(f"kernel {name}: no function of that name in its source")
    heuristics, grid_type, options = "", None, {}
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "triton_heuristics":
            heuristics = target.attr
            grid_type = _meta_value(deco, "inductor_meta", "grid_type")
            options = _int_keywords(deco, ("num_warps", "num_stages"))
    args = fn.args.args
    constexprs = tuple(
        a.arg for a in args if a.annotation is not None and ast.unparse(a.annotation).endswith("constexpr")
    )
    lines = source.splitlines()
    jit_source = "@triton.jit\n" + "\n".join(lines[fn.lineno - 1 : fn.end_lineno])
    others = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef)
        and n is not fn
        and any("jit" in ast.unparse(d) for d in n.decorator_list)
    ]  # e.g. the combine function of a scan
    device_functions = tuple(
        (n.name, "\n".join(lines[n.decorator_list[0].lineno - 1 : n.end_lineno])) for n in others
    )
    used = {n.id for f in (fn, *others) for n in ast.walk(f) if isinstance(n, ast.Name)}
    return TritonKernel(
        name=name, heuristics=heuristics, grid_type=grid_type, params=tuple(a.arg for a in args),
        constexprs=constexprs, body_constexprs=_body_constexprs(fn), jit_source=jit_source,
        device_functions=device_functions,
        helpers=frozenset(h for h in HELPER_NAMES if h in used),
        loops=compiled_loop(fn),
        unmasked=_unmasked_axes(fn), options=options, body_ints=_body_ints(fn),
    )  # fmt: skip


def _async_compile(node: ast.stmt) -> tuple[str, str, ast.Call] | None:
    """``name = async_compile.<method>('name', ...)`` -> (name, method, call)."""
    if not (
        isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
    ):
        return None
    call = node.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return None
    if not (isinstance(call.func.value, ast.Name) and call.func.value.id == "async_compile"):
        return None
    return node.targets[0].id, call.func.attr, call


def _string_arg(call: ast.Call, index: int, name: str) -> str:
    if (
        len(call.args) > index
        and isinstance(call.args[index], ast.Constant)
        and isinstance(call.args[index].value, str)
    ):
        return call.args[index].value
    raise InductorCodeError(f"kernel {name}: its source is not a string literal in async_compile")


def _meta_value(deco: ast.expr, meta: str, key: str) -> str | None:
    """A string value of the decorator's ``meta={...}`` dict, read from the syntax (the dict holds calls)."""
    if not isinstance(deco, ast.Call):
        return None
    for kw in deco.keywords:
        if kw.arg == meta and isinstance(kw.value, ast.Dict):
            for k, v in zip(kw.value.keys, kw.value.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == key and isinstance(v, ast.Constant):
                    return v.value
    return None


def _int_keywords(deco: ast.expr, names: tuple[str, ...]) -> dict[str, int]:
    """The decorator's keywords of ``names`` that are int literals."""
    if not isinstance(deco, ast.Call):
        return {}
    return {kw.arg: kw.value.value for kw in deco.keywords
            if kw.arg in names and isinstance(kw.value, ast.Constant) and type(kw.value.value) is int}  # fmt: skip


def _body_ints(fn: ast.FunctionDef) -> dict[str, int]:
    found = {}
    for node in fn.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and type(node.value.value) is int):  # fmt: skip
            found[node.targets[0].id] = node.value.value
    return found


def _body_constexprs(fn: ast.FunctionDef) -> dict[str, int]:
    found = {}
    for node in fn.body:
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and ast.unparse(node.annotation).endswith("constexpr")
                and isinstance(node.value, ast.Constant) and type(node.value.value) is int):  # fmt: skip
            found[node.target.id] = node.value.value
    return found


def _unmasked_axes(fn: ast.FunctionDef) -> frozenset[str]:
    """Axes whose mask the body sets to ``tl.full(..., True, ...)``: Inductor drops the bounds check where
    every block it may launch divides the size, so loads and stores there are unguarded."""
    found = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.endswith("mask") and ast.unparse(node.value).startswith("tl.full("):
                found.add(name[: -len("mask")])
    return frozenset(found)


def _is_training_forward(text: str) -> bool:
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    return first.startswith("# AOT ID:") and "forward" in first


def _find_call(tree: ast.Module) -> ast.FunctionDef:
    """``Runner.call`` (recent Inductor) or a module-level ``call`` (older)."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "call":
                    return item
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    raise InductorCodeError("the output code defines no call(args) function")


def _plan_call(fn: ast.FunctionDef, kernels: list[str]) -> CallPlan:
    plan = CallPlan()
    unread: InductorCodeError | None = None
    for stmt in _flatten(fn.body):
        try:
            _plan_statement(stmt, plan, kernels)
        except InductorCodeError as e:  # kept until the end: an extern call anywhere is the better reason
            unread = unread or e
    if plan.foreign:  # the reason reported first; a statement after one may read its result (buf1 = buf0[0])
        return plan
    if unread is not None:
        raise unread
    if not plan.outputs:
        raise InductorCodeError("call(args) returns nothing")
    return plan


def _flatten(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements with ``with torch.cuda._DeviceGuard(...)`` blocks opened up (the seed uses the inputs' device)."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.With) and all(
            "DeviceGuard" in ast.unparse(i.context_expr) for i in stmt.items
        ):
            out.extend(_flatten(stmt.body))
        else:
            out.append(stmt)
    return out


def _plan_statement(stmt: ast.stmt, plan: CallPlan, kernels: list[str]) -> None:
    text = ast.unparse(stmt)
    foreign = _foreign_calls(stmt)
    if foreign:
        plan.foreign.extend(foreign)
        return
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
        if isinstance(value, ast.Name) and value.id == "args" and isinstance(target, (ast.Tuple, ast.List)):
            plan.args = [ast.unparse(e) for e in target.elts]
            return
        if isinstance(target, ast.Name) and isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            if value.func.id == "get_raw_stream":
                return
            if value.func.id.startswith("empty_strided_") and value.func.id[len("empty_strided_") :] in (
                "cuda",
                "cpu",
                "xpu",
            ):
                size, stride, dtype = (ast.unparse(a) for a in value.args[:3])
                plan.steps.append(Alloc(target.id, size, stride, dtype))
                return
        if isinstance(target, ast.Name) and isinstance(value, ast.Name):
            plan.steps.append(Plain(text))
            return
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Call)
            and ast.unparse(value.func) == "reinterpret_tensor"
        ):
            plan.steps.append(Plain(f"{target.id} = {_output_source(value)}"))  # a view of a buffer, reused
            return
    if isinstance(stmt, ast.Delete):
        plan.steps.append(Plain(text))
        return
    if isinstance(stmt, ast.Return):
        values = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value] if stmt.value else []
        plan.outputs = [_output_source(v) for v in values]
        return
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        callee = ast.unparse(call.func)
        if callee in ("args.clear", "assert_alignment", "torch.cuda.set_device"):
            return
        if isinstance(call.func, ast.Attribute) and call.func.attr == "zero_" and not call.args:
            plan.steps.append(Plain(text))  # a buffer zeroed for a kernel that accumulates with atomics
            return
        if callee == "assert_size_stride":
            plan.checks.append(_input_check(call))
            return
        if (
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "run"
            and ast.unparse(call.func.value) in kernels
        ):
            if any(kw.arg != "stream" for kw in call.keywords) or any(
                isinstance(a, ast.Starred) for a in call.args
            ):
                raise InductorCodeError(f"unsupported kernel launch (keywords other than stream): {text}")
            plan.steps.append(Launch(ast.unparse(call.func.value), tuple(ast.unparse(a) for a in call.args)))
            return
    raise InductorCodeError(f"unsupported statement in call(): {text}")


def _foreign_calls(stmt: ast.stmt) -> list[str]:
    """Calls into extern libraries or PyTorch operators: ``extern_kernels.mm``, ``aten.mm``, ``torch.ops...``."""
    found = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call):
            callee = ast.unparse(node.func)
            root = callee.split(".")[0]
            if root in ("extern_kernels", "aten", "inductor_ops", "_quantized") or callee.startswith(
                "torch.ops."
            ):
                found.append(callee)
            elif callee == "alloc_from_pool" or callee.startswith("empty_strided_p2p"):
                found.append(callee)
    return found


def _input_check(call: ast.Call) -> InputCheck:
    try:
        name = ast.unparse(call.args[0])
        size, stride = (tuple(ast.literal_eval(a)) for a in call.args[1:3])
    except (IndexError, ValueError) as e:
        raise InductorCodeError(f"unreadable size check: {ast.unparse(call)}") from e
    if not all(isinstance(v, int) for v in (*size, *stride)):
        raise InductorCodeError(f"symbolic sizes are not supported: {ast.unparse(call)}")
    return InputCheck(name, size, stride)


def _output_source(value: ast.expr) -> str:
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.Call) and ast.unparse(value.func) == "reinterpret_tensor":
        return "torch.as_strided(" + ", ".join(ast.unparse(a) for a in value.args) + ")"
    raise InductorCodeError(f"unsupported returned value: {ast.unparse(value)}")


def resolve_multi_kernels(
    module: InductorModule, picked: dict[str, str]
) -> tuple[InductorModule, list[str]]:
    """``module`` with each multi-kernel launch replaced by a launch of the kernel it picked at run time
    (``picked``: multi-kernel name -> kernel name, as recorded after the run), given only that kernel's
    arguments; and a note per multi-kernel. A multi-kernel with no recorded pick is an error: the seed must
    carry the kernel Inductor ran at the problem's shapes, not a guess."""
    if not module.multi_kernels:
        return module, []
    steps: list[Step] = []
    notes: dict[str, str] = {}
    for step in module.call.steps:
        multi = module.multi_kernels.get(step.kernel) if isinstance(step, Launch) else None
        if multi is None:
            steps.append(step)
            continue
        choice = picked.get(multi.name)
        if choice not in multi.kernels:
            said = f"picked {choice}, not one of them" if choice else "the recording does not say which it picked"
            raise InductorCodeError(f"multi-kernel {multi.name} picks among {', '.join(multi.kernels)} at run time; "
                                    f"{said} (multi_kernel_choices.json)")  # fmt: skip
        steps.append(Launch(choice, multi.args_of(multi.kernels.index(choice), step.args)))  # type: ignore[union-attr]
        notes[multi.name] = (f"{multi.name}: Inductor's multi-kernel picked {choice} of {', '.join(multi.kernels)} at "
                             "run time; the seed launches it alone")  # fmt: skip
    call = dataclasses.replace(module.call, steps=steps)
    return dataclasses.replace(module, call=call, multi_kernels={}), list(notes.values())
