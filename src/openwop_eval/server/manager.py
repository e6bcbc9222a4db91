"""Eval runs inside the host process: start, cancel, recover after a restart, shut down.

Each run executes as an asyncio task over the runner's library API. On start-up every run
the store still holds as unfinished is resumed (only its missing trials run, so no trial is
counted twice) or, when its agent or suite is gone, ended with ``run.failed`` — no run stays
``running`` forever. A graceful shutdown stops runs without ending them, for the next start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from ..runner.api import RunEndedError, RunError, check_runnable, reopen
from ..runner.ending import AGENT_GONE, end_run
from ..runner.fixtures import FixtureSource, Recording
from ..runner.run import Execution, RunOptions, execute_run, prepare_run, resume_run
from ..store import RunRecord, Store
from ..suitefile import LoadedSuite
from .catalog import Catalog, CatalogSuite, HostAgent
from .hub import Hub

log = logging.getLogger("openwop_eval.server")
HOST_AGENT = "host-agent:"
"""The agent_spec prefix of runs the host started: the ones its recovery owns."""


class RunManager:
    def __init__(self, store: Store, catalog: Catalog, hub: Hub) -> None:
        self.store, self.catalog, self.hub = store, catalog, hub
        self.tasks: dict[str, asyncio.Task[Any]] = {}
        self.executions: dict[str, Execution] = {}

    def _execution(
        self, suite: LoadedSuite, agent: HostAgent, tenant: str, fixtures: FixtureSource
    ) -> Execution:
        options = RunOptions(
            concurrency=agent.config.concurrency, timeout_s=agent.config.timeout_s, tenant=tenant
        )
        check_runnable(suite, fixtures, options, agent.judge)
        return Execution(
            self.store,
            suite,
            agent.agent,
            options,
            agent.judge,
            agent.live,
            fixtures,
            on_commit=self.hub.notify,
        )

    def start(
        self,
        tenant: str,
        owner: dict[str, Any],
        suite: CatalogSuite,
        agent: HostAgent,
        extra: Mapping[str, Any],
        recording: Recording | None = None,
    ) -> RunRecord:
        execution = self._execution(suite.loaded, agent, tenant, FixtureSource(recording))
        run = prepare_run(
            execution,
            suite.doc,
            f"host-agent:{agent.agent_id}",
            owner,
            {"evalSuiteRef": suite.ref, **extra},
        )
        self._launch(run.run_id, execution)
        return run

    def _launch(self, run_id: str, execution: Execution, run: RunRecord | None = None) -> None:
        self.executions[run_id] = execution
        self.tasks[run_id] = asyncio.create_task(self._execute(run_id, execution, run))

    async def _execute(self, run_id: str, execution: Execution, run: RunRecord | None) -> None:
        try:
            if run is None:
                await execute_run(execution, run_id)
            else:
                await resume_run(execution, run)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("eval run %s failed", run_id)
        finally:
            self.tasks.pop(run_id, None)
            self.executions.pop(run_id, None)
            self.hub.notify(run_id)

    async def cancel(self, run_id: str) -> None:
        task = self.tasks.get(run_id)
        if task is None:
            return
        task.cancel()
        await asyncio.wait([task], timeout=30)

    def recover(self) -> list[str]:
        """Resume or end every unfinished run; returns the ids it resumed."""
        resumed = []
        for run in self.store.unfinished_runs():
            if run.run_id in self.tasks or not run.agent_spec.startswith(HOST_AGENT):
                continue  # a run of the command line is resumed with `run --resume`
            if self._resume(run):
                resumed.append(run.run_id)
            self.hub.notify(run.run_id)
        return resumed

    def _resume(self, run: RunRecord) -> bool:
        """Resume ``run`` as it was started, through the runner's one resume door, or end it
        as failed; True when it runs again."""
        try:
            reopened = reopen(self.store, run.run_id)
        except RunEndedError as ended:  # reopen has ended it, with its reason
            log.warning("ended eval run %s: %s", run.run_id, ended.failure.message)
            return False
        except RunError:  # finished meanwhile: nothing to resume
            return False
        agent = self.catalog.agents.get(run.agent_id)
        try:
            if agent is None:
                raise RunError("the agent is gone")
            execution = self._execution(reopened.loaded, agent, run.tenant, reopened.fixtures)
        except RunError:  # the agent, or what it needs to run the suite, is gone
            if end_run(self.store, run.run_id, "failed", AGENT_GONE):
                log.warning("ended eval run %s: %s", run.run_id, AGENT_GONE.message)
            return False
        self._launch(run.run_id, execution, reopened.run)
        log.info("resumed eval run %s", run.run_id)
        return True

    async def shutdown(self) -> None:
        """Stop every run without ending it; the next start resumes them."""
        for execution in self.executions.values():
            execution.stopping = True
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=30)
