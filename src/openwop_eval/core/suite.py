"""The OpenWOP ``AgentEvalSuite`` with this project's RFC 0244 additions, as frozen models.

The models hold a suite that has already passed validation (see ``openwop_eval.files.suites``
and :func:`openwop_eval.core.checks.check_suite`); the shipped JSON Schema is generated
from them, so the two cannot drift. Optional fields may be omitted but are never ``null``.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import AfterValidator, Field, model_validator

from . import names as n
from .closed import Closed, optional_fraction, unique_items
from .gate_policy import MAX_TAGS, SuiteExtension, Tag

SUITE_ID_PATTERN = r"^[a-z0-9.-]+\.evals\.[a-z0-9-]+$"
VERSION_PATTERN = r"^[0-9]+\.[0-9]+\.[0-9]+$"
TASK_ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
AGENT_ID_PATTERN = r"^[A-Za-z0-9._~:-]{1,128}$"

Mode: TypeAlias = Literal["golden", "rubric", "adversarial", "regression", "live-shadow"]
ModelClass: TypeAlias = Literal[
    "reasoning", "writing", "coding", "research", "classification", "general"
]
PassRule: TypeAlias = Literal["mean", "all", "any"]
Order: TypeAlias = Literal["exact", "in-order", "any-order"]
ArgsMatch: TypeAlias = Literal["subset", "exact"]


class Thresholds(Closed):
    """The pass/fail bar of the suite."""

    pass_score: float | None = optional_fraction(
        "passScore", "Minimum gated score for a pass (0–1). Absent: 1.0 (fail closed)."
    )
    max_cost_usd: float | None = Field(
        None,
        alias="maxCostUsd",
        ge=0,
        description="Maximum total cost of a passing run.",
    )
    max_p95_latency_ms: int | None = Field(
        None,
        alias="maxP95LatencyMs",
        ge=0,
        description="Maximum p95 (nearest-rank) per-task latency of a passing run.",
    )


class Trials(Closed):
    """Suite-wide repetition: run each task ``count`` times and decide with ``passRule``."""

    count: int = Field(1, alias=n.TRIALS_COUNT, ge=1, description="Trials per task.")
    pass_rule: PassRule = Field(
        "mean",
        alias=n.TRIALS_PASS_RULE,
        description="mean: task gating score ≥ passScore; all: every trial verdict passed;"
        " any: some trial verdict passed.",
    )
    k: int | None = Field(
        None,
        alias=n.TRIALS_K,
        ge=1,
        description="k of passAtK / passHatK, 1..count. Absent: count.",
    )

    @property
    def effective_k(self) -> int:
        return self.count if self.k is None else self.k


class Step(Closed):
    """A call the agent must make: a tool name or glob, and optionally its arguments."""

    tool: str = Field(alias=n.TRAJ_STEP_TOOL, min_length=1, description="Tool name or glob.")
    args: dict[str, Any] | None = Field(
        None,
        alias=n.TRAJ_STEP_ARGS,
        description="Expected arguments: literals or matcher objects ($regex, $gte, $gt,"
        " $lte, $lt, $in, $any, $schema, $literal).",
    )


class Trajectory(Closed):
    """Constraints on the tool calls of a trial; a failed one gates the trial to 0."""

    steps: tuple[Step, ...] = Field((), alias=n.TRAJ_STEPS)
    order: Order = Field("in-order", alias=n.TRAJ_ORDER)
    forbidden: tuple[Annotated[str, Field(min_length=1)], ...] = Field(
        (), alias=n.TRAJ_FORBIDDEN, description="Tool names or globs that must never be called."
    )
    before: tuple[tuple[str, str], ...] = Field(
        (),
        alias=n.TRAJ_BEFORE,
        description="Pairs [A, B]: if B is called, some call to A comes before the first B.",
    )
    max_calls: int | None = Field(None, alias=n.TRAJ_MAX_CALLS, ge=0)
    args_match: ArgsMatch = Field("subset", alias=n.TRAJ_ARGS_MATCH)


MAX_TURNS: Final = 50
"""The most agent turns (``maxTurns``) a conversation may allow."""
MAX_USER_MESSAGE_CHARS: Final = 20_000
"""Characters of one user message: a scripted one, or a simulated user's reply."""
MAX_PERSONA_CHARS: Final = 8_000
"""Characters of a simulated user's ``persona`` and of its ``goal``, each."""
MAX_STOP_CHARS: Final = 64
DEFAULT_STOP: Final = "###STOP###"

UserMessage: TypeAlias = Annotated[str, Field(min_length=1, max_length=MAX_USER_MESSAGE_CHARS)]


class SimulatedUser(Closed):
    """An LLM plays the user, through the OpenAI-compatible client judges use."""

    model: str = Field(
        pattern=r"^openai:[^\s]*$",
        max_length=200,
        description="openai:MODEL (empty MODEL: the environment's), on the judges' endpoint.",
    )
    persona: str = Field(min_length=1, max_length=MAX_PERSONA_CHARS)
    goal: str = Field(min_length=1, max_length=MAX_PERSONA_CHARS)
    stop: str = Field(
        DEFAULT_STOP,
        min_length=1,
        max_length=MAX_STOP_CHARS,
        description="The simulated user writes it when its goal is met (or cannot be).",
    )
    seed: int | None = Field(
        None, ge=0, le=2**31 - 1, description="Sent as the request's seed, where honoured."
    )


class ConversationUser(Closed):
    """Who answers the agent after each of its replies: a script, or a simulated user."""

    script: tuple[UserMessage, ...] | None = Field(
        None,
        max_length=MAX_TURNS,
        description="The user's turns after the first, in order; the user is done after them.",
    )
    simulator: SimulatedUser | None = None

    @model_validator(mode="after")
    def _one_player(self) -> ConversationUser:
        if (self.script is None) == (self.simulator is None):
            raise ValueError("a conversation user takes exactly one of script or simulator")
        return self


class TurnRule(Closed):
    """What one agent turn must do: the calls made while it answered."""

    trajectory: Trajectory | None = None


class Conversation(Closed):
    """A task played as a conversation with a user, at most ``maxTurns`` agent replies."""

    max_turns: int = Field(
        alias="maxTurns",
        ge=1,
        le=MAX_TURNS,
        description="Agent replies at most; a user who still speaks after the last fails it.",
    )
    user: ConversationUser
    turns: tuple[TurnRule, ...] = Field(
        (),
        max_length=MAX_TURNS,
        description="Per agent turn, 0-based by position ({} for none): its own trajectory.",
    )

    @model_validator(mode="after")
    def _fits(self) -> Conversation:
        if len(self.turns) > self.max_turns:
            raise ValueError(f"turns has {len(self.turns)} rules but maxTurns is {self.max_turns}")
        script = self.user.script
        if script is not None and len(script) >= self.max_turns:
            raise ValueError(
                f"the script has {len(script)} user turns after the first, so the agent needs"
                f" {len(script) + 1} turns, but maxTurns is {self.max_turns}: every trial"
                " would run out of turns"
            )
        return self


class GoldenMatch(Closed):
    strategy: Literal["exact", "contains", "json-match"]
    value: Any = Field(description="The expected value. Opaque.")


class Criterion(Closed):
    criterion: str = Field(min_length=1)
    weight: float = Field(ge=0, le=1)


class Expected(Closed):
    """How a task is scored, and the path its trials must take."""

    kind: Literal["golden", "rubric"]
    match: GoldenMatch | None = None
    rubric: tuple[Criterion, ...] | None = Field(None, min_length=1)
    trajectory: Trajectory | None = Field(None, alias=n.TRAJECTORY)


class ToolResponse(Closed):
    tool: str = Field(min_length=1)
    response: Any = Field(None, description="The canned result. Opaque.")


class Fixtures(Closed):
    """Deterministic stand-ins for live tools and memory."""

    tool_responses: tuple[ToolResponse, ...] | None = Field(None, alias="toolResponses")
    memory_seed: tuple[dict[str, Any], ...] | None = Field(None, alias="memorySeed")
    on_miss: Literal["fail"] = Field(
        "fail",
        alias=n.FIXTURES_ON_MISS,
        description="A call the fixtures cannot answer fails the trial closed.",
    )


class TaskExtension(Closed):
    """This project's members of a task's ``x-openwop-eval``."""

    tags: Annotated[tuple[Tag, ...], AfterValidator(unique_items)] = Field((), max_length=MAX_TAGS)
    conversation: Conversation | None = Field(
        None, description="Play the task as a conversation with a user (docs/conversations.md)."
    )


class Task(Closed):
    task_id: str = Field(alias="taskId", pattern=TASK_ID_PATTERN)
    input: Any = Field(description="The task input. Opaque.")
    expected: Expected
    fixtures: Fixtures | None = None
    extension: TaskExtension | None = Field(None, alias=n.EXT)

    @property
    def tags(self) -> tuple[str, ...]:
        """The task's tags (``x-openwop-eval.tags``), which gate groups select by."""
        return () if self.extension is None else self.extension.tags

    @property
    def trajectory(self) -> Trajectory | None:
        return self.expected.trajectory

    @property
    def conversation(self) -> Conversation | None:
        """How the task is played as a conversation (None: one input, one reply)."""
        return None if self.extension is None else self.extension.conversation


class Suite(Closed):
    """An OpenWOP agent eval suite."""

    suite_id: str = Field(alias="suiteId", pattern=SUITE_ID_PATTERN)
    version: str = Field(pattern=VERSION_PATTERN)
    target_agent_id: str | None = Field(None, alias="targetAgentId", pattern=AGENT_ID_PATTERN)
    modes: Annotated[tuple[Mode, ...], AfterValidator(unique_items)] = Field(
        min_length=1, json_schema_extra={"uniqueItems": True}
    )
    allowed_models: Annotated[tuple[ModelClass, ...], AfterValidator(unique_items)] | None = Field(
        None, alias="allowedModels", json_schema_extra={"uniqueItems": True}
    )
    thresholds: Thresholds | None = None
    trials: Trials | None = Field(None, alias=n.TRIALS)
    tasks: tuple[Task, ...] = Field(min_length=1)
    extension: SuiteExtension | None = Field(None, alias=n.EXT)

    @property
    def pass_score(self) -> float:
        """``thresholds.passScore``, or 1.0 when absent (fail closed)."""
        if self.thresholds is None or self.thresholds.pass_score is None:
            return 1.0
        return self.thresholds.pass_score

    @property
    def trials_or_default(self) -> Trials:
        return self.trials if self.trials is not None else Trials()
