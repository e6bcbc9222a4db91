"""Agent routes: the inventory of runnable agents, their gated deployments, and the
deployment events those record."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import JSONResponse

from ..protocol.deployments import Deployment, Transition, active_on
from ..store import RunRecord
from ..store.host import DeploymentConflictError
from .auth import Principal, require
from .catalog import HostAgent
from .deploy import (
    gate_error,
    gated,
    parse_transition,
    plan_transition,
    regression_refusal,
    transition_of,
)
from .errors import ApiError, not_found
from .inputs import is_agent_id, sequence
from .state import HostState, Settle, host, idempotent, json_body, principal, respond

SCOPES = {
    "promote": "deploy:promote",
    "adjust-canary": "deploy:promote",
    "pause": "deploy:pause",
    "deprecate": "deploy:pause",
    "rollback": "deploy:rollback",
}
EVENTS_PAGE = 100
"""Deployment events per page of ``GET /agents/{agentId}/deployments/events``."""


def _entry(agent: HostAgent) -> dict[str, Any]:
    config = agent.config
    entry: dict[str, Any] = {
        "agentId": agent.agent_id,
        "label": config.label or agent.agent_id,
        "persona": config.label or agent.agent_id,
        "modelClass": config.model_class,
        "toolAllowlist": sorted(agent.live or {}),
        "hasHandoffSchemas": False,
    }
    if config.description:
        entry["description"] = config.description
    return entry


def _agent(request: Request) -> HostAgent:
    agent_id = unquote(request.path_params["agent_id"])
    if not is_agent_id(agent_id):  # no configured agent has such an id (config.py)
        raise not_found("the agent")
    agent = host(request).catalog.agents.get(agent_id)
    if agent is None:
        raise not_found(f"agent {agent_id}")
    return agent


async def list_agents(request: Request) -> JSONResponse:
    require(principal(request), "agents:read")
    agents = host(request).catalog.agents.values()
    return respond(200, {"agents": [_entry(a) for a in agents]})


async def get_agent(request: Request) -> JSONResponse:
    require(principal(request), "agents:read")
    return respond(200, _entry(_agent(request)))


async def list_deployments(request: Request) -> JSONResponse:
    who = principal(request)
    require(who, "agents:read")
    agent = _agent(request)
    store = host(request).host_store
    records = await asyncio.to_thread(store.deployments, who.tenant, agent.agent_id)
    return respond(200, [r.wire() for r in records])


async def list_deployment_events(request: Request) -> JSONResponse:
    """The agent's deployment history in the caller's tenant, oldest first, a page at a
    time after ``afterSequence``: each event as RFC 0082 defines it (content-free)."""
    who = principal(request)
    require(who, "agents:read")
    agent = _agent(request)
    after = sequence(request.query_params.get("afterSequence"), "afterSequence")
    store = host(request).host_store
    entries = await asyncio.to_thread(
        store.history_page, who.tenant, agent.agent_id, after, EVENTS_PAGE + 1
    )
    events = [
        {
            "sequence": entry.sequence,
            "type": entry.event.get("type"),
            "timestamp": entry.recorded_at,
            "payload": entry.event.get("payload", {}),
        }
        for entry in entries[:EVENTS_PAGE]
    ]
    body = {"agentId": agent.agent_id, "events": events, "hasMore": len(entries) > EVENTS_PAGE}
    return respond(200, body)


def _no_regression(
    state: HostState, records: list[Deployment], step: Transition, run: RunRecord | None
) -> None:
    """``require_no_regression`` (in the transition's worker thread: a bootstrap is CPU
    work)."""
    policy = state.config.deployment
    active = active_on(records, step.channel, step.version)
    if not policy.require_no_regression or active is None or run is None:
        return  # nothing in production to regress against
    baseline = state.store.get_run(active.eval_run_id) if active.eval_run_id else None
    if baseline is not None and baseline.tenant != run.tenant:
        baseline = None
    refused = regression_refusal(run, baseline, active, policy)
    if refused is not None:
        raise gate_error(run.run_id, *refused)


async def transition(request: Request) -> JSONResponse:
    who = principal(request)
    agent = _agent(request)
    body = parse_transition(await json_body(request))
    require(who, SCOPES[body["transition"]])  # fail closed before anything is read or written
    state = host(request)

    async def handler(settle: Settle) -> tuple[int, Any]:
        return 200, await asyncio.to_thread(_transition, state, who, agent, body, settle)

    return await idempotent(request, who, f"deploy:{agent.agent_id}", body, handler)


def _transition(
    state: HostState, who: Principal, agent: HostAgent, body: dict[str, Any], settle: Settle
) -> dict[str, Any]:
    """Check the gate and record the transition; in a worker thread (it reads and writes
    the store, and may bootstrap a comparison). Planned on one view of the agent's
    deployments and written only if they are still at it: a lost race is a 409."""
    view = state.host_store.view(who.tenant, agent.agent_id)
    step = transition_of(body, state.config.deployment)
    planned = plan_transition(view.records, step, who.tenant, agent.agent_id)
    if gated(step, planned, state.config.deployment):
        reason = state.gate.refusal(step.eval_run_id, who.tenant, agent.agent_id, step.version)
        if reason is not None:
            raise gate_error(step.eval_run_id, reason)
        run = state.store.get_run(step.eval_run_id) if step.eval_run_id else None
        shut = state.gate.policy_refusal(run) if run is not None else None
        if shut is not None:
            raise gate_error(step.eval_run_id, *shut)
        _no_regression(state, view.records, step, run)
    answer = planned.target.wire()
    try:
        state.host_store.save(view, planned.changes, planned.event, settle(200, answer))
    except DeploymentConflictError:
        raise ApiError(
            409,
            "deployment_conflict",
            f"another change to the deployments of {agent.agent_id} landed first;"
            " read them again and retry",
            {"agentId": agent.agent_id},
        ) from None
    return answer
