"""Pure functions from an LLM's reply text to a kernel's source or a validated record.

Every failure is a ``ReplyParseError`` whose ``kind`` says which (for traces and counters) and whose
message says why in words fit to send back to the model (``repair_prompt``).
"""

from __future__ import annotations

import ast
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from pydantic import TypeAdapter, ValidationError

from beamsearch.records.schema import Bottleneck
from prompts.records import Reflection
from prompts.templates import render_template

logger = logging.getLogger(__name__)

T = TypeVar("T")

ParseErrorKind = Literal[
    "empty",  # nothing but whitespace
    "no_code_block",  # no fenced block at all
    "no_kernel_function",  # fenced blocks, none with a top-level `def kernel_function`
    "truncated",  # a code block or JSON value opened and never closed: the reply was cut off
    "syntax_error",  # the kernel's block does not parse as Python
    "no_json",  # no JSON value anywhere in the reply
    "invalid_json",  # something JSON-like that does not decode
    "invalid_schema",  # JSON that does not validate against the expected record
]

CODE_LANGUAGES = {"", "python", "py", "python3"}
REPLY_CHARS_IN_REPAIR = 20_000  # the repair request quotes the reply; a runaway reply is cut
VALIDATION_ERRORS_SHOWN = 10


class ReplyParseError(ValueError):
    def __init__(self, kind: ParseErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# ---------------------------------------------------------------------------------------- fences


@dataclass(frozen=True)
class Fence:
    language: str  # the info string's first word, lower case; "" for a bare fence
    body: str
    line: int  # 1-based line of the opening fence
    closed: bool


_OPEN = re.compile(r"^ {0,3}(`{3,})[ \t]*([^`\s]*)[^`]*$")


def fenced_blocks(text: str) -> list[Fence]:
    """Backtick-fenced blocks in order, as Markdown reads them: a block closes at a line of at least as
    many backticks and nothing else; the last one may be left open (``closed=False``)."""
    blocks: list[Fence] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = _OPEN.match(lines[i])
        if not opening:
            i += 1
            continue
        ticks, language = opening.group(1), opening.group(2).lower()
        close = re.compile(rf"^ {{0,3}}`{{{len(ticks)},}}[ \t]*$")
        end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])), None)
        body_end = len(lines) if end is None else end
        body = "\n".join(lines[i + 1 : body_end])
        blocks.append(Fence(language, body + "\n" if body else "", i + 1, end is not None))
        i = body_end + 1
    return blocks


# ---------------------------------------------------------------------------------------- kernels

_DEFINES_KERNEL = re.compile(r"^(async\s+)?def\s+kernel_function\s*\(", re.MULTILINE)


@dataclass(frozen=True)
class KernelBlock:
    source: str
    line: int  # 1-based line of the block's opening fence in the reply


@dataclass(frozen=True)
class ReplyKernels:
    """The kernels of one reply in the reply's order, and the kernel blocks not taken, each with why."""

    kernels: list[KernelBlock]
    skipped: list[str]


def _kernel_blocks(reply: str) -> list[Fence]:
    """The reply's closed code blocks that mention a top-level ``def kernel_function``; raises for an
    empty reply, one without code blocks or without such a block, and a Python block left open (the
    reply was cut off: even an earlier complete kernel is not taken, as the model's final answer is the
    lost one)."""
    if not reply.strip():
        raise ReplyParseError("empty", "the reply is empty")
    blocks = [b for b in fenced_blocks(reply) if b.language in CODE_LANGUAGES]
    unclosed = [b for b in blocks if not b.closed and b.body.strip()]
    if unclosed:
        raise ReplyParseError(
            "truncated",
            f"the code block opened at line {unclosed[-1].line} is never closed: "
            "the reply was cut off (too long?)",
        )
    if not blocks:
        others = {b.language for b in fenced_blocks(reply)}
        detail = f" (only blocks marked {', '.join(sorted(others))})" if others else ""
        raise ReplyParseError(
            "no_code_block", f"the reply has no ```python code block{detail}: send the kernel in one"
        )
    kernels = [b for b in blocks if _DEFINES_KERNEL.search(b.body)]
    if not kernels:
        raise ReplyParseError(
            "no_kernel_function",
            f"none of the reply's {len(blocks)} code block(s) defines `def kernel_function(...)` at top level",
        )
    return kernels


def _checked(block: Fence) -> str:
    """The block's source if it parses and defines ``kernel_function`` at top level; else raises."""
    try:
        tree = ast.parse(block.body)
    except SyntaxError as e:
        raise ReplyParseError(
            "syntax_error",
            f"the kernel's code block (opened at line {block.line}) does not parse: "
            f"{e.msg} at line {e.lineno} of the block: {(e.text or '').strip()!r}",
        ) from None
    if not any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "kernel_function"
        for node in tree.body
    ):  # the regex matched inside a string literal
        raise ReplyParseError(
            "no_kernel_function",
            f"the code block opened at line {block.line} mentions kernel_function but does not define it "
            "at top level",
        )
    return block.body


def extract_kernel(reply: str) -> str:
    """The source of the last ```python (```py, bare ```) block that defines ``kernel_function``: a
    recorded reply's final answer (replays).

    Raises ``ReplyParseError`` for an empty reply, a reply without a code block, code blocks none of
    which defines ``kernel_function`` at top level, a Python block left open (the reply was cut off),
    and a kernel block that does not parse.
    """
    return _checked(_kernel_blocks(reply)[-1])


def extract_kernels(reply: str) -> ReplyKernels:
    """Every block of the reply that defines ``kernel_function`` and parses, in the reply's order: a
    model may offer several kernels, and each can be a candidate. A kernel block that does not parse,
    beside one that does, is skipped and said so; when none is usable, raises as ``extract_kernel``
    (the last block's error). Repeats are kept: whether a kernel is new is the caller's to judge."""
    kernels: list[KernelBlock] = []
    errors: list[ReplyParseError] = []
    for block in _kernel_blocks(reply):
        try:
            kernels.append(KernelBlock(_checked(block), block.line))
        except ReplyParseError as e:
            errors.append(e)
    if not kernels:
        raise errors[-1]
    return ReplyKernels(kernels, [f"not taken: {e}" for e in errors])


# ------------------------------------------------------------------------------------------- JSON


@dataclass(frozen=True)
class _Candidate:
    text: str
    line: int
    where: str


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


# Outside strings, JSON has only these characters (``true``, ``false`` and ``null`` spelled out).
_JSON_CHARS = frozenset(" \t\r\n[]{}:,-+.0123456789eEtrufalsn")


def _bracket_spans(text: str) -> tuple[list[_Candidate], int | None]:
    """Top-level ``[...]`` / ``{...}`` spans, matched with JSON strings skipped, and the start of a span
    that JSON-like text leaves open at the end (the reply was cut off), or None.

    An open bracket in prose (``[0, 1)``) is told from cut-off JSON by a character JSON cannot have
    outside a string; the scan then goes on after it, so JSON later in the reply is still found.
    """
    spans: list[_Candidate] = []
    pairs = {"[": "]", "{": "}"}
    i = 0
    while i < len(text):
        if text[i] not in pairs:
            i += 1
            continue
        start, stack, in_string, json_like, j = i, [pairs[text[i]]], False, True, i + 1
        while j < len(text) and stack:
            c = text[j]
            if in_string:
                if c == "\\":
                    j += 1
                elif c == '"':
                    in_string = False
            elif c == '"':
                in_string = True
            elif c in pairs:
                stack.append(pairs[c])
            elif c in "]}":
                if c != stack[-1]:
                    break  # mismatched: not JSON
                stack.pop()
            elif c not in _JSON_CHARS:
                json_like = False
            j += 1
        if not stack:
            line = _line_of(text, start)
            spans.append(_Candidate(text[start:j], line, f"the JSON at line {line}"))
            i = j
        elif j >= len(text) and json_like:
            return spans, start
        else:
            i = start + 1
    return spans, None


def _json_candidates(reply: str) -> tuple[list[_Candidate], int | None]:
    """Fenced ```json blocks first; else other fenced blocks and bare brackets, in order."""
    fences = fenced_blocks(reply)
    tagged = [
        _Candidate(b.body, b.line, f"the ```json block at line {b.line}")
        for b in fences
        if b.language == "json"
    ]
    if tagged:
        open_fence = next((b.line for b in fences if b.language == "json" and not b.closed), None)
        return tagged, open_fence
    spans, open_at = _bracket_spans(reply)
    return spans, None if open_at is None else _line_of(reply, open_at)


def _adapter(model: type[T] | TypeAdapter[T]) -> TypeAdapter[T]:
    return model if isinstance(model, TypeAdapter) else TypeAdapter(model)


def _shapes(value: Any) -> list[Any]:
    """The value as given, then the forgiving readings: one object where a list is expected, and a list
    wrapped in a one-key object (``{"bottlenecks": [...]}``)."""
    shapes = [value]
    if isinstance(value, dict):
        shapes.append([value])
        if len(value) == 1 and isinstance(next(iter(value.values())), list):
            shapes.append(next(iter(value.values())))
    return shapes


def _vagueness(error: ValidationError) -> tuple[bool, int]:
    """Orders the errors of the readings of one value: a wrong type at the top says least (the reading
    was wrong, e.g. an object where a list is expected); fewer errors say more."""
    return all(not e["loc"] for e in error.errors()), error.error_count()


def _describe(error: ValidationError) -> str:
    lines = []
    for e in error.errors()[:VALIDATION_ERRORS_SHOWN]:
        loc = ".".join(str(part) for part in e["loc"]) or "(top level)"
        lines.append(f"- {loc}: {e['msg']}")
    if error.error_count() > VALIDATION_ERRORS_SHOWN:
        lines.append(f"- ... and {error.error_count() - VALIDATION_ERRORS_SHOWN} more")
    return "\n".join(lines)


@overload
def extract_json(reply: str, model: type[T]) -> T: ...
@overload
def extract_json(reply: str, model: TypeAdapter[T]) -> T: ...
def extract_json(reply: str, model: type[T] | TypeAdapter[T]) -> T:
    """The first JSON value in the reply that validates as ``model``.

    Candidates: each ```json block; without one, every top-level ``[...]``/``{...}`` span of the reply
    (other fenced blocks included). A single object is accepted where a list is expected, as a list of
    one. Raises ``ReplyParseError`` (empty, no_json, truncated, invalid_json, invalid_schema); when no
    candidate works, the message is about the longest one, the likeliest to be the intended answer.
    """
    if not reply.strip():
        raise ReplyParseError("empty", "the reply is empty")
    adapter = _adapter(model)
    candidates, open_line = _json_candidates(reply)
    failures: list[tuple[_Candidate, ReplyParseError]] = []
    for cand in candidates:
        try:
            value = json.loads(cand.text)
        except json.JSONDecodeError as e:
            message = f"{cand.where} is not valid JSON: {e.msg} at its line {e.lineno}, column {e.colno}"
            failures.append((cand, ReplyParseError("invalid_json", message)))
            continue
        errors: list[ValidationError] = []
        for shape in _shapes(value):
            try:
                return adapter.validate_python(shape)
            except ValidationError as e:
                errors.append(e)
        message = f"{cand.where} does not match the schema:\n{_describe(min(errors, key=_vagueness))}"
        failures.append((cand, ReplyParseError("invalid_schema", message)))
    if open_line is not None:
        raise ReplyParseError(
            "truncated",
            f"the JSON opened at line {open_line} is never closed: the reply was cut off (too long?)",
        )
    if not failures:
        raise ReplyParseError("no_json", "the reply contains no JSON (expected a ```json block)")
    _, error = max(failures, key=lambda f: len(f[0].text))
    raise error


# ----------------------------------------------------------------------------------------- records

BOTTLENECKS: TypeAdapter[list[Bottleneck]] = TypeAdapter(list[Bottleneck])


def parse_diagnosis(reply: str, max_bottlenecks: int = 2) -> list[Bottleneck]:
    """The reply's bottlenecks, most important first: exact repeats dropped, at most ``max_bottlenecks``.

    An empty list is an error (``invalid_schema``): a diagnosis names at least one bottleneck.
    """
    bottlenecks = extract_json(reply, BOTTLENECKS)
    unique: list[Bottleneck] = []
    seen: set[tuple[str, str]] = set()
    for b in bottlenecks:
        key = (b.category, " ".join(b.summary.lower().split()))
        if key not in seen:
            seen.add(key)
            unique.append(b)
    if not unique:
        raise ReplyParseError(
            "invalid_schema", "the reply's JSON array is empty: name at least one bottleneck"
        )
    if len(unique) > max_bottlenecks:
        logger.info("diagnosis named %d bottlenecks; keeping the first %d", len(unique), max_bottlenecks)
    return unique[:max_bottlenecks]


def parse_reflection(reply: str) -> Reflection:
    return extract_json(reply, Reflection)


def repair_prompt(reply: str, error: ReplyParseError | str, *, template_dir: Path | None = None) -> str:
    """The one follow-up request for a reply whose JSON did not parse or validate.

    Meant as the next message in the same conversation: it refers to the schema the first prompt gave.
    """
    if len(reply) > REPLY_CHARS_IN_REPAIR:
        reply = (
            reply[:REPLY_CHARS_IN_REPAIR] + f"\n... ({len(reply) - REPLY_CHARS_IN_REPAIR} more characters)"
        )
    return render_template("repair", {"error": str(error), "reply": reply.strip() or "(empty)"}, template_dir)
