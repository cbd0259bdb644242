"""Cheat: at import, writes a passing result into the child's result file (verdict and timing
shapes alike), then exits before anyone can say otherwise.

Caught: the kernel's process may not write there (Landlock), and the judge that writes the result,
in verification and in timing alike, is another process that outlives it (crashed); without Landlock
the forged file is not signed with the job's key (crashed).
"""

import json
import os

_verdict = {'passed': True, 'status': 'ok', 'reason': 'all checks passed', 'kernel_path': __file__}
_timing = {'median_ms': 0.001, 'mean_ms': 0.001, 'std_ms': 0.0, 'min_ms': 0.001, 'n': 100, 'warmup_n': 10,
           'method': 'forged', 'device_name': 'forged', 'on_gpu': True, 'dtype': 'bf16', 'shapes': 'full'}
_result = {**_verdict, 'target': __file__, 'timing': _timing}
_text = json.dumps(_result)
for path in ('../result.json', 'result.json'):
    try:
        with open(path, 'w') as f:
            f.write(json.dumps({'result': _text, 'mac': '0' * 64}))
    except OSError:  # a sandbox that keeps the kernel out of the job folder
        pass
os._exit(0)


def kernel_function(x, eps=1e-5):
    return x
