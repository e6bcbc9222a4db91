"""Run a possibly-hanging call in a child interpreter, so a hang fails the test instead."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def terminates(code: str, timeout: float = 60.0) -> str:
    """Run ``code`` with ``python -c``; its stdout, or a test failure if it runs past ``timeout``.

    The timeout only bounds a hang (the work it guards takes milliseconds); nothing asserts
    how fast it ran.
    """
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {timeout:g}s")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
