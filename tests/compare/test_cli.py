"""``openwop-eval compare``: its outputs' shapes, and invalid input as exit 2 with one
located line and no traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openwop_eval.cli.main import main
from openwop_eval.store import Store
from openwop_eval.store.records import RunRecord
from tests.compare.builders import summary, task, verdicts
from tests.compare.conftest import Invoked

P, F = True, False


def _write(path: Path, doc: Any) -> str:
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=1))
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    base = verdicts(P, P, P, P, F, P, P, P)
    cand = summary(*[task(f"t{i}", 0.0 if i == 2 else 1.0) for i in range(8)])
    cand["tasks"][4] = task("t4", 1.0, gated=0.0)  # a wrong-path output: still failing
    return _write(tmp_path / "base.json", base), _write(tmp_path / "cand.json", cand)


def test_the_table_shows_every_task_the_evidence_and_the_verdict(
    files: tuple[str, str], cli: Callable[..., Invoked]
) -> None:
    shown = cli(*files)
    assert shown.exit_code == 0
    expected = ["t0", "t7", "1 → 0", "newly failing", "sign test: 1 newly failing"]
    expected += ["bootstrap interval", "INCONCLUSIVE", "1 newly failing task: t2"]
    for text in expected:
        assert text in shown.stdout, text
    assert shown.stderr == ""


def test_json_is_the_comparison_dict(files: tuple[str, str], cli: Callable[..., Invoked]) -> None:
    body = json.loads(cli(*files, "--json", "--tolerance", "0.2").stdout)
    assert set(body) == {
        "comparisonVersion",
        "suiteId",
        "baseline",
        "candidate",
        "verdict",
        "reasons",
        "pairedTasks",
        "minTasks",
        "tooFewTasks",
        "gatedAggregateDelta",
        "aggregateDelta",
        "signTest",
        "buckets",
        "added",
        "removed",
        "tasks",
        "warnings",
        "regression",
        "gatedDelta",
        "scoreDelta",
        "interval",
    }
    assert body["baseline"]["source"].endswith("base.json")
    assert body["signTest"] == {
        "newlyFailing": 1,
        "newlyPassing": 0,
        "pValue": 1.0,
        "alpha": 0.05,
        "significant": False,
    }
    assert body["buckets"]["newlyFailing"] == ["t2"]
    assert body["buckets"]["stillFailing"] == ["t4"]
    assert body["tasks"][4]["scoreDelta"] == 1.0
    assert body["tasks"][4]["gatedDelta"] == 0.0
    assert body["interval"]["resamples"] == 2000
    assert body["interval"]["seed"] == 0
    assert body["regression"] == {
        "regressed": True,
        "reasons": ["1 newly failing task: t2"],
        "tolerance": 0.2,
    }


def test_out_writes_what_json_prints(
    files: tuple[str, str], cli: Callable[..., Invoked], tmp_path: Path
) -> None:
    out = tmp_path / "deep" / "comparison.json"
    printed = cli(*files, "--json", "--out", str(out), "--seed", "7")
    assert json.loads(out.read_text()) == json.loads(printed.stdout)
    assert json.loads(printed.stdout)["interval"]["seed"] == 7


def test_markdown_to_a_file_and_to_stdout(
    files: tuple[str, str], cli: Callable[..., Invoked], tmp_path: Path
) -> None:
    path = tmp_path / "summary.md"
    assert cli(*files, "--markdown", str(path)).exit_code == 0
    text = path.read_text()
    assert text.startswith("### Comparison `test.openwop.evals.compare`: **inconclusive**\n")
    assert "- ❌ 1 newly failing task: t2" in text
    assert "| `t2` | 1 → 0 | -1 | 1 → 0 | passed → **failed** | -1 |" in text
    assert "6 unchanged tasks not shown." in text
    assert cli(*files, "--markdown", "-").stdout == text  # instead of the table


def test_the_markdown_is_appended_to_the_step_summary(
    files: tuple[str, str], cli: Callable[..., Invoked], tmp_path: Path, monkeypatch: Any
) -> None:
    step = tmp_path / "step.md"
    step.write_text("earlier\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    cli(*files)
    assert step.read_text().startswith("earlier\n### Comparison")


def test_regression_reasons_go_to_stderr_when_stdout_is_json(
    files: tuple[str, str], cli: Callable[..., Invoked]
) -> None:
    shown = cli(*files, "--json", "--fail-on-regression")
    assert shown.exit_code == 1
    assert shown.stderr.splitlines() == [
        "regression: 1 newly failing task: t2",
        "✗ the candidate regressed (--fail-on-regression)",
    ]


def test_a_different_suite_version_is_a_warning(
    tmp_path: Path, cli: Callable[..., Invoked]
) -> None:
    base = _write(tmp_path / "a.json", verdicts(P))
    cand = _write(tmp_path / "b.json", summary(task("t0"), version="2.0.0"))
    shown = cli(base, cand, "--fail-on-regression")
    assert shown.exit_code == 0
    assert shown.stderr.startswith("warning: the suite versions differ: 1.0.0 (baseline)")


def test_files_need_no_store(files: tuple[str, str], monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENWOP_EVAL_STORE", "nosuchdriver://nowhere")
    result = CliRunner().invoke(main, ["compare", *files])
    assert result.exit_code == 0, result.output


SUMMARY = json.dumps(verdicts(P, P), indent=1)

BAD_FILES = {
    "missing.json": (None, "missing.json: cannot read the file"),
    "empty.json": ("", "empty.json $: the file is empty"),
    "broken.json": ('{"suiteId": ', "broken.json:1 $: not valid JSON"),
    "nan.json": (
        SUMMARY.replace('"aggregateScore": 1.0', '"aggregateScore": NaN'),
        "NaN is not a JSON number",
    ),
    "dup.json": (
        SUMMARY.replace('"passed": true,', '"passed": true, "passed": false,', 1),
        "dup.json:5 $.passed: duplicate key 'passed'",
    ),
    "range.json": (
        SUMMARY.replace('"score": 1.0', '"score": 1.5', 1),
        "range.json:11 $.tasks[0].score: expected a number in [0, 1]; got 1.5",
    ),
    "twice.json": (
        SUMMARY.replace('"t1"', '"t0"'),
        "twice.json:15 $.tasks[1].taskId: duplicate task id 't0' (also at [0])",
    ),
    "list.json": ("[1, 2]", "list.json:1 $: expected an EvalSummary (an object); got an array"),
    "bytes.json": (b"{\xff}", "bytes.json:1: not valid UTF-8"),
    "log.jsonl": (
        '{"type": "run.started"}\n{"type": "run.failed"}\n',
        "log.jsonl: the run did not complete (it ends with run.failed); it has no summary",
    ),
    "newer.json": (
        json.dumps({"reportVersion": 2, "runId": "local/1", "summary": verdicts(P)}, indent=1),
        "newer.json:2 $.reportVersion: reportVersion 2 is newer than 1, the newest this"
        " version reads",
    ),
    "unversioned.json": (
        json.dumps({"reportVersion": "1", "summary": verdicts(P)}),
        "unversioned.json:1 $.reportVersion: reportVersion must be a version number, an"
        " integer from 1 to 1",
    ),
    "broken.jsonl": ('{"type": "run.started"}\n{oops\n', "broken.jsonl:2: not a JSON event"),
    "hollow.jsonl": (
        '{"type": "run.completed", "sequence": 4, "payload": {}}\n',
        "hollow.jsonl (the run.completed event, sequence 4) $.payload.outputs.evalSummary: missing",
    ),
    "bad.jsonl": (
        json.dumps(
            {
                "type": "run.completed",
                "sequence": 2,
                "payload": {"outputs": {"evalSummary": {**verdicts(P), "passed": "no"}}},
            }
        ),
        "bad.jsonl (the run.completed event, sequence 2) $.payload.outputs.evalSummary.passed:"
        " expected true or false; got a string",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_bad_file_is_one_located_line_and_exit_two(
    name: str, tmp_path: Path, cli: Callable[..., Invoked]
) -> None:
    content, message = BAD_FILES[name]
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    good = _write(tmp_path / "good.json", verdicts(P, P))
    shown = cli(good, str(path))
    assert shown.exit_code == 2
    (line,) = shown.stderr.splitlines()
    assert line.startswith(f"error: {path}" if name != "missing.json" else "error: ")
    assert message in line, line
    assert shown.stdout == ""


def _other_suite(tmp_path: Path) -> str:
    doc = verdicts(P)
    doc["suiteId"] = "test.openwop.evals.other"
    return _write(tmp_path / "other.json", doc)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["local/nope"], "error: local/nope: no such run in the store, and not a file"),
        (["running/1"], "error: run running/1 is running; only a completed run has a summary"),
        ([_other_suite], "error: the sides are runs of different suites"),
        (["--json", "--markdown", "-"], "error: --json and --markdown - both write to stdout"),
        (["--confidence", "nan"], "error: confidence must be strictly between 0 and 1; got nan"),
        (["--tolerance", "nan"], "error: the tolerance must be between 0 and 1; got nan"),
    ],
)
def test_invalid_input_is_one_line_and_exit_two(
    args: list[Any], message: str, tmp_path: Path, cli: Callable[..., Invoked], store: Store
) -> None:
    store.create_run(
        RunRecord("running/1", "local", "running", "test.openwop.evals.compare", "1.0.0", "x", "x")
    )
    good = _write(tmp_path / "good.json", verdicts(P))
    argv = [a(tmp_path) if callable(a) else a for a in args]
    shown = cli(good, good, *argv) if argv[0].startswith("-") else cli(good, *argv)
    assert shown.exit_code == 2, shown
    (line,) = shown.stderr.splitlines()
    assert line.startswith(message), line


@pytest.mark.parametrize("option", ["--out", "--markdown"])
def test_an_output_that_cannot_be_written_is_one_line_and_exit_two(
    option: str, files: tuple[str, str], cli: Callable[..., Invoked], tmp_path: Path
) -> None:
    (tmp_path / "plain").write_text("a file, not a directory")
    shown = cli(*files, option, str(tmp_path / "plain" / "out"))
    assert shown.exit_code == 2
    (line,) = shown.stderr.splitlines()
    assert line.startswith(f"error: cannot write {tmp_path / 'plain'}")


def test_a_store_that_cannot_be_opened_is_exit_three(files: tuple[str, str]) -> None:
    argv = ["compare", files[0], "local/1", "--store", "nosuchdriver://nowhere"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 3
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ")
    assert "Traceback" not in result.output
