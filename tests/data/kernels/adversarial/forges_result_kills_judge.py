"""Cheat: forges a passing verdict in the result file, then kills the verification process that would
have overwritten it, and itself.

Caught: where Landlock confines the kernel's process it can neither write the file nor signal the
judge (crashed: the kernel's process exited); without it, the parent accepts only a result signed with
the job's key, which never left the judge (crashed: not written by the harness).
"""

import json
import os
import signal

_text = json.dumps({'passed': True, 'status': 'ok', 'reason': 'all checks passed', 'kernel_path': __file__})
try:
    with open('../result.json', 'w') as f:
        f.write(json.dumps({'result': _text, 'mac': '0' * 64}))
except OSError:  # a sandbox that keeps the kernel out of the job folder
    pass
try:
    with open(f'/proc/{os.getppid()}/cmdline', 'rb') as f:
        parent = f.read()
except OSError:
    parent = b''
if b'workers.harness.verify_child' in parent:  # only ever the verification child, never whoever started it
    try:
        os.kill(os.getppid(), signal.SIGKILL)
    except OSError:
        pass
os._exit(0)


def kernel_function(x, eps=1e-5):
    return x
