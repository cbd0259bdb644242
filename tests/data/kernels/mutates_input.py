"""Bad: right answer, but computed in place into the input x."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch


def kernel_function(x, weight):
    return launch(x, weight, x)
