"""Running a peer over the corpus: verdicts, tallies and timings per mode."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from bench.common.timing import Timing, time_runs, traced_peak
from bench.grading.corpus import Corpus
from bench.grading.counts import VerdictTally, tally
from bench.grading.peers import Peer

CLOSEST = "closest per task"


@dataclass(frozen=True)
class ModeResult:
    peer: str
    mode: str
    tally: VerdictTally
    timing: Timing | None
    """None for the per-task row: it mixes modes, each timed on its own."""
    peak_bytes: int | None

    def as_json(self) -> dict[str, Any]:
        return {
            "peer": self.peer,
            "mode": self.mode,
            **self.tally.as_json(),
            "timing": self.timing.as_json() if self.timing else None,
            "tracemallocPeakBytes": self.peak_bytes,
        }


@dataclass(frozen=True)
class PeerRun:
    peer: Peer
    prepare_seconds: float
    modes: tuple[ModeResult, ...]


def run_peer(peer: Peer, corpus: Corpus, warmup: int, repeat: int) -> PeerRun:
    start = time.perf_counter()
    inputs = peer.inputs(corpus)
    prepared = time.perf_counter() - start

    verdicts: dict[str, list[bool]] = {}
    results = []
    for mode in peer.timed_modes:
        grade = peer.grader(mode)

        def run(grade: Any = grade) -> list[bool]:
            return [grade(x) for x in inputs]

        verdicts[mode] = run()
        timing = time_runs(run, len(inputs), warmup, repeat)
        peak = traced_peak(run)
        results.append(ModeResult(peer.name, mode, tally(corpus, verdicts[mode]), timing, peak))

    # The per-task row: each task graded in the mode closest to its own configuration.
    modes = [peer.closest(task) for task in corpus.tasks]
    for mode in set(modes) - verdicts.keys():
        grade = peer.grader(mode)
        verdicts[mode] = [grade(x) for x in inputs]
    n = corpus.trials_per_task
    mixed = [verdicts[mode][i * n + j] for i, mode in enumerate(modes) for j in range(n)]
    results.append(ModeResult(peer.name, CLOSEST, tally(corpus, mixed), None, None))
    return PeerRun(peer, prepared, tuple(results))


def speed(
    ours: dict[str, Timing], trajectory_only: Timing | None, runs: list[PeerRun]
) -> dict[str, Any]:
    """The speed figures side by side: ours per pass rule, every timed peer mode, and each
    ratio ours ÷ peer (per rule), for ``--json`` readers such as ``bench/all``."""
    rules = {rule: t.per_second for rule, t in ours.items()}
    modes: list[dict[str, Any]] = []
    for run in runs:
        for result in run.modes:
            if result.timing is not None:
                tps = result.timing.per_second
                modes.append(
                    {
                        "peer": result.peer,
                        "version": run.peer.version,
                        "mode": result.mode,
                        "trialsPerSecond": tps,
                        "oursOverPeer": {rule: r / tps for rule, r in rules.items()},
                    }
                )
    fastest: dict[str, dict[str, Any]] = {}
    for mode in modes:
        best = fastest.get(mode["peer"])
        if best is None or mode["trialsPerSecond"] > best["trialsPerSecond"]:
            fastest[mode["peer"]] = mode
    return {
        "oursTrialsPerSecond": rules,
        "rulesSpread": max(rules.values()) / min(rules.values()) - 1 if rules else None,
        "trajectoryOnlyTrialsPerSecond": trajectory_only.per_second if trajectory_only else None,
        "peerModes": modes,
        "fastestPeerMode": fastest,
    }
