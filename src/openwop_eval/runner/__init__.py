"""Running suites against agents: the run service, its requests, and what a run yields.

:class:`RunService` is the one entrance, for the command line and the host: ``start`` a
:class:`RunRequest`, ``reopen`` and ``resume`` an unfinished run, ``cancel`` or ``stop`` an
:class:`ActiveRun`. The rest of the package is its machinery.
"""

from ..core.records import Recording
from .api import (
    ActiveRun,
    Reopened,
    RunEndedError,
    RunRequest,
    RunService,
    check_runnable,
    resume_async,
    run_suite,
    run_suite_async,
)
from .fixtures import FixtureSource, merge_recordings, recording_from
from .result import RunError, RunResult
from .run import Observer, RunOptions

__all__ = [
    "ActiveRun",
    "FixtureSource",
    "Observer",
    "Recording",
    "Reopened",
    "RunEndedError",
    "RunError",
    "RunOptions",
    "RunRequest",
    "RunResult",
    "RunService",
    "check_runnable",
    "merge_recordings",
    "recording_from",
    "resume_async",
    "run_suite",
    "run_suite_async",
]
