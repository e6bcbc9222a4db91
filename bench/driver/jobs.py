"""One benchmark script in one fresh process, for ``bench/all``: its options, JSON and RSS.

Standard library only, so ``bench/all`` starts under any Python 3.11 and hands each script
the interpreter it needs.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
HEARTBEAT_SECONDS = 30.0
GRACE_SECONDS = 30.0  # after SIGTERM: host_bench stops its host and deletes its scratch files

# The scripts the rows run, by their path under bench/.
RUN_BENCH = "runner/run_bench.py"
INSPECT_BENCH = "runner/inspect_bench.py"
GRADE_BENCH = "grading/grade_bench.py"
VERIFY_BENCH = "grading/verify_bench.py"
HOST_BENCH = "host/host_bench.py"


@dataclass(frozen=True)
class Job:
    """``python -m bench.<subject>.<script> <args> --json <temporary file>``, in a process of
    its own, from the repository root."""

    name: str
    script: str
    """Its path under ``bench/``, e.g. ``runner/run_bench.py``."""
    python: str
    args: tuple[str, ...]
    needs: tuple[str, ...]
    """Options the script must list in its ``--help``; without one the job is not run."""
    timeout: float
    one_core: bool = False
    """Pin the process to one CPU (the grading row is stated for one core)."""

    @property
    def command(self) -> list[str]:
        return [self.python, "-m", module(self.script), *self.args]


def module(script: str) -> str:
    """``runner/run_bench.py`` → ``bench.runner.run_bench``."""
    return ".".join(("bench", *Path(script).with_suffix("").parts))


@dataclass
class Outcome:
    """What one job gave: its JSON, or why there is none."""

    job: Job
    data: dict[str, Any] | None = None
    exit_code: int | None = None
    seconds: float = 0.0
    max_rss_mb: float | None = None
    """ru_maxrss of the script's process as wait4 reports it (its own, plus reaped children)."""
    log: str | None = None
    reason: str | None = None
    """Why the job produced no figures (missing script or option, crash, timeout)."""
    broken: bool = False
    """It could have run but gave no JSON: a crash, a timeout, a script that does not start."""
    load_before: float | None = None
    """The 1-minute load average when it started: other work on the machine shows here."""
    guard_mb: float | None = None
    """Set when the job was stopped for passing this RSS: a figure (above it), not a crash."""

    def as_json(self) -> dict[str, Any]:
        return {
            "script": f"bench/{self.job.script}",
            "command": [*self.job.command, "--json", "PATH"],
            "oneCore": self.job.one_core,
            "exitCode": self.exit_code,
            "seconds": round(self.seconds, 2),
            "processMaxRssMb": self.max_rss_mb,
            "log": self.log,
            "notMeasured": self.reason,
            "broken": self.broken,
            "stoppedAboveRssMb": self.guard_mb,
            "loadAverage1mBefore": self.load_before,
            "result": self.data,
        }


class HelpError(Exception):
    """The script's ``--help`` failed; the message has its last line."""


@cache
def help_text(python: str, script: str) -> str:
    """The script's ``--help`` (cached: several jobs share a script)."""
    done = subprocess.run(
        [python, "-m", module(script), "--help"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    if done.returncode != 0:  # e.g. an import error: no option list to read
        lines = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
        raise HelpError(f"bench/{script} --help exited {done.returncode}: {lines[-1]}")
    return done.stdout


def lists(text: str, option: str) -> bool:
    """Whether a ``--help`` text has ``option`` (not a longer one that starts so)."""
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def offers(python: str, script: str, option: str) -> bool:
    if not (BENCH / script).exists() or not Path(python).exists():
        return False
    try:
        return lists(help_text(python, script), option)
    except HelpError:
        return False


def why_not(job: Job) -> Outcome | None:
    """An outcome without figures when the job cannot run with the scripts as they are."""
    if not (BENCH / job.script).exists():
        return Outcome(job, reason=f"bench/{job.script} does not exist")
    if not Path(job.python).exists():
        return Outcome(job, reason=f"no interpreter {job.python}")
    try:
        text = help_text(job.python, job.script)
    except HelpError as exc:  # the script is there but does not start
        return Outcome(job, reason=str(exc), broken=True)
    missing = [opt for opt in job.needs if not lists(text, opt)]
    if missing:
        return Outcome(job, reason=f"bench/{job.script} has no {', '.join(missing)}")
    return None


def one_core() -> None:
    """In the child before exec: run on the last CPU we may use, only."""
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})


def rss_mb(pid: int) -> float:
    """The process's resident set now (Linux), 0 when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Watch:
    """While a job runs: a progress line every 30 s, and whether to stop it (time, memory)."""

    def __init__(self, name: str, pid: int, timeout: float, rss_guard_mb: float) -> None:
        self.name, self.pid, self.timeout, self.guard = name, pid, timeout, rss_guard_mb
        self.started = self.beat = time.monotonic()
        self.over_guard = False

    def __call__(self) -> str | None:
        now, rss = time.monotonic(), rss_mb(self.pid)
        if rss > self.guard:  # far past any goal: stop before it crowds the machine
            self.over_guard = True
            return f"stopped at {rss:,.0f} MB RSS, above the {self.guard:,.0f} MB guard"
        if now - self.started >= self.timeout:
            return f"timed out after {self.timeout:.0f} s"
        if now - self.beat >= HEARTBEAT_SECONDS:
            self.beat = now
            print(f"      … {self.name}: {now - self.started:.0f} s, RSS {rss:,.0f} MB", flush=True)
        return None


def reap(proc: subprocess.Popen[bytes], verdict: Callable[[], str | None]) -> tuple[Any, str]:
    """Wait with wait4 (for the rusage) until the process ends, or ``verdict`` gives a reason
    to stop waiting: (rusage, "") or (None, reason)."""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return usage, ""
        why = verdict()
        if why:
            return None, why
        time.sleep(0.2)


def within(seconds: float) -> Callable[[], str | None]:
    deadline = time.monotonic() + seconds
    return lambda: "grace over" if time.monotonic() >= deadline else None


def stop(proc: subprocess.Popen[bytes]) -> Any:
    """SIGTERM, a grace period for the script's own cleanup, then SIGKILL."""
    proc.send_signal(signal.SIGTERM)
    usage, _ = reap(proc, within(GRACE_SECONDS))
    if usage is None:
        proc.kill()
        usage, _ = reap(proc, within(GRACE_SECONDS))
    return usage


def tail(log: Path, lines: int = 3) -> str:
    text = log.read_text("utf-8", errors="replace").strip().splitlines()
    return " | ".join(text[-lines:])


def run(job: Job, logs: Path, rss_guard_mb: float) -> Outcome:
    """Run one job to its JSON, its log in ``logs/<name>.log``."""
    early = why_not(job)
    if early:
        return early
    log = logs / f"{job.name}.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # the log shows progress as it happens
    load, started = round(os.getloadavg()[0], 2), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-all-") as tmp, open(log, "wb") as sink:
        out = Path(tmp) / "result.json"
        proc = subprocess.Popen(
            [*job.command, "--json", str(out)],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            preexec_fn=one_core if job.one_core else None,
        )
        watch = Watch(job.name, proc.pid, job.timeout, rss_guard_mb)
        try:
            usage, stopped = reap(proc, watch)
        except KeyboardInterrupt:
            stop(proc)
            raise
        if stopped:
            usage = stop(proc)
        outcome = Outcome(job, exit_code=proc.returncode, seconds=time.monotonic() - started)
        outcome.log, outcome.load_before = str(log.relative_to(logs.parent)), load
        if usage is not None:
            outcome.max_rss_mb = round(usage.ru_maxrss / 1024, 1)
        if stopped:
            outcome.reason = stopped
            outcome.guard_mb = rss_guard_mb if watch.over_guard else None
        elif out.exists() and out.stat().st_size:
            outcome.data = json.loads(out.read_text("utf-8"))
        else:
            outcome.reason = f"exit {proc.returncode}, no JSON written: {tail(log)}"
        outcome.broken = outcome.data is None and outcome.guard_mb is None
    return outcome
