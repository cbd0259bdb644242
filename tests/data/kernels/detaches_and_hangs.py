"""Bad: starts a process that leaves its group and session through a double fork, then never returns.
The process must end when the hung call is stopped."""

import os


def kernel_function(x, weight):
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                os.execve("/bin/sleep", ["sleep", "120"], {**os.environ, "BEAMSEARCH_DETACHED_BY_KERNEL": "1"})
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    while True:
        pass
