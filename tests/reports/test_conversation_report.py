"""A conversation trial in the JSON report, the page's data and the terminal: its messages
turn by turn with the calls of each turn, how it ended, its reasons located by turn, and a
simulated user's failure told apart from the agent's."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openwop_eval.cli.main import main
from openwop_eval.reports.html import render_report, report_data
from openwop_eval.reports.model import result_report
from openwop_eval.runner.stored import stored_result
from openwop_eval.store import Store
from tests.conversations.suites import CAREFUL, HASTY, LATE_FORBIDDEN, TASK, suite
from tests.fakes.openai_server import FakeEndpoint, Reply, completion, serve
from tests.runner.conftest import Ran, write

TASK_ID = "rebook-after-cancellation"
USERS = [
    "My flight AB123 was cancelled, can you rebook me?",
    "Yes, the 9 am one please.",
    "Thanks, that's all.",
]


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpoint]:
    """The simulated users' model endpoint."""
    with serve() as fake:
        monkeypatch.setenv("OPENWOP_EVAL_USER_BASE_URL", fake.url)
        yield fake


def _simulated(max_turns: int) -> dict[str, Any]:
    task = copy.deepcopy(TASK)
    task["x-openwop-eval"]["conversation"]["maxTurns"] = max_turns
    task["x-openwop-eval"]["conversation"]["user"] = {
        "simulator": {"model": "openai:user-model", "persona": "a traveller", "goal": "rebook"}
    }
    return task


def _run(
    tmp_path: Path, run_cli: Callable[..., Ran], agent: str, task: dict[str, Any] | None = None
) -> Ran:
    suite_path = write(tmp_path / "suite.json", suite(task))
    agent_path = write(tmp_path / "agent.py", agent)
    return run_cli(str(suite_path), "--agent", f"{agent_path}:agent")


def _trial(ran: Ran) -> dict[str, Any]:
    assert ran.report is not None, ran.output + ran.stderr
    trial: dict[str, Any] = ran.report["tasks"][0]["trials"][0]
    return trial


def test_the_report_shows_the_conversation_turn_by_turn(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    trial = _trial(_run(tmp_path, run_cli, CAREFUL))
    conversation = trial["conversation"]
    assert (conversation["turns"], conversation["maxTurns"], conversation["ended"]) == (
        3,
        4,
        "user",
    )
    exchanges = conversation["exchanges"]
    assert [x["turn"] for x in exchanges] == [0, 1, 2]
    assert [x["user"] for x in exchanges] == USERS
    assert [x["reply"] for x in exchanges] == [
        "Your flight was cancelled. I can offer AB200 at 09:00.",
        "Done: you are rebooked on AB200.",
        "You're welcome, you are rebooked.",
    ]
    # the calls of each turn, by their index among the whole conversation's calls
    assert [x["calls"] for x in exchanges] == [[0, 1], [2], []]
    assert [trial["calls"][i]["tool"] for i in exchanges[1]["calls"]] == ["bookings:rebook"]
    assert all(x["reasons"] == [] for x in exchanges)


def test_a_turn_rule_s_reasons_are_located_at_their_turn(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    ran = _run(tmp_path, run_cli, HASTY)
    trial = _trial(ran)
    located = [
        (x["turn"], [(r["rule"], r.get("callIndex")) for r in x["reasons"]])
        for x in trial["conversation"]["exchanges"]
    ]
    assert located == [(0, [("forbidden", 2)]), (1, [("missing-step", None)]), (2, [])]
    # on the page the call a turn's rule forbids is tagged, though the whole path allows it
    data = _page(ran)
    calls = data["tasks"][0]["trials"][0]["calls"]
    assert [(c["tool"], c["forbidden"], c["step"]) for c in calls] == [
        ("bookings:get", False, 0),
        ("flights:search", False, 1),
        ("bookings:rebook", True, 2),
    ]


def test_a_whole_path_reason_is_located_by_the_turn_of_its_call(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    trial = _trial(_run(tmp_path, run_cli, LATE_FORBIDDEN))
    [reason] = trial["reasons"]
    assert "turn" not in reason
    assert reason["callIndex"] == 3
    exchanges = trial["conversation"]["exchanges"]
    assert [len(x["reasons"]) for x in exchanges] == [0, 0, 1]
    assert exchanges[2]["reasons"][0] == reason
    assert exchanges[2]["calls"] == [3]


def test_a_stored_run_read_back_shows_the_same_conversation(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    ran = _run(tmp_path, run_cli, HASTY)
    run_id = ran.report["runId"]  # type: ignore[index]
    later = tmp_path / "later.json"
    result = CliRunner().invoke(
        main, ["report", run_id, "--store", _store(ran), "--report", str(later)]
    )
    assert result.exit_code == 0, result.output
    again = json.loads(later.read_text())["tasks"][0]["trials"][0]
    first = _trial(ran)
    assert again["conversation"] == first["conversation"]
    assert again["reasons"] == first["reasons"]
    assert again["calls"] == first["calls"]


def test_a_conversation_out_of_turns_ends_with_the_unanswered_user(
    tmp_path: Path, run_cli: Callable[..., Ran], endpoint: FakeEndpoint
) -> None:
    endpoint.respond = lambda seen: completion("And one more thing…")
    ran = _run(tmp_path, run_cli, CAREFUL, _simulated(max_turns=2))
    assert ran.exit_code == 1, ran.output + ran.stderr
    trial = _trial(ran)
    conversation = trial["conversation"]
    assert (conversation["turns"], conversation["ended"]) == (2, "max-turns")
    last = conversation["exchanges"][-1]
    assert last == {"turn": 2, "user": "And one more thing…", "calls": [], "reasons": []}
    assert trial["reasons"][-1]["rule"] == "turns-exhausted"
    page = _page(ran)
    shown = page["tasks"][0]["trials"][0]
    assert shown["gate"] == "answer correct, score 1; ran out of turns: gating score 0"
    assert shown["conversation"]["ending"] == (
        "Ran out of turns: the user still had more to say after the agent's 2 turns"
        " (maxTurns 2); the path counts as wrong."
    )


def test_a_failed_simulated_user_is_told_apart_from_the_agent(
    tmp_path: Path, run_cli: Callable[..., Ran], endpoint: FakeEndpoint
) -> None:
    endpoint.script(completion("Yes, the 9 am one please."), Reply(403, "{}"))
    ran = _run(tmp_path, run_cli, CAREFUL, _simulated(max_turns=4))
    assert ran.exit_code == 3
    assert ran.report is not None
    task = ran.report["tasks"][0]
    assert task["userSimulatorErrors"] == 1
    trial = task["trials"][0]
    assert trial["outcome"] == "errored"
    assert trial["errorKind"] == "user-simulator"
    conversation = trial["conversation"]
    assert (conversation["turns"], conversation["ended"]) == (2, "error")
    assert [x.get("reply") is not None for x in conversation["exchanges"]] == [True, True]
    # the terminal says it once (rich wraps it to its width), apart from the agent's errors
    said = " ".join(ran.output.split())
    line = (
        "• 1 trial errored because the simulated user failed, not the agent"
        f" ({TASK_ID}): the run did not complete, the gate stays shut; apart from them,"
        " 0 trials errored on the agent's side"
    )
    assert line in said
    assert "conversation(s) ended because" not in said  # the gate's reason, said once, above
    data = _page(ran)
    shown = data["tasks"][0]
    assert (shown["userSimulatorErrors"], shown["agentErrored"]) == (1, False)
    assert shown["trials"][0]["gate"] == "the simulated user failed, not the agent: score 0"
    assert shown["trials"][0]["conversation"]["ending"] == (
        "The simulated user failed after turn 2: the conversation ended there. That is the"
        " simulator's failure, not the agent's."
    )


HOSTILE = '</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">'


def test_hostile_messages_are_data_in_the_page_never_markup(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    task = copy.deepcopy(TASK)
    task["input"] = {"message": HOSTILE}
    task["x-openwop-eval"]["conversation"]["user"] = {"script": [HOSTILE]}
    agent = f"""
def agent(messages, tools):
    return {HOSTILE!r} + " rebooked"
"""
    ran = _run(tmp_path, run_cli, agent, task)
    exchanges = _trial(ran)["conversation"]["exchanges"]
    assert [(x["user"], x["reply"]) for x in exchanges] == [(HOSTILE, HOSTILE + " rebooked")] * 2
    page = render_report(_page(ran))
    assert "<img" not in page
    assert "window.pwned=1</script>" not in page
    assert page.count("</script>") == 2  # the page's own: its data and its script
    embedded = page.split('<script type="application/json" id="report-data">', 1)[1]
    data = json.loads(embedded.split("</script>", 1)[0])
    assert data["tasks"][0]["trials"][0]["conversation"]["exchanges"][0]["user"] == HOSTILE


def _store(ran: Ran) -> str:
    """The store URL of ``ran``'s run (the ``run_cli`` fixture's, beside its outputs)."""
    return f"sqlite:///{ran.dir.parent / 'store.sqlite'}"


def _page(ran: Ran) -> dict[str, Any]:
    """The page's data of ``ran``'s run, read back from its store."""
    assert ran.report is not None
    return report_data(
        result_report(stored_result(Store(_store(ran)), ran.report["runId"]), trials=True)
    )
