"""A diagnosis without a model: the roofline class, stated as a bottleneck the tuner can act on."""

from __future__ import annotations

from beamsearch.records.schema import Bottleneck, Diagnosis, Roofline

SUMMARIES = {
    "memory": "memory-bound: move the same bytes faster (wider accesses, more bytes in flight)",
    "compute": "compute-bound: fewer instructions per output, or better use of the SMs",
    "underutilized": "underutilized: too little work in flight; more programs or more independent work each",
}


def rules_diagnosis(roofline: Roofline | None) -> Diagnosis:
    """One bottleneck from the roofline class; none when there is no profile or the class is unknown."""
    if roofline is None or roofline.bottleneck not in SUMMARIES:
        return Diagnosis(bottlenecks=[], source="rules", roofline=roofline)
    reasoning = f"compute SOL {roofline.compute_sol_pct}%, memory SOL {roofline.memory_sol_pct}%"
    bottleneck = Bottleneck(category=roofline.bottleneck, summary=SUMMARIES[roofline.bottleneck], reasoning=reasoning)
    return Diagnosis(bottlenecks=[bottleneck], source="rules", roofline=roofline)
