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

from ..runner.events import RUN_FAILED, EventWriter, pending
from ..runner.run import Execution, Recording, RunOptions, execute_run, prepare_run
from ..store import RunRecord, Store
from ..suitefile import parse_suite
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
        self, suite: Any, agent: HostAgent, tenant: str, recording: Recording | None
    ) -> Execution:
        options = RunOptions(
            concurrency=agent.config.concurrency, timeout_s=agent.config.timeout_s, tenant=tenant
        )
        return Execution(
            self.store,
            suite,
            agent.agent,
            options,
            agent.judge,
            agent.live,
            recording,
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
        execution = self._execution(suite.loaded, agent, tenant, recording)
        run = prepare_run(
            execution,
            suite.doc,
            f"host-agent:{agent.agent_id}",
            owner,
            {"evalSuiteRef": suite.ref, **extra},
        )
        self._launch(run.run_id, execution)
        return run

    def _launch(self, run_id: str, execution: Execution) -> None:
        self.executions[run_id] = execution
        self.tasks[run_id] = asyncio.create_task(self._execute(run_id, execution))

    async def _execute(self, run_id: str, execution: Execution) -> None:
        try:
            await execute_run(execution, run_id)
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
            reason = self._resume(run)
            if reason is None:
                resumed.append(run.run_id)
            else:
                self._fail(run, reason)
        return resumed

    def _resume(self, run: RunRecord) -> str | None:
        agent = self.catalog.agents.get(run.agent_id)
        if agent is None:
            return f"agent {run.agent_id} is no longer configured on this host"
        try:
            loaded = parse_suite(run.suite_doc, source=f"run {run.run_id}")
        except ValueError as exc:
            return f"the run's suite no longer loads: {exc}"
        self.store.set_status(run.run_id, "running")
        self._launch(run.run_id, self._execution(loaded, agent, run.tenant, None))
        log.info("resumed eval run %s", run.run_id)
        return None

    def _fail(self, run: RunRecord, reason: str) -> None:
        def commit(docs: list[dict[str, Any]], trials: list[Any]) -> None:
            self.store.append(run.run_id, docs, trials)

        writer = EventWriter(run.run_id, commit, self.store.last_sequence(run.run_id))
        writer.write([pending(RUN_FAILED, {"error": {"code": "run_abandoned", "message": reason}})])
        writer.flush()
        self.store.set_status(run.run_id, "failed", error=reason)
        self.hub.notify(run.run_id)
        log.warning("ended eval run %s: %s", run.run_id, reason)

    async def shutdown(self) -> None:
        """Stop every run without ending it; the next start resumes them."""
        for execution in self.executions.values():
            execution.stopping = True
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=30)
