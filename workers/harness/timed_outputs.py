"""The outputs of timed repetitions, checked: no kernel can tell a timed call from a checked one.

Before each repetition a timing changes the inputs (``InputNudger``: a fresh seed from the operating
system, sent to the judge before the change is made and not kept), on top of the changes before. After
each timed repetition, once the call has returned and the device is synchronised, fresh randomness from
the operating system decides two things. Whether to keep a full copy of that repetition's outputs
(``KeptOutputs``: reservoir sampling, so each of the n repetitions ends up kept with the same chance,
k/n; one copy only where outputs are gigabytes). And where to sample them: ``SAMPLED_ELEMENTS`` positions
of each output (all of a smaller one), drawn from a seed with a generator on the output's device, the
values gathered (``SampledOutputs``: every repetition, one draw and one gather). The judge, in another
process, chooses ``CHECKED_SAMPLES`` sampled repetitions once the timing is over (``choose_checked``),
rebuilds the inputs each checked or kept repetition saw (its copy of the pristine inputs and the seeds
announced so far: ``replay_``), redraws the sampled positions from their seed, and compares the samples,
and every kept output in full, with a reference (``wrong_timed``).

Why a kernel in the runner's process cannot evade it:

- The choices do not exist while the kernel runs. The copy kept and the sampled positions are drawn with
  ``os.urandom`` after the call has returned, the sampled repetitions checked by the judge after the
  whole timing, so no stack walk, call count, clock, L2 state or memory scan made during the call can
  learn them: every timed call is equally likely to be checked, and every element of its output equally
  likely to be in its sample. A kernel that does less work in a fraction c of its timed calls escapes the
  samples with about (1 - c)^R (R = ``CHECKED_SAMPLES``: for c = 1/4, about 1e-2; for c = 1/2, 1.5e-5) and
  the full copies with about (1 - c)^k; a call that leaves a fraction w of its output wrong is missed by
  its sample with about (1 - w)^S (S = ``SAMPLED_ELEMENTS``: for w = 1e-3, about 4e-29). A kernel that
  cheats whenever it is timed (a fake speed-up worth having) is caught for certain.
- Each change's seed is drawn just before its repetition, so a kernel cannot work out answers for future
  inputs ahead (at import, in its warm-up calls). Once the change is made, nothing of it is left in the
  process (the seed went to the judge, the places are zeroed): a kernel cannot update its previous
  answer at the changed places only without looking for them in its input (see the last point below).
- The change is large enough that an earlier answer is wrong: a fraction f (``NUDGED_FRACTION``) of each
  floating input's elements take values copied from other places of the input (the input's own values:
  the problem's domain is kept), one window in each of ``SEGMENTS`` rows. A max-pool window changes its
  output with about 1.4f (its maximum is overwritten, or a larger value lands in it), so a stale answer
  over M windows slips through with about (1 - 1.4f)^M per kept repetition; a row max over R rows
  likewise, about (1 - 1.5f)^R, and (1 - 1.5f)^(kR) over k kept repetitions: for f = 1/16, R = 16 and
  k = 4 at most about 2e-3, for R = 64 about 1e-11 (tests/test_timing.py measures it). A single maximum
  over the whole input (R = 1) is the weak case, about 0.7; such a problem needs its sets of inputs to
  differ, not to be nudged. A kernel that keeps a copy of its last input and answer, finds the changed
  window by sampling its input, and recomputes only there would not be caught: a cache keyed by input
  contents, which the change makes costly to write but not impossible.
- The references are made by the judge (``verify_child``, ``timing_child``) from inputs and a model it
  copied before the timing: a kernel that changes its inputs or the model's weights while timed, or
  PyTorch's operators in its own process, is still compared with the honest answer.

What it does not cover: a kernel that rewrites the runner's own memory outside its calls (the kept
copies) could forge this as it could forge the timing's numbers, which that process records too; names
of the harness that are replaced are caught (``integrity``), raw writes to its data are not.
"""

from __future__ import annotations

import math
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from beamsearch.records.schema import RunSpec, Tolerance
from workers.harness.compare import Comparison, compare
from workers.harness.problem_instance import ProblemInstance, reference_copies, reference_output

_urandom = os.urandom  # taken before any kernel is imported, as are torch's draws below
_Generator, _randint, _randperm = torch.Generator, torch.randint, torch.randperm
NUDGED_FRACTION = 1 / 16
NUDGED_MIN = 8  # tiny inputs: at least this many places change (all of them below that)
SEGMENTS = 256  # rows an input is cut into, each changed in one window per repetition
KEPT_REPS = 4
KEPT_BYTES = 4 << 30  # copies kept at once, at most (at least one): GPU memory beside other workers' jobs
SAMPLED_ELEMENTS = 1 << 16  # of each output, after every timed repetition (all of a smaller output)
CHECKED_SAMPLES = 16  # sampled repetitions the judge checks, chosen by it after the timing


def fresh_seed() -> int:
    """63 bits from the operating system: nothing in the process can know them before they are drawn."""
    return int.from_bytes(_urandom(8), "little") >> 1


def _changeable(tensors: list[Any]) -> list[torch.Tensor]:
    return [t.view(-1) for t in tensors
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.is_contiguous() and t.numel() > 1]  # fmt: skip


def nudge_(tensors: list[Any], seed: int, fraction: float = NUDGED_FRACTION) -> None:
    """Copy values from other places of each floating input into about ``fraction`` of its elements. The
    input is cut into ``SEGMENTS`` equal rows; one random window of columns, ``fraction`` of a row wide, of
    every row takes the values of a random window of another row (rows shuffled), so the changed places are
    spread over the whole input and the values are the input's own (its domain is kept). One gather and one
    strided copy of ``fraction`` of the input: scattering single runs, as a first version did, cost several
    milliseconds a repetition on inputs of gigabytes, all of it inside the measurement lock. The offsets
    come from ``seed`` on the host, so the judge redraws the same; the row order goes to the device and is
    zeroed before its memory is freed."""
    rng = _Generator().manual_seed(seed)
    with torch.no_grad():
        for flat in _changeable(tensors):
            n = flat.numel()
            rows = max(1, min(SEGMENTS, n // round(1 / fraction)))
            width = n // rows
            run = max(1, round(width * fraction))
            grid = flat[: rows * width].view(rows, width)
            dest, source = _randint(width - run + 1, (2,), generator=rng).tolist()
            if rows == 1 and source == dest:  # one row: the window must come from elsewhere in it
                source = (dest + run) % (width - run + 1)
            # A generator on the host: Python's shuffle of the rows took most of a repetition's change.
            index = _randperm(rows, generator=rng).to(flat.device)
            grid[:, dest : dest + run] = grid[index, source : source + run]  # gathered first: overlap is safe
            index.zero_()


def replay_(copies: list[Any], seeds: list[int]) -> None:
    """Make each change, in turn, on the judge's ``reference_copies`` of the inputs. A change only moves
    values, so in the reference's precision it gives exactly the inputs a repetition saw."""
    for seed in seeds:
        nudge_(copies, seed)


class InputNudger:
    """Before each repetition: draw a fresh seed, tell it to ``announce`` (the judge, in another process),
    and change the inputs with it (``nudge_``), on top of the changes before. Nothing of the change stays
    in this process: not the seed, not the places, not the old values. A kernel that found them could
    update its previous answer at the changed places only (for an elementwise problem, a sixteenth of the
    work); finding the changes without them means reading all of the input against a copy of it."""

    def __init__(self, inputs: list[Any], announce: Callable[[int], None] | None = None) -> None:
        self.inputs = inputs
        self.announce = announce or (lambda seed: None)
        self.count = 0  # changes made so far

    def __call__(self) -> None:
        seed = fresh_seed()
        self.announce(seed)
        nudge_(self.inputs, seed)
        self.count += 1


@dataclass
class Kept:
    rep: int  # 0-based among the timed repetitions
    changes: int  # how many changes the inputs had had (the first ``changes`` seeds announced)
    outputs: list[torch.Tensor | None]  # copies; None where the call returned no plain tensor
    returned: list[str]  # what each output was (type names), for the reason when it was not a plain tensor


def kept_reps(output_bytes: int) -> int:
    """How many repetitions are kept: ``KEPT_REPS``, fewer where their copies would pass ``KEPT_BYTES``
    (one kept repetition still catches a kernel that cheats whenever it is timed)."""
    return max(1, min(KEPT_REPS, KEPT_BYTES // max(output_bytes, 1)))


def _nbytes(outputs: list[torch.Tensor | None]) -> int:
    return sum(o.numel() * o.element_size() for o in outputs if o is not None)


class KeptOutputs:
    """Reservoir sampling of the timed repetitions' outputs, decided after each call has returned."""

    def __init__(self, changes: Callable[[], int]) -> None:
        self.changes = changes
        self.kept: list[Kept] = []
        self.offered = 0

    def offer(self, out: Any) -> None:
        """Called off the clock, after the device is synchronised: keep copies of ``out`` with chance k/n."""
        rep = self.offered
        self.offered += 1
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        tensors = [o if type(o) is torch.Tensor else None for o in outs]
        k = kept_reps(_nbytes(tensors))
        if len(self.kept) < k:
            slot = len(self.kept)
            self.kept.append(None)  # type: ignore[arg-type]
        else:
            slot = fresh_seed() % self.offered
            if slot >= len(self.kept):
                return
            self.kept[slot] = None  # type: ignore[call-overload]  # its memory is free before the next copy
        copies = [o.detach().clone() if o is not None else None for o in tensors]
        self.kept[slot] = Kept(rep, self.changes(), copies, [type(o).__name__ for o in outs])


@dataclass
class SampledRep:
    rep: int  # 0-based among the timed repetitions
    changes: int  # how many changes the inputs had had
    seed: int  # of the sampled positions (``sample_positions``), drawn after the call returned
    returned: list[str]  # each output's dtype, or its type name when it was not a plain tensor
    shapes: list[list[int] | None]  # each output's shape; None where it was not a plain tensor


@dataclass
class Sampled:
    reps: list[SampledRep]  # every timed repetition, in order
    values: list[torch.Tensor | None]  # per output: one row of sampled values per repetition; None where
    # the repetitions' outputs were not plain tensors of one shape and dtype (the judge fails that)


_generators: dict[torch.device, torch.Generator] = {}


def sample_positions(numel: int, seed: int, device: torch.device) -> torch.Tensor:
    """The flat positions sampled of an output of ``numel`` elements: all of them up to
    ``SAMPLED_ELEMENTS``, else that many drawn from ``seed`` on ``device`` (the judge draws the same
    on the same device)."""
    if numel <= SAMPLED_ELEMENTS:
        return torch.arange(numel, device=device)
    generator = _generators.get(device)
    if generator is None:
        generator = _generators[device] = torch.Generator(device=device)
    generator.manual_seed(seed)
    return torch.randint(numel, (SAMPLED_ELEMENTS,), generator=generator, device=device)


class SampledOutputs:
    """After every timed repetition, off the clock: a sample of each output at positions drawn from a
    fresh OS seed (one draw and one gather), kept with the repetition's number and change count."""

    def __init__(self, changes: Callable[[], int]) -> None:
        self.changes = changes
        self.reps: list[SampledRep] = []
        self.rows: list[list[torch.Tensor]] = []  # per output, one row per repetition
        self.alike = True  # every repetition returned what the first did (shapes, dtypes, types)

    def offer(self, out: Any) -> None:
        """Called off the clock, after the device is synchronised, with a timed repetition's outputs."""
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        tensors = [o if type(o) is torch.Tensor else None for o in outs]
        seed = fresh_seed()
        returned = [
            str(t.dtype) if t is not None else type(o).__name__ for t, o in zip(tensors, outs, strict=True)
        ]
        shapes = [list(t.shape) if t is not None else None for t in tensors]
        self.reps.append(SampledRep(len(self.reps), self.changes(), seed, returned, shapes))
        first = self.reps[0]
        self.alike = self.alike and (returned, shapes) == (first.returned, first.shapes)
        if not self.alike:
            self.rows = []  # the judge fails the timing on the descriptions alone
            return
        if not self.rows:
            self.rows = [[] for _ in outs]
        for row, t in zip(self.rows, tensors, strict=True):
            if t is not None:
                row.append(torch.take(t.detach(), sample_positions(t.numel(), seed, t.device)))

    def sampled(self) -> Sampled:
        """One tensor per output (its rows stacked): one transfer to the judge."""
        values = [torch.stack(rows) if rows else None for rows in self.rows] if self.alike else []
        return Sampled(self.reps, values)


def choose_checked(n_reps: int) -> list[int]:
    """The sampled repetitions the judge checks: ``CHECKED_SAMPLES`` of them (all, where there are fewer),
    chosen in the judge's process after the timing, with the operating system's randomness."""
    return sorted(secrets.SystemRandom().sample(range(n_reps), min(n_reps, CHECKED_SAMPLES)))


def _unfit_kept(kept: list[Kept], n_reps: int) -> str | None:
    reps = sorted(k.rep for k in kept)
    want = min(kept_reps(max((_nbytes(k.outputs) for k in kept), default=0)), n_reps)
    if len(kept) < want or len(set(reps)) < len(reps) or any(not 0 <= r < n_reps for r in reps):
        return f"the outputs kept of {n_reps} timed repetitions were not {want} of them: {reps}"
    return None


def _unfit_sampled(sampled: Sampled, n_reps: int, n_seeds: int) -> str | None:
    """What is wrong with the samples' bookkeeping: one per timed repetition, in order, each after no
    fewer changes than the one before, every repetition's outputs like the first's, rows of the right width."""
    reps = sampled.reps
    if [r.rep for r in reps] != list(range(n_reps)):
        return f"the samples of {n_reps} timed repetitions were not one per repetition: {len(reps)} of them"
    changes = [r.changes for r in reps]
    if changes != sorted(changes) or any(not 0 <= c <= n_seeds for c in changes):
        return f"the samples' inputs had from {min(changes)} to {max(changes)} changes, out of order or of {n_seeds} announced"
    if not reps:
        return None
    first = reps[0]
    for r in reps:
        if (r.returned, r.shapes) != (first.returned, first.shapes):
            return (f"timed repetition {r.rep + 1} of {n_reps} returned {_described(r)}, "
                    f"repetition 1 returned {_described(first)}")  # fmt: skip
    if len(sampled.values) != len(first.returned):
        return f"the samples have {len(sampled.values)} outputs, the timed repetitions returned {len(first.returned)}"
    for j, (v, shape) in enumerate(zip(sampled.values, first.shapes, strict=True)):
        if shape is None:
            return f"timed repetition 1 of {n_reps}: output {j} is a {first.returned[j]}, not a plain torch.Tensor"
        width = min(math.prod(shape), SAMPLED_ELEMENTS)
        if v is None or tuple(v.shape) != (n_reps, width):
            got = None if v is None else tuple(v.shape)
            return f"the samples of output {j} have shape {got}, expected {(n_reps, width)}"
    return None


def _described(r: SampledRep) -> str:
    return ", ".join(f"{t}{s}" if s is not None else t for t, s in zip(r.returned, r.shapes, strict=True))


def _wrong(cmp: Comparison) -> str:
    wrong = cmp.n_mismatched + cmp.n_unwritten + cmp.n_unexpected_nonfinite
    return f"{wrong} of {cmp.n}"


def wrong_timed(kept: list[Kept], sampled: Sampled, checked: list[int], n_reps: int, seeds: list[int],
                copies: list[Any], pristine: Callable[[], list[Any]], model: torch.nn.Module, spec: RunSpec,
                tolerance: Tolerance) -> str | None:  # fmt: skip
    """None when every kept repetition's outputs, and the samples of every repetition in ``checked``
    (``choose_checked``), match the reference for the inputs that repetition saw; else why not, naming
    the repetition. One pass over the repetitions in order, replaying the changes once (``replay_``).
    ``seeds``: every change's, in order, as announced; ``copies``: the judge's ``reference_copies`` of the
    inputs, made before the timing and changed here in place (no copy of gigabytes per repetition);
    ``pristine``: makes those inputs again (from the timing's seed), where the model changes its inputs in
    place and so spoils the copies; ``model``: a copy the kernel could not change while timed."""
    problem = _unfit_kept(kept, n_reps) or _unfit_sampled(sampled, n_reps, len(seeds))
    if problem is not None:
        return problem
    kept_at = {k.rep: k for k in kept}
    changed, plain = 0, False  # plain: the model changes its inputs, so it gets clones of the copies
    for rep in sorted(set(kept_at) | set(checked)):
        changes = sampled.reps[rep].changes
        if rep in kept_at and kept_at[rep].changes != changes:
            return (f"timed repetition {rep + 1} of {n_reps}: its kept copy had {kept_at[rep].changes} changes, "
                    f"its sample {changes}")  # fmt: skip
        replay_(copies, seeds[changed:changes])
        changed = changes
        versions = _versions(copies)
        reference = _reference(model, copies, spec, plain)
        if not plain and _versions(copies) != versions:  # changed in place (through a view or detach too)
            del reference
            copies.clear()  # the spoiled copies go before new ones are made
            copies.extend(reference_copies(pristine(), spec))
            replay_(copies, seeds[:changes])
            plain = True
            reference = _reference(model, copies, spec, plain)
        refs = list(reference) if isinstance(reference, (tuple, list)) else [reference]
        problem = (_wrong_copy(kept_at[rep], refs, n_reps, tolerance) if rep in kept_at else None) or (
            _wrong_sample(sampled, rep, refs, n_reps, tolerance) if rep in checked else None)  # fmt: skip
        del reference, refs  # before the next is made: one reference of gigabytes at a time
        if problem is not None:
            return problem
    return None


def _versions(tensors: list[Any]) -> list[int]:
    """Each tensor's version counter: every in-place operation on it, a view of it or a detached alias adds
    one (not a write through the legacy ``.data``)."""
    return [t._version for t in tensors if isinstance(t, torch.Tensor)]


def _reference(model: torch.nn.Module, copies: list[Any], spec: RunSpec, plain: bool) -> Any:
    inputs = [t.clone() if plain and isinstance(t, torch.Tensor) else t for t in copies]
    return reference_output(ProblemInstance(model, inputs), spec)  # it copies the model


def _wrong_copy(k: Kept, refs: list[torch.Tensor], n_reps: int, tolerance: Tolerance) -> str | None:
    where = f"timed repetition {k.rep + 1} of {n_reps} (kept at random after it returned)"
    if len(k.outputs) != len(refs):
        return f"{where}: returned {len(k.outputs)} outputs, the reference returns {len(refs)}"
    for j, (o, r) in enumerate(zip(k.outputs, refs, strict=True)):
        if o is None:
            return f"{where}: output {j} is a {k.returned[j]}, not a plain torch.Tensor"
        if tuple(o.shape) != tuple(r.shape):
            return f"{where}: output {j} has shape {tuple(o.shape)}, expected {tuple(r.shape)}"
        cmp = compare(o, r, tolerance)
        if not cmp.passed:
            return (f"{where} gave a wrong answer: output {j}: {_wrong(cmp)} elements wrong (max abs err "
                    f"{cmp.max_abs_err:.4g}, first at flat index {cmp.first_bad_index})")  # fmt: skip
    return None


def _wrong_sample(
    sampled: Sampled, rep: int, refs: list[torch.Tensor], n_reps: int, tolerance: Tolerance
) -> str | None:
    where = f"timed repetition {rep + 1} of {n_reps} (sampled after it returned)"
    r = sampled.reps[rep]
    if len(r.shapes) != len(refs):
        return f"{where}: returned {len(r.shapes)} outputs, the reference returns {len(refs)}"
    for j, (values, shape, ref) in enumerate(zip(sampled.values, r.shapes, refs, strict=True)):
        if shape != list(ref.shape):
            return f"{where}: output {j} has shape {tuple(shape or ())}, expected {tuple(ref.shape)}"
        assert values is not None  # _unfit_sampled: a row per repetition of every output
        positions = sample_positions(ref.numel(), r.seed, values.device)  # where the runner drew them
        cmp = compare(values[rep].to(ref.device), torch.take(ref, positions.to(ref.device)), tolerance)
        if not cmp.passed:
            bad = None if cmp.first_bad_index is None else int(positions[cmp.first_bad_index])
            return (f"{where} gave a wrong answer: output {j}: {_wrong(cmp)} sampled elements wrong "
                    f"(max abs err {cmp.max_abs_err:.4g}, first at flat index {bad})")  # fmt: skip
    return None
