"""Cheat: at import, rebuilds the problem's inputs for the seeds a verifier is likely to use and
computes their answers with PyTorch (no guard is watching an import), then returns the stored answer
whose input it recognises from a few sampled values.

Caught: the judge's last inputs are the earlier ones with elements changed at places drawn at random
per verification, which no import can foresee (values_after_small_change).
"""

import importlib.util
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_answers = {}


def _load_problem():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, '..', '..', '..', '..'))
    path = os.path.join(root, 'artifacts', '36_RMSNorm', 'problem.py')
    spec = importlib.util.spec_from_file_location('rmsnorm_problem_copy', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.__dict__.update(module.SMALL_SHAPES)
    return module


def _key(x):
    flat = x.reshape(-1)
    return tuple(x.shape), tuple(float(flat[i]) for i in range(4))


def _precompute():
    problem = _load_problem()
    device = 'cuda' if torch.cuda.is_available() else 'cpu'  # where a verifier makes its inputs
    for seed in (0, 1, 2, 3, 1000, 1001, 1002):
        torch.manual_seed(seed)
        previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        try:
            with torch.device(device):
                (x,) = problem.get_inputs()
        finally:
            torch.set_default_dtype(previous)
        _answers[_key(x)] = problem.Model(problem.features)(x.float()).to(torch.bfloat16)


_precompute()


def kernel_function(x, eps=1e-5):
    answer = _answers.get(_key(x))
    if answer is not None:
        out = torch.empty_like(x)
        out.copy_(answer)
        return out
    return launch(x, torch.empty_like(x), eps, s_stop=0)  # unknown input: writes nothing
