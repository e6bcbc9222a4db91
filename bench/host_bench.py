"""Eval host benchmark: a real ``openwop-eval serve`` process, driven over loopback HTTP.

    python bench/host_bench.py [--database sqlite|postgres] [--json out.json]

1. EvalSummary reads: an open-loop load GETs the eval-summary of a few completed
   conformance runs at ``--rate`` (200/s) for ``--seconds`` (15), then ``--headroom-rate``
   (500/s; 0 skips it). Request i is due at start + i/rate, however slow earlier answers
   are, and its latency counts from then. ``--generators`` processes share the schedule,
   each sending over ``--connections`` keep-alive connections of one httpx pool.
2. SSE fan-out: a generated suite (``--tasks`` x ``--trials``, 3 fixture tool calls each),
   run by a scripted agent once alone (baseline duration) and once with ``--subscribers``
   streams reading its events from sequence 0 while it runs (live), then again once done
   (replay). Each stream must deliver every sequence 0..last exactly once, else exit 1.

The host also serves the conformance suites and mock agent, as its development default
does. ``--database postgres`` creates a scratch database via ``--pg-admin`` and drops it
afterwards. CPU is % of one core; ``box%`` counts every process on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import math
import multiprocessing
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
from openwop_client.wire_id import project_id

AUTH = {"Authorization": "Bearer dev-key"}
MOCK = "core.conformance.mock-agent"
GATES = [f"core.conformance.evals.trajectory-gate{m}@1.0.0" for m in ("", "-mean")]
AGENT, SUITE = "bench.host.scripted-agent", "bench.host.evals.fanout@1.0.0"
TOOLS = ("crm:lookup-order", "crm:get-customer", "payments:refund")
TERMINAL = {b"run.completed", b"run.failed", b"run.cancelled"}
PER_SUBSCRIBER = [("min", 0), ("p50", 50), ("max", 100)]


def write_config(work: Path, tasks: int, trials: int) -> Path:
    """The generated suite, its scripted agent and the host configuration."""
    steps = [{"tool": t} for t in TOOLS]
    expected = {"kind": "golden", "match": {"strategy": "exact", "value": "refunded"}}
    suite: dict[str, Any] = {"suiteId": SUITE.split("@")[0], "version": SUITE.split("@")[1]}
    suite |= {"modes": ["golden"], "thresholds": {"passScore": 1}, "trials": {"count": trials}}
    suite["tasks"] = [
        {"taskId": f"t-{i:05d}", "input": {"orderId": f"A-{i}"}}
        | {"expected": {**expected, "trajectory": {"steps": steps}}}
        | {"fixtures": {"toolResponses": [{**s, "response": {"n": i}} for s in steps]}}
        for i in range(tasks)
    ]
    calls = [{**s, "args": {"orderId": "A-0"}} for s in steps]
    script = {"agentId": AGENT, "default": [{"output": "refunded", "toolCalls": calls}]}
    (work / "suites").mkdir()
    (work / "suites" / "fanout.suite.json").write_text(json.dumps(suite), "utf-8")
    (work / "agent.json").write_text(json.dumps(script), "utf-8")
    mock = resources.files("openwop_eval.conformance") / "fixtures" / "conformance-mock-agent.json"
    (work / "host.toml").write_text(
        f'suites = ["suites/"]\nconformance_fixtures = true\n\n[agents."{MOCK}"]\n'
        f"agent = {json.dumps(f'scripted:{mock}')}\ntimeout_s = 60\n\n"
        f'[agents."{AGENT}"]\nagent = "scripted:agent.json"\n\n'
        f"[limits]\nmax_tasks_per_suite = {max(1000, tasks)}\n\n"
        '[[api_keys]]\nname = "bench"\ntenant = "dev"\nkey = "dev-key"\n',
        "utf-8",
    )
    return work / "host.toml"


def cpu_seconds(pid: int | None) -> float:
    """CPU seconds used by process ``pid``, or by the whole machine (None); Linux only."""
    try:
        if pid is None:
            ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
            used = sum(ticks) - ticks[3] - ticks[4]  # all but idle and iowait
        else:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            used = int(fields[11]) + int(fields[12])  # utime + stime
    except OSError:
        return 0.0
    return used / os.sysconf("SC_CLK_TCK")


class Host:
    """The host process on a free loopback port; ``stop`` ends it whatever happened."""

    def __init__(self, config: Path, database: str, log: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = str(sock.getsockname()[1])
        self.base, self.log = f"http://127.0.0.1:{port}", log
        command = [sys.executable, "-m", "openwop_eval", "serve", "--config", str(config)]
        command += ["--port", port, "--database", database, "--log-level", "warning"]
        with open(log, "wb") as out:  # its own session: Ctrl-C reaches us, and we stop it
            self.proc = subprocess.Popen(command, stdout=out, stderr=out, start_new_session=True)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base}/.well-known/openwop", timeout=2).status_code == 200:
                    return
            time.sleep(0.1)
        log = self.log.read_text("utf-8", errors="replace")[-3000:]
        raise RuntimeError(f"the host did not answer discovery ({self.proc.poll()}):\n{log}")

    def stop(self) -> None:
        self.proc.terminate()  # a no-op once it has exited
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Meter:
    """Wall time and CPU shares (host, this process, the machine) since it was made."""

    def __init__(self, host: Host) -> None:
        self.pid, self.start = host.proc.pid, time.perf_counter()
        self.cpu = (cpu_seconds(self.pid), time.process_time(), cpu_seconds(None))

    def read(self, client_cpu: float = 0.0) -> dict[str, Any]:
        wall = time.perf_counter() - self.start
        now = (cpu_seconds(self.pid), time.process_time() + client_cpu, cpu_seconds(None))
        share = [round(100 * (b - a) / wall, 1) for a, b in zip(self.cpu, now, strict=True)]
        return {"wall": wall, "hostCpu%": share[0], "clientCpu%": share[1], "machineCpu%": share[2]}


async def create_run(client: httpx.AsyncClient, suite: str, agent: str) -> str:
    body = {"mode": "eval", "evalSuiteRef": suite, "agentId": agent}
    answer = await client.post("/runs", json=body)
    if answer.status_code != 201:
        raise RuntimeError(f"POST /runs: {answer.status_code} {answer.text}")
    return str(project_id(answer.json()["runId"]))


async def wait_summary(client: httpx.AsyncClient, projected: str, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = await client.get(f"/runs/{projected}/eval-summary")
        if answer.status_code == 200:
            return
        if answer.status_code != 409:
            raise RuntimeError(f"eval-summary: {answer.status_code} {answer.text}")
        await asyncio.sleep(0.1)
    raise RuntimeError(f"run {projected} did not complete in {timeout:g} s")


async def took(client: httpx.AsyncClient, projected: str) -> float:
    """A run's duration by the host's clock: startedAt to completedAt."""
    snapshot = (await client.get(f"/runs/{projected}")).json()
    start, end = (datetime.fromisoformat(snapshot[k]) for k in ("startedAt", "completedAt"))
    return round((end - start).total_seconds(), 3)


def percentile(ordered: list[float], p: float) -> float:
    """Nearest-rank percentile of a sorted list."""
    return ordered[max(0, min(len(ordered), math.ceil(len(ordered) * p / 100)) - 1)]


def generate(base: str, urls: list[str], due: list[float], at: float, conns: int) -> dict[str, Any]:
    """One generator process: GET ``urls[i]`` at wall-clock time ``at + due[i]``."""
    return asyncio.run(_generate(base, urls, due, at, conns))


async def _generate(
    base: str, urls: list[str], due: list[float], at: float, conns: int
) -> dict[str, Any]:
    """The clock queues each request when due and ``conns`` connections take them, so a
    backlog waits on our queue (in its latency), not in httpx's pool, which slows with size."""
    limits = httpx.Limits(max_connections=conns, max_keepalive_connections=conns)
    out: dict[str, Any] = {"latencies": [], "errors": collections.Counter(), "lag": 0, "done": 0}
    queue: asyncio.Queue[tuple[str, float] | None] = asyncio.Queue()
    async with httpx.AsyncClient(base_url=base, headers=AUTH, limits=limits, timeout=10) as client:

        async def sender() -> None:
            with contextlib.suppress(httpx.HTTPError):  # connect before the clock starts
                await client.get(urls[0])
            while (item := await queue.get()) is not None:
                try:
                    answer = await client.get(item[0])
                    reason = "" if answer.status_code == 200 else f"HTTP {answer.status_code}"
                except httpx.HTTPError as exc:
                    reason = type(exc).__name__
                out["done"] = time.perf_counter() - start
                if reason:
                    out["errors"][reason] += 1
                else:
                    out["latencies"].append((time.perf_counter() - item[1]) * 1000)

        start = time.perf_counter() + (at - time.time())
        senders = [asyncio.create_task(sender()) for _ in range(conns)]
        await asyncio.sleep(start - time.perf_counter())
        cpu = time.process_time()
        for url, offset in zip(urls, due, strict=True):
            when = start + offset
            if when > time.perf_counter():
                await asyncio.sleep(when - time.perf_counter())
            out["lag"] = max(out["lag"], time.perf_counter() - when)
            queue.put_nowait((url, when))
        out["sent"] = time.perf_counter() - start
        for _ in senders:
            queue.put_nowait(None)
        await asyncio.gather(*senders)
        out["cpu"] = time.process_time() - cpu
    return out


async def summary_load(
    host: Host, pool: ProcessPoolExecutor, runs: list[str], rate: float, args: argparse.Namespace
) -> dict[str, Any]:
    total = max(1, round(rate * args.seconds))
    n = min(total, args.generators)
    urls = [f"/runs/{runs[i % len(runs)]}/eval-summary" for i in range(total)]
    due = [i / rate for i in range(total)]
    at, loop = time.time() + 0.5, asyncio.get_running_loop()
    shares = [(host.base, urls[k::n], due[k::n], at, args.connections) for k in range(n)]
    jobs = [loop.run_in_executor(pool, generate, *share) for share in shares]
    await asyncio.sleep(at - time.time())
    meter = Meter(host)  # from the first due time to the last answer
    parts = await asyncio.gather(*jobs)
    usage = meter.read(sum(p["cpu"] for p in parts))
    ordered = sorted(x for p in parts for x in p["latencies"])
    errors: collections.Counter[str] = sum((p["errors"] for p in parts), collections.Counter())
    out: dict[str, Any] = {"offeredRate": rate, "requests": total}
    out["sentPerSecond"] = round(total / max(p["sent"] for p in parts), 1)
    out["completedPerSecond"] = round(len(ordered) / max(p["done"] for p in parts), 1)
    for name, q in [("p50Ms", 50), ("p90Ms", 90), ("p99Ms", 99), ("maxMs", 100)]:
        out[name] = round(percentile(ordered, q), 2) if ordered else None
    out |= {"errors": sum(errors.values()), "errorKinds": dict(errors)}
    out["maxSendLagMs"] = round(1000 * max(p["lag"] for p in parts), 2)
    return out | {k: v for k, v in usage.items() if k != "wall"}


@dataclass
class Stream:
    sequences: list[int] = field(default_factory=list)
    terminal: bool = False
    seconds: float = 0.0
    error: str | None = None


async def subscribe(client: httpx.AsyncClient, projected: str, start: float) -> Stream:
    """Read the run's SSE stream from the start, keeping each frame's ``id:``."""
    out, buffer = Stream(), b""
    try:
        async with client.stream("GET", f"/runs/{projected}/events") as answer:
            if answer.status_code != 200:
                out.error = f"HTTP {answer.status_code}"
            async for chunk in answer.aiter_bytes():
                *frames, buffer = (buffer + chunk.replace(b"\r\n", b"\n")).split(b"\n\n")
                for frame in frames:
                    fields = dict(line.partition(b":")[::2] for line in frame.split(b"\n"))
                    if b"id" in fields:
                        out.sequences.append(int(fields[b"id"]))
                        out.terminal = fields.get(b"event", b"").strip() in TERMINAL
    except (httpx.HTTPError, ValueError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
    out.seconds = time.perf_counter() - start
    return out


async def fanout(host: Host, projected: str, subscribers: int) -> dict[str, Any]:
    """``subscribers`` concurrent streams from sequence 0: events/s and exactly-once."""
    limits = httpx.Limits(max_connections=subscribers + 4)
    async with httpx.AsyncClient(base_url=host.base, headers=AUTH, limits=limits, timeout=120) as c:
        meter = Meter(host)
        streams = await asyncio.gather(
            *(subscribe(c, projected, meter.start) for _ in range(subscribers))
        )
        usage = meter.read()
        after = max((s.sequences[-1] for s in streams if s.sequences), default=-1)
        query = {"afterSequence": after, "timeout": 0}  # nothing after it: lastSequence is the end
        poll = await c.get(f"/runs/{projected}/events/poll", params=query)
        expected = list(range(poll.json()["lastSequence"] + 1))
    problems = []
    for n, stream in enumerate(streams):
        if stream.error or stream.sequences != expected or not stream.terminal:
            got, error = stream.sequences, stream.error or "closed"
            missing, extra = len(set(expected) - set(got)), len(got) - len(set(got))
            problems.append(
                f"subscriber {n}: {error}; {missing} missing, {extra} duplicated, in order:"
                f" {got == sorted(got)}, last event terminal: {stream.terminal}"
            )
    delivered, wall = sum(len(s.sequences) for s in streams), usage.pop("wall")
    per = sorted(len(s.sequences) / s.seconds for s in streams)
    out: dict[str, Any] = {"subscribers": subscribers, "eventsInLog": len(expected)}
    out["eventsDelivered"] = delivered
    out |= {"seconds": round(wall, 3), "eventsPerSecond": round(delivered / wall, 1)}
    out["perSubscriber"] = {k: round(percentile(per, q), 1) for k, q in PER_SUBSCRIBER}
    return out | {"exactlyOnce": not problems, "problems": problems, **usage}


async def measure(host: Host, args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=host.base, headers=AUTH, timeout=30) as client:
        runs = [await create_run(client, GATES[i % 2], MOCK) for i in range(args.summary_runs)]
        for run in runs:
            await wait_summary(client, run)
        rates = [args.rate] + ([args.headroom_rate] if args.headroom_rate > 0 else [])
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.generators, mp_context=spawn) as pool:
            list(pool.map(time.sleep, [0.5] * args.generators))  # start every process first
            results["evalSummary"] = [await summary_load(host, pool, runs, r, args) for r in rates]
        alone = await create_run(client, SUITE, AGENT)
        await wait_summary(client, alone)
        run = await create_run(client, SUITE, AGENT)
        results["sseLive"] = await fanout(host, run, args.subscribers)
        await wait_summary(client, run)
        results["runSeconds"] = {"alone": await took(client, alone)}
        results["runSeconds"]["withLiveSubscribers"] = await took(client, run)
        results["sseReplay"] = await fanout(host, run, args.subscribers)
    return results


def scratch_database(admin: str, name: str, create: bool) -> bool:
    """Create (or drop) the scratch PostgreSQL database; True when it exists afterwards."""
    import psycopg

    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            if create:
                conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        raise RuntimeError(f"PostgreSQL at {admin}: {exc}") from exc
    return create


USAGE = [("host%", "hostCpu%"), ("client%", "clientCpu%"), ("box%", "machineCpu%")]
SUMMARY_COLUMNS = [("sent/s", "sentPerSecond"), ("done/s", "completedPerSecond")]
SUMMARY_COLUMNS += [(f"p{q} ms", f"p{q}Ms") for q in (50, 90, 99)] + [("max ms", "maxMs")]
SUMMARY_COLUMNS += [("errors", "errors"), *USAGE]
SSE_COLUMNS = [("subs", "subscribers"), ("events", "eventsDelivered"), ("s", "seconds")]
SSE_COLUMNS += [("events/s", "eventsPerSecond"), ("per sub min/p50/max", "perSubscriber")]
SSE_COLUMNS += [("once", "exactlyOnce"), *USAGE]


def table(rows: list[tuple[str, dict[str, Any]]], columns: list[tuple[str, str]]) -> None:
    def cell(value: Any) -> str:
        return "/".join(map(str, value.values())) if isinstance(value, dict) else str(value)

    cells = [["", *(h for h, _ in columns)]]
    cells += [[name, *(cell(row[key]) for _, key in columns)] for name, row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    for line in cells:
        print("  ".join(v.rjust(w) for v, w in zip(line, widths, strict=True)))


def report(r: dict[str, Any]) -> None:
    print(f"\nhost on {r['database']}, {r['cpus']} CPUs, Python {r['python']}; CPU % of one core")
    table([(f"summary {s['offeredRate']:g}/s", s) for s in r["evalSummary"]], SUMMARY_COLUMNS)
    table([("SSE live", r["sseLive"]), ("SSE replay", r["sseReplay"])], SSE_COLUMNS)
    took, live = r["runSeconds"], r["sseLive"]
    print(f"the {live['eventsInLog']}-event run took {took['alone']} s alone and", end=" ")
    print(f"{took['withLiveSubscribers']} s with {live['subscribers']} live subscribers")
    for problem in r["sseLive"]["problems"] + r["sseReplay"]["problems"]:
        print(f"  {problem}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-admin", default="postgresql://postgres@127.0.0.1:5432/postgres")
    for name, default in [("rate", 200.0), ("headroom-rate", 500.0), ("seconds", 15.0)]:
        parser.add_argument(f"--{name}", type=float, default=default)
    for name, number in [("generators", 1), ("connections", 8), ("summary-runs", 4)]:
        parser.add_argument(f"--{name}", type=int, default=number)
    for name, number in [("subscribers", 20), ("tasks", 200), ("trials", 5)]:
        parser.add_argument(f"--{name}", type=int, default=number)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds through the cleanup
    results: dict[str, Any] = {"database": args.database, "python": sys.version.split()[0]}
    results |= {"machine": platform.machine(), "cpus": os.cpu_count()}
    results |= {"loadAverage1m": os.getloadavg()[0], "options": dict(vars(args))}
    del results["options"]["pg_admin"]
    host: Host | None = None
    scratch, created = f"openwop_eval_bench_{os.getpid()}", False
    with tempfile.TemporaryDirectory(prefix="host-bench-") as tmp:
        try:
            config = write_config(Path(tmp), args.tasks, args.trials)
            url = f"sqlite:///{tmp}/host.sqlite"
            if args.database == "postgres":
                created = scratch_database(args.pg_admin, scratch, create=True)
                url = f"{args.pg_admin.rsplit('/', 1)[0]}/{scratch}"
            host = Host(config, url, Path(tmp) / "host.log")
            host.wait_ready()
            results.update(asyncio.run(measure(host, args)))
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        except (RuntimeError, httpx.HTTPError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        finally:
            if host is not None:
                host.stop()
            if created:
                scratch_database(args.pg_admin, scratch, create=False)
    report(results)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n", "utf-8")
    return 0 if results["sseLive"]["exactlyOnce"] and results["sseReplay"]["exactlyOnce"] else 1


if __name__ == "__main__":
    sys.exit(main())
