"""The protocol's own definitions, as shipped in tests/server/data/ (README.md there): the
RFC 0082 deployment event payloads and the v2 discovery document, each as a validator."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from referencing import Registry
from referencing.jsonschema import DRAFT202012

DATA = Path(__file__).parent / "data"
EVENTS = "deployment-events.schema.json"
CAPABILITIES = "capabilities.schema.json"
"""The whole v2 capabilities schema, byte for byte (its SHA-256 in README.md)."""
IDS = "ids.schema.json"


@functools.cache
def _document(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((DATA / name).read_text("utf-8"))
    Draft202012Validator.check_schema(document)
    return document


def _validator(name: str, pointer: str) -> Draft202012Validator:
    """A validator of the schema at ``pointer`` in the document ``name``, its ``$ref``s
    (into the ids document, embedded or beside it) resolved as the original resolves them.
    A ``$ref`` to a document not shipped (the capabilities schema names a few the host never
    reaches) fails the validation loudly, never passes it."""
    registry: Registry[Any] = Registry()
    for shipped in (IDS, name):
        document = _document(shipped)
        registry = registry.with_resource(document["$id"], DRAFT202012.create_resource(document))
    document = _document(name)
    return Draft202012Validator(
        {"$ref": f"{document['$id']}#{pointer}"},
        registry=registry.crawl(),
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


def event_types() -> dict[str, str]:
    """The v2 ``deployment.*`` event types → the name of their payload definition (the
    normative ``_typeIndex``)."""
    index = _document(EVENTS)["_typeIndex"]["properties"]
    return {kind: ref["$ref"].rsplit("/", 1)[1] for kind, ref in index.items()}


def payload_errors(event: dict[str, Any]) -> list[str]:
    """Why ``event`` (``{type, payload}``) is not a ``deployment.*`` event as defined;
    empty when it is."""
    definition = event_types().get(event.get("type", ""))
    if definition is None:
        return [f"{event.get('type')!r} is not a deployment event type"]
    validator = _validator(EVENTS, f"/$defs/{definition}")
    return [_where(e) for e in validator.iter_errors(event.get("payload"))]


def discovery_errors(document: dict[str, Any]) -> list[ValidationError]:
    """Every way ``document`` fails the v2 capabilities schema."""
    return list(_validator(CAPABILITIES, "").iter_errors(document))


def _where(error: ValidationError) -> str:
    return f"{'/'.join(map(str, error.absolute_path)) or '(payload)'}: {error.message}"
