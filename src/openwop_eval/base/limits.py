"""Every limit the loader enforces, in one place (documented in ``docs/limits.md``).

A suite is untrusted input: a few hundred bytes of YAML can expand to billions of values,
and a count can ask a run for a billion trials. Each limit is checked before the work it
bounds, and going over one is a located problem (exit 2), never a crash or a hang.
"""

from __future__ import annotations

# --- documents (suite files, scripted agents and judges, suites from the host's store) ------

MAX_FILE_BYTES = 16 * 1024 * 1024
"""Bytes read from one file (16 MiB). Reading stops one byte past it, so ``/dev/zero`` and an
endless pipe end; a larger file is refused without being decoded."""

READ_IDLE_TIMEOUT_S = 10.0
"""Seconds a read may wait for the next byte of a pipe or FIFO before the file is refused;
a writer that holds a FIFO open and never writes cannot hang the loader."""

MAX_DEPTH = 64
"""Nesting levels of arrays and objects (``[]`` is one level, ``[[1]]`` two), YAML aliases
expanded. Checked before any recursive decoding, so deep input cannot exhaust the stack."""

MAX_VALUES = 1_000_000
"""Values in one document (objects, arrays, scalars and object keys each count one), with
YAML aliases expanded; bounds the work of every later walk over the document."""

MAX_YAML_ALIAS_VALUES = 100_000
"""Values that YAML aliases may add by expansion, over the whole document. A few anchors
reused a few times are far below it; an alias bomb (billion laughs) is refused before it
is expanded."""

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer magnitude a document may hold: what a JSON number (an IEEE double)
carries exactly, and all that RFC 8785 canonical JSON, which every run uses, accepts."""

# --- suites ------------------------------------------------------------------------------

MAX_SUITE_ID_CHARS = 200
"""``suiteId``: the store keeps it in a column of this many characters."""

MAX_SUITE_VERSION_CHARS = 40
"""``version``: likewise."""

MAX_TASK_ID_CHARS = 200
"""``tasks[].taskId``: likewise."""

MAX_TASKS = 10_000
"""Tasks in one suite. A larger suite is refused before its tasks are validated."""

MAX_STEPS = 1_000
"""Steps in one task's ``expected.trajectory.steps``."""

MAX_TRIALS_COUNT = 1_000
"""``trials.count``: trials per task."""

MAX_TRIALS_TOTAL = 1_000_000
"""Trials in one run: the number of tasks times ``trials.count``. A run keeps per-task
totals, not its trials, in memory, so this bounds the store and the run's time."""

# --- reporting ---------------------------------------------------------------------------

MAX_PRINTED_PROBLEMS = 50
"""Problems printed by ``validate`` and ``run``; the rest are counted ("… and N more")."""

MAX_TABLE_TASKS = 50
"""Tasks a run's table (and its Markdown summary) lists one by one. A larger suite lists the
tasks that did not pass, the first 50 of them, and says how many it leaves out."""

MAX_JSON_PROBLEMS = 1_000
"""Problems listed by ``validate --json``; ``problemCount`` always gives the total."""

# --- event logs --------------------------------------------------------------------------

MAX_OPEN_TRIALS = 100_000
"""Trials a log may have open (started, not yet scored) at once while it is read. A log
with more drops the oldest, which then counts as not run; this bounds a reader's memory
whatever the log. A runner's log has at most its concurrency open."""

MAX_LOG_PROBLEMS = 1_000
"""Problems kept from reading one log; the rest are counted ("… and N more problems")."""

# --- what an agent sends, per trial (checked before it is stored or graded) -----------------

MAX_OUTPUT_CHARS = 4 * 1024 * 1024
"""An agent's output, as canonical JSON text (4 Mi characters). Over it the trial errors
(``output-too-large``) and the output is dropped."""

MAX_TOOL_ARGS_CHARS = 1024 * 1024
"""One tool call's arguments, as canonical JSON text (1 Mi characters). Over it the call is
refused, not recorded, and the trial errors (``tool-arguments-too-large``)."""

MAX_TOOL_RESULT_CHARS = 4 * 1024 * 1024
"""One tool result, as canonical JSON text (4 Mi characters). Over it the result is
dropped, the call fails, and the trial errors (``tool-result-too-large``)."""

MAX_TRIAL_CONTENT_CHARS = 16 * 1024 * 1024
"""Everything one trial records: every call's arguments and result and the output, as
canonical JSON text (16 Mi characters). Over it the trial errors
(``trial-content-too-large``)."""

MAX_ERROR_CHARS = 2_000
"""The text of an agent's or a live tool's exception kept in a trial's diagnostics; longer
texts are cut (with ``…``)."""

MAX_TRACEBACK_CHARS = 8_000
"""The traceback of an agent's exception kept in a trial's diagnostics (the local report and
HTML page only, never an event): its last frames, at most ``MAX_TRACEBACK_FRAMES`` of them and
this many characters, the end kept (where the exception was raised)."""

MAX_TRACEBACK_FRAMES = 30

MAX_STDERR_CHARS = 4_000
"""The end of a ``cmd:`` or ``mcp:`` agent's stderr kept in a failed trial's diagnostics."""

# --- an ``a2a:URL`` agent (openwop_eval.agents.a2a), per trial --------------------------------

MAX_A2A_RESPONSE_BYTES = 32 * 1024 * 1024
"""One response of an A2A agent — its card, an answer, a whole stream of events (32 MiB).
Reading stops one chunk past it and the trial errors on infrastructure."""

MAX_A2A_STREAM_EVENTS = 10_000
"""Events of one streamed task; more, and the trial errors as the agent's."""

MAX_A2A_POLLS = 1_000
"""``GetTask`` requests for one task still under way; more, and the trial errors as the
agent's (the trial's ``--timeout`` usually ends it first)."""
