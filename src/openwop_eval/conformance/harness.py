"""Black-box RFC 0246 conformance against any OpenWOP host, by URL.

For each host leg: check the capability and the fixture are advertised (else the leg is
``inapplicable``), create an eval run of the fixture with the scripted conformance agent,
follow its events to the end, read its summary, judge them with the witness, and recompute
the verdict independently from the host's own event log — a host whose summary disagrees
with its log fails. The server-free shape leg checks the summaries against the schema.

Each leg ends in one of the OpenWOP dispositions: ``executed-pass`` (every assertion ran and
held; never with zero assertions), ``executed-fail``, ``inapplicable`` (the host does not
advertise what the leg needs — a fact about the host) or ``blocked`` (it advertises it, but
the leg could not exercise it: the host refused our credential). With ``require_behavior``
(strict mode) nothing may pass vacuously: what would be inapplicable or blocked fails.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

import httpx

from ..files.suites import LoadedSuite, parse_suite
from ..log import verify_log
from ..protocol.ids import project
from . import witness
from .digests import discovery_digest
from .ijson import IJsonError, parse_ijson
from .verifier import MAX_DISCOVERY_BYTES
from .witness import Assertion

Disposition = Literal["executed-pass", "executed-fail", "inapplicable", "blocked"]
LEGS = (witness.MEAN_GATED, witness.SUITE_GATED, witness.GATED_FIELDS_SHAPE)
LEG_SCENARIOS = {
    witness.MEAN_GATED: f"openwop-eval conformance: {witness.MEAN_FIXTURE}",
    witness.SUITE_GATED: f"openwop-eval conformance: {witness.SUITE_FIXTURE}",
    witness.GATED_FIELDS_SHAPE: "openwop-eval conformance: gated-fields-shape (server-free)",
}
AGENT_ID = "core.conformance.mock-agent"
SUITE_REFS = {
    witness.SUITE_FIXTURE: "core.conformance.evals.trajectory-gate@1.0.0",
    witness.MEAN_FIXTURE: "core.conformance.evals.trajectory-gate-mean@1.0.0",
}


class HostUnreachableError(RuntimeError):
    """The host did not answer discovery."""


@dataclass
class LegResult:
    leg: str
    result: Disposition
    reason: str | None = None
    assertions: list[Assertion] = field(default_factory=list)
    run_id: str | None = None

    @property
    def detail(self) -> str | None:
        """Why the leg did not pass (every non-pass row carries one); None for a pass."""
        if self.result == "executed-pass":
            return None
        failed = [a for a in self.assertions if not a.passed]
        said = "; ".join(
            f"{a.name}: expected {a.expected!r}, observed {a.observed!r}" for a in failed
        )
        return self.reason or said or f"{self.result} with no reason recorded"

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"leg": self.leg, "result": self.result}
        if self.reason:
            body["reason"] = self.reason
        if self.run_id:
            body["runId"] = self.run_id
        body["assertions"] = [
            {"name": a.name, "passed": a.passed, "expected": a.expected, "observed": a.observed}
            for a in self.assertions
        ]
        return body


def judged(leg: str, assertions: list[Assertion], run_id: str | None = None) -> LegResult:
    """A leg that ran: it passes only when assertions ran and every one held."""
    if not assertions:  # a pass with zero assertions is impossible in every mode
        return LegResult(leg, "executed-fail", "no assertion ran", [], run_id)
    result: Disposition = "executed-pass" if all(a.passed for a in assertions) else "executed-fail"
    return LegResult(leg, result, None, assertions, run_id)


def unexercised(leg: str, result: Disposition, reason: str, strict: bool) -> LegResult:
    """A leg that could not run. Strict mode fails it on the failed observation."""
    if not strict:
        return LegResult(leg, result, reason)
    failure = Assertion(f"strict mode: the leg is exercised ({result})", False, "exercised", reason)
    return LegResult(leg, "executed-fail", f"strict mode: {reason}", [failure])


@dataclass
class ConformanceResult:
    host: str
    discovery_digest: str | None
    legs: list[LegResult]

    discovery: dict[str, Any] = field(default_factory=dict)
    require_behavior: bool = False

    @property
    def passed(self) -> bool:
        return all(leg.result != "executed-fail" for leg in self.legs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "discoveryDigest": self.discovery_digest,
            "requireBehavior": self.require_behavior,
            "passed": self.passed,
            "legs": [leg.as_dict() for leg in self.legs],
        }


def fixture_suite(fixture: str) -> LoadedSuite:
    path = resources.files("openwop_eval.conformance") / "fixtures" / f"{fixture}.suite.json"
    return parse_suite(json.loads(path.read_text("utf-8")), source=fixture)


class Harness:
    def __init__(
        self,
        url: str,
        api_key: str,
        timeout_s: float = 120,
        suite_refs: dict[str, str] | None = None,
        client: httpx.Client | None = None,
        require_behavior: bool = False,
    ) -> None:
        """``client``, when given, carries every request (an in-process app's test client,
        say) and ``url`` only names the host in the result; it is closed with the harness.
        ``require_behavior`` is strict mode: no leg may end inapplicable or blocked."""
        self.url = url.rstrip("/")
        self.strict = require_behavior
        self.timeout_s = timeout_s
        self.refs = {**SUITE_REFS, **(suite_refs or {})}
        self.http = client or httpx.Client(base_url=self.url, timeout=30)
        self.http.headers.update(
            {
                "Authorization": f"Bearer {api_key}",
                "OpenWOP-Version": "2.0",
                "Accept": "application/json",
            }
        )

    def run(self) -> ConformanceResult:
        try:
            response = self.http.get("/.well-known/openwop")
        except httpx.HTTPError as exc:
            raise HostUnreachableError(f"{self.url}: discovery failed: {exc}") from exc
        if response.status_code != 200:
            raise HostUnreachableError(f"{self.url}: discovery answered {response.status_code}")
        try:  # strict: the document is hashed (and signed) as captured, so it must read one way
            discovery = parse_ijson(response.content, max_bytes=MAX_DISCOVERY_BYTES)
        except IJsonError as exc:
            raise HostUnreachableError(f"{self.url}: discovery is not I-JSON: {exc}") from exc
        if not isinstance(discovery, dict):
            raise HostUnreachableError(f"{self.url}: discovery is not a JSON object")
        digest = discovery_digest(discovery)
        agents = discovery.get("agents") if isinstance(discovery.get("agents"), dict) else {}
        eval_suite = agents.get("evalSuite") if isinstance(agents, dict) else None
        listed = discovery.get("fixtures")
        fixtures: list[Any] = listed if isinstance(listed, list) else []
        if not isinstance(eval_suite, dict):
            why = "the host does not advertise agents.evalSuite"
            legs = [unexercised(leg, "inapplicable", why, self.strict) for leg in LEGS]
            return ConformanceResult(self.url, digest, legs, discovery, self.strict)
        summaries: list[dict[str, Any]] = []
        mean = self._host_leg(
            witness.MEAN_GATED,
            witness.MEAN_FIXTURE,
            eval_suite,
            fixtures,
            ("trajectory", "trials"),
            summaries,
        )
        suite = self._host_leg(
            witness.SUITE_GATED,
            witness.SUITE_FIXTURE,
            eval_suite,
            fixtures,
            ("trajectory",),
            summaries,
        )
        legs = [mean, suite, self._shape_leg(summaries)]
        return ConformanceResult(self.url, digest, legs, discovery, self.strict)

    def _host_leg(
        self,
        leg: str,
        fixture: str,
        eval_suite: dict[str, Any],
        fixtures: list[Any],
        facets: tuple[str, ...],
        summaries: list[dict[str, Any]],
    ) -> LegResult:
        missing = [f for f in facets if f not in eval_suite]
        if missing:
            why = f"the host does not advertise agents.evalSuite.{missing[0]}"
            return unexercised(leg, "inapplicable", why, self.strict)
        if fixture not in fixtures:
            why = f"the host does not list the fixture {fixture}"
            return unexercised(leg, "inapplicable", why, self.strict)
        try:
            run_id, events, summary = self._drive(fixture)
        except CredentialRefusedError as exc:
            return unexercised(leg, "blocked", str(exc), self.strict)
        except LegError as exc:
            return LegResult(
                leg,
                "executed-fail",
                str(exc),
                [Assertion(exc.name, False, exc.expected, exc.observed)],
            )
        summaries.append(summary)
        scored = [e.get("payload") or {} for e in events if e.get("type") == "eval.scored"]
        judge = witness.mean_gated if leg == witness.MEAN_GATED else witness.suite_gated
        assertions = judge(scored, summary)
        assertions += _recomputed(fixture_suite(fixture), events, summary)
        return judged(leg, assertions, run_id)

    def _drive(self, fixture: str) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
        body = {"mode": "eval", "evalSuiteRef": self.refs[fixture], "agentId": AGENT_ID}
        created = _admitted(self.http.post("/runs", json=body), "creating the fixture's run")
        if created.status_code not in (200, 201):
            raise LegError("the host creates the fixture's eval run", "201", _said(created))
        run_id = str(created.json().get("runId"))
        path = "/runs/" + project(run_id)
        events: list[dict[str, Any]] = []
        after, deadline = -1, time.monotonic() + self.timeout_s
        while True:
            page = _admitted(
                self.http.get(
                    f"{path}/events/poll", params={"afterSequence": after, "timeout": 10}
                ),
                "reading the run's events",
            )
            if page.status_code != 200:
                raise LegError("the host serves the run's events", "200", _said(page))
            data = page.json()
            events += data.get("events") or []
            after = data.get("lastSequence", after)
            if data.get("isTerminal"):
                break
            if time.monotonic() > deadline:
                raise LegError("the run ends", f"within {self.timeout_s:g} s", data.get("status"))
        summary = _admitted(self.http.get(f"{path}/eval-summary"), "reading the eval summary")
        if summary.status_code != 200:
            raise LegError("the host serves the eval summary", "200", _said(summary))
        return run_id, events, summary.json()

    def _shape_leg(self, summaries: list[dict[str, Any]]) -> LegResult:
        probe = {
            "suiteId": "core.conformance.evals.shape",
            "suiteVersion": "1.0.0",
            "aggregateScore": 1,
            "gatedAggregateScore": 0.5,
            "passed": False,
            "taskCount": 1,
            "passedCount": 0,
            "tasks": [{"taskId": "t", "score": 1, "gatedScore": 0, "passed": False}],
        }
        assertions: list[Assertion] = []
        for summary in [probe, *summaries]:
            assertions += witness.gated_fields_shape(summary)
        return judged(witness.GATED_FIELDS_SHAPE, assertions)

    def close(self) -> None:
        self.http.close()


class LegError(Exception):
    def __init__(self, name: str, expected: Any, observed: Any) -> None:
        super().__init__(f"{name}: expected {expected}, observed {observed}")
        self.name, self.expected, self.observed = name, expected, observed


class CredentialRefusedError(Exception):
    """The host advertises the leg's behaviour but refuses our credential: the leg is blocked."""


def _recomputed(
    suite: LoadedSuite, events: list[dict[str, Any]], summary: dict[str, Any]
) -> list[Assertion]:
    """The auditor's verdict from the host's own event log, against the host's summary."""
    try:
        check = verify_log(suite.suite, events, summary)
    except ValueError as exc:
        return [Assertion("the event log can be graded", False, "gradable", str(exc))]
    return [
        Assertion(
            "the summary agrees with the verdict recomputed from the event log",
            check.agrees,
            "no disagreement",
            [str(m) for m in check.mismatches],
        ),
        Assertion(
            "the event log agrees with itself (eval.scored verdicts, eval.completed)",
            not check.log_problems,
            "no contradiction",
            check.log_problems,
        ),
    ]


def _admitted(response: httpx.Response, doing: str) -> httpx.Response:
    if response.status_code in (401, 403):
        raise CredentialRefusedError(
            f"the host refused the API key when {doing} ({_said(response)})"
        )
    return response


def _said(response: httpx.Response) -> str:
    return f"{response.status_code} {response.text[:200]}"
