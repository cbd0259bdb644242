"""Candidates a minute in round 1 of each run folder, cut or not: from round 1's start to each finish."""
import json, statistics, sys
from pathlib import Path
for run in map(Path, sys.argv[1:]):
    events = [json.loads(l) for l in (run / "events.jsonl").read_text().splitlines() if l.strip()] if (run / "events.jsonl").exists() else []
    t0 = next((e["t"] for e in events if e.get("event") == "round_start" and e.get("round") == 1), None)
    slots = next((e for e in events if e.get("event") == "verify_slots"), {})
    rs = [json.loads(p.read_text()) for p in run.glob("optimization_trace/round_1/candidates/*/result.json")]
    if t0 is None or not rs:
        print(f"{run}: no round-1 candidates"); continue
    ends = sorted(r["finished_at"] for r in rs)
    verdicts = [r["tries"][-1]["verdict"] for r in rs if r.get("tries")]
    alone = sum(v.get("retried_alone", False) for v in verdicts)
    waits = [r["timing"]["lock_wait_s"] for r in rs if r.get("timing")]
    held = [r.get("gpu_measure_s", 0) for r in rs if r.get("timing")]
    child = [v.get("child_s", 0) for v in verdicts]
    best = min((r["timing"]["timing"]["median_ms"] for r in rs if r.get("timing") and r["timing"].get("timing") and r["status"] == "ok"), default=None)
    print(f"{run}: {len(rs)} candidates in {ends[-1]-t0:.1f} s = {len(rs)/(ends[-1]-t0)*60:.1f}/min; retried alone {alone}; "
          f"child s median {statistics.median(child):.2f}; lock wait median {statistics.median(waits) if waits else 0:.2f} s; "
          f"timing held median {statistics.median(held) if held else 0:.2f} s; peak GB {[v.get('gpu_peak_gb') for v in verdicts][:3]}; "
          f"slots {slots.get('verify_per_gpu')}; best in round 1 {best}")
