"""The deploy gate's evidence: which eval runs may open a promotion (PRODUCT.md, "The
deploy gate's evidence").

A promotion of version V of agent A into a gated state (or past one) needs, for every suite
``[deployment] required_suites`` names for A, that the newest completed eval run of that
suite for A at version V:

- was run by this host under its policy now (it carries this host's seal, evidence.py);
- evaluated A at version V, on the suite exactly as this host serves it, in every mode the
  suite declares, and that suite can fail;
- passed (the RFC 0246 ``passed``, and ``required_pass_score`` where set), and met its
  gate policy (its suite's, with ``[deployment] require_all_tasks`` / ``unknown_cost``).

The run the request names must be one of those newest runs: an older run that passed does
not outvote a newer one that did not. The checks read the store: they run in a worker
thread.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..core import Suite
from ..core.gate import NAMED, gate_verdict
from ..log.event_names import EVAL_STARTED
from ..log.terms import terms_of
from ..runner.stored import stored_verdict
from ..store import RunRecord, Store
from ..store.host import HostStore
from .catalog import Catalog, CatalogSuite
from .config import HostConfig
from .deploy import gate_refusal, unfailable
from .evidence import sealed


@dataclass(frozen=True)
class Gate:
    store: Store
    catalog: Catalog
    config: HostConfig
    key: bytes

    @property
    def host_store(self) -> HostStore:
        return HostStore(self.store)

    def refusal(self, run_id: str | None, tenant: str, agent_id: str, version: str) -> str | None:
        """Why the eval run ``run_id`` does not open the gate for ``version``, or None."""
        if run_id is None:
            return "no evalRunId was given"
        required = self.required(agent_id)
        if not required:
            return (
                f"no suite is required for agent {agent_id} ([deployment] required_suites):"
                " no run can be evidence for its promotion"
            )
        run = self.store.get_run(run_id)
        why = self.evidence_refusal(run, tenant, agent_id, version)
        if why is not None or run is None:
            return why
        suite = required.get((run.suite_id, run.suite_version))
        if suite is None:
            refs = ", ".join(s.ref for s in required.values())
            return (
                f"the eval run ran suite {run.suite_id}@{run.suite_version}, not one required"
                f" for {agent_id}: {refs}"
            )
        for key, other in required.items():
            newest = self.host_store.newest_completed(tenant, key, agent_id, version)
            if newest is None:
                return f"suite {other.ref} has no completed eval run of version {version}"
            if key == (run.suite_id, run.suite_version) and newest.run_id != run.run_id:
                return f"a newer eval run of {other.ref} for version {version} supersedes it"
            if newest.run_id != run.run_id:
                why = self.evidence_refusal(newest, tenant, agent_id, version)
                if why is not None:
                    return f"the newest eval run of {other.ref} for version {version}: {why}"
        return None

    def required(self, agent_id: str) -> dict[tuple[str, str], CatalogSuite]:
        """The served suites whose runs are evidence for the agent, by (id, version)."""
        found: dict[tuple[str, str], CatalogSuite] = {}
        for ref in self.config.deployment.suites_for(agent_id):
            suite = self.catalog.suite(ref)
            if suite is not None:  # checked at start: every required suite is served
                found[(suite.loaded.suite.suite_id, suite.loaded.suite.version)] = suite
        return found

    def evidence_refusal(
        self, run: RunRecord | None, tenant: str, agent_id: str, version: str
    ) -> str | None:
        """Why one run is not evidence for ``version`` (None: it is)."""
        why = gate_refusal(run, tenant, agent_id, self.config.deployment)
        if why is not None or run is None:
            return why
        if run.agent_version != version:
            evaluated = run.agent_version or "an undeclared version"
            return f"the eval run evaluated {evaluated} of {agent_id}, not {version}"
        served = self.catalog.suites.get((run.suite_id, run.suite_version))
        if served is None or served.doc != run.suite_doc:
            return (
                f"the eval run's suite {run.suite_id}@{run.suite_version} is not the one"
                " this host serves under that name"
            )
        suite = served.loaded.suite
        why = unfailable(suite)
        if why is not None:
            return f"suite {served.ref} cannot fail: {why}"
        why = self._modes_refusal(run, suite)
        if why is not None:
            return why
        if not sealed(self.key, self.config, run):
            return (
                "the eval run carries no seal of this host under its current policy:"
                " only runs this host ran are evidence"
            )
        return None

    def policy_refusal(self, run: RunRecord) -> tuple[str, dict[str, Any]] | None:
        """Why the run's gate policy — its suite's, its own terms' and this host's
        ``[deployment]`` additions — keeps the gate shut (None: it does not)."""
        verdict = stored_verdict(self.store, run)
        if verdict is None:
            return "the eval run's suite cannot be read back", {}
        grade, deployment = verdict.grade, self.config.deployment
        terms = replace(
            grade.plan.terms,
            require_all_tasks=grade.plan.terms.require_all_tasks or deployment.require_all_tasks,
            unknown_cost=deployment.unknown_cost or grade.plan.terms.unknown_cost,
        )
        gate = gate_verdict(grade, terms.policy_of(grade.plan.suite), terms.day)
        if gate.passed:
            return None
        details = {
            "policy": [reason.rule for reason in gate.reasons],
            "failedTasks": list(gate.failed_tasks[:NAMED]),
        }
        shut = "; ".join(reason.message for reason in gate.reasons) or "the run did not pass"
        return f"the eval run does not meet its gate policy: {shut}", details

    def _modes_refusal(self, run: RunRecord, suite: Suite) -> str | None:
        started = next(
            (e for e in self.store.events(run.run_id, limit=8) if e.get("type") == EVAL_STARTED),
            None,
        )
        payload = started.get("payload") if started is not None else None
        modes = terms_of(payload if isinstance(payload, dict) else None, []).modes_of(suite)
        left_out = [m for m in suite.modes if m not in modes]
        if left_out:
            return f"the eval run left out modes {', '.join(left_out)} of its suite"
        return None
