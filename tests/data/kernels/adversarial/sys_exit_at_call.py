"""Cheat: sys.exit(0) inside the call.

Caught: SystemExit is an exception raised by kernel_function (runtime_error).
"""

import sys


def kernel_function(x, eps=1e-5):
    sys.exit(0)
