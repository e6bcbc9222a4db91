"""Grading benchmark: does the gate reach the right verdict on every recorded trial, how fast,
and in how much memory? Optionally the same corpus through agentevals and Google ADK.

    python -m bench.grading.grade_bench --tasks 400 --trials 5 --seed 1 [--json PATH]

Exit status: 0 when our core graded every trial, task and suite as expected and leaked no
defect class; 1 otherwise; 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import platform
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from bench.common.timing import Timing, max_rss, time_runs, traced_peak
from bench.grading.corpus import Corpus, build_corpus
from bench.grading.counts import VerdictTally, tally
from bench.grading.gates import GateResult, run_gates
from bench.grading.ours import (
    RuleCheck,
    check,
    expectations,
    match_only,
    plans,
    records,
    trajectory_inputs,
)
from bench.grading.paired import paired
from bench.grading.peer_runs import ModeResult, PeerRun, run_peer, speed
from bench.grading.tables import mib, ours_classes, ours_rules, peer_classes, peer_totals, table
from bench.grading.verdicts import PASS_RULES, SuiteExpectation, TaskExpectation
from openwop_eval.core import GradingPlan, SuiteGrade, grade_suite
from openwop_eval.runtime import gc_tuning

PEERS = ("agentevals", "google-adk")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=int, default=400, help="tasks in the corpus (400)")
    p.add_argument("--trials", type=int, default=5, help="trials per task (5)")
    p.add_argument("--seed", type=int, default=1, help="corpus seed (1)")
    p.add_argument("--pass-score", type=float, default=0.6, help="thresholds.passScore (0.6)")
    p.add_argument("--k", type=int, default=None, help="trials.k (default: the trial count)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs before timing (2)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs; the median counts (5)")
    p.add_argument(
        "--peers",
        choices=("auto", "none"),
        default="auto",
        help="auto: run every peer that imports (default); none: ours only",
    )
    p.add_argument("--peer-warmup", type=int, default=1, help="peer warm-up runs (1)")
    p.add_argument("--peer-repeat", type=int, default=3, help="peer timed runs (3)")
    p.add_argument(
        "--paired-rounds",
        type=int,
        default=9,
        help="interleaved rounds of ours and each peer's fastest mode, for the ratio (9; 0 skips)",
    )
    p.add_argument("--json", type=Path, help="write every figure to this JSON file")
    p.add_argument("--dump-corpus", type=Path, help="write the corpus (neutral JSON) here")
    args = p.parse_args(argv)
    if min(args.tasks, args.trials, args.repeat, args.peer_repeat) < 1:
        p.error("--tasks, --trials, --repeat and --peer-repeat must be at least 1")
    if args.k is not None and not 1 <= args.k <= args.trials:
        p.error("--k must be between 1 and --trials")
    return args


def describe(corpus: Corpus) -> str:
    orders = Counter(t.order for t in corpus.tasks)
    args = Counter(t.args_match for t in corpus.tasks)
    k = corpus.k if corpus.k is not None else corpus.trials_per_task
    return (
        f"{len(corpus.tasks)} tasks × {corpus.trials_per_task} trials = {corpus.trial_count}"
        f" trials, seed {corpus.seed}, passScore {corpus.pass_score}, k {k}\n"
        f"order: {', '.join(f'{o} {c}' for o, c in sorted(orders.items()))};"
        f" argsMatch: {', '.join(f'{a} {c}' for a, c in sorted(args.items()))}"
    )


def digest(corpus: Corpus) -> str:
    text = json.dumps(corpus.as_json(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def print_gates(gates: list[GateResult]) -> None:
    print("\n## RFC 0246 gate fixtures\n")
    rows = []
    for g in gates:
        s = g.summary
        figures = ", ".join(
            [
                f"aggregateScore {s['aggregateScore']:g}",
                f"gatedAggregateScore {s.get('gatedAggregateScore', '–')}",
                "task gatedScore " + "/".join(f"{t.get('gatedScore', '–')}" for t in s["tasks"]),
                f"passed {str(s['passed']).lower()}",
            ]
        )
        rows.append([g.name, "ok" if not g.failures else "FAIL: " + "; ".join(g.failures), figures])
    print(table(["fixture", "verdict", "summary"], rows))


@dataclass(frozen=True)
class OursRun:
    checks: list[RuleCheck]
    results: dict[str, SuiteGrade]
    timings: dict[str, Timing]
    peaks: dict[str, int]
    tasks_expected: list[TaskExpectation]
    suite_expected: SuiteExpectation
    compile_seconds: float
    records_seconds: float
    tally: VerdictTally
    """Our trial verdicts (mean rule) counted the way the peers' are."""
    matcher: ModeResult

    @property
    def expected_passes(self) -> int:
        return sum(t.passes for t in self.tasks_expected)

    @property
    def clean(self) -> bool:
        return all(c.clean for c in self.checks)


def grade_ours(corpus: Corpus, args: argparse.Namespace) -> OursRun:
    start = time.perf_counter()
    compiled = plans(corpus)
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    recs = records(corpus)
    records_seconds = time.perf_counter() - start
    task_exp, suite_exp = expectations(corpus)
    checks: list[RuleCheck] = []
    results: dict[str, SuiteGrade] = {}
    timings: dict[str, Timing] = {}
    peaks: dict[str, int] = {}
    for rule in PASS_RULES:

        def run(plan: GradingPlan = compiled[rule]) -> SuiteGrade:
            return grade_suite(plan, recs)

        results[rule] = run()
        checks.append(check(corpus, rule, results[rule], task_exp, suite_exp))
        timings[rule] = time_runs(run, corpus.trial_count, args.warmup, args.repeat)
        peaks[rule] = traced_peak(run)
    verdicts = [t.passed for task in results["mean"].tasks for t in task.trials]

    # The trajectory matcher alone, for a like-for-like speed comparison with the peers'
    # bare evaluators (it cannot see fixture misses or errors either).
    inputs = trajectory_inputs(corpus, compiled["mean"])
    matcher = ModeResult(
        "ours",
        "check_trajectory only",
        tally(corpus, match_only(inputs)),
        time_runs(lambda: match_only(inputs), corpus.trial_count, args.warmup, args.repeat),
        traced_peak(lambda: match_only(inputs)),
    )
    return OursRun(
        checks,
        results,
        timings,
        peaks,
        task_exp,
        suite_exp,
        compile_seconds,
        records_seconds,
        tally(corpus, verdicts),
        matcher,
    )


def print_ours(ours: OursRun) -> None:
    checks = ours.checks
    same = all(ch.classes == checks[0].classes for ch in checks)
    print(
        f"\n## Ours: trial verdicts by defect class (identical under every pass rule:"
        f" {'yes' if same else 'NO'})\n"
    )
    print(ours_classes(checks))
    print("\n## Ours: task and suite verdicts, throughput and memory, per pass rule\n")
    print(ours_rules(checks, ours.results, ours.suite_expected, ours.timings, ours.peaks))
    graded = ours.results["mean"].tasks
    means = [
        (
            name,
            fmean(float(getattr(t, attr)) for t in graded),
            fmean(float(getattr(e, attr)) for e in ours.tasks_expected),
        )
        for name, attr in (
            ("passAtK", "pass_at_k"),
            ("passHatK", "pass_hat_k"),
            ("gatedScore", "gated_score"),
        )
    ]
    print(
        "\nMean over tasks, graded (expected): "
        + ", ".join(f"{name} {got:.6f} ({want:.6f})" for name, got, want in means)
    )
    if ours.matcher.timing is not None:
        print(
            "check_trajectory alone (no scoring, aggregation or pass rule):"
            f" {ours.matcher.timing.per_second:,.0f} trials/s"
        )
    for ch in checks:
        for line in (ch.trial_mismatches + ch.task_mismatches + ch.suite_mismatches)[:20]:
            print(f"MISMATCH {line}")


def run_peers(corpus: Corpus, args: argparse.Namespace) -> tuple[list[PeerRun], dict[str, str]]:
    from bench.grading.peers import (
        load_peers,  # only now: their imports would inflate our RSS figure
    )

    found, missing = load_peers(PEERS)
    runs = []
    for peer in found:
        try:
            runs.append(run_peer(peer, corpus, args.peer_warmup, args.peer_repeat))
        except Exception as exc:  # a peer that breaks is reported, and the rest go on
            missing[peer.name] = f"failed while grading: {type(exc).__name__}: {exc}"
    return runs, missing


def print_peers(ours: OursRun, runs: list[PeerRun], missing: dict[str, str]) -> None:
    print("\n## Peers (same corpus, same process, one thread)\n")
    for run in runs:
        print(
            f"- {run.peer.name} {run.peer.version}: inputs built in"
            f" {run.prepare_seconds:.2f} s (not timed)"
        )
    for name, why in missing.items():
        print(f"- {name}: not run ({why})")
    results = [m for run in runs for m in run.modes]
    if not results:
        return
    print(
        "\nLeaks by defect class (trials expected to fail that passed). A peer cannot see a"
        "\nfixture miss or an agent error: those cells, in parentheses, count what it passed"
        "\nas given the recorded calls, and are left out of its totals.\n"
    )
    print(peer_classes(ours.tally, results, leaks=True))
    print("\nFalse failures by defect class (trials expected to pass that failed).\n")
    print(peer_classes(ours.tally, results, leaks=False))
    print(
        "\nThroughput and totals. Speed vs ours = trials/s ÷ ours (full grade, mean rule). Task"
        "\nleaks apply each pass rule to the system's trial verdicts, every trial counted as the"
        "\nsystem graded it (fixture misses and errors included).\n"
    )
    print(
        peer_totals(
            ours.tally,
            ours.timings["mean"],
            ours.peaks["mean"],
            [ours.matcher, *results],
            ours.expected_passes,
        )
    )


def print_speed(figures: dict[str, Any]) -> None:
    ours = figures["oursTrialsPerSecond"]
    print("\n## Speed, full grade vs the peers' fastest mode (same process, one thread)\n")
    print(
        "ours: "
        + ", ".join(f"{rule} {tps:,.0f}" for rule, tps in ours.items())
        + f" trials/s (rules within {figures['rulesSpread']:.1%} of each other)"
    )
    for name, m in figures["fastestPeerMode"].items():
        ratios = ", ".join(f"{rule} {r:.2f}" for rule, r in m["oursOverPeer"].items())
        print(f"{name} {m['mode']}: {m['trialsPerSecond']:,.0f} trials/s; ours ÷ it: {ratios}")
    pairs = figures.get("paired")
    if pairs:
        print(
            f"\nInterleaved, {pairs['rounds']} rounds (each round runs every system once; the"
            " median of the rounds' ratios, so a drifting machine bills all alike):"
        )
        for name, m in pairs["peers"].items():
            ratios = ", ".join(f"{rule} {r:.2f}" for rule, r in m["oursOverPeer"].items())
            print(f"{name} {m['mode']}: ours ÷ it: {ratios}")
        slow = ", ".join(f"{rule} {r:.2f}" for rule, r in pairs["ruleSlowdown"].items())
        print(f"each rule's time ÷ the fastest other rule's: {slow}")


def to_json(
    corpus: Corpus,
    args: argparse.Namespace,
    gates: list[GateResult],
    ours: OursRun,
    runs: list[PeerRun],
    missing: dict[str, str],
    rss: dict[str, int],
    figures: dict[str, Any],
) -> dict[str, Any]:
    return {
        "command": " ".join(sys.argv),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "openwopEval": importlib.metadata.version("openwop-eval"),
        "corpus": {
            "tasks": len(corpus.tasks),
            "trialsPerTask": corpus.trials_per_task,
            "seed": corpus.seed,
            "passScore": corpus.pass_score,
            "k": corpus.k,
            "sha256_16": digest(corpus),
        },
        "settings": {k: v for k, v in vars(args).items() if k not in ("json", "dump_corpus")},
        "gates": [
            {"name": g.name, "failures": list(g.failures), "summary": g.summary} for g in gates
        ],
        "ours": {
            "compileSeconds": ours.compile_seconds,
            "recordsSeconds": ours.records_seconds,
            "rules": {
                c.rule: {
                    **c.as_json(),
                    "timing": ours.timings[c.rule].as_json(),
                    "tracemallocPeakBytes": ours.peaks[c.rule],
                }
                for c in ours.checks
            },
            "verdicts": ours.tally.as_json(),
            "trajectoryOnly": ours.matcher.as_json(),
        },
        "peers": [
            {
                "name": r.peer.name,
                "version": r.peer.version,
                "prepareSeconds": r.prepare_seconds,
                "modes": [m.as_json() for m in r.modes],
            }
            for r in runs
        ],
        "peersNotRun": missing,
        "maxRssBytes": rss,
        "speed": figures,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # The collector as the command line sets it for every command (openwop_eval.runtime.gc_tuning);
    # the peers are measured in this same process, under the same setting.
    gc_tuning.tune()
    start = time.perf_counter()
    corpus = build_corpus(args.tasks, args.trials, args.seed, args.pass_score, args.k)
    built = time.perf_counter() - start
    if args.dump_corpus:
        args.dump_corpus.write_text(json.dumps(corpus.as_json()))

    print("# openwop-eval grading benchmark\n")
    print(describe(corpus))
    print(
        f"corpus sha256 {digest(corpus)}, built in {built:.2f} s;"
        f" python {platform.python_version()}, {os.cpu_count()} CPUs,"
        f" openwop-eval {importlib.metadata.version('openwop-eval')}"
    )
    gates = run_gates()
    print_gates(gates)

    ours = grade_ours(corpus, args)
    rss = {"afterOurs": max_rss()}
    print(
        f"\nSuites validated and compiled in {ours.compile_seconds:.2f} s (3 pass rules),"
        f" trial records built in {ours.records_seconds:.2f} s; neither is timed."
        f" Timing: grade_suite only, {args.warmup} warm-up + {args.repeat} runs, median."
    )
    print_ours(ours)
    print(f"\nProcess peak RSS after our grading (no peer imported yet): {mib(rss['afterOurs'])}")

    runs: list[PeerRun] = []
    missing: dict[str, str] = {}
    if args.peers == "auto":
        runs, missing = run_peers(corpus, args)
        rss["afterPeers"] = max_rss()
        print_peers(ours, runs, missing)
        if runs:
            print(f"\nProcess peak RSS after the peers: {mib(rss['afterPeers'])}")
    figures = speed(ours.timings, ours.matcher.timing, runs)
    if args.paired_rounds > 0:  # the rules among themselves, and each peer that ran
        figures["paired"] = paired(corpus, runs, figures["fastestPeerMode"], args.paired_rounds)
    print_speed(figures)

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(to_json(corpus, args, gates, ours, runs, missing, rss, figures), indent=2)
        )
    failed = any(g.failures for g in gates) or not ours.clean
    print(
        "\nRESULT: "
        + (
            "FAIL: our core leaked or mis-graded (see above)"
            if failed
            else "ok: no leak, every trial, task, suite and gate fixture as expected"
        )
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
