"""Cheat: returns its input (free, and right wherever the output equals the input).

Caught: an output that is an input's memory (output_structure).
"""


def kernel_function(x, eps=1e-5):
    return x
