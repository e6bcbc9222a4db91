"""The OpenAPI document: every route of ``ROUTES`` and nothing else, the protocol's values as
the handlers check them, served without a key and cached by its ``ETag``, and an API fuzzer
(schemathesis) pointed at the host live under uvicorn with it finds no 5xx and no answer the
document does not describe."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.definitions import OPENAPI_31
from starlette.routing import Route

from openwop_eval.protocol.deployments import STATES, TRANSITIONS
from openwop_eval.server import create_app, inputs
from openwop_eval.server.app import ROUTES
from openwop_eval.server.deploy import TRANSITION_KEYS
from openwop_eval.server.openapi import openapi_document, shipped
from openwop_eval.server.run_request import CREATE_KEYS
from openwop_eval.store import Store
from tests.server.inprocess import AppHost, host_config
from tests.server.served import serving

METHODS = {"get", "post", "put", "patch", "delete", "head", "options", "trace"}


def _template(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def test_the_document_has_every_route_and_no_other() -> None:
    routes = {
        (_template(route.path), method.lower())
        for route in ROUTES
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"  # Starlette's own, for every GET
    }
    documented = {
        (_template(path), method)
        for path, item in shipped()["paths"].items()
        for method in item
        if method in METHODS
    }
    assert routes == documented


def test_the_document_is_valid_openapi_3_1() -> None:
    """Against the OpenAPI 3.1 meta-schema (the copy schemathesis ships), and each schema
    in it a valid JSON Schema 2020-12."""
    document = shipped()
    assert document["openapi"].startswith("3.1.")
    jsonschema.Draft202012Validator(OPENAPI_31).validate(document)
    for schema in document["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = shipped()["components"]["schemas"][name]
    return schema


def test_the_documented_values_are_the_ones_the_host_checks() -> None:
    assert set(_schema("CreateRunRequest")["properties"]) == CREATE_KEYS
    assert set(_schema("DeploymentTransition")["properties"]) == TRANSITION_KEYS
    assert _schema("RunStatus")["enum"] == list(inputs.RUN_STATUSES)
    assert _schema("DeploymentState")["enum"] == list(STATES)
    assert set(_schema("DeploymentTransition")["properties"]["transition"]["enum"]) == set(
        TRANSITIONS
    )
    for item in shipped()["paths"].values():
        for operation in item.values():
            for parameter in operation.get("parameters", ()):
                if parameter.get("in") == "query":
                    assert parameter["name"] in inputs.QUERY_PARAMETERS


def test_the_document_is_served_without_a_key_and_cached(app: AppHost) -> None:
    served = app.request("GET", "/openapi.json", key=None)
    assert served.status_code == 200, served.text
    assert served.headers["content-type"] == "application/json"
    assert served.headers["OpenWOP-Version"] == "2.0"
    max_page = app.app.state.host.config.limits.max_page_size
    assert served.json() == openapi_document(max_page)
    [limit] = [
        p for p in served.json()["paths"]["/runs"]["get"]["parameters"] if p["name"] == "limit"
    ]
    assert limit["schema"]["maximum"] == max_page
    tag = served.headers["ETag"]
    again = app.request("GET", "/openapi.json", key=None, headers={"If-None-Match": tag})
    assert (again.status_code, again.content, again.headers["ETag"]) == (304, b"", tag)


# --- schemathesis against a live host ----------------------------------------------------

EXAMPLES = 12
"""Per operation and generation mode: about 15 operations, two modes and two databases."""


EXCLUDED = [
    schemathesis.checks.positive_data_acceptance,
    schemathesis.checks.negative_data_rejection,
]
"""A well-formed request may name what this host does not have (no such suite, agent or
run): the protocol answers that ``400 validation_error`` or ``404``, not a 2xx. And a
request with a query parameter or header the document does not name is not refused: a
host ignores the filters it does not advertise (wire surface, ``runs_list``). Negative
cases still must get no 5xx and an answer the document describes."""


@pytest.fixture
def live(database: str) -> Iterator[str]:
    """The standard host under uvicorn on loopback, on a fresh database; its base URL."""
    store = Store(database)
    try:
        with serving(create_app(host_config(database), store)) as url:
            yield url
    finally:
        store.close()  # its pooled connections, before the database is dropped


def test_an_api_fuzzer_finds_no_5xx_and_no_undocumented_answer(live: str) -> None:
    api_schema = schemathesis.openapi.from_url(f"{live}/openapi.json")
    auth = {"Authorization": "Bearer acme-key"}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    documented = {(m.upper(), p) for p, item in shipped()["paths"].items() for m in item}
    # schemathesis leaves out the operation that serves the document it was loaded from
    assert {(o.method.upper(), o.path) for o in operations} == documented - {
        ("GET", "/openapi.json")
    }
    strategy = st.sampled_from(operations).flatmap(
        lambda operation: st.sampled_from(list(schemathesis.GenerationMode)).flatmap(
            operation.as_strategy
        )
    )

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES * len(operations) * 2,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def fuzz(case: Any) -> None:
        case.call_and_validate(base_url=live, headers=auth, timeout=30, excluded_checks=EXCLUDED)

    fuzz()
    assert httpx.get(f"{live}/.well-known/openwop").status_code == 200  # still serving
