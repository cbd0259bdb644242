"""ncu profiles of the beam's new kernels, taken while the round's last tasks still run.

The kernels a round keeps in the beam are the next round's parents, and a parent's tasks need its
profile (the diagnosis, hence the proposals, come from it). Profiled after the round's selection, they
held every GPU idle but the profiling ones, for a large share of the rounds' wall time (the GPU run
records say how much). So once every task of the round is handed out,
each idle worker profiles a kernel the beam would keep if the round ended now (``next_job``, the
pool's spare work). A kernel that later results push out of the beam was profiled for nothing (counted
in the round's ``profiles_unused``); one that enters late is profiled when it does, so when the
round's tasks are done, every kernel of the beam has a profile or a reason why not.

Only the kernels whose profile a proposer reads are profiled: with a model or a replay, all of them (the
model starts from its parent's profile); offline, the kernels that start a knob search (the input, the
compiler seed), whose roofline orders its first points. A knob variant is a point of its root's search,
which reads no profile: the run's best is profiled at the end instead (``Driver.finish``).
"""

from __future__ import annotations

from collections.abc import Callable

from beamsearch.beam import select_beam
from beamsearch.records.schema import Kernel, Profile
from beamsearch.records.state import BeamEntry, BeamState, ProfileJob, ProfileResult, TaskResult

NOT_PROFILED = "not profiled: only the kernels the beam keeps are profiled, since they are the next round's parents"
NOT_READ = "not profiled: no proposer reads a knob variant's profile offline; the run's best is profiled at the end"


def profile_read(kernel: Kernel, proposing: bool) -> bool:
    """Whether a proposer reads a beam kernel's profile: a model's (or replay's) parent, or an offline knob
    search's root."""
    return proposing or kernel.origin != "tuner"


def with_profiles(beam: list[BeamEntry], done: dict[str, ProfileResult]) -> list[BeamEntry]:
    """The beam's kernels with the profiles their jobs took (``done``: kernel id -> the job's result)."""
    return [e.model_copy(update={"profile": done[e.id].profile, "roofline": done[e.id].roofline}) if e.id in done
            else e for e in beam]  # fmt: skip


class BeamProfiles:
    """The profile jobs of one round: which to start next, and their results once back."""

    def __init__(self, state: BeamState, round_: int, results: list[TaskResult],
                 notify: Callable[..., None] = lambda kind, **data: None) -> None:  # fmt: skip
        """``results``: the round's candidates so far, the list the driver appends to as they come. ``state``
        is the run's as the round was opened; the driver sets the newer one when an earlier round closes."""
        self.state, self.round, self.results, self.notify = state, round_, results, notify
        self.on = state.config.profile and state.spec.device.startswith("cuda")
        self.proposing = state.config.proposing
        self.started: set[str] = set()  # kernels with a profile job
        self.done: dict[str, ProfileResult] = {}  # kernel id -> its profile job's result

    def next_job(self) -> ProfileJob | None:
        """A profile job for the fastest kernel of the beam as it stands that has no profile and no job."""
        entry = self._wanted()
        if entry is None:
            return None
        self.started.add(entry.id)
        self.notify("profile_beam", round=self.round, ids=[entry.id])
        return ProfileJob(id=f"r{self.round}-profile-{entry.id}", round=self.round, entry=entry, spec=self.state.spec)

    def wanted(self) -> bool:
        """Whether a kernel of the beam as it stands still needs a profile job: the round is not done."""
        return self._wanted() is not None

    def _wanted(self) -> BeamEntry | None:
        if not self.on:
            return None
        for entry in select_beam(self.state.beam, self.results, self.state.config.beam_width):
            if entry.profile is None and entry.id not in self.started and profile_read(entry.kernel, self.proposing):
                return entry
        return None

    def take(self, result: ProfileResult) -> None:
        """Keep a profile job's result."""
        self.done[result.kernel_id] = result

    def apply(self, beam: list[BeamEntry], results: list[TaskResult]) -> tuple[list[BeamEntry], list[TaskResult]]:
        """The beam and the round's results with their profiles; an ok candidate not profiled, not kept or
        kept but read by no proposer, is marked not profiled (and why). Returns the beam and every result (changed ones are new objects)."""
        measured = {i: {"profile": r.profile, "roofline": r.roofline} for i, r in self.done.items()}
        beam = with_profiles(beam, self.done)
        kept = {e.id for e in beam}
        out = []
        for r in results:
            update = measured.get(r.task_id)
            if update is None and r.status == "ok" and r.profile is None and self.on:
                why = NOT_PROFILED if r.task_id not in kept else \
                    NOT_READ if r.kernel and not profile_read(r.kernel, self.proposing) else None  # fmt: skip
                update = {"profile": Profile(available=False, skipped=True, reason=why)} if why else None
            out.append(r.model_copy(update=update) if update is not None else r)
        return beam, out

    def unused(self, beam: list[BeamEntry]) -> int:
        """Profiles taken of kernels the beam did not keep in the end."""
        kept = {e.id for e in beam}
        return sum(kernel_id not in kept for kernel_id in self.done)
