"""Interleaved rounds: ours and each peer's fastest mode, timed one after the other.

On a shared machine whose speed drifts by tens of percent within minutes, systems timed in
separate blocks (ours first, the peers later) are compared across different machines. In
each round here every contender runs once, in an order that rotates from round to round,
and the figure is the median over rounds of that round's ratio: the drift bills everyone
alike.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from bench.common.timing import timed_once
from bench.grading.corpus import Corpus
from bench.grading.ours import plans, records
from bench.grading.peer_runs import PeerRun
from openwop_eval.core import grade_suite


def paired(
    corpus: Corpus, runs: list[PeerRun], fastest: dict[str, dict[str, Any]], rounds: int
) -> dict[str, Any]:
    """Per peer (its fastest mode) and per pass rule: the median of per-round ratios, ours
    trials/s over the peer's (> 1: ours is faster)."""
    compiled, recs = plans(corpus), records(corpus)
    contenders: dict[str, Callable[[], object]] = {
        rule: (lambda plan=plan: grade_suite(plan, recs)) for rule, plan in compiled.items()
    }
    peers: dict[str, str] = {}
    for run in runs:
        best = fastest.get(run.peer.name)
        if best is None:
            continue
        inputs, grade = run.peer.inputs(corpus), run.peer.grader(best["mode"])
        contenders[run.peer.name] = lambda grade=grade, inputs=inputs: [grade(x) for x in inputs]
        peers[run.peer.name] = best["mode"]
    names = list(contenders)
    for name in names:  # warm
        contenders[name]()
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            seconds[name].append(timed_once(contenders[name]))
    trials = corpus.trial_count
    per_rule = {rule: trials / statistics.median(seconds[rule]) for rule in compiled}
    out: dict[str, Any] = {
        "rounds": rounds,
        "oursTrialsPerSecond": per_rule,
        "ruleSlowdown": slowdowns({rule: seconds[rule] for rule in compiled}),
        "peers": {},
    }
    for peer, mode in peers.items():
        theirs = seconds[peer]
        ratios = {
            rule: statistics.median(p / o for p, o in zip(theirs, seconds[rule], strict=True))
            for rule in compiled
        }
        out["peers"][peer] = {"mode": mode, "oursOverPeer": ratios}
    return out


def slowdowns(seconds: dict[str, list[float]]) -> dict[str, float]:
    """Per pass rule, how much slower it is than the fastest other rule: the largest median
    per-round ratio of its time to another's (1.0: alike, below: it is the fastest). A ratio
    within each round, like the peers': the drift between rounds bills both rules alike."""
    return {
        x: max(
            statistics.median(a / b for a, b in zip(seconds[x], seconds[y], strict=True))
            for y in seconds
            if y != x
        )
        for x in seconds
    }
