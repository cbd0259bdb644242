"""Cheat: at import, patches the channel its process replies through so that every call's reply is an
error whose status is "ok" (the status of a passed verdict), clearing the tampering this patch leaves;
returns garbage.

Caught: the judge reads every reply as a runner message; an error's status can only be one the runner
may report (runtime_error, compile_failed, bind_failed), so the reply is unreadable (crashed). The judge
once took an error's status as given, and this kernel passed verification.
"""

import sys

import torch

_channel = sys.modules['workers.harness.shared_tensors'].Channel
_send = _channel.send


def _forging_send(self, body, tensors=()):
    if 'tampering' in body:  # the load's reply: this patch was seen
        body = {**body, 'tampering': []}
    if 'report' in body:
        body, tensors = {'error': {'status': 'ok', 'reason': 'all checks passed', 'traceback': ''}}, ()
    return _send(self, body, tensors)


_channel.send = _forging_send


def kernel_function(x, eps=1e-5):
    return torch.zeros_like(x)
