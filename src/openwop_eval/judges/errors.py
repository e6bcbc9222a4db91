"""Errors raised by judges, beyond the core's :class:`JudgeProtocolError`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.errors import InfrastructureError
from ..core.errors import JudgeProtocolError, OpenwopEvalError
from ..core.problems import Problem

if TYPE_CHECKING:
    from .openai import JudgeRecord


class JudgeSpecError(ValueError):
    """A ``--judge`` specification or a judge file that cannot be turned into a judge."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems: list[Problem] = problems or []


class JudgeAttemptsError(JudgeProtocolError):
    """Every attempt to get usable verdicts failed; ``record`` holds what was exchanged."""

    def __init__(self, message: str, record: JudgeRecord) -> None:
        super().__init__(message)
        self.record = record


class JudgeUnreachableError(JudgeAttemptsError, InfrastructureError):
    """Every attempt failed to reach the judge (transport errors, 408, 429, 5xx): the
    infrastructure failed, not the agent; its trial errors on infrastructure."""

    def __init__(self, message: str, record: JudgeRecord, endpoint: str) -> None:
        JudgeAttemptsError.__init__(self, message, record)
        self.endpoint = endpoint


class JudgeHTTPError(OpenwopEvalError, RuntimeError):
    """The judge endpoint refused the request (401, 400…): retrying would not help."""

    def __init__(self, message: str, status: int, record: JudgeRecord) -> None:
        super().__init__(message)
        self.status = status
        self.record = record
