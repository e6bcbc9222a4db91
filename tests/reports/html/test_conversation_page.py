"""A conversation trial reads as a chat in a real browser: turn by turn the user's message,
the calls the agent made in that turn and its reply, the turn where the path went wrong
marked with its reasons, and a conversation that ran out of turns saying so — every message
shown as text, never run as markup."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.conversations.suites import CAREFUL, HASTY, LATE_FORBIDDEN, TASK, suite
from tests.fakes.openai_server import completion, serve
from tests.reports.html.pages import by_id, cli, needs_chromium, open_report

pytestmark = needs_chromium

TRIAL = "task=rebook-after-cancellation/trial=1"
SCREENSHOT = Path("/tmp/conversation-html.png")
HOSTILE = '</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
PERSISTENT = HOSTILE + " And one more thing…"


def _run(tmp: Path, task: dict[str, Any], agent: str) -> Path:
    (tmp / "suite.json").write_text(json.dumps(suite(task)))
    (tmp / "agent.py").write_text(agent)
    html = tmp / "report.html"
    result = cli(
        "run", str(tmp / "suite.json"), "--agent", f"{tmp / 'agent.py'}:agent",
        "--store", f"sqlite:///{tmp / 's.db'}", "--quiet", "--html", str(html),
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    return html


@pytest.fixture(scope="module")
def late(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Right until its last turn, where the agent charges a forbidden fee."""
    return _run(tmp_path_factory.mktemp("late"), TASK, LATE_FORBIDDEN)


@pytest.fixture(scope="module")
def hasty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Books in turn 1, before the user chose: the whole path matches, turn 1's rule not."""
    return _run(tmp_path_factory.mktemp("hasty"), TASK, HASTY)


@pytest.fixture(scope="module")
def exhausted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A simulated user who never stops, its every message hostile markup, against an agent
    that answers with markup too: out of turns after two."""
    task = copy.deepcopy(TASK)
    task["input"] = {"message": HOSTILE}
    conversation = task["x-openwop-eval"]["conversation"]
    conversation["maxTurns"] = 2
    conversation["user"] = {
        "simulator": {"model": "openai:user-model", "persona": "a traveller", "goal": "rebook"}
    }
    agent = CAREFUL.replace('return "You', f'return {HOSTILE!r} + "You')
    with serve() as endpoint, pytest.MonkeyPatch.context() as env:
        endpoint.respond = lambda seen: completion(PERSISTENT)
        env.setenv("OPENWOP_EVAL_USER_BASE_URL", endpoint.url)
        yield _run(tmp_path_factory.mktemp("exhausted"), task, agent)


def _top(box: Locator) -> float:
    found = box.bounding_box()
    assert found is not None
    return found["y"]


def test_a_conversation_reads_turn_by_turn_with_the_wrong_turn_marked(
    page: Page, late: Path
) -> None:
    open_report(page, late, "#" + TRIAL)
    trial = by_id(page, TRIAL)
    expect(trial).to_have_attribute("open", "")
    turns = trial.locator("ol.chat > li.turn")
    expect(turns).to_have_count(3)
    expect(turns.locator(".turn-n")).to_have_text(["turn 1", "turn 2", "turn 3"])
    expect(turns.locator(".msg.user .said")).to_have_text(
        [
            "My flight AB123 was cancelled, can you rebook me?",
            "Yes, the 9 am one please.",
            "Thanks, that's all.",
        ]
    )
    expect(turns.locator(".msg.agent .said")).to_have_text(
        [
            "I can offer AB200 at 09:00.",
            "Done, rebooked.",
            "You are rebooked; I charged the change fee.",
        ]
    )
    calls = [turns.nth(i).locator("li.call .tool") for i in range(3)]
    expect(calls[0]).to_have_text(["bookings:get", "flights:search"])
    expect(calls[1]).to_have_text(["bookings:rebook"])
    expect(calls[2]).to_have_text(["payments:charge"])
    # numbered as the reasons count calls: over the whole conversation
    expect(turns.nth(2).locator("ol.timeline")).to_have_attribute("start", "4")
    for i in range(3):  # in each turn: the user, then the calls, then the reply
        turn = turns.nth(i)
        user, call, reply = (turn.locator(s).first for s in (".msg.user", "li.call", ".msg.agent"))
        assert _top(user) < _top(call) < _top(reply)
        if i:
            assert _top(turns.nth(i - 1).locator(".msg.agent")) < _top(user)

    wrong = trial.locator("li.turn.wrong")
    expect(wrong).to_have_count(1)
    expect(wrong).to_have_attribute("data-turn", "3")
    expect(wrong.locator(".turn-head .tags")).to_have_text("the path went wrong here")
    expect(wrong.locator("ul.reasons li")).to_have_text(
        ["called forbidden tool payments:charge at call 4 (forbidden: payments:*)"]
    )
    expect(wrong.locator("li.call.forbidden .tag.bad")).to_have_text("forbidden")
    expect(trial.locator(":scope > ul.reasons li")).to_have_text(
        ["called forbidden tool payments:charge at call 4 (forbidden: payments:*) — in turn 3"]
    )
    expect(trial.locator("p.ended")).to_have_text(
        "The user was done after turn 3 (3 of at most 4 turns)."
    )
    expect(trial.locator("summary .outcome")).to_have_text(
        "failed: answer correct, score 1; path wrong: gating score 0 · 3 turns"
    )
    expect(trial.locator("h4.output-head")).to_have_text("output: the agent's last reply")
    charge = wrong.locator("li.call").first
    charge.locator("summary").click()  # its arguments and result, as any call's
    expect(charge.locator("pre.args")).to_have_text('{\n  "amount": 50\n}')
    expect(charge.locator("pre.result")).to_have_text('{\n  "status": "charged"\n}')
    trial.screenshot(path=str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 0


def test_a_conversation_out_of_turns_says_so_and_shows_hostile_text_as_written(
    page: Page, exhausted: Path
) -> None:
    open_report(page, exhausted, "#" + TRIAL)
    trial = by_id(page, TRIAL)
    turns = trial.locator("ol.chat > li.turn")
    expect(turns.locator(".turn-n")).to_have_text(["turn 1", "turn 2", "after the last turn"])
    expect(turns.locator(".msg.user .said")).to_have_text([HOSTILE, PERSISTENT, PERSISTENT])
    expect(turns.nth(1).locator(".msg.agent .said")).to_have_text(
        "Done: you are rebooked on AB200."
    )
    last = turns.nth(2)
    expect(last.locator(".turn-head .tags")).to_have_text("not answered: out of turns")
    expect(last.locator(".msg.agent")).to_have_count(0)
    expect(trial.locator("p.ended")).to_have_text(
        "Ran out of turns: the user still had more to say after the agent's 2 turns"
        " (maxTurns 2); the path counts as wrong."
    )
    assert page.evaluate("typeof window.pwned") == "undefined"
    expect(page.locator("img")).to_have_count(0)
    # what was said is searched too
    page.fill("#search", "one more thing")
    expect(page.locator("#count")).to_have_text("1 of 1 tasks")
    page.fill("#search", "nothing anyone said")
    expect(page.locator("#count")).to_have_text("0 of 1 tasks")


def test_a_turn_rule_marks_its_turn_and_the_call_it_forbids(page: Page, hasty: Path) -> None:
    open_report(page, hasty, "#" + TRIAL)
    trial = by_id(page, TRIAL)
    turns = trial.locator("ol.chat > li.turn")
    expect(turns).to_have_count(3)
    expect(trial.locator("li.turn.wrong")).to_have_count(2)
    first, second = turns.nth(0), turns.nth(1)
    # the heading names the turn: its reasons are not prefixed with it again
    expect(first.locator("ul.reasons li")).to_have_text(
        ["called forbidden tool bookings:rebook at call 3"]
    )
    expect(second.locator("ul.reasons li")).to_have_text(
        ["step 1 (bookings:rebook) was never called"]
    )
    # a step of the whole path, forbidden in its turn
    booked = first.locator("li.call").nth(2)
    expect(booked).to_have_class("call forbidden")
    expect(booked.locator(".tag")).to_have_text(["step 3", "forbidden"])
    expect(second.locator("p.empty")).to_have_text("no tool calls")
    expect(turns.nth(2)).not_to_have_class("turn wrong")
