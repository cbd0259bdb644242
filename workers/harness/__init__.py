"""The sandboxed candidate harness: a kernel's code only ever runs in the child processes started here."""
