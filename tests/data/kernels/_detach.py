"""Shared by the test kernels that detach a process: a double fork, so the process is in a session of its
own and its parent is gone. It only sleeps, marked in its environment for the tests that look for it
(``tests/conftest.py``'s ``detached_left``)."""

import os

MARK = "BEAMSEARCH_DETACHED_BY_KERNEL"


def detach_sleeper() -> None:
    pid = os.fork()
    if pid == 0:  # the go-between: a session of its own, a child, and gone
        try:
            os.setsid()
            if os.fork() == 0:
                os.execve("/bin/sleep", ["sleep", "120"], {**os.environ, MARK: "1"})
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
