"""Every benchmark row of the performance issue in one command, ours and the peers' figures
from the same run, into ``results.json`` and ``results.md``.

    bench/all                         # the sizes of the issue's table (long: 1,000,000 trials)
    bench/all --quick                 # small sizes, a few minutes, a sanity check
    bench/all --only runner sleep --out /tmp/bench

Rows (``--only``): runner, rss, sleep, grade, verify, summary, sse. Each benchmark script runs
in a fresh process with ``--json`` to a temporary file, so a peak RSS is that benchmark's
alone; its output goes to ``DIR/logs/<job>.log``. A row whose script or option does not exist
yet is "not measured" with the reason, and the others go on.

Interpreters: ours is ``.venv/bin/python`` (else this one); Inspect AI runs under ours if it
imports ``inspect_ai``, else ``bench/.venv-inspect``; grade_bench runs under
``bench/.venv-peers`` (created with agentevals and Google ADK when missing, reused when not).

Exit status: 0 when the table was written and every benchmark that could run gave its JSON;
1 when one crashed, timed out or did not start; 130 on Ctrl-C (the partial table is
written). Goals not met do not change it: the table says so.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.driver.jobs import (
    BENCH,
    GRADE_BENCH,
    HOST_BENCH,
    INSPECT_BENCH,
    ROOT,
    RUN_BENCH,
    VERIFY_BENCH,
    Job,
    Outcome,
    module,
    offers,
    run,
)
from bench.driver.results_table import machine, peer_versions, write
from bench.driver.rows import (
    BUILDERS,
    FULL,
    GRADE_JOB,
    HOST_JOB,
    MEMORY_TASKS,
    QUICK,
    ROWS,
    VERIFY_JOB,
    Line,
    NotMeasuredError,
    Sizes,
    Sleep,
    inspect_job,
    inspect_sleep_job,
    rss_job,
    runner_job,
    runner_sleep_job,
)

PEER_PINS = ("agentevals==0.0.9", "google-adk==2.13.0")  # as bench/README.md installs them
PEERS_VENV = BENCH / ".venv-peers"
INSPECT_VENV = BENCH / ".venv-inspect"


@dataclass(frozen=True)
class Pythons:
    ours: str
    inspect: str
    grade: str


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/all", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, for a sanity check")
    p.add_argument("--only", nargs="+", choices=ROWS, metavar="ROW", help=", ".join(ROWS))
    p.add_argument("--out", type=Path, help="results directory (bench/results/all[-quick])")
    p.add_argument("--no-peers", action="store_true", help="skip Inspect AI, agentevals, ADK")
    p.add_argument("--python", help="interpreter for our benchmarks (.venv/bin/python)")
    p.add_argument(
        "--rss-guard-mb",
        type=float,
        default=4096,
        help="stop a benchmark whose RSS passes this (4096); its row reads '> N MB'",
    )
    p.add_argument("--list", action="store_true", help="print the jobs and exit")
    args = p.parse_args(argv)
    if args.out is None:
        args.out = BENCH / "results" / ("all-quick" if args.quick else "all")
    return args


def has(python: str, module: str) -> bool:
    """Whether ``module`` is installed for ``python``, without importing it."""
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([python, "-c", code], capture_output=True, timeout=60).returncode == 0


def our_python(given: str | None) -> str:
    if given:
        return given
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def inspect_python(ours: str) -> str:
    """Ours when it has inspect_ai (a dev dependency), else bench/.venv-inspect's."""
    return ours if has(ours, "inspect_ai") else str(INSPECT_VENV / "bin" / "python")


def create_peers_venv(ours: str, logs: Path) -> None:
    print(f"creating {PEERS_VENV.relative_to(ROOT)} ({', '.join(PEER_PINS)}) …", flush=True)
    python = str(PEERS_VENV / "bin" / "python")
    with open(logs / "peers-venv.log", "wb") as log:
        subprocess.run([ours, "-m", "venv", str(PEERS_VENV)], stdout=log, stderr=log, check=True)
        pip = [python, "-m", "pip", "install", "-q", "-e", str(ROOT), *PEER_PINS]
        subprocess.run(pip, stdout=log, stderr=log, check=True, cwd=ROOT)


def grade_python(ours: str, logs: Path, create: bool) -> str:
    """bench/.venv-peers (made if missing; reused as it is if present), else ours.

    Under ours grade_bench still runs, and names each peer that does not import.
    """
    python = PEERS_VENV / "bin" / "python"
    if create and not python.exists():
        try:
            create_peers_venv(ours, logs)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"  could not create it ({exc}); see logs/peers-venv.log", flush=True)
    # Installed is enough: an import error of the moment is grade_bench's to report.
    if python.exists() and has(str(python), "openwop_eval"):
        return str(python)
    print(f"  {PEERS_VENV.relative_to(ROOT)} has no openwop_eval: grading under ours", flush=True)
    return ours


# --- the jobs --------------------------------------------------------------------------------

RUNNER_NEEDS = ("--instant-trials", "--sleep-trials", "--sleep-ms", "--concurrency", "--json")
INSPECT_NEEDS = ("--samples", "--epochs", "--sleep-trials", "--sleep-ms", "--sleep-concurrency")
# Inspect gets a warm-up eval (its first one pays one-time set-up): the peer's best figure.
INSPECT_FLAGS = ("--warmup", "--no-import-time")
HOST_NEEDS = ("--rate", "--headroom-rate", "--seconds", "--subscribers", "--tasks", "--trials")


def runner_instant(trials: int, python: str, again: bool = False) -> Job:
    args = ("--instant-trials", str(trials), "--sleep-trials", "0")
    return Job(runner_job(trials, again), RUN_BENCH, python, args, RUNNER_NEEDS, 120 + trials / 200)


def runner_large(trials: int, python: str) -> Job:
    """A large size: the median of ``LARGE_REPEAT`` runs, each on a fresh store and file (one
    run's figure swung 6,000 to 7,100 trials/s between runs minutes apart)."""
    job = runner_instant(trials, python)
    args = (*job.args, "--repeat", str(LARGE_REPEAT))
    needs = (*RUNNER_NEEDS, "--repeat")
    return Job(job.name, job.script, python, args, needs, job.timeout * LARGE_REPEAT)


def runner_baseline(trials: int, python: str, again: bool) -> Job:
    """The small size the large one is compared with: a fraction of a second, so the median
    of ``BASELINE_REPEAT`` runs, once before the large size and once after (the machine's
    speed drifts between jobs; the row takes the median of both)."""
    job = runner_instant(trials, python, again)
    args = (*job.args, "--repeat", str(BASELINE_REPEAT))
    return Job(job.name, job.script, python, args, (*RUNNER_NEEDS, "--repeat"), job.timeout)


BASELINE_REPEAT = 5
LARGE_REPEAT = 3


def runner_rss(trials: int, python: str) -> Job:
    args = ("--instant-trials", str(trials), "--sleep-trials", "0", "--tasks", str(MEMORY_TASKS))
    args += ("--pss",)  # a run that forks a commit process: the two together
    needs = (*RUNNER_NEEDS, "--pss")
    return Job(rss_job(trials), RUN_BENCH, python, args, needs, 120 + trials / 200)


def runner_sleep(sleep: Sleep, python: str) -> Job:
    args = ("--instant-trials", "0", "--sleep-trials", str(sleep.trials))
    args += ("--sleep-ms", f"{sleep.ms:g}", "--concurrency", str(sleep.concurrency))
    timeout = 120 + 5 * sleep.ideal + sleep.trials / 200
    return Job(runner_sleep_job(sleep), RUN_BENCH, python, args, RUNNER_NEEDS, timeout)


def inspect_instant(trials: int, python: str) -> Job:
    args = ("--samples", str(max(1, trials // 10)), "--epochs", "10", "--sleep-trials", "0")
    args += INSPECT_FLAGS
    needs = INSPECT_NEEDS + INSPECT_FLAGS
    return Job(inspect_job(trials), INSPECT_BENCH, python, args, needs, 120 + trials)


def inspect_sleep(sleep: Sleep, python: str) -> Job:
    args = ("--samples", "0", "--epochs", "10", "--sleep-trials", str(sleep.trials))
    args += ("--sleep-ms", f"{sleep.ms:g}", "--sleep-concurrency", str(sleep.concurrency))
    args += INSPECT_FLAGS
    timeout = 120 + 5 * sleep.ideal + sleep.trials * 0.5
    needs = INSPECT_NEEDS + INSPECT_FLAGS
    return Job(inspect_sleep_job(sleep), INSPECT_BENCH, python, args, needs, timeout)


def grade(s: Sizes, python: str, peers: bool) -> Job:
    tasks, trials = s.grade
    args = ("--tasks", str(tasks), "--trials", str(trials), "--seed", "1")
    args += () if peers else ("--peers", "none")
    timeout = 300 + tasks * trials * 0.1
    return Job(GRADE_JOB, GRADE_BENCH, python, args, ("--tasks", "--peers", "--json"), timeout)


def verify(s: Sizes, python: str) -> Job:
    args = ("--trials", str(s.verify_trials), "--tasks", str(MEMORY_TASKS))
    timeout = 600 + s.verify_trials * 10 / 5_000  # 10 events a trial, at 5,000 events/s
    return Job(VERIFY_JOB, VERIFY_BENCH, python, args, ("--trials", "--json"), timeout)


def host(s: Sizes, rows: list[str], python: str) -> Job:
    subscribers, tasks, trials = s.sse
    rate, seconds = s.host_rate, s.host_seconds
    args: tuple[str, ...] = ()
    wanted = [part for part in ("summary", "sse") if part in rows]
    if len(wanted) == 1 and offers(python, HOST_BENCH, "--part"):
        args = ("--part", wanted[0])
    elif "summary" not in rows:
        rate, seconds = 50, 1  # an older host_bench runs both parts: a token load
    args += ("--rate", f"{rate:g}", "--headroom-rate", "0", "--seconds", f"{seconds:g}")
    args += ("--subscribers", str(subscribers), "--tasks", str(tasks), "--trials", str(trials))
    return Job(HOST_JOB, HOST_BENCH, python, args, HOST_NEEDS, 300 + 3 * seconds)


def plan(s: Sizes, rows: list[str], py: Pythons, peers: bool) -> list[Job]:
    """The jobs the rows need, each once (the runner's large size serves two rows)."""
    jobs: list[Job] = []
    if "runner" in rows:
        small, *large = s.speed
        jobs.append(runner_baseline(small, py.ours, again=False))
        jobs += [runner_large(n, py.ours) for n in large]
        jobs.append(runner_baseline(small, py.ours, again=True))
    if "rss" in rows:
        jobs += [runner_rss(n, py.ours) for n in s.memory]
    if "sleep" in rows:
        jobs += [runner_sleep(sleep, py.ours) for sleep in s.sleeps]
    if peers and "runner" in rows:
        jobs.append(inspect_instant(s.speed[0], py.inspect))
    if peers and "sleep" in rows:
        jobs += [inspect_sleep(sleep, py.inspect) for sleep in s.sleeps]
    if "grade" in rows:
        jobs.append(grade(s, py.grade, peers))
    if "verify" in rows:
        jobs.append(verify(s, py.ours))
    if {"summary", "sse"} & set(rows):
        jobs.append(host(s, rows, py.ours))
    return list({job.name: job for job in jobs}.values())


# --- running and reporting -------------------------------------------------------------------


def shown(job: Job) -> str:
    python = Path(job.python)
    where = python.relative_to(ROOT) if python.is_relative_to(ROOT) else python
    return f"{where} -m {module(job.script)} {' '.join(job.args)}"


def said(outcome: Outcome) -> str:
    if outcome.exit_code is None:
        return f"not measured: {outcome.reason}"
    rss = f", process peak RSS {outcome.max_rss_mb:,.0f} MB" if outcome.max_rss_mb else ""
    head = f"{outcome.seconds:.1f} s, exit {outcome.exit_code}{rss}"
    what = "stopped" if outcome.guard_mb else "not measured"
    return head + (f"; {what}: {outcome.reason}" if outcome.reason else "")


def run_all(jobs: list[Job], logs: Path, guard_mb: float) -> tuple[dict[str, Outcome], bool]:
    """Run the jobs in order; the flag says whether Ctrl-C cut them short."""
    outcomes: dict[str, Outcome] = {}
    for i, job in enumerate(jobs, 1):
        print(f"[{i}/{len(jobs)}] {job.name}: {shown(job)}", flush=True)
        try:
            outcomes[job.name] = run(job, logs, guard_mb)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            return outcomes, True
        print(f"      {said(outcomes[job.name])}", flush=True)
    return outcomes, False


def lines_of(s: Sizes, rows: list[str], outcomes: dict[str, Outcome]) -> list[Line]:
    lines: list[Line] = []
    for row in rows:
        try:
            lines += BUILDERS[row](s, outcomes)
        except (KeyError, TypeError, ValueError, IndexError) as exc:  # a script's JSON changed
            why = NotMeasuredError(f"unexpected JSON: {type(exc).__name__}: {exc}")
            lines.append(Line(row, row, "see the issue").absent(why))
    return lines


def crashed(outcomes: dict[str, Outcome]) -> bool:
    """A job that could run but gave no JSON (a missing script or option does not count)."""
    return any(o.broken for o in outcomes.values())


def results_of(
    args: argparse.Namespace, facts: dict[str, Any], outcomes: dict[str, Outcome], lines: list[Line]
) -> dict[str, Any]:
    return {
        "mode": "quick" if args.quick else "full",
        "command": " ".join(["bench/all", *sys.argv[1:]]),
        "machine": facts,
        "peerVersions": peer_versions(outcomes),
        "rows": [line.as_json() for line in lines],
        "jobs": {name: o.as_json() for name, o in outcomes.items()},
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    rows = [r for r in ROWS if r in (args.only or ROWS)]
    logs = args.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    ours = our_python(args.python)
    facts = machine(ours)
    peers = not args.no_peers
    inspect = inspect_python(ours) if peers and {"runner", "sleep"} & set(rows) else ours
    graded = grade_python(ours, logs, not args.list) if peers and "grade" in rows else ours
    jobs = plan(sizes, rows, Pythons(ours, inspect, graded), peers)
    if args.list:
        print("\n".join(f"{job.name}: {shown(job)}" for job in jobs))
        return 0
    outcomes, interrupted = run_all(jobs, logs, args.rss_guard_mb)
    lines = lines_of(sizes, rows, outcomes)
    facts["loadAverage1m"]["end"] = round(os.getloadavg()[0], 2)
    results = results_of(args, facts, outcomes, lines)
    results["seconds"] = round(time.monotonic() - started, 1)
    print("\n" + write(args.out, results, lines))
    print(f"written: {args.out / 'results.json'}, {args.out / 'results.md'}")
    if interrupted:
        return 130
    return 1 if crashed(outcomes) else 0
