"""The HTML report's header names the tasks behind the gate: when it is open, only those that
lost score to it (gated score below score); when it is shut, those that carried it shut."""

from __future__ import annotations

import re

from openwop_eval.reports.html import render_report, report_data
from openwop_eval.reports.model import build_report
from tests.helpers import calls, golden, graded, suite_doc, trial

FORBIDDEN = {"forbidden": ["accounts:delete"]}
TRIALS = 4


def page(pass_score: float, wrong_path: bool = True) -> str:
    """Four tasks of four trials: ``clean`` and ``clean-too`` score 1; ``wrong-answer``
    answers wrong every time (score 0, and 0 gated: the gate took nothing from it); in
    ``wrong-path`` the first trial calls a forbidden tool (score 1, gated 0.75)."""
    ids = ("clean", "wrong-answer", "wrong-path", "clean-too")
    doc = suite_doc(
        *(golden(i, trajectory=FORBIDDEN) for i in ids),
        pass_score=pass_score,
        trials={"count": TRIALS, "passRule": "mean"},
    )
    records = [
        trial(
            task,
            i,
            output="wrong" if task == "wrong-answer" else "ok",
            tool_calls=calls("accounts:delete")
            if wrong_path and task == "wrong-path" and i == 0
            else (),
        )
        for task in ids
        for i in range(TRIALS)
    ]
    grade = graded(doc, *records)
    report = build_report("local/r", "agent", grade, {"passed": grade.passed}, {})
    return render_report(report_data(report))


def header_list(html: str) -> tuple[str, list[str]] | None:
    """The shut paragraph's words before the colon and the task ids it links, if shown."""
    found = re.search(r'<p class="shut" id="shut">(.*?)</p>', html, re.S)
    if found is None:
        return None
    label = found.group(1).split(":", 1)[0].strip()
    return label, re.findall(r'<a href="#task=[^"]*">([^<]*)</a>', found.group(1))


def test_an_open_gate_lists_only_the_tasks_that_lost_score_to_it() -> None:
    html = page(pass_score=0.5)  # gated aggregate 0.6875: open, though wrong-answer failed
    assert "NOT PASSED" not in html
    assert header_list(html) == ("Tasks that lost score to the gate", ["wrong-path"])


def test_an_open_gate_that_took_nothing_shows_no_list() -> None:
    html = page(pass_score=0.5, wrong_path=False)  # wrong-answer failed on its answers alone
    assert "NOT PASSED" not in html
    assert header_list(html) is None


def test_a_shut_gate_lists_the_failed_tasks_then_those_that_lost_score() -> None:
    html = page(pass_score=0.7)  # gated aggregate 0.6875: shut; wrong-path passes (0.75)
    assert "NOT PASSED" in html
    assert header_list(html) == ("Tasks that kept the gate shut", ["wrong-answer", "wrong-path"])
