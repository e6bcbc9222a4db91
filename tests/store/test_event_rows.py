"""Events are kept as the text they were written as, read back a page at a time, and a
store made before that change keeps every event it had."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from openwop_eval.store import EventRow, RunRecord, Store
from openwop_eval.store.migrations import __path__ as migrations_path


def _run(store: Store, run_id: str = "local/r") -> str:
    store.create_run(
        RunRecord(run_id, "local", "running", "a.b.evals.c", "1.0.0", "x", "agent", {"s": 1})
    )
    return run_id


def _doc(sequence: int, payload: object) -> dict[str, object]:
    return {"eventId": f"ev-{sequence}", "type": "x", "sequence": sequence, "payload": payload}


def test_an_event_row_is_stored_and_streamed_exactly_as_written(database: str) -> None:
    store = Store(database)
    run_id = _run(store, f"local/rows-{abs(hash(database))}")
    text = '{"eventId":"ev-0","type":"x","sequence":0,"payload":{"é":"%s 100%","n":1.5}}'
    store.append(run_id, [EventRow(0, f"ev-0-{run_id}", "x", text)])
    store.append(
        run_id, [_doc(i, {"i": i}) | {"eventId": f"ev-{i}-{run_id}"} for i in (1, 2, 3, 4)]
    )
    rows = list(store.iter_event_rows(run_id, page=2))  # three pages: 2, 2 and 1
    assert [r.sequence for r in rows] == [0, 1, 2, 3, 4]
    assert rows[0].text == text  # not parsed and encoded again
    assert [d["payload"] for d in store.iter_events(run_id, after=2, page=1)] == [
        {"i": 3},
        {"i": 4},
    ]
    assert store.events(run_id)[0]["payload"] == {"é": "%s 100%", "n": 1.5}
    store.close()


def test_a_store_made_before_event_text_keeps_its_events(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    config = Config()
    config.set_main_option("script_location", migrations_path[0])
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0003")
        connection.exec_driver_sql(
            "INSERT INTO runs (run_id, tenant, mode, status, suite_id, suite_version, agent_spec,"
            " agent_id, suite_doc, options, created_at, updated_at) VALUES ('r', 'local', 'eval',"
            " 'running', 's', '1', 'x', 'a', '{}', '{}', 't', 't')"
        )
        doc = _doc(0, {"big": 2**70, "text": "ü"})  # as the old encoder wrote it
        connection.exec_driver_sql(
            "INSERT INTO events (run_id, sequence, event_id, type, doc) VALUES (?, ?, ?, ?, ?)",
            ("r", 0, "ev-0", "x", json.dumps(doc)),
        )
    engine.dispose()
    store = Store(url)  # migrates to the head
    assert store.events("r") == [doc]
    store.close()
