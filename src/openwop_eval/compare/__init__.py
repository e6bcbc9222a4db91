"""Comparing two runs of one suite: paired per-task deltas on the RFC 0246 gated values, an
exact sign test on task verdicts, a seeded bootstrap interval, a verdict and the regression
rule (see docs/compare.md).

Pure analysis: it reads summaries given to it, never a file, store or clock. Its only
randomness is ``random.Random(seed)``, so a comparison is deterministic for a given seed.
"""

from .comparison import (
    MIN_TASKS,
    Bucket,
    Comparison,
    SignTest,
    TaskDelta,
    Verdict,
    compare,
    regression_reasons,
)
from .output import COMPARISON_VERSION, comparison_dict, comparison_markdown
from .sides import MAX_SIDE_TASKS, CompareInputError, Side, TaskSide, read_side
from .stats import MAX_BOOTSTRAP_DRAWS, MAX_RESAMPLES, Interval, sign_test_p

__all__ = [
    "COMPARISON_VERSION",
    "MAX_BOOTSTRAP_DRAWS",
    "MAX_RESAMPLES",
    "MAX_SIDE_TASKS",
    "MIN_TASKS",
    "Bucket",
    "CompareInputError",
    "Comparison",
    "Interval",
    "Side",
    "SignTest",
    "TaskDelta",
    "TaskSide",
    "Verdict",
    "compare",
    "comparison_dict",
    "comparison_markdown",
    "read_side",
    "regression_reasons",
    "sign_test_p",
]
