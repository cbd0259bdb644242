"""The messages between the judge and the runner (``kernel_runner``), as validated models.

The runner runs the candidate's code, so the judge reads every reply as hostile input: strict types (no
string for a number, no bool for a count), no field it does not know, and a reply that fails that is an
unreadable reply (``crashed``), never a guess. Tensors travel beside a message (``shared_tensors``); a
message names them by their index in that list.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

from beamsearch.records.schema import DType, ShapeSet, Timing

Index = Annotated[int, Field(ge=0)]  # into the tensors sent with the message
Count = Annotated[int, Field(ge=0)]


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


# ------------------------------------------------------------------------------------ judge -> runner


class LoadRequest(Message):
    op: Literal["load"] = "load"
    kernel_path: str
    device: str


class OnInputs(Message):
    """A request that calls the kernel: on these inputs (encoded by ``shared_tensors.encode_value``), or
    on those of the previous request as they are now (``"same"``)."""

    inputs: list[JsonValue] | Literal["same"] = "same"
    values: dict[str, JsonValue] = {}


class CallRequest(OnInputs):
    op: Literal["call"] = "call"
    observe: bool = True  # False: only the threads it starts are counted


class HashRequest(OnInputs):
    op: Literal["hash"] = "hash"


class CompileRequest(OnInputs):
    """Compile what the kernel launches for these inputs (meta tensors) without running it
    (``compile_ahead``), before the verification takes its place on the GPU."""

    op: Literal["compile"] = "compile"
    kernel_path: str


class TimeBudget(Message):
    """``workers.harness.clock.measure``'s budget."""

    warmup_ms: float
    rep_ms: float
    min_reps: int
    max_reps: int
    screen_above_ms: float | None = None


class TimeRequest(OnInputs):
    op: Literal["time"] = "time"
    dtype: DType
    shapes: ShapeSet
    budget: TimeBudget


class ReleaseRequest(Message):
    """A session's kernel is done with (``VerifyRequest.session``): drop its tensors, free the memory."""

    op: Literal["release"] = "release"


Request = Annotated[LoadRequest | CompileRequest | CallRequest | HashRequest | TimeRequest | ReleaseRequest,
                    Field(discriminator="op")]
REQUEST: TypeAdapter[Request] = TypeAdapter(Request)


# ------------------------------------------------------------------------------------ runner -> judge


class Evidence(Message):
    """What the runner's observers saw of the kernel meddling with its process or leaving work behind."""

    tampering: list[str]
    background: list[str]


class LoadReply(Evidence):
    ok: Literal[True] = True
    sandbox: str


class CompileReply(Evidence):
    compiled: list[str]  # the @triton.jit kernels it compiled (or found compiled), in launch order
    stopped: str  # why the pass ended before kernel_function returned; "" when it did not
    threads_started: Count


class CallReport(Evidence):
    peak_bytes: Count
    same_as_previous: list[Index]  # outputs that are memory the previous call returned
    forbidden: dict[str, Count]  # PyTorch compute operators seen, by name
    host_reads: dict[str, Count]
    threads_started: Count
    call_s: float


class CallReply(Message):
    report: CallReport
    structure: str | None  # why the outputs could not be handed over; None: they were
    n_outputs: Count


class HashReply(Evidence):
    compiled_hash: str | None
    threads_started: Count


class KeptRep(Message):
    """One kept repetition (``timed_outputs.Kept``); ``outputs`` index the tensors sent back."""

    rep: Count
    changes: Count
    outputs: list[Index | None]
    returned: list[str]


class SampledRepMessage(Message):
    """One timed repetition's sample (``timed_outputs.SampledRep``)."""

    rep: Count
    changes: Count
    seed: int
    returned: list[str]
    shapes: list[list[Count] | None]


class SampledReps(Message):
    reps: list[SampledRepMessage]
    values: list[Index | None]  # per output, the index of its rows of sampled values


class TimeReply(Evidence):
    timing: Timing
    kept: list[KeptRep]
    sampled: SampledReps
    threads_started: Count
    peak_bytes: Count


class ReleaseReply(Evidence):
    """What was left running or changed once the kernel's last call had returned."""


RunnerStatus = Literal["runtime_error", "compile_failed", "bind_failed"]


class RunnerError(Message):
    status: RunnerStatus
    reason: str
    traceback: str
    sandbox: str | None = None  # a failed load: the sandbox it was under


class ErrorReply(Message):
    error: RunnerError


class NudgeNote(Message):
    nudge_seed: int


class Note(Message):
    """Sent during a timing before each change of the inputs, ahead of the reply."""

    note: NudgeNote


REPLIES: dict[str, type[Message]] = {
    "load": LoadReply,
    "compile": CompileReply,
    "call": CallReply,
    "hash": HashReply,
    "time": TimeReply,
    "release": ReleaseReply,
}


def read_reply(op: str, body: dict[str, Any]) -> Message:
    """The reply to an ``op`` request, validated: an ErrorReply where the body says ``error``. Raises
    pydantic's ValidationError for anything else."""
    if "error" in body:
        return ErrorReply.model_validate(body, strict=True)
    return REPLIES[op].model_validate(body, strict=True)  # strict reaches the nested Timing, a lax Record


def describe_invalid(e: ValidationError, most: int = 3) -> str:
    """A ValidationError on one line: where each problem is and what it is, the first ``most`` of them."""
    problems = [
        f"{'.'.join(str(p) for p in err['loc']) or 'the message'}: {err['msg']}" for err in e.errors()
    ]
    more = f" (and {len(problems) - most} more)" if len(problems) > most else ""
    return f"{e.title}: {'; '.join(problems[:most])}{more}"[:600]
