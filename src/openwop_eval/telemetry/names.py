"""The attribute, event and span names of the export: the OpenTelemetry GenAI semantic
conventions' where one applies, else this project's under ``openwop_eval.``.

GenAI names as in open-telemetry/semantic-conventions-genai, docs/gen-ai/gen-ai-agent-spans.md
(``invoke_agent`` and ``execute_tool`` spans) and docs/gen-ai/gen-ai-events.md
(``gen_ai.evaluation.result``); docs/observability.md lists every one.
"""

from __future__ import annotations

from typing import Final

# GenAI semantic conventions
OPERATION: Final = "gen_ai.operation.name"
INVOKE_AGENT: Final = "invoke_agent"
EXECUTE_TOOL: Final = "execute_tool"
AGENT_ID: Final = "gen_ai.agent.id"
AGENT_NAME: Final = "gen_ai.agent.name"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
"""Opt-in content: a call's arguments, as JSON text."""
TOOL_RESULT: Final = "gen_ai.tool.call.result"
"""Opt-in content: what the call returned, as JSON text."""
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
"""Opt-in content: the trial's final output, as the conventions' output-messages JSON."""
ERROR_TYPE: Final = "error.type"

EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
EVALUATION_NAME: Final = "gen_ai.evaluation.name"
SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
EXPLANATION: Final = "gen_ai.evaluation.explanation"
PASSED: Final = "passed"
FAILED: Final = "failed"
"""The two values of ``gen_ai.evaluation.score.label``."""

CAPTURE_CONTENT: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI instrumentations' opt-in to content; off unless ``true``."""

# This project's
RUN_SPAN: Final = "eval_run"
TASK_SPAN: Final = "eval_task"
EVAL_SUITE: Final = "openwop_eval.suite"
EVAL_TASK: Final = "openwop_eval.task"
EVAL_TRIAL: Final = "openwop_eval.trial"
"""The values of ``gen_ai.evaluation.name``: what was evaluated."""

RUN_ID: Final = "openwop_eval.run.id"
SUITE_ID: Final = "openwop_eval.suite.id"
SUITE_VERSION: Final = "openwop_eval.suite.version"
RUN_PASSED: Final = "openwop_eval.passed"
GATE_PASSED: Final = "openwop_eval.gate.passed"
AGGREGATE: Final = "openwop_eval.aggregate_score"
GATED_AGGREGATE: Final = "openwop_eval.gated_aggregate_score"
TASK_COUNT: Final = "openwop_eval.task_count"
PASSED_COUNT: Final = "openwop_eval.passed_count"
TASK_ID: Final = "openwop_eval.task.id"
TRIAL: Final = "openwop_eval.trial.index"
INVOCATION_ID: Final = "openwop_eval.invocation.id"
OUTCOME: Final = "openwop_eval.outcome"
SCORE: Final = "openwop_eval.score"
GATED_SCORE: Final = "openwop_eval.gated_score"
TURN: Final = "openwop_eval.turn"
MISS: Final = "openwop_eval.tool.miss"
