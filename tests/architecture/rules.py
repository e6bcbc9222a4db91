"""The package's layer rules as data: the layers, and per package or root module what it may
import from the project. docs/architecture.md's layer table is generated from this
(``python -m tests.architecture.table --write``), and a test keeps the two equal.

A rule's key is a package or root module of ``openwop_eval`` (``__init__`` is the front
door); a dotted key (``runner.spec``) is a finer rule for part of a package, and it is a
target of its own: importing it needs its key, not its package's. Every package and root
module must have a rule; the rules may only point to the same or a lower layer, and form no
cycle. When modules move, move their rules with them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """Where a package or module sits, what it is, and which rule keys it may import."""

    layer: str
    what: str
    may_import: frozenset[str] = frozenset()
    pure: bool = False
    """No I/O, clock, randomness or network: only ``PURE_IMPORTS`` from outside the project."""


LAYERS: tuple[tuple[str, str], ...] = (
    ("core", "the grading, pure: the bottom of everything"),
    ("leaves", "small tools that import nothing of the package"),
    ("pure", "data and decisions above the core, pure like it"),
    ("input", "reading untrusted files within the documented limits"),
    ("parts", "what a run is made of: agents, judges, recorded traces"),
    ("store", "the durable store"),
    ("runner", "running suites"),
    ("front door", "the public API, `import openwop_eval`"),
    ("services", "built on the library: conformance, reports, terminal output"),
    ("shells", "thin layers over library calls; nothing else imports them"),
)
"""Bottom to top. A rule imports only its own layer or lower ones."""


def _rule(layer: str, what: str, *may_import: str, pure: bool = False) -> Rule:
    return Rule(layer, what, frozenset(may_import), pure)


_SHELL_DEPS = ("__init__", "agents", "compare", "conformance", "core", "judges", "reports")
"""What the command line and the host build on (each adds its own below)."""

RULES: dict[str, Rule] = {
    "core": _rule(
        "core",
        "suite models, trajectory matcher, golden and rubric scoring, the RFC 0246"
        " aggregation, the summary; bounded work",
        pure=True,
    ),
    "base": _rule(
        "leaves",
        "fast JSON text (orjson) where canonical form is not needed; every documented limit"
        " of untrusted input",
        pure=True,
    ),
    "runtime": _rule(
        "leaves",
        "the one clock of records and events, the garbage collector's settings, a child"
        " process that must not outlive its parent, the event loop (uvloop) of its own threads",
    ),
    "llm": _rule(
        "leaves",
        "the HTTP and retry code of OpenAI-compatible endpoints, shared by the `openai:`"
        " agent and judge",
    ),
    "protocol": _rule(
        "pure",
        "OpenWOP protocol data: ids on the wire, the RFC 0082 deployment state machine as a table",
        "core",
        pure=True,
    ),
    "log": _rule(
        "pure",
        "an eval run's event log as data: event names, trial attribution, strict JSON lines,"
        " a run's terms in `eval.started`, reading a log back, the one reader of a verdict"
        " (`read_verdict`) and the audit built on it, the run diff,"
        " shards and their merge",
        "base",
        "core",
        pure=True,
    ),
    "compare": _rule(
        "pure",
        "two runs' summaries task by task on gated scores: sign test, seeded bootstrap,"
        " verdict, the regression rule",
        "core",
        pure=True,
    ),
    "schemas": _rule("input", "the shipped JSON Schemas, generated from the models", "core"),
    "files": _rule(
        "input",
        "untrusted files: JSON and YAML documents with the line of every value, suite files"
        " into validated suites, a finished run's summary from a summary, report or event-log"
        " file, JSON Schema errors as problems a person can act on",
        "base",
        "core",
        "log",
        "schemas",
    ),
    "agents": _rule(
        "parts",
        "the agent forms: Python, scripted, subprocess, OpenAI-compatible, MCP (the trial's"
        " tools as MCP servers on loopback)",
        "base",
        "core",
        "files",
        "llm",
        "runtime",
    ),
    "judges": _rule("parts", "the rubric judges", "base", "core", "files", "llm"),
    "users": _rule(
        "parts", "who plays a conversation's user: a script, or an LLM simulator", "core", "llm"
    ),
    "traces": _rule(
        "parts",
        "recorded runs (OpenAI messages and Responses, OTLP, Inspect) as replayable traces",
        "agents",
        "base",
        "core",
        "files",
        "users",
    ),
    "store": _rule(
        "store",
        "runs, events, trials, deployments and idempotency on SQLAlchemy Core, migrations,"
        " run leases, run-status transitions",
        "base",
        "core",
        "protocol",
        "runtime",
    ),
    "runner.result": _rule(
        "runner",
        "a run's result, its error and the diagnostics of its trials",
        "core",
    ),
    "runner.stored": _rule(
        "runner",
        "a stored run read back: its result and summary graded from its own log",
        "core",
        "files",
        "log",
        "runner.result",
        "store",
    ),
    "runner.baseline": _rule(
        "runner",
        "baselines of regression runs: the usable runs of a store, a summary of the suite",
        "core",
        "protocol",
        "runner.stored",
        "store",
    ),
    "runner.spec": _rule(
        "runner",
        "a run's spec (suite, agent, fixture source, terms, detectors, options) and its one"
        " check, `validate`, returning located problems",
        "agents",
        "core",
        "files",
        "log",
        "runner.baseline",
        "store",
        "users",
    ),
    "runner": _rule(
        "runner",
        "the run service: it starts a run's spec; trials, the tool boundary, the committer,"
        " the event writer",
        "agents",
        "base",
        "core",
        "files",
        "log",
        "protocol",
        "runner.baseline",
        "runner.result",
        "runner.spec",
        "runner.stored",
        "runtime",
        "store",
        "users",
    ),
    "__init__": _rule(
        "front door",
        "the public API: load a suite, grade, run, verify",
        "core",
        "files",
        "log",
        "runner",
        "runner.result",
    ),
    # Shells and services read `__version__` from the front door.
    "conformance": _rule(
        "services",
        "the RFC 0246 legs against any host by URL, and their evidence",
        "__init__",
        "core",
        "files",
        "log",
        "protocol",
        "schemas",
    ),
    "reports": _rule(
        "services",
        "one versioned report model and its renderings: JSON, Markdown, JUnit XML, the"
        " self-contained HTML pages, the terminal's problems and run table",
        "__init__",
        "base",
        "core",
        "runner.result",
    ),
    "telemetry": _rule(
        "services",
        "OpenTelemetry out: a run's event log as GenAI-convention spans and evaluation"
        " events, exported over OTLP/HTTP",
        "base",
        "core",
        "files",
        "log",
        "store",
    ),
    "pytest_plugin": _rule(
        "shells",
        "suites as pytest tests, each suite one run",
        "agents",
        "core",
        "files",
        "judges",
        "reports",
        "runner",
        "store",
    ),
    "server": _rule(
        "shells",
        "the OpenWOP host and the local viewer on one HTTP stack: routes, replicas, run workers",
        *_SHELL_DEPS,
        "base",
        "files",
        "log",
        "protocol",
        "runner",
        "runner.result",
        "runner.spec",
        "runner.stored",
        "runtime",
        "store",
        "telemetry",
        "users",
    ),
    "cli": _rule(
        "shells",
        "the `openwop-eval` commands",
        *_SHELL_DEPS,
        "base",
        "files",
        "log",
        "runner",
        "runner.spec",
        "runner.stored",
        "runtime",
        "server",
        "store",
        "telemetry",
        "traces",
    ),
    "__main__": _rule("shells", "`python -m openwop_eval`", "cli"),
}

FRONT_DOOR_NAMES = frozenset({"__version__"})
"""All that a module of the package may take from the front door: the rest of it re-exports
lower layers, which a module imports from where they are (and its rule must allow)."""

SHELL_EDGES: dict[tuple[str, str], str] = {
    ("__main__", "cli"): "`python -m openwop_eval` is the command",
    ("cli", "server"): "`openwop-eval serve` starts the host",
}
"""The only shells another shell may import, and why."""

PURE_IMPORTS = frozenset(
    {
        # the standard library's computation, without I/O, clock, randomness or processes
        "__future__",
        "abc",
        "base64",
        "binascii",
        "bisect",
        "collections",
        "contextlib",
        "contextvars",
        "copy",
        "dataclasses",
        "decimal",
        "difflib",
        "enum",
        "fnmatch",
        "fractions",
        "functools",
        "graphlib",
        "hashlib",
        "heapq",
        "itertools",
        "json",
        "keyword",
        "math",
        "numbers",
        "operator",
        "re",
        "statistics",
        "string",
        "struct",
        "textwrap",
        "types",
        "typing",
        "unicodedata",
        # third parties that validate, parse and serialize in memory
        "jsonschema",
        "orjson",
        "pydantic",
        "pydantic_core",
        "re2",
        "referencing",
        "rfc8785",
    }
)
"""All that a pure rule may import from outside the project (the top-level name counts)."""

IMPURE = frozenset(
    {
        "asyncio",
        "builtins",
        "concurrent",
        "datetime",
        "gc",
        "http",
        "importlib",
        "io",
        "logging",
        "multiprocessing",
        "os",
        "pathlib",
        "random",
        "secrets",
        "shutil",
        "signal",
        "socket",
        "sqlite3",
        "subprocess",
        "sys",
        "tempfile",
        "threading",
        "time",
        "urllib",
        "uuid",
        "zoneinfo",
        "httpx",
        "sqlalchemy",
        "starlette",
        "uvicorn",
    }
)
"""I/O, clocks, randomness, processes, the network and dynamic imports: never pure (a check on
``PURE_IMPORTS``, which must not name any of them)."""

PURE_BUILTINS = frozenset({"open", "print", "input", "breakpoint", "exit", "quit"})
"""Builtins that do I/O: a pure rule never calls them."""

PURE_EXCEPTIONS: dict[tuple[str, str], frozenset[str]] = {
    # The bootstrap draws from `random.Random(seed)`, the seed given by the caller, so a
    # comparison is deterministic; the module-level functions (one hidden global state) are not.
    ("compare.stats", "random"): frozenset({"Random"}),
}
"""(module, impure import): the only names the module may use from it."""
