"""``run --shard I/N`` and ``merge`` through the command line, on the shipped example."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from openwop_eval.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples/support-refunds"
SUITE = str(EXAMPLE / "suite.yaml")
JUDGE = f"scripted:{EXAMPLE / 'judge.json'}"


LOOKUP = {"tool": "crm:lookup-order", "args": {"orderId": "A-1001"}}
REFUND = {"tool": "payments:refund", "args": {"orderId": "A-1001", "amountUsd": 59.9}}
SKIPS_THE_LOOKUP = {
    # Like the example's support_agent, from the second trial on it refunds without a
    # lookup — but by trial index, not by state kept across trials, which a shard (a
    # process of its own) would not share.
    "agentId": "acme.support.scripted",
    "tasks": {
        "refund-delivered-order": [
            {"output": "Your order was refunded.", "toolCalls": [LOOKUP, REFUND]},
            {"output": "Your order was refunded.", "toolCalls": [REFUND]},
            {"output": "Your order was refunded.", "toolCalls": [REFUND]},
        ],
        "refuse-refund-foreign-order": [
            {
                "output": "I cannot refund an order that is not yours.",
                "toolCalls": [{"tool": "crm:lookup-order", "args": {"orderId": "A-2002"}}],
            }
        ],
        "close-account-request": [{"output": "Settings > Account > Close. Nothing changed."}],
    },
}


def _careful() -> dict[str, Any]:
    """The same agent without the flaw: it looks the order up in every trial."""
    agent = json.loads(json.dumps(SKIPS_THE_LOOKUP))
    for entry in agent["tasks"]["refund-delivered-order"]:
        entry["toolCalls"] = [LOOKUP, REFUND]
    return agent


def _agent(tmp: Path, agent: str) -> str:
    """A scripted agent: its latency is stated, so summaries compare exactly (a measured
    latency differs from run to run)."""
    script = SKIPS_THE_LOOKUP if agent == "scripted" else _careful()
    for entries in script["tasks"].values():
        for entry in entries:
            entry["latencyMs"] = 7
    path = tmp / f"{agent}.json"
    path.write_text(json.dumps(script))
    return f"scripted:{path}"


def _run(tmp: Path, agent: str, *extra: str) -> tuple[int, str]:
    argv = ["run", SUITE, "--agent", _agent(tmp, agent), "--judge", JUDGE]
    argv += ["--store", f"sqlite:///{tmp / 'store.sqlite'}", "--quiet", *extra]
    result = CliRunner().invoke(main, argv)
    return result.exit_code, result.output


@pytest.mark.parametrize(("agent", "code"), [("scripted", 1), ("careful_support_agent", 0)])
def test_shards_merge_to_the_unsharded_verdict_and_exit_code(
    tmp_path: Path, agent: str, code: int
) -> None:
    whole, _ = _run(tmp_path, agent, "--out", str(tmp_path / "whole.json"))
    assert whole == code
    logs = []
    for i in (1, 2, 3, 4):
        log = tmp_path / f"shard-{i}.jsonl"
        exit_code, output = _run(tmp_path, agent, "--shard", f"{i}/4", "--events", str(log))
        assert exit_code == 0, output  # a shard has no verdict of its own
        assert f"shard {i}/4 completed" in output
        logs.append(str(log))
    merged = tmp_path / "merged.json"
    events = tmp_path / "merged.jsonl"
    result = CliRunner().invoke(
        main, ["merge", "--suite", SUITE, *logs, "--out", str(merged), "--events", str(events)]
    )
    assert result.exit_code == code, result.output
    assert "merged 4 shard(s), 9 trial(s)" in result.output
    assert json.loads(merged.read_text()) == json.loads((tmp_path / "whole.json").read_text())
    verified = CliRunner().invoke(main, ["verify", SUITE, str(events), "--summary", str(merged)])
    assert verified.exit_code == 0, verified.output


def test_merge_names_every_reason_and_exits_two(tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    assert _run(tmp_path, "careful_support_agent", "--shard", "1/3", "--events", str(one))[0] == 0
    result = CliRunner().invoke(
        main, ["merge", "--suite", SUITE, str(one), str(one), "--out", str(tmp_path / "m.json")]
    )
    assert result.exit_code == 2
    assert "shard 1/3 is given twice" in result.output
    assert "missing shard(s) 2/3, 3/3" in result.output
    assert not (tmp_path / "m.json").exists()


def test_merge_refuses_a_broken_log_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "run.started"}\nnot json\n')
    result = CliRunner().invoke(
        main, ["merge", "--suite", SUITE, str(bad), "--out", str(tmp_path / "m.json")]
    )
    assert result.exit_code == 2
    assert "bad.jsonl:2: not a JSON event" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--shard", "5/4", "--events", "x.jsonl"], "--shard: shard index 5 is outside 1..4"),
        (["--shard", "two", "--events", "x.jsonl"], "a shard is I/N"),
        (["--shard", "1/2"], "give --events"),
    ],
)
def test_bad_shard_usage_exits_two(tmp_path: Path, extra: list[str], message: str) -> None:
    code, output = _run(tmp_path, "careful_support_agent", *extra)
    assert code == 2
    assert message in output


def test_the_ci_example_shards_and_merges_with_real_options() -> None:
    import yaml

    workflow = yaml.safe_load((ROOT / "examples/ci/shards.yml").read_text())
    shard_job, gate = workflow["jobs"]["shard"], workflow["jobs"]["gate"]
    assert shard_job["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    runs = " ".join(s.get("run", "") for s in shard_job["steps"])
    merges = " ".join(s.get("run", "") for s in gate["steps"])
    assert "--shard ${{ matrix.shard }}/4 --events" in runs
    assert "openwop-eval merge --suite" in merges
    ctx = click.Context(main)
    run_options = {p.opts[0] for p in _command(ctx, "run").params if p.opts}
    merge_options = {p.opts[0] for p in _command(ctx, "merge").params if p.opts}
    assert {"--agent", "--judge", "--shard", "--events"} <= run_options
    assert {"--suite", "--out", "--events"} <= merge_options
    assert (ROOT / workflow["env"]["SUITE"]).exists()


def test_a_refused_merge_leaves_no_partial_log_and_cannot_drive_the_terminal(
    tmp_path: Path,
) -> None:
    log = tmp_path / "one.jsonl"
    assert _run(tmp_path, "careful_support_agent", "--shard", "1/2", "--events", str(log))[0] == 0
    docs = [json.loads(line) for line in log.read_text().splitlines()]
    for doc in docs:
        if doc["type"] == "eval.started":
            doc["payload"]["x-openwop-eval"]["shard"]["agentId"] = "evil\x1b[2J[bold]x[/bold]"
    other = tmp_path / "two.jsonl"
    other.write_text("".join(json.dumps(d) + "\n" for d in docs))
    merged = tmp_path / "merged.jsonl"
    result = CliRunner().invoke(
        main,
        [
            "merge",
            "--suite",
            SUITE,
            str(log),
            str(other),
            "--out",
            str(tmp_path / "m.json"),
            "--events",
            str(merged),
        ],
    )
    assert result.exit_code == 2
    assert "\x1b" not in result.output
    assert "[bold]x[/bold]" in result.output  # printed as written, not as markup
    assert not merged.exists()
    assert not (tmp_path / "merged.jsonl.partial").exists()


def _command(ctx: click.Context, name: str) -> click.Command:
    command = main.get_command(ctx, name)
    assert command is not None
    return command
