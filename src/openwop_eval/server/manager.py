"""Eval runs inside the host process: start, cancel, recover after a restart, shut down.

Each run executes as an asyncio task through the runner's one door, the run service. On
start-up every run the store still holds as unfinished is resumed (only its missing trials
run, so no trial is counted twice) on the suite and fixtures it was created with, or — when
that cannot be done exactly — ended with ``run.failed``; no run stays ``running`` forever. A
graceful shutdown stops runs without ending them, for the next start.

With ``run_workers`` set, runs play in worker processes instead (workers.py): the host
creates, leases, cancels, stops and recovers them here as ever, and follows their commits.

At most ``max_running_runs`` runs play at once (slots.py); a run created past them waits,
stored as ``pending``, for the next free slot, in the order the runs were created (and
recovered), on an asyncio future: no thread, no trial. A waiting run can be cancelled, and
is stopped (left ``pending``) by a shutdown, for the next start.

With ``executor = "ray"`` in the host configuration every run it starts or resumes plays
its trials as Ray tasks (:mod:`openwop_eval.runner.ray_executor`); the host still grades
and commits them. A run whose recovery cannot reach Ray is left unfinished, for the next
start, rather than ended for a reason that is not its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..core.plan import RunTerms
from ..log.versions import LogVersionError
from ..runner import (
    ActiveRun,
    Recording,
    RunEndedError,
    RunError,
    RunService,
    RunSpec,
)
from ..runner.api import Sealer
from ..runner.ending import AGENT_GONE, AGENT_STALLED, end_run
from ..runner.ray_executor import RayExecutor
from ..runner.spec import BaselineChoice
from ..store import RunRecord, Store, StoreError, StoreUnavailableError
from ..store.leases import HOST_AGENT, Lease
from ..store.status import RunStatusError
from .catalog import Catalog, CatalogSuite, HostAgent
from .exports import RunExports
from .hub import Hub
from .slots import Admission, RunSlots
from .worker_pool import Orphans, RunWorkers, WorkerRun

log = logging.getLogger("openwop_eval.server")

CANCEL_WAIT_S = 10.0
"""How long ``POST /runs/{runId}:cancel`` waits for the run to end before it answers
``cancelling`` (docs/host.md#run-bounds)."""


class Playing(Protocol):
    """A run this host plays, here (an ActiveRun) or in a worker (a WorkerRun)."""

    @property
    def run(self) -> RunRecord: ...

    def stop(self) -> None: ...

    def cancel(self) -> None: ...


@dataclass(eq=False)
class Waiting:
    """A run waiting for a slot (its task awaits one)."""

    run: RunRecord
    task: asyncio.Task[None] | None = None
    stopping: bool = field(default=False)

    def stop(self) -> None:
        """Leave it ``pending`` for the next start."""
        self.stopping = True
        self.cancel()

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()


class RunManager:
    def __init__(
        self,
        store: Store,
        catalog: Catalog,
        hub: Hub,
        lease: Lease | None = None,
        workers: RunWorkers | None = None,
        sealer: Sealer | None = None,
    ) -> None:
        self.store, self.catalog, self.hub, self.workers = store, catalog, hub, workers
        self.service = RunService(store, on_commit=hub.notify, lease=lease, sealer=sealer)
        self.forward_cancel: Callable[[str], object] | None = None
        """Asks the replica that runs a run to cancel it (replicas.py), when not here."""
        self.tasks: dict[str, asyncio.Task[Any]] = {}
        self.active: dict[str, Playing] = {}
        self.cancel_asked: set[str] = set()
        """Runs asked to cancel whose end the store has not recorded yet (it was away):
        when they come back to be resumed, they are ended as cancelled instead."""
        config = catalog.config
        self.executor: RayExecutor | None = (
            RayExecutor(config.ray_address) if config.executor == "ray" else None
        )
        self.exports = RunExports(store, config.telemetry.target(os.environ))
        limits = config.limits
        self.slots = RunSlots(limits.max_running_runs, limits.max_queued_runs)
        if workers is not None:  # a worker that died: its runs go on in a new one
            workers.on_lost = self._orphaned

    def spec(
        self,
        tenant: str,
        owner: dict[str, Any],
        suite: CatalogSuite,
        agent: HostAgent,
        extra: Mapping[str, Any],
        recording: Recording | None = None,
        terms: RunTerms | None = None,
        baseline: BaselineChoice | None = None,
    ) -> RunSpec:
        """The spec of a run of ``suite`` by ``agent`` under ``terms`` (modes, safety bar)
        and ``baseline``: the host's agent wiring, detectors and executor."""
        terms = terms or RunTerms()
        adversarial = "adversarial" in terms.modes_of(suite.loaded.suite)
        return RunSpec(
            suite.loaded,
            agent.agent,
            f"{HOST_AGENT}{agent.agent_id}",
            agent.options(tenant),
            recording,
            agent.judge,
            agent.live,
            terms=terms,
            baseline=baseline,
            safety=self.catalog.config.adversarial.policy() if adversarial else None,
            executor=self.executor,
            owner=owner,
            metadata={"evalSuiteRef": suite.ref, **extra},
            agent_version=agent.version,
            users=self.catalog.config.users.players(),
        )

    def prepare(self, spec: RunSpec, queued: bool = False) -> ActiveRun:
        """Create the run of ``spec``, ready to :meth:`launch`; raises :class:`RunError`
        when it cannot run. ``queued``: it is to wait for a slot, stored ``pending``. It
        writes the store: the host calls it in a worker thread."""
        active = self.service.start(spec)
        if queued:
            moved = self.store.set_status(active.run_id, "pending")
            active.run = replace(active.run, status=moved.status or active.run.status)
        return active

    def launch(self, active: ActiveRun, admission: Admission | None = None) -> None:
        """Play a prepared run when a slot is free, else let it wait for one (called on
        the loop; ``admission``: what :meth:`RunSlots.admit` counted for it)."""
        if admission is not None:
            self.slots.settle(admission)
        workers = self.workers
        ready = workers is None or workers.available  # else a worker is being replaced
        if active.run.status != "pending" and ready and self.slots.try_take():
            self._play(active)
            return
        waiting = Waiting(active.run)
        self.active[active.run_id] = waiting
        waiting.task = self.tasks[active.run_id] = asyncio.create_task(self._wait(active, waiting))

    async def _wait(self, active: ActiveRun, waiting: Waiting) -> None:
        run_id = active.run_id
        try:
            await self.slots.take()
            try:
                if self.workers is not None:  # not in this process while one is replaced
                    await self.workers.available_soon()
                playable = await self._mark_running(active)
            except BaseException:
                self.slots.give()
                raise
        except asyncio.CancelledError:
            self.tasks.pop(run_id, None)
            self.active.pop(run_id, None)
            if not waiting.stopping:  # cancelled before it played: ended as cancelled
                await asyncio.to_thread(end_run, self.store, run_id, "cancelled")
            self.hub.notify(run_id)
            return
        if playable:
            self._play(active)
        else:  # it ended while it waited (another writer ended it): nothing to play
            self.slots.give()
            self.tasks.pop(run_id, None)
            self.active.pop(run_id, None)
        self.hub.notify(run_id)

    async def _mark_running(self, active: ActiveRun) -> bool:
        """Whether a run that waited for a slot may play: marked running here (in workers,
        the worker marks it as it takes it); False when it has ended meanwhile."""
        if active.run.status != "pending" or self._in_workers:
            return True
        moved = await asyncio.to_thread(self.store.set_status, active.run_id, "running")
        return moved.took

    @property
    def _in_workers(self) -> bool:
        """Runs play in workers (which mark a run running as they take it)."""
        return self.workers is not None and self.workers.available

    def _play(self, active: ActiveRun) -> None:
        """Play a run that holds a slot: in a worker when there are workers, else as a task
        of the event loop."""
        if self.workers is not None and self.workers.available:
            playing = self.workers.launch(active.run)
            self.active[active.run_id] = playing
            self.tasks[active.run_id] = asyncio.create_task(self._follow(playing))
            return
        self.active[active.run_id] = active
        self.tasks[active.run_id] = asyncio.create_task(self._execute(active))

    async def _follow(self, playing: WorkerRun) -> None:
        """Until the worker says the run has ended (or the worker is gone)."""
        try:
            await playing.ended
        finally:
            self.slots.give()
            self.tasks.pop(playing.run_id, None)
            self.active.pop(playing.run_id, None)
            self.hub.notify(playing.run_id)
            self.exports.ended(playing.run_id)

    def _orphaned(self, orphans: Orphans) -> None:
        task = asyncio.ensure_future(self._take_over(orphans))
        task.add_done_callback(self._recovered)

    async def _take_over(self, orphans: Orphans) -> list[str]:
        """End what a dead worker's runs asked for — the run whose agent stalled it, the
        runs being cancelled — and resume the others."""
        ending = dict.fromkeys(orphans.cancelled, "cancelled")
        if orphans.stalled in orphans.run_ids:
            ending.setdefault(orphans.stalled, "failed")
        if ending:
            await asyncio.to_thread(self._end, ending)
        return await self.recover(set(orphans.run_ids) - set(ending))

    def _end(self, ending: dict[str, str]) -> None:
        for run_id, status in ending.items():
            if status == "cancelled":
                end_run(self.store, run_id, "cancelled")
            elif self.service.fail(run_id, AGENT_STALLED):
                log.warning("ended eval run %s: %s", run_id, AGENT_STALLED.message)
            self.hub.notify(run_id)
            self.exports.ended(run_id)

    @staticmethod
    def _recovered(task: asyncio.Future[list[str]]) -> None:
        if not task.cancelled() and task.exception() is not None:  # the next start tries again
            log.error("resuming a lost run worker's runs failed: %s", task.exception())

    async def _execute(self, active: ActiveRun) -> None:
        try:
            await active.execute()
        except asyncio.CancelledError:
            pass
        except StoreUnavailableError:  # not the run's failure: it is open, to resume
            log.warning("eval run %s is left open: the store is unavailable", active.run_id)
        except LogVersionError as exc:  # a newer version wrote it: left open, for one
            log.warning("eval run %s is left open: %s", active.run_id, exc)
        except Exception:
            log.exception("eval run %s failed", active.run_id)
        finally:
            self.slots.give()
            self.tasks.pop(active.run_id, None)
            self.active.pop(active.run_id, None)
            self.hub.notify(active.run_id)
            self.exports.ended(active.run_id)

    async def cancel(self, run_id: str) -> None:
        active, task = self.active.get(run_id), self.tasks.get(run_id)
        if active is None or task is None:
            if self.forward_cancel is not None:
                await asyncio.to_thread(self.forward_cancel, run_id)
            return
        self.cancel_asked.add(run_id)
        active.cancel()
        await asyncio.wait([task], timeout=CANCEL_WAIT_S)
        try:
            after = await asyncio.to_thread(self.store.get_run, run_id, False)
        except StoreUnavailableError:
            return  # kept asked: the run is ended as cancelled when it comes back
        if after is not None and after.terminal:
            self.cancel_asked.discard(run_id)

    async def recover(self, only: set[str] | None = None) -> list[str]:
        """Resume or end every unfinished run (``only`` these: a replica's, whose leases it
        holds); returns the ids it resumed. The store work is done in a worker thread; the
        resumed runs' tasks start on the loop."""
        if self.executor is not None:
            try:  # here, on the loop's thread: a local Ray lives as long as its starter
                self.executor.connect()
            except RunError as exc:
                log.warning("trials on Ray cannot run yet: %s", exc)
        free = 0 if self.slots.waiting else self.slots.running - self.slots.held
        ready = await asyncio.to_thread(self._recoverable, only, free)
        for active in ready:  # in the order they were created: the first take the slots
            self.launch(active)
            log.info("resumed eval run %s", active.run_id)
        return [active.run_id for active in ready]

    def _recoverable(self, only: set[str] | None, free: int) -> list[ActiveRun]:
        """The runs to resume, oldest first; those past the ``free`` slots stay
        ``pending``, to wait for one."""
        ready: list[ActiveRun] = []
        unfinished = sorted(self.store.unfinished_runs(), key=lambda r: (r.created_at, r.run_id))
        for run in unfinished:
            if run.run_id in self.tasks or not run.agent_spec.startswith(HOST_AGENT):
                continue  # a run of the command line is resumed with `run --resume`
            if only is not None and run.run_id not in only:
                continue  # another replica's
            active = self._resume(run)
            if active is not None and len(ready) >= free:  # no slot for it: it waits
                if self.store.set_status(run.run_id, "pending").took:
                    active.run = replace(active.run, status="pending")
                else:  # it has ended meanwhile
                    active = None
            if active is not None:
                ready.append(active)
            self.hub.notify(run.run_id)
        return ready

    def _resume(self, run: RunRecord) -> ActiveRun | None:
        """Ready ``run`` to go on as it was started, or end it as failed (None) — or as
        cancelled, when it was asked to cancel while the store could not record that."""
        if run.run_id in self.cancel_asked:
            with contextlib.suppress(StoreError):  # still away: the next recovery tries again
                if end_run(self.store, run.run_id, "cancelled"):
                    self.cancel_asked.discard(run.run_id)
            return None
        try:
            reopened = self.service.reopen(run.run_id, self.catalog.known)
        except RunEndedError as ended:  # reopen has ended it, with its reason
            log.warning("ended eval run %s: %s", run.run_id, ended.failure.message)
            return None
        except RunError:  # finished meanwhile: nothing to resume
            return None
        if self.executor is not None:
            try:  # Ray missing or unreachable is the host's trouble, not the run's
                self.executor.connect()
            except RunError as exc:
                log.warning("left eval run %s for the next start: %s", run.run_id, exc)
                return None
        agent = self.catalog.agents.get(run.agent_id)
        try:
            if agent is None:
                raise RunError("the agent is gone")
            options = agent.options(run.tenant)
            active = self.service.resume(
                reopened, agent.agent, options, agent.judge, agent.live, executor=self.executor
            )
        except RunStatusError:  # it has ended since it was read: nothing to resume
            return None
        except RunError:  # the agent, or what it needs to run the suite, is gone
            if self.service.fail(run.run_id, AGENT_GONE):
                log.warning("ended eval run %s: %s", run.run_id, AGENT_GONE.message)
            return None
        return active

    async def shutdown(self) -> None:
        """Stop every run without ending it; the next start resumes them."""
        for active in self.active.values():
            active.stop()
        tasks = list(self.tasks.values())
        if tasks:
            await asyncio.wait(tasks, timeout=30)
        await asyncio.to_thread(self.exports.close)
