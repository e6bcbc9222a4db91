"""An event's text is the same as encoding its whole document, member by member, whether
its payload comes as an object or as its text already encoded (a commit process's)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.base.jsontext import dumps
from openwop_eval.log.event_names import SCHEMA_VERSION
from openwop_eval.runner.events import EventWriter, Pending
from openwop_eval.store import EventRow

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)  # past 64 bits: the standard encoder's fallback
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(
    run_id=st.text(min_size=1),
    kind=st.text(min_size=1),
    payload=st.dictionaries(st.text(), JSON, max_size=5),
    stamp=st.text(),
    last=st.integers(-1, 2**40),
)
def test_the_text_is_the_document_encoded(
    run_id: str, kind: str, payload: dict[str, Any], stamp: str, last: int
) -> None:
    written: list[EventRow] = []
    writer = EventWriter(run_id, lambda rows, _trials: written.extend(rows), last)
    writer.write([Pending(kind, payload, stamp)])
    writer.write_encoded([(kind, dumps({}), stamp)])
    writer.flush()
    for offset, (row, body) in enumerate(zip(written, (payload, {}), strict=True)):
        doc = {
            "eventId": row.event_id,
            "runId": run_id,
            "type": kind,
            "payload": body,
            "timestamp": stamp,
            "sequence": last + 1 + offset,
            "schemaVersion": SCHEMA_VERSION,
        }
        assert row.text == dumps(doc)
        assert json.loads(row.text) == doc
        assert (row.sequence, row.type) == (last + 1 + offset, kind)
