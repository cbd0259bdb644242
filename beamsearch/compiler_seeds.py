"""The run's compiler seeds: Inductor's kernels for the problem, recorded on the workers under each variant
of the portfolio (docs/compile-seed.md), deduped on their code, each step told as a ``compiler_seed``
event. The driver measures the seeds and keeps them in its beam where they earn a place."""

from __future__ import annotations

from collections.abc import Callable

from beamsearch.beam import entry_of
from beamsearch.outcome import COMPILER_SEED_ID, SEED_NOT_KEPT
from beamsearch.pool import NotStarted, WorkerPool
from beamsearch.records.config import SearchConfig
from beamsearch.records.schema import Kernel, RunSpec
from beamsearch.records.state import BeamEntry, TaskResult
from workers.actor.task import RECORD_TIMEOUT_S
from workers.harness.inductor_portfolio import (
    DEFAULT_VARIANT,
    PortfolioError,
    PortfolioVariant,
    load_portfolio,
    recorded_variants,
)
from workers.proposers.compile_seed import SeedResult
from workers.proposers.seed_portfolio import duplicates

# No portfolio variant starts compiling after this (the default starts first): a GEMM's or a convolution's
# variants each compile for minutes, and a run's start waited 6.5 of them for seeds no better than the default.
PORTFOLIO_START_BY_S = 120.0
# A seed beside the start has this long to be verified, timed and profiled; one not back is a failed seed and
# its worker restarts. A GEMM's seeds took 40-90 s each, two searches on one GPU; the task timeout (15 minutes)
# had held a run's start past its whole time limit.
SEED_MEASURE_TIMEOUT_S = 240.0

# A seed this many times slower than the fastest start takes no beam place: a knob search moves a kernel by tens of
# percent, and a Triton convolution template at 40 ms beside a 1.4 ms input took half of a search's candidates.
START_KEEP_RATIO = 3.0

Notify = Callable[..., None]  # notify(kind, **data): the run's display's event


def seed_kernels(spec: RunSpec, config: SearchConfig, pool: WorkerPool,
                 notify: Notify) -> tuple[list[tuple[str, Kernel]], str]:  # fmt: skip
    """torch.compile's own kernels for the problem, standalone (``--compiler-seed``), one per distinct
    variant of the portfolio: recorded at once on the workers, deduped on their code, each with its id
    (``compiler-seed``, ``compiler-seed-<variant>``), the default's first. With none, also why (what is
    unavailable is said in an event)."""
    variants = portfolio(spec, config, notify)
    notify("compiler_seed", status="reading" if config.compiler_recording else "compiling",
           variants=[v.name for v in variants])  # fmt: skip
    calls: list[tuple[object, ...]] = [(spec, config.compiler_recording, v) for v in variants]
    answers = pool.call_each("compiler_seed", calls, timeout_s=RECORD_TIMEOUT_S + 60,
                             start_by_s=PORTFOLIO_START_BY_S)  # fmt: skip
    seeds = [a if isinstance(a, SeedResult) else SeedResult(unavailable=_call_failed(a), variant=v.name, options=v.options)
             for v, a in zip(variants, answers, strict=True)]  # fmt: skip
    for seed in reversed(seeds):  # the default's reason last: the run's summary reads the last event
        if not seed.available:
            notify("compiler_seed", status="unavailable", seed=_seed_id(seed.variant),
                   reason=_variant_reason(seed, seed.unavailable or ""))  # fmt: skip
    available = [s for s in seeds if s.available]
    repeats = duplicates((s.variant, s.code_key or s.variant) for s in available)
    same: dict[str, list[str]] = {}
    for seed in available:
        if (first := repeats[seed.variant]) is not None:
            same.setdefault(first, []).append(seed.variant)
            notify("compiler_seed", status="duplicate", seed=_seed_id(seed.variant),
                   reason=_variant_reason(seed, f"the same code as {_seed_id(first)}"))  # fmt: skip
    kept = [(_seed_id(s.variant), _seed_kernel(s, same.get(s.variant, []))) for s in available
            if repeats[s.variant] is None]  # fmt: skip
    why = "; ".join(_variant_reason(s, s.unavailable or "") for s in seeds if not s.available)
    return kept, "" if kept else why


def portfolio(spec: RunSpec, config: SearchConfig, notify: Notify) -> list[PortfolioVariant]:
    """The variants to seed from: a recording folder's own, else the run's portfolio file (the bundled
    one unless ``compiler_portfolio`` names another); an unreadable file leaves the default alone."""
    if config.compiler_recording:
        try:
            order = [v.name for v in load_portfolio(config.compiler_portfolio)]
        except PortfolioError:
            order = []
        names = recorded_variants(config.compiler_recording, order) or [DEFAULT_VARIANT]
        return [PortfolioVariant(name=name) for name in names]
    if not spec.device.startswith("cuda"):  # nothing is recorded here: one answer says why
        return [PortfolioVariant(name=DEFAULT_VARIANT)]
    try:
        return load_portfolio(config.compiler_portfolio)
    except PortfolioError as e:
        notify("compiler_seed", status="the default variant alone", reason=str(e)[:400])
        return [PortfolioVariant(name=DEFAULT_VARIANT)]


def passed_seeds(measured: list[TaskResult], notify: Notify) -> list[TaskResult]:
    """The measured seeds that may join the beam; each other (unavailable, failed) is an event saying why."""
    for result in measured:
        if entry_of(result) is None:
            notify("compiler_seed", status=result.status, seed=result.task_id, reason=result.reason[:400])
    return [r for r in measured if entry_of(r) is not None]


def within_reach(passed: list[TaskResult], beam: list[BeamEntry]) -> list[TaskResult]:
    """The measured seeds no more than START_KEEP_RATIO times slower than the fastest start (the beam's
    kernels and the seeds): those a knob search of theirs could bring level."""
    fastest = _fastest(passed, beam)
    return [r for r in passed if fastest is None or (r.ranked_ms or 0.0) <= START_KEEP_RATIO * fastest]


def report_kept(passed: list[TaskResult], beam: list[BeamEntry], notify: Notify) -> None:
    """Each passed seed's event: in the beam, or not kept (how much slower than the fastest start)."""
    kept = {e.id for e in beam}
    fastest = _fastest(passed, beam)
    # one in the beam last: the run's summary reads the last event
    for result in sorted(passed, key=lambda r: r.task_id in kept):
        if result.task_id in kept:
            notify("compiler_seed", status="in the beam", seed=result.task_id, median_ms=result.ranked_ms)
            continue
        slower = f"{result.ranked_ms / fastest:.2f}x the fastest start's time" if fastest and result.ranked_ms else ""
        notify("compiler_seed", status=SEED_NOT_KEPT, seed=result.task_id, median_ms=result.ranked_ms, reason=slower)


def _fastest(passed: list[TaskResult], beam: list[BeamEntry]) -> float | None:
    times = [e.ranked_ms for e in beam if e.ranked_ms] + [r.ranked_ms for r in passed if r.ranked_ms]
    return min(times, default=None)


def _seed_id(variant: str) -> str:
    return COMPILER_SEED_ID if variant == DEFAULT_VARIANT else f"{COMPILER_SEED_ID}-{variant}"


def _options_said(options: dict[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in options.items()) or "max-autotune's own settings"


def _call_failed(answer: object) -> str:
    """Why a portfolio variant has no seed when its worker's call gave no answer (``call_each``). A
    ``NotStarted`` has no message of its own: its words are here, with what to do instead."""
    if isinstance(answer, NotStarted):
        return (f"not compiled: no variant starts after the portfolio's first {PORTFOLIO_START_BY_S:.0f} s "
                "(record it with scripts/record_portfolio.py and pass --compiler-recording)")  # fmt: skip
    return f"the worker's call failed: {answer}"


def _variant_reason(seed: SeedResult, reason: str) -> str:
    return f"{_seed_id(seed.variant)} ({_options_said(seed.options)}): {reason}"[:600]


def _seed_kernel(seed: SeedResult, same_code: list[str]) -> Kernel:
    """The seed as a candidate; its note says which Inductor options made it and its configs."""
    configs = "; ".join(f"{name} {cfg}" for name, cfg in seed.configs.items())
    also = f"; the same code under variants {', '.join(same_code)}" if same_code else ""
    made = "" if seed.variant == DEFAULT_VARIANT and not seed.options else f" under {_options_said(seed.options)}"
    return Kernel(source=seed.source, origin="compiler",
                  note=f"torch.compile max-autotune's kernels{made} ({configs}){also}")  # fmt: skip
