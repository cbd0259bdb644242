"""Which compiler-seed variants are the same code: the portfolio's dedupe, before anything is verified.

Inductor options often change nothing for a problem (a pointwise kernel has no reduction to make
persistent), and a variant that generates the code another one did is not worth a verification, a timing
and a place in the beam: the knob search tunes configs, so two variants that differ only in configs are
one starting point. ``code_key`` reads what the seed would run (the Triton kernels launched, with any
multi-kernel resolved to the kernel it picked, and ``call``'s steps) and leaves out what names or tunes
it: kernel names, hashes, decorators (Inductor's metadata records its options), chosen configs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from workers.proposers.inductor_code import (
    InductorCodeError,
    Launch,
    parse_output_code,
    resolve_multi_kernels,
)

KERNEL_NAME = re.compile(r"\btriton_[a-z]+_fused_\w*?_\d+\b|\bmulti_kernel_\d+\b")
HASH = re.compile(r"\b[0-9a-fA-F]{32,}\b")
COMMENT = re.compile(r"#[^\n'\"]*$", re.MULTILINE)


def code_key(output_code: str, multi_kernel_choices: dict[str, str] | None = None) -> str:
    """A short hash that two recordings share when they would give the same seed up to names and configs."""
    try:
        module, _ = resolve_multi_kernels(parse_output_code(output_code), multi_kernel_choices or {})
    except InductorCodeError:  # not a seed anyway: the wrapper's text, normalised, tells repeats apart
        return _digest("text", _normalised(output_code))
    launched = list(dict.fromkeys(s.kernel for s in module.call.steps if isinstance(s, Launch)))
    parts = [module.kernels[name].jit_source for name in launched if name in module.kernels]
    parts += [source for name in launched if name in module.kernels for _, source in module.kernels[name].device_functions]
    parts += [repr(step) for step in module.call.steps]
    parts += [repr(check) for check in module.call.checks] + module.call.outputs + module.call.foreign
    return _digest("code", _normalised("\n".join(parts)))


def duplicates(keys: Iterable[tuple[str, str]]) -> dict[str, str | None]:
    """Each variant name -> the earlier variant whose key it repeats (None for the first of its code),
    in the order given (the portfolio's: ``default`` first, so a repeat of it is never kept)."""
    first: dict[str, str] = {}
    out: dict[str, str | None] = {}
    for name, key in keys:
        out[name] = first.get(key)
        first.setdefault(key, name)
    return out


def _normalised(text: str) -> str:
    names: dict[str, str] = {}
    text = KERNEL_NAME.sub(lambda m: names.setdefault(m.group(0), f"kernel{len(names)}"), text)
    text = HASH.sub("HASH", COMMENT.sub("", text))
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def _digest(kind: str, text: str) -> str:
    return f"{kind}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"
