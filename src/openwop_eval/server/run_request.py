"""A ``POST /runs`` body into a run's spec: the request's own shape and the host's limits
checked here, the terms by the spec's one check, its problems said in the request's terms."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.plan import RunTerms
from ..core.problems import Problem
from ..core.suite import Suite
from ..runner import ActiveRun, Recording, RunError, merge_recordings
from ..runner.fixtures import merge_listings
from ..runner.spec import NEWEST, BaselineChoice, Names, StoredBaseline, describe
from ..runner.spec import settle as settle_spec
from .auth import Principal
from .catalog import Catalog, CatalogSuite, HostAgent
from .errors import ApiError, validation
from .ids import project
from .inputs import MAX_AGENT_ID_CHARS, MAX_SUITE_REF_CHARS, is_run_id, is_text
from .state import HostState, Settle

CREATE_KEYS = {
    "mode",
    "evalSuiteRef",
    "agentId",
    "evalModes",
    "baselineRunId",
    "fixtureRuns",
    "configurable",
    "tags",
    "metadata",
    "inputs",
    "tenantId",
    "scopeId",
    "residency",
    "callbackUrl",
    "workflowId",
}
"""The members of a run request."""


def create(
    state: HostState, who: Principal, body: Any, settle: Settle, queued: bool = False
) -> tuple[ActiveRun, dict[str, Any]]:
    _check_body(who, body)
    suite, agent = _named(state.catalog, body)
    modes = _check_suite(state.catalog, suite.loaded.suite, agent.agent_id, body)
    recording, listing = _fixture_runs(state, who, body.get("fixtureRuns"), suite.loaded.suite)
    extra = {
        "owner": who.owner(),
        **({"fixtureRuns": body["fixtureRuns"]} if "fixtureRuns" in body else {}),
    }
    terms = RunTerms(modes=modes, fail_on_severity=state.config.adversarial.fail_on_severity)
    asked = _baseline_asked(body.get("baselineRunId"))
    spec = state.manager.spec(who.tenant, who.owner(), suite, agent, extra, recording, terms, asked)
    spec = replace(spec, tool_listing=listing) if listing else spec
    spec, problems = settle_spec(spec, state.store)  # the baseline chosen once, here
    if problems:
        raise _refused(problems, suite.loaded.suite, state.catalog)
    _check_host_modes(state.catalog, suite.loaded.suite, modes or ())
    status = "pending" if queued else "running"  # a queued run waits for a slot
    # kept with the run, or neither:
    spec = replace(spec, on_create=lambda run_id: settle(201, _created(run_id, status)))
    try:
        active = state.manager.prepare(spec, queued)
    except RunError as exc:  # what only starting it finds (an agent Ray cannot take)
        raise validation(f"the run cannot start: {exc}") from None
    return active, _created(active.run_id, status)


def _check_body(who: Principal, body: Any) -> None:
    """The request's own shape: its members, their types and sizes, the caller's tenant."""
    if not isinstance(body, dict):
        raise validation("the body must be a JSON object")
    problems = [f"unknown key {k!r}" for k in body if k not in CREATE_KEYS]
    if body.get("mode") != "eval":
        problems.append('this host runs eval runs only: mode must be "eval"')
    ref, agent_id = body.get("evalSuiteRef"), body.get("agentId")
    if not isinstance(ref, str) or not ref:
        problems.append("evalSuiteRef is required (suiteId@version)")
    elif not is_text(ref, MAX_SUITE_REF_CHARS):
        problems.append(f"evalSuiteRef must be at most {MAX_SUITE_REF_CHARS} printable characters")
    if not isinstance(agent_id, str) or not agent_id:
        problems.append("agentId is required")
    elif not is_text(agent_id, MAX_AGENT_ID_CHARS):
        problems.append(f"agentId must be at most {MAX_AGENT_ID_CHARS} printable characters")
    if "baselineRunId" in body and not isinstance(body["baselineRunId"], str):
        problems.append("baselineRunId must be a run id")
    if body.get("tenantId", who.tenant) != who.tenant:
        raise ApiError(403, "id_tenant_mismatch", "tenantId is not the caller's tenant")
    if problems:
        raise validation("the run request is invalid", {"problems": problems})


def _named(catalog: Catalog, body: dict[str, Any]) -> tuple[CatalogSuite, HostAgent]:
    """The suite and agent the request names, as this host has them."""
    ref, agent_id = str(body["evalSuiteRef"]), str(body["agentId"])
    suite, agent = catalog.suite(ref), catalog.agents.get(agent_id)
    if suite is None:
        raise validation(
            f"no suite {ref!r} on this host",
            {"suites": sorted(s.ref for s in catalog.suites.values())},
        )
    if agent is None:
        raise validation(f"agent {agent_id!r} is not configured on this host")
    return suite, agent


HOST_NAMES: Names = {
    ("baseline",): "baselineRunId",
    ("terms", "modes"): "",
    ("terms", "fail_on_severity"): "the run cannot start: the host's fail_on_severity",
}
"""What the host calls the members of a run's spec; any other problem is said as
``the run cannot start: …``."""


def _refused(problems: list[Problem], suite: Suite, catalog: Catalog) -> ApiError:
    """The first problem of a run's spec, said in the request's terms (content-free where
    the protocol says so: an unusable baseline reads the same whatever the reason)."""
    first = problems[0]
    if first.loc not in HOST_NAMES:
        return validation(f"the run cannot start: {describe(first)}")
    details = None
    if first.loc == ("terms", "modes"):
        details = {"suiteModes": list(suite.modes), "hostModes": catalog.modes}
    return validation(describe(first, HOST_NAMES), details)


def _created(run_id: str, status: str) -> dict[str, Any]:
    """The answer to the ``POST /runs`` that created ``run_id``."""
    path = f"/runs/{project(run_id)}"
    return {
        "runId": run_id,
        "status": status,
        "eventsUrl": f"{path}/events",
        "statusUrl": path,
    }


def _check_suite(
    catalog: Catalog, suite: Suite, agent_id: str, body: dict[str, Any]
) -> tuple[str, ...] | None:
    """Check the suite against the request and the host; returns the modes asked for (None:
    the suite's own)."""
    limit = catalog.config.limits.max_tasks_per_suite
    if len(suite.tasks) > limit:
        raise validation(f"the suite has {len(suite.tasks)} tasks; this host runs at most {limit}")
    if suite.target_agent_id is not None and suite.target_agent_id != agent_id:
        raise validation(f"the suite targets agent {suite.target_agent_id}, not {agent_id}")
    modes = body.get("evalModes")
    if modes is None:
        return None
    if not isinstance(modes, list) or not modes or not all(isinstance(m, str) for m in modes):
        raise validation("evalModes must be a non-empty list of modes")
    return tuple(dict.fromkeys(modes))


def _check_host_modes(catalog: Catalog, suite: Suite, modes: tuple[str, ...]) -> None:
    """The modes asked for (``evalModes``), each one this host runs."""
    bad = [m for m in modes if m not in catalog.modes]
    if bad:
        raise validation(
            f"modes {bad} are not run here",
            {"suiteModes": list(suite.modes), "hostModes": catalog.modes},
        )


def _baseline_asked(run_id: str | None) -> BaselineChoice:
    """``baselineRunId``: a run of the store — none when the id is not one the host mints,
    so an unchecked id never reaches a query —, else the newest usable one."""
    if run_id is None:
        return NEWEST
    return StoredBaseline(run_id if is_run_id(run_id) else None)


def _fixture_runs(
    state: HostState, who: Principal, value: Any, suite: Any
) -> tuple[Recording | None, dict[str, Any]]:
    """The recording of ``fixtureRuns``, and what its runs' MCP servers listed."""
    if value is None:
        return None, {}
    task_ids = {t.task_id for t in suite.tasks}
    refused = validation(
        "fixtureRuns must map task ids of the suite to completed eval runs of"
        " the same suite in your tenant"
    )
    if not isinstance(value, dict) or not value:
        raise refused
    store = state.store
    docs_by_run: dict[str, list[dict[str, Any]]] = {}
    for task_id, run_id in value.items():
        # the task id first: a body of bogus entries costs no query each
        known = task_id in task_ids and is_run_id(run_id)
        run = store.get_run(run_id) if known else None
        if (
            task_id not in task_ids
            or run is None
            or run.tenant != who.tenant
            or run.status != "completed"
            or run.suite_id != suite.suite_id
        ):
            raise refused  # the same answer whatever the reason
        docs_by_run.setdefault(run_id, store.events(run_id))
    recording = merge_recordings((docs_by_run[run_id], [task]) for task, run_id in value.items())
    return recording, merge_listings(docs_by_run.values())
