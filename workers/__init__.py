"""What runs on a worker, in three parts that import one way (tests/test_import_direction.py):

- ``harness/``: the sandboxed candidate harness. Verification and timing children, the kernel's runner
  process, shared tensors, the operator guard, the clock, the GPU locks, child processes.
- ``proposers/``: what turns a parent kernel into new ones (the offline optimiser's knob space and
  searcher, a model through the LLM client and the run's LLM service, a replay).
- ``actor/``: the Ray actor and the search task it runs, which ties the two together.
"""
