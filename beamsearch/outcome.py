"""What a run's result is measured against, and why it lost where it did: the best baseline, what became
of the compiler seed (read from the run's events), and the reason a result slower than the best baseline
gives. Pure functions of the run's records, so the driver's round loop stays about rounds."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

from beamsearch.records.config import SearchConfig
from beamsearch.records.state import Baseline, BeamEntry, BeamState

COMPILER_SEED_ID = "compiler-seed"  # the default variant's; another's is compiler-seed-<variant>


def best_baseline(baselines: list[Baseline], device: str) -> Baseline | None:
    """The bar a run is measured against: its fastest timed PyTorch baseline, on a GPU only (interpreter
    times mean nothing beside PyTorch's native ones)."""
    timed = [b for b in baselines if b.median_ms is not None] if device.startswith("cuda") else []
    return min(timed, key=lambda b: b.median_ms, default=None)


SEED_NOT_KEPT = "slower than the input: not kept"  # the compiler_seed event's status for a seed the beam did not keep
SEED_WORKING = ("reading", "compiling")  # compiler_seed events before its outcome


@dataclass(frozen=True)
class SeedOutcome:
    """What became of the compiler seed, as its last ``compiler_seed`` event said, or that the run left it out."""

    status: str  # "in the beam", SEED_NOT_KEPT, "unavailable", a candidate's status, "left out"
    reason: str = ""
    median_ms: float | None = None

    @property
    def said(self) -> str:
        ms = f" at {self.median_ms:.4g} ms" if self.median_ms else ""
        return f"{self.status}{ms}" + (f": {self.reason}" if self.reason else "")


def seed_outcome(out: Path, config: SearchConfig, device: str) -> SeedOutcome | None:
    """The compiler seed's outcome: left out by the run's options, else the last event of its own in the run's
    ``events.jsonl`` (over every session of a resumed run); None where none was recorded."""
    if not config.wants_compiler_seed(device):
        # the start saves compiler_seed as settled (False on the CPU too): the device and the sweep say why first
        why = ("on the CPU it needs --compiler-recording" if not device.startswith("cuda") else "a sweep stays on "
               "the starting kernel's space" if config.sweep else "--no-compiler-seed")  # fmt: skip
        return SeedOutcome("left out", why)
    found = None
    with contextlib.suppress(OSError):
        for line in (out / "events.jsonl").read_text().splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if event.get("event") == "compiler_seed" and event.get("status") not in SEED_WORKING:
                    found = SeedOutcome(str(event.get("status")), str(event.get("reason") or ""), event.get("median_ms"))
    return found


def loss_reason(best: BeamEntry | None, seed: SeedOutcome | None, state: BeamState) -> str:
    """Why a result is slower than the best baseline, as far as the run knows: what kept the compiler seed
    (max-autotune's own kernels) out, and what the search found or could not find."""
    reasons = []
    bar = best_baseline(state.baselines, state.spec.device)
    if bar is not None and bar.library_ops:
        reasons.append(f"the best baseline ({bar.label}) runs {', '.join(bar.library_ops)}: a vendor library's "
                       "kernel, where this search's kernels are all Triton")  # fmt: skip
    if seed is not None and seed.status == "unavailable":
        reasons.append(_seed_unavailable_why(seed.reason))
    elif seed is not None and seed.status == "left out":
        reasons.append(f"the run left out the compiler seed, torch.compile's own kernels ({seed.reason})")
    elif seed is not None and seed.status not in ("in the beam", SEED_NOT_KEPT):
        reasons.append(f"the compiler seed failed ({seed.status}: {seed.reason[:200]})")
    if best is None:
        pass
    elif best.id == "input" and best.kernel.origin != "compiler":  # with no input kernel the seed is the start
        reasons.append("no candidate beat the input kernel")
    elif best.id == "input" or best.id.startswith(COMPILER_SEED_ID) or (_searched_from(best, state) or "").startswith(COMPILER_SEED_ID):
        reasons.append("the knob search tied the compiler seed: no configuration of max-autotune's own kernels, "
                       "run standalone, beat them")  # fmt: skip
    elif not state.config.proposing:
        reasons.append("no structural move found: the offline optimiser tunes knobs (block sizes, warps, stages, "
                       "grid order; on a GPU loads hints, loop options, register caps), not the algorithm")  # fmt: skip
    else:
        reasons.append("the model's rewrites found no faster structure")
    return "; ".join(reasons)


def _seed_unavailable_why(reason: str) -> str:
    text = reason.lower()
    if "extern" in text or "cublas" in text or "cudnn" in text:
        why = "the best baseline calls a vendor library (cuBLAS/cuDNN): Inductor's code calls extern kernels"
    elif "no triton template" in text:
        why = "the best baseline calls a vendor library: Inductor has no Triton template for this problem"
    else:
        return f"the compiler seed was unavailable ({reason[:200]}), so the search started from the input kernel alone"
    return f"{why}, so there is no compiler seed to start from ({reason[:200]})"


def _searched_from(entry: BeamEntry, state: BeamState) -> str | None:
    """The id of the kernel whose knob space ``entry`` is a point of (an optimiser's variant), else None."""
    search = state.optimiser.searches.get(entry.kernel.parent_hash or "")
    return search.root_id if search else None


def ratio(base_ms: float | None, ms: float | None) -> float | None:
    """How many times faster ``ms`` is than ``base_ms`` (> 1: faster); None where either is missing."""
    return base_ms / ms if base_ms and ms else None
