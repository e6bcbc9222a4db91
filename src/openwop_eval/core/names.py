"""Every wire name this project reconstructs from RFC 0244 (trajectories, trials, fixtures).

RFC 0244's text is not public. The names below are this project's reconstruction; keeping
them in one module means a rename to the published spelling is a one-line change here, and
the suite and summary models, the shipped JSON Schemas and the grading core all follow.
Names read from published OpenWOP schemas (``taskId``, ``passScore``, ``gatedScore``…) are
not listed: they are not guesses.
"""

from typing import Final

# --- suite: the suite-wide trials block ------------------------------------------------
TRIALS: Final = "trials"
TRIALS_COUNT: Final = "count"
TRIALS_PASS_RULE: Final = "passRule"
TRIALS_K: Final = "k"

PASS_RULE_MEAN: Final = "mean"
PASS_RULE_ALL: Final = "all"
PASS_RULE_ANY: Final = "any"

# --- suite: tasks[].expected.trajectory ------------------------------------------------
TRAJECTORY: Final = "trajectory"
TRAJ_STEPS: Final = "steps"
TRAJ_STEP_TOOL: Final = "tool"
TRAJ_STEP_ARGS: Final = "args"
TRAJ_ORDER: Final = "order"
TRAJ_FORBIDDEN: Final = "forbidden"
TRAJ_BEFORE: Final = "before"
TRAJ_MAX_CALLS: Final = "maxCalls"
TRAJ_ARGS_MATCH: Final = "argsMatch"

ORDER_EXACT: Final = "exact"
ORDER_IN_ORDER: Final = "in-order"
ORDER_ANY_ORDER: Final = "any-order"

ARGS_SUBSET: Final = "subset"
ARGS_EXACT: Final = "exact"

# Argument matchers: one-key objects inside a step's ``args``.
M_REGEX: Final = "$regex"
M_GTE: Final = "$gte"
M_GT: Final = "$gt"
M_LTE: Final = "$lte"
M_LT: Final = "$lt"
M_IN: Final = "$in"
M_ANY: Final = "$any"
M_SCHEMA: Final = "$schema"
M_LITERAL: Final = "$literal"

# --- suite: tasks[].fixtures -----------------------------------------------------------
FIXTURES_ON_MISS: Final = "onMiss"
ON_MISS_FAIL: Final = "fail"

# --- summary: tasks[].trials -----------------------------------------------------------
SUM_TRIALS: Final = "trials"
SUM_TRIALS_COUNT: Final = "count"
SUM_TRIALS_K: Final = "k"
SUM_MEAN_SCORE: Final = "meanScore"
SUM_PASS_AT_K: Final = "passAtK"
SUM_PASS_HAT_K: Final = "passHatK"
SUM_TRIAL_STATS: Final = "trialStats"
STATS_PASSED: Final = "passed"
STATS_MIN_SCORE: Final = "minScore"
STATS_MAX_SCORE: Final = "maxScore"
STATS_STD_DEV: Final = "stdDev"

# --- adversarial mode (RFC 0081 §D): the finding kinds this project's detectors report ---
# ``safetyFindings: [{kind, severity}]`` and ``safetyFindingCount`` are published names; the
# kinds are this project's (a judge may report kinds of its own, as slugs).
ERROR_INFRASTRUCTURE: Final = "infrastructure"
"""The error kind (``agent.invocation-completed``'s ``x-openwop-eval.error``) of a trial that
could not reach its model endpoint, an MCP server or its judge: it shuts the run's gate."""

FINDING_FORBIDDEN_TOOL: Final = "forbidden-tool"
FINDING_CANARY: Final = "canary-leak"
FINDING_SECRET: Final = "secret-leak"
FINDING_SCAN_INCOMPLETE: Final = "scan-incomplete"
SEVERITIES: Final = ("low", "medium", "high", "critical")
"""The published severity scale, lowest first (its order is the rank)."""

# --- regression mode (RFC 0251) ---------------------------------------------------------
FACET_BASELINE_SELECTION: Final = "baselineSelection"
"""The ``agents.evalSuite`` facet that claims ``evalModes`` / ``baselineRunId``: a boolean."""
REGRESSION_VS_BASELINE: Final = "regressionVsBaseline"
"""On ``eval.completed``: the summary's ``regression.scoreDelta`` (the value is this
project's reading; the digest names the member without a shape)."""

# --- this project's members of the x-openwop-eval extension ----------------------------
EXT: Final = "x-openwop-eval"
"""The extension member this project writes where a closed protocol object admits ``x-``
members: on event payloads, and on a suite and its tasks (gate policies, tags)."""
EXT_FINDINGS: Final = "safetyFindings"
"""On a trial's ``eval.scored``: that trial's findings, ``[{kind, severity}]``."""
EXT_FAIL_ON_SEVERITY: Final = "failOnSeverity"
"""On ``eval.started``: the severity at and above which a finding fails its trial."""
EXT_BASELINE_AGGREGATE: Final = "baselineAggregateScore"
"""On ``eval.started``: the baseline's ``aggregateScore``, so the log alone gives the delta."""
EXT_DIFF_REF: Final = "diffRef"
"""On ``eval.started``: the run diff the summary's ``regression.diffRef`` names."""
EXT_AGENT_VERSION: Final = "agentVersion"
"""On ``eval.started``: the version of the agent the run evaluated, when one is declared
(a host's agent configuration); the deploy gate promotes only that version on the run."""
EXT_GATE: Final = "gate"
"""On ``eval.started``: what the run adds to its suite's gate policy (``requireAllTasks``,
``unknownCost``); on ``eval.completed``: the gate's verdict, ``{passed, rules}`` (the rule
of each policy condition that shut it: codes, never text)."""
EXT_AS_OF: Final = "asOf"
"""On ``eval.started``: the UTC date the run started, on which quarantines are judged."""
EXT_SHARD: Final = "shard"
"""On ``eval.started`` of a shard's run: ``{index, count, suiteDigest, fixturesDigest,
agentId}`` (see :mod:`openwop_eval.log.shards`)."""
ERROR_USER_SIMULATOR: Final = "user-simulator"
"""The error kind of a conversation trial whose simulated user failed: it shuts the run's gate
and is counted apart from the agent's failures."""

# --- events: a conversation trial ------------------------------------------------------
TURN: Final = "turn"
"""The ``x-openwop-eval`` member naming the agent turn (0-based) of a conversation's call or
message event."""
CONVERSATION: Final = "conversation"
"""The ``x-openwop-eval`` member of a conversation trial's ``agent.invocation-completed``:
``{turns, ended: "user" | "max-turns"}``."""
ENDED_BY_USER: Final = "user"
ENDED_AT_MAX_TURNS: Final = "max-turns"
