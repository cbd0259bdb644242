"""The LLM proposer: diagnosis, rewrites, refinement after a failed verification, and reflexion.

Every exchange (purpose, prompt, the LLMCall with reply, tokens, cost and latency, and any parse
error) is kept in ``exchanges`` for the trace; the caller drains it. Nothing here raises for what the
model does: a timeout, an error status or an unusable reply leaves a recorded exchange and no kernel,
and ``no_kernel_reasons`` says in a line why (for the console, not only the trace).
A diagnosis whose JSON does not parse gets one repair request, then falls back to the roofline rules.
A rewrite that repeats the parent or an earlier candidate is asked for once more, saying so.
A reply with several kernels gives each new one (up to ``MAX_KERNELS_PER_REPLY``), and
``reply_notes`` says what became of the others.
"""

from __future__ import annotations

import logging
from pathlib import Path

from beamsearch.records.llm import Exchange, LLMCall, Purpose
from beamsearch.records.schema import (
    Attempt,
    Bottleneck,
    Diagnosis,
    Floor,
    Kernel,
    Profile,
    Roofline,
    Verdict,
)
from profiling.peaks import Peaks
from prompts.builders import (
    build_diagnosis_prompt,
    build_optimization_prompt,
    build_refinement_prompt,
    build_reflection_prompt,
)
from prompts.parsers import (
    REPLY_CHARS_IN_REPAIR,
    ReplyParseError,
    extract_kernels,
    parse_diagnosis,
    parse_reflection,
    repair_prompt,
)
from prompts.records import DiagnosisReply, Reflection
from prompts.templates import render_template
from workers.proposers.llm_client import LLMClient
from workers.proposers.rules import rules_diagnosis

log = logging.getLogger(__name__)



# Directions beyond the diagnosis's bottlenecks (all of them when there is none: no profile, as on the
# CPU): distinct asks, so no two directions send the same prompt and get the same kernel back.
GENERIC_TARGETS = [
    Bottleneck(category="memory", summary="move fewer bytes, in wider and coalesced accesses"),
    Bottleneck(category="underutilized", summary="more programs, or more independent work in flight per program"),
    Bottleneck(category="compute", summary="fewer instructions per output element"),
]
# A reply's kernels tried at most: a model listing variants should not fill a round by itself (the
# offline optimiser explores a kernel's block sizes and warps anyway); the rest are noted, not tried.
MAX_KERNELS_PER_REPLY = 4
NO_CALL_STATUSES = frozenset({"timeout", "rate_limited", "server_error", "auth_error"})


def model_unreachable(exchanges: list[Exchange]) -> str:
    """The last reason when a task's every request for a kernel (optimize, refine) got no reply at all,
    after the client's retries: the sign of a model lost mid-run. Empty when any was answered."""
    asks = [e for e in exchanges if e.purpose in ("optimize", "refine")]
    if not asks or any(e.call.status not in NO_CALL_STATUSES for e in asks):
        return ""
    return f"{asks[-1].call.status}: {asks[-1].call.reason}"


class LLMProposer:
    name = "llm"

    def __init__(self, client: LLMClient, problem_source: str, *, per_call: int = 1, dtype: str = "bf16",
                 template_dir: Path | None = None, interpreted: bool = False, samples: int = 1,
                 model: str = "") -> None:  # fmt: skip
        """``samples``: replies asked for each rewrite prompt (``LLMClient.complete_many``); every kernel of
        every reply counts, up to ``MAX_KERNELS_PER_REPLY`` a reply. ``model``: the model the client asks,
        for the records (a run of several)."""
        self.client = client
        self.samples = samples
        self.model = model
        self.interpreted = interpreted  # times are Triton's interpreter's on a CPU: the prompts say so
        self.problem_source = problem_source
        self.per_call = per_call
        self.dtype = dtype
        self.template_dir = template_dir
        self.exchanges: list[Exchange] = []
        self.no_kernel_reasons: list[str] = []  # why the last propose() or refine() gave no kernel
        self.reply_notes: list[str] = []  # the last propose()'s reply kernels not returned, and why

    def diagnose(self, kernel: Kernel, *, peaks: Peaks, profile: Profile | None, roofline: Roofline | None,
                 floor: Floor | None, measured_ms: float | None, max_bottlenecks: int = 2) -> Diagnosis:  # fmt: skip
        prompt = build_diagnosis_prompt(
            problem_source=self.problem_source, kernel_source=kernel.source, peaks=peaks, profile=profile,
            roofline=roofline, floor=floor, measured_ms=measured_ms, dtype=self.dtype,
            max_bottlenecks=max_bottlenecks, template_dir=self.template_dir, interpreted=self.interpreted,
        )  # fmt: skip
        for purpose in ("diagnose", "repair"):
            call = self.client.complete(prompt, json_schema=DiagnosisReply.model_json_schema())
            if call.status != "ok":
                self._record(purpose, prompt, call, f"no reply: {call.status}: {call.reason}")
                break
            try:
                bottlenecks = parse_diagnosis(call.text, max_bottlenecks)
            except ReplyParseError as e:
                self._record(purpose, prompt, call, str(e))
                prompt = f"{prompt}\n\n{repair_prompt(call.text, e, template_dir=self.template_dir)}"
                continue
            self._record(purpose, prompt, call)
            return Diagnosis(bottlenecks=bottlenecks, source="llm", roofline=roofline)
        log.warning("LLM diagnosis failed; falling back to the roofline rules")
        return rules_diagnosis(roofline)

    def propose(self, parent: Kernel, diagnosis: Diagnosis, history: list[Attempt], *, direction: int = 0,
                measured_ms: float | None = None, floor: Floor | None = None) -> list[Kernel]:  # fmt: skip
        """The new kernels of ``per_call`` rewrite requests, the i-th aimed at bottleneck ``direction + i``
        (past the diagnosed ones, at generic directions); ``measured_ms`` and ``floor`` (the parent's) go in
        the prompt. Every new kernel of a reply counts, in the reply's order, up to ``MAX_KERNELS_PER_REPLY``
        a reply; repeats (of the parent, of an earlier attempt, of another kernel of the batch) are left out
        and said so in ``reply_notes``. A reply whose every kernel repeats is asked for once more, saying
        so; ``no_kernel_reasons`` says why a request gave no kernel."""
        targets = (diagnosis.bottlenecks or rules_diagnosis(diagnosis.roofline).bottlenecks) + GENERIC_TARGETS
        tried = {a.kernel_hash: f"an earlier attempt ({a.note[:80]})" for a in history}
        tried[parent.hash] = "its parent kernel"
        self.no_kernel_reasons, self.reply_notes = [], []
        out: list[Kernel] = []
        for i in range(self.per_call):
            bottleneck = targets[(direction + i) % len(targets)]
            prompt = build_optimization_prompt(
                problem_source=self.problem_source, kernel_source=parent.source, bottleneck=bottleneck,
                attempts=history, measured_ms=measured_ms, floor=floor, dtype=self.dtype, template_dir=self.template_dir,
                interpreted=self.interpreted,
            )  # fmt: skip
            note = f"LLM rewrite for: {bottleneck.summary[:80]}"
            kernels = self._kernels_from("optimize", prompt, parent, note=note)
            fresh, repeats = _new_kernels(kernels, tried)
            if kernels and not fresh:
                self._mark_repeat(repeats[0])
                ask = render_template("repeat", {"repeated": repeats[0]}, self.template_dir)
                again = f"{prompt}\n\n{ask}"
                kernels = self._kernels_from("optimize", again, parent, note=note)
                fresh, repeats = _new_kernels(kernels, tried)
                if kernels and not fresh:
                    self._mark_repeat(repeats[0], "asked again, ")
                    continue
            if len(kernels) > 1:
                self.reply_notes += [f"{_which(kernels, k)} repeats {r}: not tried again"
                                     for k, r in zip(kernels, repeats, strict=True) if r]  # fmt: skip
            cap = MAX_KERNELS_PER_REPLY * self.samples
            for k in fresh[cap:]:
                self.reply_notes.append(f"{_which(kernels, k)} not tried: at most {MAX_KERNELS_PER_REPLY} kernels "
                                        "of a reply are")  # fmt: skip
            for k in fresh[:cap]:
                tried[k.hash] = "another kernel of the same reply batch"
                out.append(k)
        return out

    def refine(self, kernel: Kernel, verdict: Verdict, earlier: list[tuple[Kernel, Verdict]] = ()) -> Kernel | None:
        """A corrected kernel after a failed verification, or None when the model gives none. ``earlier``:
        this task's kernels that failed before ``kernel`` (oldest first), so the request remembers them;
        a reply that repeats any of them (or ``kernel``) is not verified again."""
        self.no_kernel_reasons = []
        prompt = build_refinement_prompt(problem_source=self.problem_source, kernel_source=kernel.source,
                                         verdict=verdict, dtype=self.dtype, template_dir=self.template_dir)  # fmt: skip
        if earlier:
            tries = "\n".join(f"- try {i}: {v.status}: {' '.join(v.reason.split())[:300]}"
                              for i, (_, v) in enumerate(earlier, 1))  # fmt: skip
            prompt += "\n\n" + render_template("refine_earlier", {"tries": tries}, self.template_dir)
        note = f"refined after {verdict.status}: {verdict.reason[:80]}"
        kernels = self._kernels_from("refine", prompt, kernel, note=note)
        refined = kernels[-1] if kernels else None  # a correction's final answer: its last kernel
        failed = {k.hash for k, _ in earlier} | {kernel.hash}
        if refined is not None and refined.hash in failed:
            self._mark_repeat("a kernel of this task that already failed verification", purpose="refine")
            return None
        return refined

    def reflect(self, bottleneck: Bottleneck, *, parent: Kernel, child: Kernel, parent_ms: float | None,
                child_ms: float | None, verdict: Verdict | None) -> Reflection | None:  # fmt: skip
        prompt = build_reflection_prompt(bottleneck=bottleneck, parent_ms=parent_ms, child_ms=child_ms, verdict=verdict,
                                         note=child.note, parent_source=parent.source, child_source=child.source,
                                         template_dir=self.template_dir)  # fmt: skip
        call = self.client.complete(prompt, json_schema=Reflection.model_json_schema())
        if call.status != "ok":
            self._record("reflect", prompt, call, f"no reply: {call.status}: {call.reason}")
            return None
        try:
            reflection = parse_reflection(call.text)
        except ReplyParseError as e:
            self._record("reflect", prompt, call, str(e))
            return None
        self._record("reflect", prompt, call)
        return reflection

    def _kernels_from(self, purpose: Purpose, prompt: str, parent: Kernel, note: str) -> list[Kernel]:
        """The kernels of the model's reply, in its order (none when it gave none); a reply with no usable
        code gets one repair request. Kernel blocks that do not parse beside ones that do are noted. A
        rewrite with ``samples`` > 1 asks for that many replies and takes every kernel of each, in order."""
        if purpose == "optimize" and self.samples > 1:
            return self._sampled_kernels(prompt, parent, note)
        for attempt in range(2):
            call = self.client.complete(prompt)
            if call.status != "ok":
                self._record(purpose, prompt, call, f"no reply: {call.status}: {call.reason}")
                self.no_kernel_reasons.append(f"{purpose}: no reply: {call.status}: {call.reason[:200]}")
                return []
            try:
                found = extract_kernels(call.text)
            except ReplyParseError as e:
                self._record(purpose, prompt, call, str(e))
                self.no_kernel_reasons.append(f"{purpose}{' (asked again)' if attempt else ''}: {str(e)[:200]}")
                values = {"error": str(e), "reply": call.text[:REPLY_CHARS_IN_REPAIR].strip() or "(empty)"}
                prompt = f"{prompt}\n\n{render_template('repair_code', values, self.template_dir)}"
                continue
            self._record(purpose, prompt, call)
            if purpose == "optimize":
                self.reply_notes += [f"{purpose} reply: {s[:300]}" for s in found.skipped]
            n = len(found.kernels)
            return [Kernel(source=b.source, origin="llm", parent_hash=parent.hash,
                           note=note if n == 1 else f"{note} (kernel {i} of {n} in the reply, block at line {b.line})")
                    for i, b in enumerate(found.kernels, 1)]  # fmt: skip
        return []

    def _sampled_kernels(self, prompt: str, parent: Kernel, note: str) -> list[Kernel]:
        """The kernels of ``samples`` replies to one rewrite prompt, reply by reply; when no reply has usable
        code, one repair request (a single reply) as with one sample."""
        calls = self.client.complete_many(prompt, self.samples)
        out: list[Kernel] = []
        first_error: ReplyParseError | None = None
        first_text = ""
        for i, call in enumerate(calls, 1):
            if call.status != "ok":
                self._record("optimize", prompt, call, f"no reply: {call.status}: {call.reason}")
                self.no_kernel_reasons.append(f"optimize (sample {i}): no reply: {call.status}: {call.reason[:200]}")
                continue
            try:
                found = extract_kernels(call.text)
            except ReplyParseError as e:
                self._record("optimize", prompt, call, str(e))
                self.no_kernel_reasons.append(f"optimize (sample {i}): {str(e)[:200]}")
                first_error, first_text = first_error or e, first_text or call.text
                continue
            self._record("optimize", prompt, call)
            self.reply_notes += [f"optimize reply {i}: {s[:300]}" for s in found.skipped]
            n = len(found.kernels)
            out += [Kernel(source=b.source, origin="llm", parent_hash=parent.hash,
                           note=f"{note} (sample {i} of {len(calls)}" + (f", kernel {j} of {n} in the reply, block at "
                                                                         f"line {b.line})" if n > 1 else ")"))
                    for j, b in enumerate(found.kernels, 1)]  # fmt: skip
        if out or first_error is None:
            return out
        values = {"error": str(first_error), "reply": first_text[:REPLY_CHARS_IN_REPAIR].strip() or "(empty)"}
        again = f"{prompt}\n\n{render_template('repair_code', values, self.template_dir)}"
        samples, self.samples = self.samples, 1  # the repair is one request, as with one sample
        try:
            return self._kernels_from("optimize", again, parent, note)
        finally:
            self.samples = samples

    def _mark_repeat(self, repeated: str, prefix: str = "", purpose: Purpose = "optimize") -> None:
        """The last exchange's kernel repeats ``repeated``: not used, and said so."""
        self.no_kernel_reasons.append(f"{purpose}: {prefix}the reply repeats {repeated}")
        self.exchanges[-1] = self.exchanges[-1].model_copy(update={"parse_error": f"repeats {repeated}"})

    def _record(self, purpose: Purpose, prompt: str, call: LLMCall, parse_error: str = "") -> None:
        self.exchanges.append(Exchange(purpose=purpose, prompt=prompt, call=call, parse_error=parse_error))
        if hasattr(self.client, "note"):  # the run's service keeps a copy, for a task cut off by its timeout
            self.client.note(self.exchanges[-1])


def _new_kernels(kernels: list[Kernel], tried: dict[str, str]) -> tuple[list[Kernel], list[str]]:
    """The kernels not in ``tried`` and not repeating an earlier one of the list; and for each kernel
    what it repeats ("" for a new one)."""
    fresh: list[Kernel] = []
    repeats: list[str] = []
    first: dict[str, int] = {}
    for i, k in enumerate(kernels, 1):
        if k.hash in tried:
            repeats.append(tried[k.hash])
        elif k.hash in first:
            repeats.append(f"kernel {first[k.hash]} of the same reply")
        else:
            first[k.hash] = i
            fresh.append(k)
            repeats.append("")
    return fresh, repeats


def _which(kernels: list[Kernel], kernel: Kernel) -> str:
    """The words "kernel i of the reply" for the i-th of ``kernels`` (by identity: repeats are equal records)."""
    return f"kernel {next(i for i, k in enumerate(kernels, 1) if k is kernel)} of the reply"
