"""Judges for rubric tasks: a scripted verdicts file, or an OpenAI-compatible chat model."""

from .errors import JudgeAttemptsError, JudgeHTTPError, JudgeSpecError
from .openai import DEFAULT_BASE_URL, JudgeAttempt, JudgeRecord, OpenAIJudge
from .prompt import SYSTEM_PROMPT, build_messages, parse_verdicts, render_value
from .resolve import JUDGE_FORMS, ClosableJudge, resolve_judge
from .scripted import JudgeScript, ScriptedJudge, ScriptedVerdicts, parse_judge_script

__all__ = [
    "DEFAULT_BASE_URL",
    "JUDGE_FORMS",
    "SYSTEM_PROMPT",
    "ClosableJudge",
    "JudgeAttempt",
    "JudgeAttemptsError",
    "JudgeHTTPError",
    "JudgeRecord",
    "JudgeScript",
    "JudgeSpecError",
    "OpenAIJudge",
    "ScriptedJudge",
    "ScriptedVerdicts",
    "build_messages",
    "parse_judge_script",
    "parse_verdicts",
    "render_value",
    "resolve_judge",
]
