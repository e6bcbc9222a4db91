"""Plain-text tables (Markdown pipe tables, so they paste into the README as they are)."""

from __future__ import annotations

from collections.abc import Sequence

from bench.common.timing import Timing
from bench.grading.counts import VerdictTally
from bench.grading.ours import RuleCheck
from bench.grading.peer_runs import CLOSEST, ModeResult
from bench.grading.verdicts import CLOSED, DEFECTS, SuiteExpectation
from openwop_eval import SuiteGrade

LABELS = {
    "agentevals": "ae",
    "google-adk": "adk",
}


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        parts = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "| " + " | ".join(parts) + " |"

    rule = (
        "|"
        + "|".join(("-" * (w + 1) + ":") if i else ("-" * (w + 2)) for i, w in enumerate(widths))
        + "|"
    )
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def per_trial(t: Timing) -> str:
    return f"{t.median / t.trials * 1e6:.1f}"


def speed(t: Timing) -> str:
    lo, hi = t.iqr
    return f"{t.median * 1e3:.1f} [{lo * 1e3:.1f}–{hi * 1e3:.1f}]"


def ours_classes(checks: Sequence[RuleCheck]) -> str:
    rows = []
    for d in DEFECTS:
        tallies = [c.classes[d] for c in checks]
        first = tallies[0]
        rows.append(
            [
                d,
                first.trials,
                first.expected_fail,
                "/".join(str(t.leaks) for t in tallies),
                "/".join(str(t.false_failures) for t in tallies),
            ]
        )
    rules = "/".join(c.rule for c in checks)
    return table(
        [
            "defect class",
            "trials",
            "expected to fail",
            f"leaks ({rules})",
            f"false failures ({rules})",
        ],
        rows,
    )


def ours_rules(
    checks: Sequence[RuleCheck],
    results: dict[str, SuiteGrade],
    suite: SuiteExpectation,
    timings: dict[str, Timing],
    peaks: dict[str, int],
) -> str:
    rows = []
    for c in checks:
        t, result = timings[c.rule], results[c.rule]
        mismatches = len(c.trial_mismatches) + len(c.task_mismatches) + len(c.suite_mismatches)
        rows.append(
            [
                c.rule,
                c.tasks_expected_pass,
                c.tasks_passed,
                c.task_leaks,
                c.task_false_failures,
                mismatches,
                f"{result.gated_aggregate_score:.4f} ({float(suite.gated_aggregate):.4f})",
                f"{str(result.passed).lower()} ({str(suite.passed).lower()})",
                f"{t.per_second:,.0f}",
                speed(t),
                mib(peaks[c.rule]),
            ]
        )
    return table(
        [
            "pass rule",
            "tasks expected to pass",
            "tasks passed",
            "task leaks",
            "task false failures",
            "mismatches",
            "gatedAggregateScore (expected)",
            "suite passed (expected)",
            "trials/s",
            "median ms [IQR]",
            "tracemalloc peak",
        ],
        rows,
    )


def _label(r: ModeResult) -> str:
    mode = r.mode.replace("/args=exact", "").replace("/args=", " args ")
    return f"{LABELS.get(r.peer, r.peer)} {'closest' if r.mode == CLOSEST else mode}"


def peer_classes(ours: VerdictTally, results: Sequence[ModeResult], leaks: bool) -> str:
    """Per-class leaks (or false failures), ours beside every peer mode."""
    header = ["defect class", "ours", *(_label(r) for r in results)]
    rows = []
    for d in DEFECTS:

        def cell(t: VerdictTally, peer: bool, d: str = d) -> str:
            c = t.classes[d]
            n = c.leaks if leaks else c.false_failures
            return f"({n})" if peer and d in CLOSED else str(n)

        rows.append([d, cell(ours, False), *(cell(r.tally, True) for r in results)])
    return table(header, rows)


def peer_totals(
    ours: VerdictTally,
    ours_timing: Timing,
    ours_peak: int,
    results: Sequence[ModeResult],
    expected_passes: int,
) -> str:
    def counted(t: VerdictTally, peer: bool) -> tuple[int, int]:
        classes = [d for d in DEFECTS if not (peer and d in CLOSED)]
        leaks = sum(t.classes[d].leaks for d in classes)
        return leaks, sum(t.classes[d].false_failures for d in classes)

    def task_leaks(t: VerdictTally) -> str:
        return "/".join(str(t.tasks[r].leaks) for r in ("mean", "all", "any"))

    def speed_cells(t: Timing | None, peak: int | None) -> list[str]:
        if t is None:
            return ["–"] * 4
        ratio = f"{t.per_second / ours_timing.per_second:.3g}"
        return [f"{t.per_second:,.0f}", per_trial(t), ratio, mib(peak or 0)]

    rows: list[list[object]] = [["expected", "", "", "", "", expected_passes, 0, 0, "0/0/0"]]
    rows.append(
        [
            "ours (mean)",
            *speed_cells(ours_timing, ours_peak),
            ours.passes,
            *counted(ours, False),
            task_leaks(ours),
        ]
    )
    for r in results:
        rows.append(
            [
                _label(r),
                *speed_cells(r.timing, r.peak_bytes),
                r.tally.passes,
                *counted(r.tally, True),
                task_leaks(r.tally),
            ]
        )
    header = ["system / mode", "trials/s", "µs/trial", "speed vs ours", "tracemalloc peak"]
    header += ["trials passed", "leaks", "false failures", "task leaks mean/all/any"]
    return table(header, rows)
