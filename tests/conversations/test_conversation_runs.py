"""Conversation tasks played end to end through `run`: scripted users, per-turn rules, the
gate over the whole conversation, and the events each turn leaves."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conversations.suites import CAREFUL, HASTY, LATE_FORBIDDEN, suite
from tests.runner.conftest import Ran, write


def _run(tmp_path: Path, run_cli: Callable[..., Ran], agent: str, *args: str) -> Ran:
    suite_path = write(tmp_path / "suite.json", suite())
    agent_path = write(tmp_path / "agent.py", agent)
    return run_cli(str(suite_path), "--agent", f"{agent_path}:agent", *args)


def test_a_careful_agent_passes_a_scripted_conversation(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    ran = _run(tmp_path, run_cli, CAREFUL)
    assert ran.exit_code == 0, ran.output + ran.stderr
    assert ran.summary is not None
    assert ran.summary["passed"] is True
    messages = [e["payload"] for e in ran.events if e["type"] == "agent.message"]
    assert [(m["role"], m["x-openwop-eval"]["turn"]) for m in messages] == [
        ("user", 0),
        ("assistant", 0),
        ("user", 1),
        ("assistant", 1),
        ("user", 2),
        ("assistant", 2),
    ]
    assert messages[2]["content"] == "Yes, the 9 am one please."
    called = [e["payload"] for e in ran.events if e["type"] == "agent.tool-called"]
    assert [(c["toolName"], c["x-openwop-eval"]["turn"]) for c in called] == [
        ("bookings:get", 0),
        ("flights:search", 0),
        ("bookings:rebook", 1),
    ]
    types = [e["type"] for e in ran.events]
    # each turn's calls come between its user message and its reply
    assert types.index("agent.tool-called") > types.index("agent.message")
    completed = next(e for e in ran.events if e["type"] == "agent.invocation-completed")
    assert completed["payload"]["x-openwop-eval"]["conversation"] == {"turns": 3, "ended": "user"}


def test_a_hasty_agent_fails_on_its_turn_rule_though_its_whole_path_matches(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    ran = _run(tmp_path, run_cli, HASTY)
    assert ran.exit_code == 1
    task = ran.summary["tasks"][0]  # type: ignore[index]
    assert task["score"] == 1  # the output score stays honest (RFC 0246)
    assert task["gatedScore"] == 0
    reasons = ran.report["tasks"][0]["trials"][0]["reasons"]  # type: ignore[index]
    # booked in turn 1 (forbidden there), and so not in turn 2 (where it is a step)
    assert [(r["rule"], r.get("turn")) for r in reasons] == [("forbidden", 0), ("missing-step", 1)]
    assert reasons[0]["message"].startswith("turn 1: ")
    assert reasons[0]["callIndex"] == 2


def test_a_forbidden_call_in_the_last_turn_shuts_the_gate(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    ran = _run(tmp_path, run_cli, LATE_FORBIDDEN)
    assert ran.exit_code == 1
    assert ran.summary is not None
    assert ran.summary["passed"] is False
    task = ran.summary["tasks"][0]
    assert task["gatedScore"] == 0
    assert task["score"] == 1
    reasons = ran.report["tasks"][0]["trials"][0]["reasons"]  # type: ignore[index]
    assert [r["rule"] for r in reasons] == ["forbidden"]
    assert reasons[0]["callIndex"] == 3


def test_verify_html_shows_a_conversation_from_its_bare_log_turn_by_turn(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    from click.testing import CliRunner

    from openwop_eval.cli.main import main
    from openwop_eval.log.replay import conversations, replay
    from openwop_eval.reports.html.page_data import log_diagnostics
    from openwop_eval.runner.events import read_jsonl

    ran = _run(tmp_path, run_cli, CAREFUL)
    assert ran.exit_code == 0, ran.output + ran.stderr
    docs = read_jsonl(str(ran.dir / "events.jsonl"))
    detail = log_diagnostics(replay(docs).records, conversations(docs))[
        ("rebook-after-cancellation", 0)
    ]
    said = [(m["turn"], m["role"]) for m in detail["conversation"]]
    assert said == [
        (0, "user"),
        (0, "assistant"),
        (1, "user"),
        (1, "assistant"),
        (2, "user"),
        (2, "assistant"),
    ]
    assert detail["conversation"][2]["content"] == "Yes, the 9 am one please."
    assert [c["turn"] for c in detail["calls"]] == sorted(c["turn"] for c in detail["calls"])
    assert {c["turn"] for c in detail["calls"]} >= {0, 1}
    html = tmp_path / "verified.html"
    argv = [
        "verify",
        str(tmp_path / "suite.json"),
        str(ran.dir / "events.jsonl"),
        "--html",
        str(html),
    ]
    verified = CliRunner().invoke(main, argv)
    assert verified.exit_code == 0, verified.output
    page = html.read_text()
    for text in (
        "My flight AB123 was cancelled",
        "Yes, the 9 am one please.",
        "Thanks, that",
    ):
        assert text in page


def test_verify_recomputes_a_conversation_from_its_log(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    from click.testing import CliRunner

    from openwop_eval.cli.main import main

    for agent, code in ((CAREFUL, 0), (HASTY, 1)):
        ran = _run(tmp_path, run_cli, agent)
        assert ran.exit_code == code
        verified = CliRunner().invoke(
            main, ["verify", str(tmp_path / "suite.json"), str(ran.dir / "events.jsonl")]
        )
        assert verified.exit_code == 0, verified.output
