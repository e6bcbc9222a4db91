"""``verify`` on a large event log: does it stream (flat memory), and how fast does it parse?

    python -m bench.grading.verify_bench                          # 1,000,000 trials
    python -m bench.grading.verify_bench --trials 100000 --json out.json

The log is the runner's own: one trial of the runner benchmark's suite (an instant agent,
3 fixture calls answered, an exact-match golden output, a 3-step trajectory) is run for
real, and its events are repeated with fresh task ids, trial numbers, invocation ids, event
ids and sequence numbers until the log holds ``--trials`` trials (10 events each, plus the
run's opening and closing events; ``--tasks`` tasks × trials/tasks each). Then
``openwop-eval verify SUITE EVENTS`` runs as a child process, and the benchmark reports its
wall time, events parsed per second and peak RSS (``wait4``). It exits 1 unless verify
exited 0 with a summary of every task passed — the trials are all the template's, which
passes — and agreed with the log's own ``eval.completed`` (no log problem printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench.runner.run_bench import InstantAgent, suite
from openwop_eval import parse_suite
from openwop_eval.log.event_names import EVAL_COMPLETED as EVAL_DONE
from openwop_eval.log.event_names import EXT
from openwop_eval.runner.api import run_suite_async
from openwop_eval.store import Store


def template(work: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A real one-trial run: its events and summary."""
    store = Store(f"sqlite:///{work / 'template.sqlite'}")
    with open(work / "template.jsonl", "w", encoding="utf-8") as events:
        result = asyncio.run(
            run_suite_async(parse_suite(suite(1, 1)), InstantAgent(), store=store, events=events)
        )
    store.close()
    lines = (work / "template.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines], result.summary


def write_log(path: Path, docs: list[dict[str, Any]], tasks: int, count: int) -> int:
    """The log of ``tasks`` × ``count`` copies of the template's trial; returns its events."""
    head, trial, tail = docs[:2], docs[2:-2], docs[-2:]
    sequence = 0
    with open(path, "wb") as out:

        def put(doc: dict[str, Any]) -> None:
            nonlocal sequence
            out.write(orjson.dumps({**doc, "sequence": sequence, "eventId": f"ev-{sequence:x}"}))
            out.write(b"\n")
            sequence += 1

        for doc in head:
            put(doc)
        for index in range(count):
            for t in range(tasks):
                task_id, inv = f"t-{t:05d}", f"inv-{index:x}-{t:x}"
                ext = {"taskId": task_id, "trial": index, "invocationId": inv}
                for doc in trial:
                    payload = {**doc["payload"], EXT: {**doc["payload"][EXT], **ext}}
                    if "invocationId" in payload:
                        payload["invocationId"] = inv
                    if "taskId" in payload:
                        payload["taskId"] = task_id
                    put({**doc, "payload": payload})
        # every trial passes as the template's does: so does every task
        done = {"taskCount": tasks, "passedCount": tasks}
        for doc in tail:
            put({**doc, "payload": {**doc["payload"], **done}} if doc["type"] == EVAL_DONE else doc)
    return sequence


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tasks = min(args.tasks, args.trials)
    count = max(1, args.trials // tasks)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        docs, _ = template(work)
        started = time.perf_counter()
        events = write_log(work / "events.jsonl", docs, tasks, count)
        size = (work / "events.jsonl").stat().st_size / 2**20
        wrote = time.perf_counter() - started
        print(
            f"wrote {tasks * count:,} trials, {events:,} events in {wrote:.1f} s ({size:,.0f} MiB)"
        )
        (work / "suite.json").write_text(json.dumps(suite(tasks, count)), encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "openwop_eval",
            "verify",
            str(work / "suite.json"),
            str(work / "events.jsonl"),
        ]
        started = time.perf_counter()
        with open(work / "out", "wb") as stdout, open(work / "err", "wb") as stderr:
            child = subprocess.Popen(command, stdout=stdout, stderr=stderr)
            _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - started
        out, err = (work / "out").read_bytes(), (work / "err").read_bytes()
    code = os.waitstatus_to_exitcode(status)
    summary = json.loads(out) if code == 0 else {}
    rss_mb = usage.ru_maxrss / 1024
    result = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "trials": tasks * count,
        "events": events,
        "seconds": round(elapsed, 3),
        "eventsPerSecond": round(events / elapsed),
        "peakRssMb": round(rss_mb, 1),
        "exitCode": code,
        "passed": summary.get("passed"),
    }
    print(
        f"verify: {tasks * count:,} trials, {events:,} events in {elapsed:.2f} s = "
        f"{events / elapsed:,.0f} events/s; peak RSS {rss_mb:,.0f} MB; exit {code}"
    )
    if code != 0:
        print(err.decode(errors="replace")[-2000:], file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    agreed = summary.get("passedCount") == tasks and b"log:" not in err
    return 0 if code == 0 and agreed else 1


if __name__ == "__main__":
    sys.exit(main())
