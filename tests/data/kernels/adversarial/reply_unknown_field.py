"""Cheat: at import, patches the channel its process replies through to add a field the protocol does
not have ("verdict": "ok") to each call's reply; the kernel itself is the honest one
(and the tampering this patch leaves is cleared).

Caught: the judge validates every reply; a field it does not know is an unreadable reply (crashed)
naming the field, so a runner cannot add to what the judge reads.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_channel = sys.modules['workers.harness.shared_tensors'].Channel
_send = _channel.send


def _forging_send(self, body, tensors=()):
    if 'tampering' in body:  # the load's reply: this patch was seen
        body = {**body, 'tampering': []}
    if 'report' in body:
        body = {**body, 'report': {**body['report'], 'tampering': []}, 'verdict': 'ok'}
    return _send(self, body, tensors)


_channel.send = _forging_send


def kernel_function(x, eps=1e-5):
    return launch(x, torch.empty_like(x), eps)
