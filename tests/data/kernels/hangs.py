"""Bad: never returns."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def kernel_function(x, weight):
    while True:
        pass
