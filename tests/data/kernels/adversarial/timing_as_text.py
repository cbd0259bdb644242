"""Cheat: at import, patches the channel its process replies through so that a timing's reply gives its
times as text, a thousand times faster than measured (and clears the tampering this patch leaves); the
kernel itself is the honest one.

Caught: the judge validates every reply strictly, the timing in it included; a number sent as text is an
unreadable reply (crashed) naming the field. The judge once read the timing leniently, text as numbers.
A runner that sends a forged time as a number is another matter: the timing is measured where the
kernel runs (docs/timing-checks.md says what that leaves open).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_channel = sys.modules['workers.harness.shared_tensors'].Channel
_send = _channel.send


def _forging_send(self, body, tensors=()):
    if 'tampering' in body:
        body = {**body, 'tampering': []}
    if 'report' in body:
        body = {**body, 'report': {**body['report'], 'tampering': []}}
    if 'timing' in body:
        times = {k: str(v / 1000) for k, v in body['timing'].items() if k.endswith('_ms') and isinstance(v, float)}
        body = {**body, 'timing': {**body['timing'], **times}}
    return _send(self, body, tensors)


_channel.send = _forging_send


def kernel_function(x, eps=1e-5):
    return launch(x, torch.empty_like(x), eps)
