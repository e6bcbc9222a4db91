"""The exception tree of openwop-eval.

    OpenwopEvalError
    ├── SuiteError (ValueError)        a suite document is invalid; carries every Problem
    ├── GradingError (ValueError)      trial records that do not fit the suite
    └── JudgeProtocolError (ValueError) a judge's verdicts do not fit the rubric

A *failed grade* is never an exception: it is a score with reasons. These are raised only
when the input cannot be graded at all.
"""

from __future__ import annotations

from .problems import Problem, errors_in


class OpenwopEvalError(Exception):
    """Root of every error this package raises on purpose."""


class SuiteError(OpenwopEvalError, ValueError):
    """A suite is invalid. ``problems`` lists all of them (errors and warnings)."""

    def __init__(self, problems: list[Problem], source: str | None = None) -> None:
        self.problems = problems
        self.source = source
        errors = errors_in(problems)
        where = f"{source}: " if source else ""
        lines = "\n".join(f"  {p}" for p in errors)
        super().__init__(f"{where}{len(errors)} problem(s) in the suite:\n{lines}")


class GradingError(OpenwopEvalError, ValueError):
    """Trial records cannot be graded against this suite (unknown task, index out of range…)."""


class JudgeProtocolError(OpenwopEvalError, ValueError):
    """A judge returned verdicts that do not fit the rubric it was asked about."""
