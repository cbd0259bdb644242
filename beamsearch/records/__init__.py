"""The shared-data layer: the typed records every other part reads and writes (a run's spec and
config, candidates, verdicts, timings, the beam's state, the searcher's and the LLM's records, the
trace archive) and where a problem's files are. It imports nothing of ours outside itself, so the
harness, the proposers, profiling, the actor and the driver can all use it."""
