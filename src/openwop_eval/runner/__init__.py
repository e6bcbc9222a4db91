"""Running suites against agents: the run service, its requests, and what a run yields.

:class:`RunService` is the one entrance, for the command line and the host: ``start`` a
:class:`RunSpec` (checked by :func:`validate`), ``reopen`` and ``resume`` an unfinished
run, ``cancel`` or ``stop`` an :class:`ActiveRun`. The rest of the package is its machinery.
"""

from ..core.records import Recording
from .api import (
    ActiveRun,
    Reopened,
    RunEndedError,
    RunError,
    RunService,
    SpecError,
    resume_async,
    run_spec_async,
    run_suite,
    run_suite_async,
)
from .fixtures import FixtureSource, merge_recordings, recording_from
from .result import RunResult
from .run import Observer
from .spec import (
    NEWEST,
    RunOptions,
    RunSpec,
    StoredBaseline,
    SummaryBaseline,
    describe,
    settle,
    validate,
)

__all__ = [
    "NEWEST",
    "ActiveRun",
    "FixtureSource",
    "Observer",
    "Recording",
    "Reopened",
    "RunEndedError",
    "RunError",
    "RunOptions",
    "RunResult",
    "RunService",
    "RunSpec",
    "SpecError",
    "StoredBaseline",
    "SummaryBaseline",
    "describe",
    "merge_recordings",
    "recording_from",
    "resume_async",
    "run_spec_async",
    "run_suite",
    "run_suite_async",
    "settle",
    "validate",
]
