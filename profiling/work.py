"""Counting a problem's least work (bytes and FLOPs) on the meta device: no memory, no GPU.

The problem module is ours or the user's (trusted, unlike candidates), so this runs in-process.
"""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode

from beamsearch.schema import RunSpec, Work
from workers.problem_instance import instantiate, load_problem_module


def count_work(spec: RunSpec) -> Work:
    """Bytes: every input tensor and model parameter/buffer read once, every output written once,
    in the dtype under test. FLOPs: PyTorch's FLOP counter on the model (counts matmul, convolution
    and attention; elementwise work and reductions count 0, so their floor is set by bytes)."""
    meta = spec.model_copy(update={"device": "meta"})
    instance = instantiate(load_problem_module(meta), meta, seed=0)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = instance.model(*instance.inputs)
    outputs = list(out) if isinstance(out, (tuple, list)) else [out]
    tensors = [t for t in instance.inputs if isinstance(t, torch.Tensor)]
    tensors += list(instance.model.parameters()) + list(instance.model.buffers()) + outputs
    return Work(bytes_moved=sum(t.numel() * t.element_size() for t in tensors), flops=int(counter.get_total_flops()))
