"""A log a newer version wrote, through the commands that read logs: ``verify``, ``merge``,
``run --fixtures-from``, ``run --resume`` and ``report`` each refuse it with the event and
both versions named, and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from openwop_eval.cli.main import main
from openwop_eval.store import Store
from tests.modes.crash import forget_task
from tests.test_cli_shards import JUDGE, SUITE, _agent

NEWER = "schemaVersion 2 is newer than 1, the newest this version of openwop-eval reads"


def invoke(*argv: str) -> Result:
    return CliRunner().invoke(main, list(argv))


def run(tmp: Path, *extra: str) -> Result:
    store = f"sqlite:///{tmp / 'store.sqlite'}"
    agent = _agent(tmp, "careful_support_agent")
    return invoke("run", SUITE, "--agent", agent, "--judge", JUDGE, "--store", store, *extra)


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def newer(path: Path, kind: str = "eval.scored") -> tuple[Path, dict[str, Any]]:
    """A copy of the log whose first ``kind`` event states schemaVersion 2."""
    docs = events(path)
    bumped = next(d for d in docs if d["type"] == kind)
    bumped["schemaVersion"] = 2
    out = path.with_name(f"newer-{path.name}")
    out.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return out, bumped


def refused(result: Result, code: int, doc: dict[str, Any]) -> None:
    assert result.exit_code == code, result.output
    where = f"(sequence {doc['sequence']}, {doc['type']}): {NEWER}"
    assert where in result.output.replace("\n", " ")
    assert "Traceback" not in result.output


def test_verify_refuses_a_newer_log(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    assert run(tmp_path, "--events", str(log), "--quiet").exit_code == 0
    assert invoke("verify", SUITE, str(log)).exit_code == 0
    path, doc = newer(log)
    refused(invoke("verify", SUITE, str(path)), 2, doc)


def test_merge_refuses_a_newer_shard_naming_its_log(tmp_path: Path) -> None:
    logs = [tmp_path / f"shard-{i}.jsonl" for i in (1, 2)]
    for i, log in enumerate(logs, 1):
        assert run(tmp_path, "--shard", f"{i}/2", "--events", str(log), "--quiet").exit_code == 0
    path, doc = newer(logs[1])
    out = tmp_path / "merged.json"
    result = invoke("merge", str(logs[0]), str(path), "--suite", SUITE, "--out", str(out))
    refused(result, 2, doc)
    assert f"{path}: event" in result.output.replace("\n", "")
    assert not out.exists()


def test_fixtures_from_a_newer_log_are_refused(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    assert run(tmp_path, "--events", str(log), "--quiet").exit_code == 0
    path, doc = newer(log, "agent.tool-returned")
    refused(run(tmp_path, "--fixtures-from", str(path), "--quiet"), 2, doc)


def test_a_resume_of_a_run_a_newer_version_wrote_leaves_it_open(tmp_path: Path) -> None:
    assert run(tmp_path, "--quiet").exit_code == 0
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    (stored,) = store.list_runs()
    forget_task(store, stored.run_id, "close-account-request")  # as a crash leaves it
    doc = _append_newer(store, stored.run_id)
    result = invoke("run", "--resume", stored.run_id, "--store", store.url, "--judge", JUDGE)
    refused(result, 3, doc)
    after = store.get_run(stored.run_id, documents=False)
    assert after is not None
    assert after.status == "running"  # for a version that reads it
    assert store.events(stored.run_id)[-1] == doc  # nothing was added to its log


def test_report_refuses_a_run_a_newer_version_wrote(tmp_path: Path) -> None:
    assert run(tmp_path, "--quiet").exit_code == 0
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    (stored,) = store.list_runs()
    doc = _append_newer(store, stored.run_id)
    html = tmp_path / "report.html"
    refused(invoke("report", stored.run_id, "--store", store.url, "--html", str(html)), 2, doc)


def _append_newer(store: Store, run_id: str) -> dict[str, Any]:
    """A trial's first event, as a newer version may write it, at the end of the log."""
    sequence = store.last_sequence(run_id) + 1
    ext = {"taskId": "close-account-request", "trial": 0, "invocationId": "inv-newer"}
    doc = {
        "eventId": f"ev-newer-{sequence}",
        "runId": run_id,
        "type": "agent.invocation-started",
        "payload": {"invocationId": "inv-newer", "x-openwop-eval": ext},
        "timestamp": "2026-01-01T00:00:00Z",
        "sequence": sequence,
        "schemaVersion": 2,
    }
    store.append(run_id, [doc])
    return doc
