"""Host replicas: ``GET …/eval-summary`` throughput of 2 replicas vs 1, on one PostgreSQL.

    python -m bench.host.replica_bench [--rate 6000] [--seconds 10] [--json out.json]

A scratch database on ``--pg-admin``; completed runs are created on the first replica; then
the same open-loop load (``host_load.py``, no coordinated omission) is offered to one
replica, then split evenly over two replicas on the same database. Offer more than one
replica serves (the default) and the completed requests per second is each setup's
throughput. On a 2-core machine the load generators share the cores with the replicas, so
two replicas can only show what the cores leave them; the table states every CPU share.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.host import host_load
from bench.host.host_bench import (
    AGENT,
    AUTH,
    SUITE,
    Host,
    cpu_seconds,
    create_run,
    scratch_database,
    wait_summary,
    write_config,
)


async def offer(hosts: list[Host], runs: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """``--rate`` req/s for ``--seconds``, the requests dealt round-robin to ``hosts``."""
    total = round(args.rate * args.seconds)
    paths = [f"/runs/{runs[i % len(runs)]}/eval-summary" for i in range(total)]
    due = [i / args.rate for i in range(total)]
    n = args.generators
    at, loop = time.time() + 0.5, asyncio.get_running_loop()
    shares = [
        (hosts[k % len(hosts)].port, AUTH, paths[k::n], due[k::n], at, args.connections)
        for k in range(n)
    ]
    with ProcessPoolExecutor(n) as pool:
        jobs = [loop.run_in_executor(pool, host_load.generate, *share) for share in shares]
        await asyncio.sleep(at - time.time())
        started, cpu = time.perf_counter(), [cpu_seconds(h.proc.pid) for h in hosts]
        parts = await asyncio.gather(*jobs)
        wall = time.perf_counter() - started
    used = [cpu_seconds(h.proc.pid) - c for h, c in zip(hosts, cpu, strict=True)]
    ordered = sorted(x for p in parts for x in p["latencies"])
    errors: collections.Counter[str] = sum((p["errors"] for p in parts), collections.Counter())
    return {
        "replicas": len(hosts),
        "offeredRate": args.rate,
        "completedPerSecond": round(len(ordered) / max(p["done"] for p in parts), 1),
        "p50Ms": round(host_load.percentile(ordered, 50), 2) if ordered else None,
        "p99Ms": round(host_load.percentile(ordered, 99), 2) if ordered else None,
        "errors": sum(errors.values()),
        "hostCpu%": [round(100 * u / wall, 1) for u in used],
        "clientCpu%": round(100 * sum(p["cpu"] for p in parts) / wall, 1),
    }


async def measure(hosts: list[Host], args: argparse.Namespace) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=hosts[0].base, headers=AUTH, timeout=60) as client:
        runs = [await create_run(client, SUITE, AGENT) for _ in range(4)]
        for run in runs:
            await wait_summary(client, run)
    one = await offer(hosts[:1], runs, args)
    two = await offer(hosts, runs, args)
    speedup = two["completedPerSecond"] / max(one["completedPerSecond"], 1e-9)
    return {"one": one, "two": two, "speedup": round(speedup, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pg-admin", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--rate", type=float, default=6000.0, help="offered req/s")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--generators", type=int, default=2)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    scratch, created = f"openwop_eval_replicas_{os.getpid()}", False
    hosts: list[Host] = []
    with tempfile.TemporaryDirectory(prefix="replica-bench-") as tmp:
        try:
            config = write_config(Path(tmp), 20, 2)
            created = scratch_database(args.pg_admin, scratch, create=True)
            url = f"{args.pg_admin.rsplit('/', 1)[0]}/{scratch}"
            for i in range(2):
                hosts.append(Host(config, url, Path(tmp) / f"host-{i}.log"))
                hosts[-1].wait_ready()
            result = host_load.run(measure(hosts, args))
        except (RuntimeError, httpx.HTTPError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        finally:
            for host in hosts:
                host.stop()
            if created:
                scratch_database(args.pg_admin, scratch, create=False)
    for name in ("one", "two"):
        r = result[name]
        print(
            f"{r['replicas']} replica(s), {r['offeredRate']:,.0f} req/s offered:"
            f" {r['completedPerSecond']:,.0f} req/s completed, p50 {r['p50Ms']} ms,"
            f" p99 {r['p99Ms']} ms, {r['errors']} errors; host CPU {r['hostCpu%']}%,"
            f" load generators {r['clientCpu%']}%"
        )
    print(f"2 replicas ÷ 1: {result['speedup']}×")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
