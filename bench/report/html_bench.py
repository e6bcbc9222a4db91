"""HTML report benchmark: how big the self-contained report gets, how long Python takes to
render it, and how long headless chromium takes to show it, filter it and search it.

    python -m bench.report.html_bench                          # 500 and 10,000 trials
    python -m bench.report.html_bench --sizes 500,10000,50000 --repeat 5 --json out.json

Each size is ``size / --trials-per-task`` tasks (10 trials each by default) graded in process
through ``openwop_eval.core``, as a run would grade them: a refund path of two steps, some
trials with an extra allowed call, some with a forbidden one (so one task in four fails),
and diagnostics shaped like the runner's (``calls`` with arguments and results, the output).

Columns: ``MB`` the file's size; ``data ms`` ``report_data(...)`` and ``render ms``
``render_report(...)``, median of ``--repeat`` runs after one warm-up; then in chromium, on
a fresh page each of ``--repeat`` times (median), ``ready ms`` from the navigation's start to
``body[data-ready=true]`` (read and parse 50 tasks' worth of DOM from the embedded JSON),
``failures ms`` from the click on the "failures" filter to the ``#count`` text change, and
``search ms`` / ``again ms`` from a search's ``input`` event to the ``#count`` change, the first
time (which builds the search text of every task) and a second term. A search includes the
box's 120 ms debounce. ``+frame`` adds the wait for the next frame after the change (style
and layout of the new page of tasks).

Needs chromium (``/usr/bin/chromium`` or ``chromium`` on PATH, or ``--chromium PATH``) and the
``playwright`` package; nothing is downloaded. Exit status 0, or 2 without a chromium.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, sync_playwright

from openwop_eval import ToolCall, TrialRecord, __version__, parse_suite, plan_suite
from openwop_eval.core import SuiteGrade, grade_suite
from openwop_eval.reports.html import render_report, report_data
from openwop_eval.reports.model import build_report

Diagnostics = dict[tuple[str, int], dict[str, Any]]

# Set in the page before its own script runs: when the report says it is ready.
READY_PROBE = """
new MutationObserver((_, observer) => {
  if (document.body && document.body.dataset.ready === "true") {
    window.__readyAt = performance.now();
    observer.disconnect();
  }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-ready"]});
"""

# Resolves with [ms to the #count change, ms to the next frame after it].
SETTLE = """
async ([action, arg]) => {
  const count = document.getElementById("count");
  const before = count.textContent;
  const changed = new Promise((resolve, reject) => {
    new MutationObserver((_, observer) => {
      if (count.textContent !== before) { observer.disconnect(); resolve(); }
    }).observe(count, {childList: true, characterData: true, subtree: true});
    setTimeout(() => reject(new Error("#count did not change from " + before)), 120000);
  });
  const start = performance.now();
  if (action === "click") document.querySelector(arg).click();
  else {
    const box = document.getElementById("search");
    box.value = arg;
    box.dispatchEvent(new Event("input", {bubbles: true}));
  }
  await changed;
  const settled = performance.now();
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  return [settled - start, performance.now() - start];
}
"""


def suite_doc(tasks: int, trials: int) -> dict[str, Any]:
    def task(i: int) -> dict[str, Any]:
        order = f"A-{i:05d}"
        return {
            "taskId": f"refund-{i:05d}",
            "input": {"message": f"Order {order} arrived broken. Please refund me."},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "contains", "value": "refunded"},
                "trajectory": {
                    "steps": [
                        {"tool": "crm:lookup-order", "args": {"orderId": order}},
                        {"tool": "payments:refund", "args": {"orderId": order}},
                    ],
                    "forbidden": ["accounts:delete"],
                },
            },
        }

    return {
        "suiteId": "bench.openwop.evals.html-report",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 0.8},
        "trials": {"count": trials, "passRule": "mean"},
        "tasks": [task(i) for i in range(tasks)],
    }


def calls_of(i: int, trial: int, trials: int) -> list[dict[str, Any]]:
    """A refund, with a knowledge-base search in every 50th task and the forbidden call in
    the first trials of every task (none, 1, 2 or 6 of 10 by ``i % 4``)."""
    order = f"A-{i:05d}"
    total = 10 + i % 90
    lines = [{"sku": f"SKU-{i % 97}-{n}", "qty": 1 + n} for n in range(3)]
    looked_up = {"orderId": order, "status": "delivered", "totalUsd": total, "lines": lines}
    refunded = {"refundId": f"R-{i}-{trial}", "status": "refunded"}
    calls: list[dict[str, Any]] = [
        {"tool": "crm:lookup-order", "args": {"orderId": order}, "result": looked_up},
        {
            "tool": "payments:refund",
            "args": {"orderId": order, "amountUsd": total},
            "result": refunded,
        },
    ]
    if i % 50 == 7:
        calls.insert(1, {"tool": "kb:search", "args": {"q": "refund policy"}, "result": []})
    if trial < (0, 1, 2, 6)[i % 4] * trials // 10:
        calls.append({"tool": "accounts:delete", "args": {"customerId": f"C-{i}"}, "result": {}})
    return [{"missed": False, "status": "ok", "error": None, **c} for c in calls]


def build(trials_total: int, per_task: int) -> tuple[SuiteGrade, Diagnostics]:
    tasks = max(1, trials_total // per_task)
    plan = plan_suite(parse_suite(suite_doc(tasks, per_task)).suite)
    records, diagnostics = [], {}
    for i in range(tasks):
        for trial in range(per_task):
            calls = calls_of(i, trial, per_task)
            output = f"Your order A-{i:05d} has been refunded (${10 + i % 90:.2f})."
            task_id = f"refund-{i:05d}"
            records.append(
                TrialRecord(
                    task_id,
                    trial,
                    output,
                    tuple(ToolCall(c["tool"], c["args"]) for c in calls),
                    latency_ms=float(800 + (i * 7 + trial * 13) % 900),
                )
            )
            diagnostics[(task_id, trial)] = {"output": output, "calls": calls}
    return grade_suite(plan, records), diagnostics


def median_ms(run: Callable[[], object], repeat: int) -> tuple[float, Any]:
    result = run()  # warm-up (and the value to keep)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), result


def in_browser(browser: Browser, path: Path) -> dict[str, tuple[float, ...]]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page: Page = context.new_page()
        page.add_init_script(READY_PROBE)
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready=true]", state="attached", timeout=120_000)
        ready = float(page.evaluate("window.__readyAt"))
        failures = tuple(page.evaluate(SETTLE, ["click", "button[data-filter=failures]"]))
        search = tuple(page.evaluate(SETTLE, ["input", "kb:search"]))
        again = tuple(page.evaluate(SETTLE, ["input", "accounts:delete"]))
        return {"ready": (ready,), "failures": failures, "search": search, "again": again}
    finally:
        context.close()


def chromium_path(given: str | None) -> str | None:
    if given:
        return given
    system = Path("/usr/bin/chromium")
    return str(system) if system.is_file() else shutil.which("chromium")


def chromium_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="500,10000", help="trial counts, comma-separated")
    p.add_argument("--trials-per-task", type=int, default=10, help="trials per task (10)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per figure (3)")
    p.add_argument("--chromium", help="the chromium executable (default: the system's)")
    p.add_argument("--keep", type=Path, help="write the reports into this directory")
    p.add_argument("--json", type=Path, help="write every figure to this JSON file")
    args = p.parse_args(argv)
    try:
        args.sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        p.error("--sizes takes integers, comma-separated")
    if min(*args.sizes, args.trials_per_task, args.repeat) < 1:
        p.error("--sizes, --trials-per-task and --repeat must be at least 1")
    return args


def measure(browser: Browser, size: int, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    grade, diagnostics = build(size, args.trials_per_task)
    summary = {"passed": grade.passed}

    def data() -> dict[str, Any]:
        return report_data(build_report("local/bench", "bench", grade, summary, diagnostics))

    data_ms, built = median_ms(data, args.repeat)
    render_ms, html = median_ms(lambda: render_report(built), args.repeat)
    path = out / f"report-{size}.html"
    path.write_text(html, encoding="utf-8")
    runs = [in_browser(browser, path) for _ in range(args.repeat)]
    page = {
        name: [statistics.median(run[name][j] for run in runs) for j in range(len(first))]
        for name, first in runs[0].items()
    }
    return {
        "trials": sum(len(t.trials) for t in grade.tasks),
        "tasks": len(grade.tasks),
        "failedTasks": sum(not t.passed for t in grade.tasks),
        "mb": path.stat().st_size / 1e6,
        "reportDataMs": data_ms,
        "renderMs": render_ms,
        "chromiumMs": page,
    }


def row(f: dict[str, Any]) -> list[str]:
    page = f["chromiumMs"]

    def settle(name: str) -> str:
        return f"{page[name][0]:.0f} (+frame {page[name][1]:.0f})"

    return [
        f"{f['trials']:,}",
        f"{f['tasks']:,} ({f['failedTasks']:,} failed)",
        f"{f['mb']:.2f}",
        f"{f['reportDataMs']:.0f}",
        f"{f['renderMs']:.0f}",
        f"{page['ready'][0]:.0f}",
        settle("failures"),
        settle("search"),
        settle("again"),
    ]


HEADER = ["trials", "tasks", "MB", "data ms", "render ms", "ready ms", "failures ms", "search ms"]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    chromium = chromium_path(args.chromium)
    if chromium is None or not Path(chromium).is_file():
        print("no chromium: install Debian's `chromium` or pass --chromium PATH", file=sys.stderr)
        return 2
    print(
        f"openwop-eval {__version__}, Python {platform.python_version()},"
        f" {chromium_version(chromium)}, {platform.machine()}; median of {args.repeat}"
    )
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        out = args.keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            figures = [measure(browser, size, args, out) for size in args.sizes]
        finally:
            browser.close()
    print(table([*HEADER, "again ms"], [row(f) for f in figures]))
    if args.json:
        args.json.write_text(json.dumps({"figures": figures}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
