"""The pure grading core: suite models, matchers, graders, aggregation and the summary.

Nothing here does I/O, reads a clock or draws a random number; the runner, the store, the
host and the command line import it, never the reverse.
"""

from .aggregate import SuiteGrade, decide_suite
from .canonical import JSON, canonical_json, json_equal
from .checks import check_suite
from .errors import GradingError, JudgeProtocolError, OpenwopEvalError, SuiteError
from .grading import TaskGrade, TrialGrade, grade_trial
from .plan import CompiledTask, GradingPlan, plan_suite
from .problems import Problem
from .reasons import Reason
from .records import ToolCall, TrialRecord
from .records_grade import grade, grade_suite, grade_task
from .rubric import CriterionVerdict, Judge, JudgeRequest, check_verdicts, rubric_score
from .suite import Suite, Task
from .summary import EvalSummary, build_summary, summary_dict
from .tally import SuiteTally
from .trajectory import TrajectoryResult, check_trajectory, compile_trajectory

__all__ = [
    "JSON",
    "CompiledTask",
    "CriterionVerdict",
    "EvalSummary",
    "GradingError",
    "GradingPlan",
    "Judge",
    "JudgeProtocolError",
    "JudgeRequest",
    "OpenwopEvalError",
    "Problem",
    "Reason",
    "Suite",
    "SuiteError",
    "SuiteGrade",
    "SuiteTally",
    "Task",
    "TaskGrade",
    "ToolCall",
    "TrajectoryResult",
    "TrialGrade",
    "TrialRecord",
    "build_summary",
    "canonical_json",
    "check_suite",
    "check_trajectory",
    "check_verdicts",
    "compile_trajectory",
    "decide_suite",
    "grade",
    "grade_suite",
    "grade_task",
    "grade_trial",
    "json_equal",
    "plan_suite",
    "rubric_score",
    "summary_dict",
]
