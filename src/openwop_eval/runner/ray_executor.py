"""Trials on Ray: each trial plays as one Ray task; the driver alone grades and commits.

Theory of operation. :class:`RayExecutor` is a :class:`~.run.TrialExecutor`: the run's
workers hand it a :class:`~.trial.TrialSetup` and await a :class:`~.trial.PlayedTrial`, as
they would await :func:`~.trial.run_trial`. The executor submits a Ray task that runs
``run_trial`` in a Ray worker — the agent, the tool boundary with its fixtures or live
tools, and the judge of a rubric task — and returns plain data: the calls, the events and
ext of the boundary, the invocation id, what the agent did, the record, the opening event,
the diagnostics and the end stamp. The driver rebuilds the ``PlayedTrial`` around its own setup
and hands it to the run's committer, which grades it and commits it, exactly as for a trial
played in process: where a trial ran never changes its verdict.

The agent, the judge and the live tools travel once per run, through Ray's object store
(pickled by Ray's cloudpickle), and each worker keeps its copy for the trials it plays, on
one event loop of its own; the task, the trial and its fixtures travel with each trial.
Agents and live tools loaded from a ``.py`` file are pickled by value, so the workers need
not import the file; everything else must be importable where the workers run (the
installed ``openwop_eval``, an agent's package). What cannot be pickled is refused when
the run starts (:meth:`RayExecutor.prepare`), before anything is stored.

A worker that dies mid-trial (the process crashed or was killed, its node died, Ray's
memory monitor killed it, or the trial's result was lost with its node) is retried by Ray,
on a fresh worker, up to ``max_retries`` times; past that the trial ends as an error of
that trial — ``"WorkerDiedError: the worker running the trial died …"``, error kind
``exception``, as if the agent had raised. A dead attempt returns nothing, and the driver
commits only what a finished task returned, so no attempt is ever committed twice, nor a
trial counted twice. A task that fails for any other reason (a worker that cannot import
the agent's module, say) is not the agent's doing: the run fails, naming the trial.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

from ..agents.base import Agent, AgentReply, ToolPort, TrialContext
from ..core import CompiledTask
from ..core.rubric import Judge
from ..core.safety import SafetyPolicy
from ..users import UserPlayers
from .result import RunError
from .tools import FixtureBook, LiveTool
from .trial import PlayedTrial, PortableTrial, TrialSetup, run_trial

INSTALL_HINT = "pip install 'openwop-eval[ray]'"
FILE_MODULE_PREFIX = "openwop_eval_agent_"
"""The module names :func:`~openwop_eval.agents.python.load_module_file` gives ``.py``
files (agents and live tools): pickled by value, as the workers cannot import them."""
DEATHS = (
    "WorkerCrashedError",
    "NodeDiedError",
    "LocalRayletDiedError",
    "OutOfMemoryError",
    "ObjectLostError",
    "RayActorError",
)
"""The Ray errors that mean the worker (or its node) died: Ray retries these."""
_SHARED_KEPT = 16
"""Agent bundles kept in the object store per executor (a host's agents, run after run),
and by each worker."""
Bundle = tuple[Agent, Judge | None, Mapping[str, LiveTool] | None]


class WorkerDiedError(RuntimeError):
    """The trial's error when its worker died and Ray's retries were used up."""


class RayTrialError(RuntimeError):
    """A Ray task failed for a reason that is not the agent's: the run fails."""


class RayExecutor:
    """Plays each trial as a Ray task on the cluster at ``address`` (else ``$RAY_ADDRESS``,
    else a local Ray started on first use); connects once per process, and never again when
    Ray is already initialized. ``max_retries``: how many times a trial whose worker died is
    retried; ``num_cpus``: the CPUs each trial reserves (Ray's default, 1; a fraction lets
    more trials of an I/O-bound agent share a CPU, a worker process each)."""

    def __init__(
        self, address: str | None = None, max_retries: int = 1, num_cpus: float = 1.0
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be at least 0")
        if num_cpus <= 0:
            raise ValueError("num_cpus must be more than 0")
        self.address, self.max_retries, self.num_cpus = address, max_retries, num_cpus
        self._ray: Any = None
        self._remote: Any = None
        self._shared: OrderedDict[tuple[int, int, int], tuple[object, object, object, Any]] = (
            OrderedDict()
        )

    def prepare(
        self, agent: Agent, judge: Judge | None, live: Mapping[str, LiveTool] | None
    ) -> None:
        """Connect, and send the run's agent, judge and live tools to the object store;
        raises :class:`RunError` — before the run is stored — when Ray is missing or
        unreachable, or one of them cannot be pickled."""
        self._shared_ref(agent, judge, live)

    async def run(self, setup: TrialSetup) -> PlayedTrial:
        ray = self.connect()
        shared = self._shared_ref(setup.agent, setup.judge, setup.live)
        ref = self._task().remote(  # the bundle's reference boxed: fetched once per worker
            [shared], setup.task, setup.trial, setup.fixtures, setup.timeout_s, setup.safety
        )
        try:
            played: PortableTrial = await ref  # an ObjectRef is awaitable: the loop never blocks
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):  # already finished, or Ray is going away
                ray.cancel(ref)
            raise
        except _deaths(ray) as exc:
            return await self._died(setup, exc)
        except ray.exceptions.RayError as exc:
            cause = getattr(exc, "cause", None) or exc
            lines = str(cause).strip().splitlines() or [""]
            raise RayTrialError(
                f"a Ray worker could not play trial {setup.task.task_id}#{setup.trial}:"
                f" {type(cause).__name__}: {lines[-1][:300]}"
            ) from None
        return rebuild(setup, played)

    async def _died(self, setup: TrialSetup, exc: BaseException) -> PlayedTrial:
        """The trial as an agent failure, played here by a stand-in that only raises (so
        it has the events, record and diagnostics any failed trial has)."""
        tries = self.max_retries
        again = f"after {tries} retr{'y' if tries == 1 else 'ies'}" if tries else "not retried"
        why = f"the worker running the trial died ({type(exc).__name__}; {again})"
        done = await run_trial(replace(setup, agent=_Dead(setup.agent.agent_id, why)))
        return replace(done, setup=setup)

    # --- Ray ----------------------------------------------------------------------------

    def connect(self) -> Any:
        """The ``ray`` module, connected; :class:`RunError` when Ray is missing or the
        cluster cannot be reached."""
        if self._ray is not None:
            return self._ray
        try:
            ray = importlib.import_module("ray")
        except ImportError:
            raise RunError(f"trials on Ray need Ray installed: {INSTALL_HINT}") from None
        if not ray.is_initialized():
            address = self.address or os.environ.get("RAY_ADDRESS") or None
            if address is None and threading.current_thread() is not threading.main_thread():
                # Ray's local processes end with the thread that started them.
                raise RunError(
                    "a local Ray is started from the main thread: call ray.init() there"
                    " first, or give the address of a running cluster"
                )
            try:
                ray.init(address=address)
            except Exception as exc:  # unreachable, refused, a version mismatch
                where = f"at {address}" if address else "(a local instance)"
                first = (str(exc).strip().splitlines() or [""])[0][:300]
                raise RunError(f"cannot connect to Ray {where}: {first}") from None
        self._ray = ray
        return ray

    def _task(self) -> Any:
        if self._remote is None:
            self._remote = self.connect().remote(
                max_retries=self.max_retries, retry_exceptions=False, num_cpus=self.num_cpus
            )(play)
        return self._remote

    def _shared_ref(
        self, agent: Agent, judge: Judge | None, live: Mapping[str, LiveTool] | None
    ) -> Any:
        """The object-store copy of (agent, judge, live tools), put once per bundle."""
        key = (id(agent), id(judge), id(live))
        kept = self._shared.get(key)
        if kept is not None and kept[0] is agent and kept[1] is judge and kept[2] is live:
            self._shared.move_to_end(key)
            return kept[3]
        ray = self.connect()
        pickler = importlib.import_module("ray.cloudpickle")
        for name in [m for m in sys.modules if m.startswith(FILE_MODULE_PREFIX)]:
            pickler.register_pickle_by_value(sys.modules[name])
        for what, value in (("agent", agent), ("judge", judge), ("live tools", live)):
            try:
                pickler.dumps(value)
            except Exception as exc:  # a lock, a socket, a client made at construction
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                raise RunError(
                    f"the {what} cannot be sent to Ray workers: it cannot be pickled"
                    f" ({type(exc).__name__}: {first}); see 'Trials on Ray' in"
                    " docs/scaling.md, or run it in process (--executor local)"
                ) from None
        ref = ray.put((agent, judge, live))
        self._shared[key] = (agent, judge, live, ref)
        while len(self._shared) > _SHARED_KEPT:
            self._shared.popitem(last=False)
        return ref


def _deaths(ray: Any) -> tuple[type[BaseException], ...]:
    errors = ray.exceptions
    return tuple(getattr(errors, name) for name in DEATHS if hasattr(errors, name))


class _Dead:
    """Stands in for the agent of a trial whose worker died: raises its reason."""

    def __init__(self, agent_id: str, why: str) -> None:
        self.agent_id, self.why = agent_id, why

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        raise WorkerDiedError(self.why)


def rebuild(setup: TrialSetup, played: PortableTrial) -> PlayedTrial:
    """The ``PlayedTrial`` of a trial played elsewhere, around the driver's own setup."""
    if (played.record.task_id, played.record.index) != (setup.task.task_id, setup.trial):
        raise RayTrialError(
            f"a Ray task for trial {setup.task.task_id}#{setup.trial} returned another trial"
        )
    return played.rebuild(setup)


# --- in the Ray worker ------------------------------------------------------------------


class _Worker:
    """What a Ray worker process keeps from one trial to the next: one event loop, and its
    copies of the agents it played (as a run in process has one loop and one agent)."""

    loop: ClassVar[asyncio.AbstractEventLoop | None] = None
    bundles: ClassVar[OrderedDict[str, Bundle]] = OrderedDict()
    users: ClassVar[UserPlayers] = UserPlayers()
    """The simulated users' endpoint clients of this worker, on its one loop."""


def play(
    box: list[Any],
    task: CompiledTask,
    trial: int,
    fixtures: FixtureBook | None,
    timeout_s: float | None,
    safety: SafetyPolicy | None,
) -> PortableTrial:
    """The Ray task: one trial. ``box`` holds the reference of the run's (agent, judge,
    live tools) in the object store, fetched by this worker once."""
    if _Worker.loop is None or _Worker.loop.is_closed():
        _Worker.loop = asyncio.new_event_loop()
    loop = _Worker.loop
    agent, judge, live = _bundle(box[0], loop)
    setup = TrialSetup(task, trial, agent, judge, fixtures, live, timeout_s, safety, _Worker.users)
    return PortableTrial.of(loop.run_until_complete(run_trial(setup)))


def _bundle(ref: Any, loop: asyncio.AbstractEventLoop) -> Bundle:
    key = ref.hex()
    kept = _Worker.bundles.get(key)
    if kept is not None:
        _Worker.bundles.move_to_end(key)
        return kept
    bundle: Bundle = importlib.import_module("ray").get(ref)
    _Worker.bundles[key] = bundle
    while len(_Worker.bundles) > _SHARED_KEPT:
        _, (agent, judge, _live) = _Worker.bundles.popitem(last=False)
        loop.run_until_complete(_close(agent, judge))
    return bundle


async def _close(agent: Agent, judge: Judge | None) -> None:
    """Free a copy's threads and connections (the driver closes its own)."""
    close = getattr(agent, "close", None)
    if callable(close):
        close()
    aclose = getattr(judge, "aclose", None)
    if callable(aclose):
        closing = aclose()
        if inspect.isawaitable(closing):
            await closing
