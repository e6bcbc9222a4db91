"""A child process that must not outlive its parent: it would go on writing a run beside
the parent's next start."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1


def die_with(parent: int) -> None:
    """Be killed when the process ``parent`` dies, however it dies (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)
