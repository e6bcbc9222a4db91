"""Every host route, fuzzed in process on SQLite and PostgreSQL: hostile ids in the path,
query parameters, headers and bodies never get a 5xx, every refusal is the error envelope,
every request is answered within a bound, and no hostile request opens the eval gate.

The long, by-hand version against a real `serve` process is fuzz/fuzz_host.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.routing import Route

from openwop_eval.protocol.deployments import lands_gated
from openwop_eval.protocol.ids import project
from openwop_eval.server import inputs
from openwop_eval.server.app import ROUTES
from openwop_eval.server.errors import ApiError
from openwop_eval.server.inputs import QUERY_PARAMETERS
from tests.server.inprocess import CAREFUL, GATE_SUITE, MOCK, REFUNDS_SUITE, AppHost

FUZZ = settings(
    max_examples=int(os.environ.get("OPENWOP_EVAL_FUZZ_EXAMPLES", "120")),  # per test and database
    deadline=None,  # a 1 MB body or a 1 s long poll is slow, not wrong
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
KEYS = ["acme-key", "globex-key", "acme-read-only"]
ENVELOPE_KEYS = {"error", "message", "details"}


class Pool:
    """Real run ids to aim hostile requests at: a passing run (the only one that may open
    the gate, for its agent and tenant), a completed run that did not pass, another
    tenant's passing run."""

    def __init__(self, app: AppHost) -> None:
        self.passing = app.run_to_end(REFUNDS_SUITE, CAREFUL)
        self.failing = app.run_to_end(GATE_SUITE, MOCK)
        self.foreign = app.run_to_end(REFUNDS_SUITE, CAREFUL, key="globex-key")
        self.ids = [self.passing, self.failing, self.foreign]
        self.passing_in = {"acme": self.passing, "globex": self.foreign}


@pytest.fixture(scope="module")
def pool(app: AppHost) -> Pool:
    return Pool(app)


# --- strategies -----------------------------------------------------------------------------

ANY_CHAR = st.characters(exclude_categories=())  # surrogates, NUL and controls included
SPECIAL = ["", "\x00", "~", "~0", "~ZZ", "~2F", "%", "%00", "%2F", "/", "..", "\ud800", " ", "\n"]
# Long runs stay under httpx's 64 KiB URL once percent-encoded; every limit is far below.
LONG = st.builds(lambda c, n: c * n, st.sampled_from("a0~/%é"), st.sampled_from([101, 263, 3000]))
TEXT = st.one_of(st.text(ANY_CHAR, max_size=24), st.sampled_from(SPECIAL), LONG)
EDGES = ["", "-1", "0", str(2**31 - 1), str(2**31), str(2**63 - 1), str(2**63), "-2", "nan"]
NUMBER_TEXT = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(EDGES),
    st.sampled_from(["1e400", "1.5", " 1", "1_000", "0x10", "\u0661", "+1", "9" * 4400, "%00"]),
    TEXT,
)


def url_part(text: str) -> str:
    """Percent-encode everything, surrogates included, so the host sees exactly these bytes."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def raw_part(text: str) -> str:
    """Keep ``~`` and ``%`` as they are: escape sequences, valid or not, reach the host."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="~%")


def run_segments(pool: Pool) -> st.SearchStrategy[str]:
    known = st.sampled_from(pool.ids)
    return st.one_of(
        known.map(project),
        known.map(lambda r: r.replace("/", "%2F")),
        st.binary(max_size=40).map(lambda b: "acme~2F" + "".join(f"~{x:02X}" for x in b)),
        st.binary(max_size=40).map(lambda b: "".join(f"~{x:02X}" for x in b)),
        TEXT.map(raw_part),
        TEXT.map(lambda t: project(t.encode("utf-8", "surrogatepass").decode("latin-1"))),
        st.builds(lambda r, t: project(r) + raw_part(t), known, TEXT),
    ).filter(bool)


AGENT_SEGMENTS = st.one_of(
    st.sampled_from([MOCK, CAREFUL, "nobody"]),
    TEXT.map(url_part),
    TEXT.map(raw_part),
).filter(bool)
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=16,
)


def encoded(value: Any) -> bytes:
    # ensure_ascii escapes lone surrogates; allow_nan writes NaN and Infinity literals
    return json.dumps(value, ensure_ascii=True, allow_nan=True).encode()


def mutated(
    base: dict[str, Any], fields: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[dict[str, Any]]:
    """A valid body with up to three of its fields replaced, added or dropped: deep enough
    into the handler that some requests succeed and the rest fail late."""
    names = sorted({*base, *fields})

    def apply(changes: list[tuple[str, Any, bool]]) -> dict[str, Any]:
        body = dict(base)
        for name, value, drop in changes:
            if drop:
                body.pop(name, None)
            else:
                body[name] = value
        return body

    change = st.sampled_from(names).flatmap(
        lambda n: st.tuples(st.just(n), fields.get(n, JSON_VALUES), st.booleans())
    )
    return st.lists(change, max_size=3).map(apply)


def create_bodies(pool: Pool) -> st.SearchStrategy[dict[str, Any]]:
    base = {"mode": "eval", "evalSuiteRef": GATE_SUITE, "agentId": MOCK}
    runs = st.sampled_from(pool.ids) | TEXT
    fields = {
        "mode": st.sampled_from(["eval", "workflow"]) | JSON_VALUES,
        "evalSuiteRef": st.sampled_from([GATE_SUITE, REFUNDS_SUITE, "nope@1.0.0"]) | JSON_VALUES,
        "agentId": st.sampled_from([MOCK, CAREFUL]) | JSON_VALUES,
        "evalModes": st.lists(st.sampled_from(["golden", "rubric"]) | TEXT) | JSON_VALUES,
        "fixtureRuns": st.dictionaries(st.sampled_from(["matched-path", "wrong-path"]), runs)
        | JSON_VALUES,
        "tenantId": st.sampled_from(["acme", "globex"]) | TEXT,
        "metadata": JSON_VALUES,
        "tags": JSON_VALUES,
    }
    return mutated(base, fields)


def transition_bodies(pool: Pool) -> st.SearchStrategy[dict[str, Any]]:
    base = {"version": "1.0.0", "transition": "promote", "toState": "test"}
    states = st.sampled_from(["test", "staged", "active", "paused", "draft", "deprecated"])
    fields = {
        "version": st.sampled_from(["1.0.0", "2.0.0"]) | JSON_VALUES,
        "transition": st.sampled_from(["promote", "pause", "deprecate", "rollback"]) | TEXT,
        "toState": states | JSON_VALUES,
        "channel": st.sampled_from(["stable"]) | JSON_VALUES,
        "evalRunId": st.sampled_from(pool.ids) | st.sampled_from(pool.ids).map(project) | TEXT,
        "reason": JSON_VALUES,
        "canaryPercent": JSON_VALUES,
    }
    return mutated(base, fields)


def repeated(body: dict[str, Any], value: Any) -> bytes:
    """The body with its first key given again, with ``value``, at the end."""
    first = next(iter(body))
    return encoded(body)[:-1] + b", " + encoded(first) + b": " + encoded(value) + b"}"


def repeating_bodies(pool: Pool) -> st.SearchStrategy[bytes]:
    """A run request or a transition, one the host decodes, whose first key comes twice."""
    return st.builds(
        repeated,
        st.one_of(create_bodies(pool), transition_bodies(pool)).filter(decodes),
        st.sampled_from([*pool.ids, MOCK, CAREFUL, "active", None, 1, [], {}]),
    )


def decodes(body: dict[str, Any]) -> bool:
    try:
        return bool(inputs.parse_json(encoded(body)))
    except ApiError:
        return False


def bodies(pool: Pool) -> st.SearchStrategy[bytes | None]:
    deep = st.builds(
        lambda opener, n: opener * n + (b"]" if opener == b"[" else b"}") * n,
        st.sampled_from([b"[", b'{"a":']),
        st.sampled_from([64, 65, 1_000, 100_000]),  # at the limit, over it, over the stack
    )
    return st.one_of(
        st.none(),
        st.just(b""),
        create_bodies(pool).map(encoded),
        transition_bodies(pool).map(encoded),
        repeating_bodies(pool),
        JSON_VALUES.map(encoded),
        deep,
        st.binary(max_size=200),
        st.sampled_from([b"NaN", b"[Infinity]", b'{"a": 1e400}', b"\xff\xfe{}", b"{", b"nul"]),
    )


HEADER_VALUES = st.one_of(TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary())


def headers(pool: Pool) -> st.SearchStrategy[list[tuple[bytes, bytes]]]:
    auth = st.one_of(
        st.sampled_from(KEYS).map(lambda k: f"Bearer {k}".encode()),
        st.sampled_from([b"", b"Bearer", b"Bearer ", b"Basic YWNtZTprZXk=", b"bearer acme-key"]),
        HEADER_VALUES.map(lambda v: b"Bearer " + v),
    )
    optional = {
        b"Idempotency-Key": st.sampled_from([b"k-1", b"k-2"]) | HEADER_VALUES,
        b"Last-Event-ID": NUMBER_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")),
        b"Accept": st.sampled_from([b"text/event-stream", b"application/json", b"*/*"])
        | HEADER_VALUES,
        b"Content-Type": st.sampled_from(
            [b"application/json", b"text/plain", b"application/x-www-form-urlencoded"]
        )
        | HEADER_VALUES,
        b"OpenWOP-Version": st.sampled_from([b"2.0", b"2", b"3.0"]) | HEADER_VALUES,
        b"If-None-Match": HEADER_VALUES,
    }
    return st.fixed_dictionaries({b"Authorization": auth}, optional=optional).map(
        lambda h: [(k, v) for k, v in h.items() if v is not None]
    )


QUERY_NAMES = list(QUERY_PARAMETERS)
QUERIES = st.dictionaries(st.sampled_from(QUERY_NAMES) | TEXT, NUMBER_TEXT | TEXT, max_size=3).map(
    lambda q: "&".join(f"{url_part(k)}={url_part(v)}" for k, v in q.items())
)


FILLERS: dict[str, Callable[[Pool], st.SearchStrategy[str]]] = {
    "run_id": run_segments,
    "agent_id": lambda pool: AGENT_SEGMENTS,
}


def paths(pool: Pool) -> st.SearchStrategy[tuple[str, str]]:
    """(method, path) over the route table itself, so a new route is fuzzed too."""
    fill = {name: filler(pool) for name, filler in FILLERS.items()}

    def route(r: Route) -> st.SearchStrategy[tuple[str, str]]:
        methods = sorted((r.methods or set()) - {"HEAD"})
        names = sorted(r.param_convertors)
        parts = st.fixed_dictionaries({n: fill[n] for n in names})
        template: str = r.path
        return st.tuples(st.sampled_from(methods), parts.map(lambda p: template.format(**p)))

    return st.one_of(
        *[route(r) for r in ROUTES if isinstance(r, Route)],
        st.tuples(
            st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]), TEXT.map(raw_part)
        ).map(lambda mp: (mp[0], "/" + mp[1])),
    )


# --- the contract ---------------------------------------------------------------------------


def check_contract(app: AppHost, pool: Pool, response: httpx.Response) -> None:
    where = f"{response.request.method} {response.request.url.raw_path[:300]!r}"
    assert response.status_code < 500, (where, response.status_code, response.text[:500])
    assert not 300 <= response.status_code < 400 or response.status_code == 304, where
    assert "location" not in response.headers, where  # no redirect, least of all off-host
    assert response.headers.get("OpenWOP-Version") == "2.0", where
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith("application/json"), where
        body = response.json()
        assert isinstance(body, dict), (where, body)
        assert set(body) <= ENVELOPE_KEYS, (where, body)
        assert isinstance(body.get("error"), str), (where, body)
        assert isinstance(body.get("message"), str), (where, body)
        assert body["error"], (where, body)
        assert body["message"], (where, body)
    check_gate(app, pool)


def check_gate(app: AppHost, pool: Pool) -> None:
    """Every recorded deployment in a gated state names a run that opens the gate for it."""
    state = app.app.state.host
    policy = state.config.deployment
    for tenant in ("acme", "globex"):
        for agent in (MOCK, CAREFUL):
            for record in state.host_store.deployments(tenant, agent):
                if not lands_gated(record.state, policy.gated_states):
                    continue
                # the run was evidence (a newer run the fuzzing made may supersede it now)
                run = app.store.get_run(record.eval_run_id) if record.eval_run_id else None
                refusal = state.gate.evidence_refusal(run, tenant, agent, record.version)
                assert refusal is None, (record, refusal)
                assert record.eval_run_id == pool.passing_in[tenant], record


def send(
    app: AppHost,
    method: str,
    path: str,
    query: str,
    header_list: list[tuple[bytes, bytes]],
    body: bytes | None,
) -> httpx.Response:
    url = f"{path}?{query}" if query else path
    return app.request(method, url, key=None, headers=header_list, content=body)


def test_every_route_is_fuzzed(pool: Pool) -> None:
    """The strategies are built from the route table: each path parameter has a filler, so
    a new route is fuzzed as soon as it exists."""
    routes = [r for r in ROUTES if isinstance(r, Route)]
    assert {n for r in routes for n in r.param_convertors} <= set(FILLERS)
    served = {(m, r.path) for r in routes for m in (r.methods or set()) - {"HEAD"}}
    assert served == {  # the table of docs/host.md
        ("GET", "/.well-known/openwop"),
        ("GET", "/openapi.json"),
        ("POST", "/runs"),
        ("GET", "/runs"),
        ("GET", "/runs/{run_id}"),
        ("GET", "/runs/{run_id}/events"),
        ("GET", "/runs/{run_id}/events/poll"),
        ("POST", "/runs/{run_id}/cancel"),
        ("GET", "/runs/{run_id}/eval-summary"),
        ("GET", "/runs/{run_id}:diff"),
        ("GET", "/runs/{run_id}/report"),
        ("GET", "/agents"),
        ("GET", "/agents/{agent_id}"),
        ("GET", "/agents/{agent_id}/deployments"),
        ("POST", "/agents/{agent_id}/deployments"),
        ("GET", "/agents/{agent_id}/deployments/events"),
    }


def test_hostile_requests_on_every_route(app: AppHost, pool: Pool) -> None:
    @FUZZ
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        method, path = data.draw(paths(pool), "route")
        query = data.draw(QUERIES, "query")
        header_list = data.draw(headers(pool), "headers")
        body = data.draw(bodies(pool), "body") if method in ("POST", "PUT", "PATCH") else None
        check_contract(app, pool, send(app, method, path, query, header_list, body))

    fuzz()


def test_hostile_bodies_on_the_writing_routes(app: AppHost, pool: Pool) -> None:
    """Authenticated, well-routed: the body alone decides, with and without Idempotency-Key."""

    @FUZZ
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        path = data.draw(
            st.sampled_from(
                [
                    "/runs",
                    f"/agents/{MOCK}/deployments",
                    f"/agents/{CAREFUL}/deployments",
                    f"/runs/{project(pool.failing)}/cancel",
                ]
            ),
            "path",
        )
        body = data.draw(bodies(pool), "body")
        key = data.draw(st.sampled_from(KEYS), "key")
        header_list = [(b"Authorization", f"Bearer {key}".encode())]
        if data.draw(st.booleans(), "idempotent"):
            header_list.append((b"Idempotency-Key", data.draw(st.sampled_from([b"a", b"b"]))))
        check_contract(app, pool, send(app, "POST", path, "", header_list, body))

    fuzz()


def test_a_body_that_repeats_a_key_is_refused_on_the_writing_routes(
    app: AppHost, pool: Pool
) -> None:
    """Whatever the key and the values, before a scope, the gate or the store sees it."""

    @FUZZ
    @given(
        path=st.sampled_from(["/runs", f"/agents/{CAREFUL}/deployments"]),
        body=repeating_bodies(pool),
    )
    def fuzz(path: str, body: bytes) -> None:
        response = send(app, "POST", path, "", [(b"Authorization", b"Bearer acme-key")], body)
        check_contract(app, pool, response)
        assert response.status_code == 400, response.text
        assert response.json()["error"] == "validation_error"
        assert response.json()["details"]["path"].startswith("$")

    fuzz()


def test_hostile_reads_of_real_runs(app: AppHost, pool: Pool) -> None:
    """Real run ids with hostile cursors, filters and timeouts: the stream routes refuse
    before they start (strict transport: a stream cut mid-response fails), and answer within
    the bound."""
    reads = ["", "/events", "/events/poll", "/eval-summary", None]  # None: the run list

    @FUZZ
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        run_id = data.draw(st.sampled_from(pool.ids), "run")
        read = data.draw(st.sampled_from(reads), "route")
        path = "/runs" if read is None else f"/runs/{project(run_id)}{read}"
        cursor = data.draw(st.sampled_from(EDGES) | NUMBER_TEXT, "cursor")  # edges half the time
        query = "&".join(
            q
            for q in (f"afterSequence={url_part(cursor)}", data.draw(QUERIES, "query"))
            if q and not q.startswith("afterSequence=&")
        )
        key = data.draw(st.sampled_from(KEYS), "key")
        header_list = [
            (b"Authorization", f"Bearer {key}".encode()),
            (b"Last-Event-ID", cursor.encode("utf-8", "surrogatepass")),
        ]
        check_contract(app, pool, send(app, "GET", path, query, header_list, None))

    fuzz()


def test_the_gate_opens_only_for_the_passing_run(app: AppHost, pool: Pool) -> None:
    """The control for the fuzzing above: the gate is not simply shut in this config."""
    path = f"/agents/{CAREFUL}/deployments"
    body = {"version": "1.0.0", "transition": "promote", "toState": "active"}
    for run_id in (pool.failing, pool.foreign):
        refused = app.request("POST", path, json={**body, "evalRunId": run_id})
        assert refused.status_code == 422, refused.text
    opened = app.request("POST", path, json={**body, "evalRunId": pool.passing})
    assert opened.status_code == 200, opened.text
    assert opened.json()["state"] == "active"
    check_gate(app, pool)
