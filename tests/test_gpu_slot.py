"""The verification places (``gpu_slot``): a memory budget shared through lock files, with no CUDA."""

from __future__ import annotations

import threading
import time

from workers.harness.gpu_lock import gpu_slot


def test_places_are_shared_and_none_means_no_budget(tmp_path) -> None:
    lock_dir = str(tmp_path)
    with gpu_slot("cuda", "verify", 1, lock_dir):
        waited: list[float] = []
        other = threading.Thread(target=lambda: waited.append(_take(lock_dir)))
        other.start()
        time.sleep(0.4)
        assert other.is_alive()  # the one place is held: the second job waits
        with gpu_slot("cuda", "verify", 0, lock_dir) as no_wait:  # no budget: never waits, takes no place
            assert no_wait == 0.0
    other.join(10)
    assert not other.is_alive() and waited[0] >= 0.3


def _take(lock_dir: str) -> float:
    with gpu_slot("cuda", "verify", 1, lock_dir) as waited:
        return waited
