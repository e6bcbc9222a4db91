"""Eval host benchmark: a real ``openwop-eval serve`` process, driven over loopback HTTP.

    python -m bench.host.host_bench [--database sqlite|postgres] [--json out.json]

1. EvalSummary reads: an open-loop load GETs the eval-summary of a few completed
   conformance runs at ``--rate`` (200 req/s), then at each of ``--headroom-rate``
   (1000,2000; 0 skips them), for ``--seconds`` (15) each.
   Request i is due at start + i/rate, however slow earlier answers are, and its latency
   counts from then (no coordinated omission). ``--generators`` (2) processes share the
   schedule, each over ``--connections`` (16) keep-alive connections: ``host_load.py``, raw
   asyncio sockets on uvloop — no client library, so the generators use a few % of a core
   and leave the other core to the host (httpx could not offer 1,000 req/s here).
2. SSE fan-out: a generated suite (``--tasks`` x ``--trials``, 3 fixture tool calls each),
   run by a scripted agent alone, then with ``--subscribers`` streams reading its events
   from sequence 0 while it runs (live), once asking for gzip (as browsers and httpx do)
   and once for identity (as openwop-client does) — ``--pairs`` (9) rounds, the three runs
   of each in an order that rotates from round to round; medians reported, in seconds by
   the host's clock and in host CPU seconds, and the slowdown as the median of the rounds'
   own ratios (the machine's drift between rounds bills both runs alike) — then read
   again once done (replay), in both encodings. The streams are raw sockets too
   (``host_load.subscribe``), decoded once they have ended. Each must deliver every
   sequence 0..last exactly once, else exit 1. The host plays its runs in
   ``--run-workers`` (1, the default) worker processes; 0 plays them in its own.

The host also serves the conformance suites and mock agent, as its development default
does. ``--database postgres`` creates a scratch database via ``--pg-admin`` and drops it
afterwards. CPU is % of one core; ``box%`` counts every process on the machine.
``--part summary|sse`` runs one half; ``--log-level info`` turns the host's access log on;
``--py-spy OUT`` samples the host with py-spy (``pip install py-spy``) from start to end.
Nothing to install beyond the project (``pip install -e '.[test]'``): uvloop is a dependency.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import multiprocessing
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
from openwop_client.wire_id import project_id

from bench.host import host_load

AUTH = {"Authorization": "Bearer dev-key"}
MOCK = "core.conformance.mock-agent"
GATES = [f"core.conformance.evals.trajectory-gate{m}@1.0.0" for m in ("", "-mean")]
AGENT, SUITE = "bench.host.scripted-agent", "bench.host.evals.fanout@1.0.0"
TOOLS = ("crm:lookup-order", "crm:get-customer", "payments:refund")
TERMINAL = {"run.completed", "run.failed", "run.cancelled"}
PER_SUBSCRIBER = [("min", 0), ("p50", 50), ("max", 100)]


def write_config(work: Path, tasks: int, trials: int, run_workers: int) -> Path:
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
        f'suites = ["suites/"]\nconformance_fixtures = true\nrun_workers = {run_workers}\n\n'
        f'[agents."{MOCK}"]\n'
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

    def __init__(self, config: Path, database: str, log: Path, level: str = "warning") -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = str(sock.getsockname()[1])
        self.port, self.base, self.log = int(port), f"http://127.0.0.1:{port}", log
        command = [sys.executable, "-m", "openwop_eval", "serve", "--config", str(config)]
        command += ["--port", port, "--database", database, "--log-level", level]
        with open(log, "wb") as out:  # its own session: Ctrl-C reaches us, and we stop it
            self.proc = subprocess.Popen(command, stdout=out, stderr=out, start_new_session=True)
        self.profiler: subprocess.Popen[bytes] | None = None

    def profile(self, out: Path) -> None:
        """Sample the host with py-spy (``pip install py-spy``) until ``stop``: collapsed
        stacks, one line each, for flamegraph tools or ``sort | head``."""
        command = ["py-spy", "record", "--pid", str(self.proc.pid), "--format", "raw"]
        command += ["--rate", "250", "--nonblocking", "--output", str(out)]
        self.profiler = subprocess.Popen(command, stdout=subprocess.DEVNULL)

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
        if self.profiler is not None:  # SIGINT: py-spy writes its output, then exits
            self.profiler.send_signal(signal.SIGINT)
            self.profiler.wait(30)
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


async def summary_load(
    host: Host, pool: ProcessPoolExecutor, runs: list[str], rate: float, args: argparse.Namespace
) -> dict[str, Any]:
    total = max(1, round(rate * args.seconds))
    n = min(total, args.generators)
    paths = [f"/runs/{runs[i % len(runs)]}/eval-summary" for i in range(total)]
    due = [i / rate for i in range(total)]
    at, loop = time.time() + 0.5, asyncio.get_running_loop()
    shares = [(host.port, AUTH, paths[k::n], due[k::n], at, args.connections) for k in range(n)]
    jobs = [loop.run_in_executor(pool, host_load.generate, *share) for share in shares]
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
        out[name] = round(host_load.percentile(ordered, q), 2) if ordered else None
    out |= {"errors": sum(errors.values()), "errorKinds": dict(errors)}
    out["maxSendLagMs"] = round(1000 * max(p["lag"] for p in parts), 2)
    return out | {k: v for k, v in usage.items() if k != "wall"}


async def fanout(host: Host, projected: str, subscribers: int, encoding: str) -> dict[str, Any]:
    """``subscribers`` concurrent streams from sequence 0 (host_load.subscribe: raw sockets,
    so reading 200,000 frames costs the client little), asking for ``encoding`` (gzip or
    identity): events/s, bytes on the wire and exactly-once."""
    meter = Meter(host)
    path = f"/runs/{projected}/events"
    headers = AUTH | {"Accept-Encoding": encoding}
    streams = await host_load.subscribe(host.port, headers, path, subscribers, timeout=300)
    usage = meter.read()
    after = max((s["sequences"][-1] for s in streams if s["sequences"]), default=-1)
    query = {"afterSequence": after, "timeout": 0}  # nothing after it: lastSequence is the end
    async with httpx.AsyncClient(base_url=host.base, headers=AUTH, timeout=30) as c:
        poll = await c.get(f"/runs/{projected}/events/poll", params=query)
    expected = list(range(poll.json()["lastSequence"] + 1))
    problems = []
    for n, stream in enumerate(streams):
        got, terminal = stream["sequences"], stream["lastEvent"] in TERMINAL
        if stream["error"] or got != expected or not terminal:
            missing, extra = len(set(expected) - set(got)), len(got) - len(set(got))
            problems.append(
                f"subscriber {n}: {stream['error'] or 'closed'}; {missing} missing, {extra}"
                f" duplicated, in order: {got == sorted(got)}, last event terminal: {terminal}"
            )
    delivered, wall = sum(len(s["sequences"]) for s in streams), usage.pop("wall")
    per = sorted(len(s["sequences"]) / s["seconds"] for s in streams)
    out: dict[str, Any] = {"encoding": encoding, "subscribers": subscribers}
    out["eventsInLog"] = len(expected)
    out["eventsDelivered"] = delivered
    out |= {"seconds": round(wall, 3), "eventsPerSecond": round(delivered / wall, 1)}
    out["perSubscriber"] = {k: round(host_load.percentile(per, q), 1) for k, q in PER_SUBSCRIBER}
    out["chunksPerSubscriber"] = round(statistics.mean(s["chunks"] for s in streams), 1)
    out["kbPerSubscriber"] = round(statistics.mean(s["bytes"] for s in streams) / 1024, 1)
    return out | {"exactlyOnce": not problems, "problems": problems, **usage}


async def measure(host: Host, args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"evalSummary": []}
    async with httpx.AsyncClient(base_url=host.base, headers=AUTH, timeout=30) as client:
        if args.part in ("all", "summary"):
            runs = [await create_run(client, GATES[i % 2], MOCK) for i in range(args.summary_runs)]
            for run in runs:
                await wait_summary(client, run)
            more = [float(r) for r in args.headroom_rate.split(",")]
            rates = [args.rate, *(r for r in more if r > 0)]
            spawn = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(args.generators, mp_context=spawn) as pool:
                list(pool.map(time.sleep, [0.5] * args.generators))  # start every process first
                for rate in rates:
                    results["evalSummary"].append(await summary_load(host, pool, runs, rate, args))
        if args.part in ("all", "sse"):
            results |= await streams(host, client, args)
    return results


async def streams(
    host: Host, client: httpx.AsyncClient, args: argparse.Namespace
) -> dict[str, Any]:
    """``--pairs`` rounds, interleaved (the medians resist a busy machine): a run alone,
    one with live gzip subscribers, one with live identity subscribers, in an order that
    rotates each round; each run's host CPU seconds too, which other processes do not
    inflate."""
    rounds: list[dict[str, float]] = []
    live: dict[str, dict[str, Any]] = {}
    kinds = ("alone", *ENCODINGS)
    for n in range(args.pairs):
        rounds.append({})
        for kind in kinds[n % 3 :] + kinds[: n % 3]:
            cpu = cpu_seconds(host.proc.pid)
            run = await create_run(client, SUITE, AGENT)
            if kind != "alone":
                live[kind] = await fanout(host, run, args.subscribers, kind)
            await wait_summary(client, run)
            rounds[-1][kind] = await took(client, run)
            rounds[-1][f"{kind}Cpu"] = round(cpu_seconds(host.proc.pid) - cpu, 3)
        if not all(stream["exactlyOnce"] for stream in live.values()):
            break  # reported below: the live stream that failed
    median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    out: dict[str, Any] = {"sseLive": live["gzip"], "sseLiveIdentity": live["identity"]}
    out["runRounds"] = rounds
    for key, suffix in [("runSeconds", ""), ("runCpuSeconds", "Cpu")]:
        out[key] = {"alone": median[f"alone{suffix}"]}
        out[key]["withLiveSubscribers"] = median[f"gzip{suffix}"]
        out[key]["withLiveIdentitySubscribers"] = median[f"identity{suffix}"]
    out["runSlowdown"] = {  # the median of each round's own ratio to its run alone
        key: round(statistics.median(r[kind] / r["alone"] for r in rounds), 3)
        for key, kind in [
            ("withLiveSubscribers", "gzip"),
            ("withLiveIdentitySubscribers", "identity"),
        ]
    }
    out["sseReplay"] = await fanout(host, run, args.subscribers, "gzip")
    out["sseReplayIdentity"] = await fanout(host, run, args.subscribers, "identity")
    return out


ENCODINGS = ("gzip", "identity")
"""What the live subscribers ask for: gzip as browsers, httpx and curl do; identity as
openwop-client (urllib) does."""


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
SSE_COLUMNS += [("KB/sub", "kbPerSubscriber")]
SSE_COLUMNS += [("events/s", "eventsPerSecond"), ("per sub min/p50/max", "perSubscriber")]
SSE_COLUMNS += [("writes/sub", "chunksPerSubscriber")]
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
    if "sseLive" not in r:
        return
    streams = [(f"SSE {kind} {s['encoding']}", s) for kind, s in sse_streams(r)]
    table(streams, SSE_COLUMNS)
    live, n = r["sseLive"], len(r["runRounds"])
    for name, unit in [("runSeconds", "s"), ("runCpuSeconds", "host CPU s")]:
        alone = r[name]["alone"]
        print(f"the {live['eventsInLog']}-event run, median of {n}: {alone} {unit} alone;")
        for encoding, key in [
            ("gzip", "withLiveSubscribers"),
            ("identity", "withLiveIdentitySubscribers"),
        ]:
            with_live = r[name][key]
            print(
                f"  {with_live} {unit} with {live['subscribers']} live {encoding} subscribers",
                end=" ",
            )
            slowdown = r["runSlowdown"][key] if name == "runSeconds" else None
            each = f"; per round, the median ratio {slowdown:.2f}x" if slowdown else ""
            print(f"({with_live / max(alone, 1e-9):.2f}x{each})")
    for _, stream in streams:
        for problem in stream["problems"]:
            print(f"  {problem}")


def sse_streams(r: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    keys = [("live", "sseLive"), ("live", "sseLiveIdentity"), ("replay", "sseReplay")]
    return [(kind, r[key]) for kind, key in [*keys, ("replay", "sseReplayIdentity")]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-admin", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--rate", type=float, default=200.0, help="offered req/s, first")
    parser.add_argument("--headroom-rate", default="1000,2000", help="then these; 0: none")
    parser.add_argument("--seconds", type=float, default=15.0)
    for name, number in [("generators", 2), ("connections", 16), ("summary-runs", 4)]:
        parser.add_argument(f"--{name}", type=int, default=number)
    for name, number in [("subscribers", 20), ("tasks", 200), ("trials", 5), ("pairs", 9)]:
        parser.add_argument(f"--{name}", type=int, default=number)
    parser.add_argument("--run-workers", type=int, default=1, help="the host's (0: none)")
    parser.add_argument("--part", choices=["all", "summary", "sse"], default="all")
    parser.add_argument("--log-level", default="warning", help="the host's (info: access log)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--py-spy", type=Path, metavar="OUT", help="profile the host to OUT")
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
            config = write_config(Path(tmp), args.tasks, args.trials, args.run_workers)
            url = f"sqlite:///{tmp}/host.sqlite"
            if args.database == "postgres":
                created = scratch_database(args.pg_admin, scratch, create=True)
                url = f"{args.pg_admin.rsplit('/', 1)[0]}/{scratch}"
            host = Host(config, url, Path(tmp) / "host.log", args.log_level)
            host.wait_ready()
            if args.py_spy is not None:
                host.profile(args.py_spy)
            results.update(host_load.run(measure(host, args)))
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
    streams = sse_streams(results) if "sseLive" in results else []
    return 0 if all(s["exactlyOnce"] for _, s in streams) else 1


if __name__ == "__main__":
    sys.exit(main())
