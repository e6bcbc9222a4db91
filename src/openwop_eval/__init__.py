"""openwop-eval: OpenWOP agent evaluation with the RFC 0246 trajectory gate.

The front door of the library: load a suite, grade recorded trials, build the summary.
"""

from .core import (
    CriterionVerdict,
    EvalSummary,
    GradingError,
    Judge,
    JudgeProtocolError,
    JudgeRequest,
    OpenwopEvalError,
    Problem,
    Reason,
    Suite,
    SuiteError,
    SuiteGrade,
    TaskGrade,
    ToolCall,
    TrialGrade,
    TrialRecord,
    build_summary,
    grade,
    grade_suite,
    plan_suite,
    summary_dict,
)
from .files.suites import LoadedSuite, load_suite, parse_suite
from .log import Verification, verify_log
from .runner.api import resume_async, run_suite, run_suite_async
from .runner.result import RunResult
from .runner.run import RunOptions

__version__ = "0.1.0.dev0"

__all__ = [
    "CriterionVerdict",
    "EvalSummary",
    "GradingError",
    "Judge",
    "JudgeProtocolError",
    "JudgeRequest",
    "LoadedSuite",
    "OpenwopEvalError",
    "Problem",
    "Reason",
    "RunOptions",
    "RunResult",
    "Suite",
    "SuiteError",
    "SuiteGrade",
    "TaskGrade",
    "ToolCall",
    "TrialGrade",
    "TrialRecord",
    "Verification",
    "__version__",
    "build_summary",
    "grade",
    "grade_suite",
    "load_suite",
    "parse_suite",
    "plan_suite",
    "resume_async",
    "run_suite",
    "run_suite_async",
    "summary_dict",
    "verify_log",
]
