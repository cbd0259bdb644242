"""Bad: starts a process that leaves its group and session through a double fork, then ends its own
process at once. The detached process must end with the verification all the same."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _detach import detach_sleeper  # noqa: E402


def kernel_function(x, weight):
    detach_sleeper()
    os._exit(0)
