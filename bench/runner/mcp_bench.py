"""MCP agents: a tool call through the MCP boundary, in-process MCP trials against the ideal,
and ``mcp:`` subprocess trials against the same processes launched bare.

    python -m bench.runner.mcp_bench                          # the sizes below, 3 rounds
    python -m bench.runner.mcp_bench --rounds 1 --calls 100 --trials 100 --proc-trials 20
    python -m bench.runner.mcp_bench --parts calls --json /tmp/mcp.json

1. ``calls`` (``mcp_calls.py``): ``--calls`` sequential calls per round through the MCP
   boundary against as many direct ``tools.call``s through the same tool boundary: p50 and
   p99 of each, and the overhead (MCP minus direct). The boundary alone (``wire``: the
   request the SDK's client sends, posted as bytes), then the official Python client on one
   held ``mcp.Client`` session over HTTP and over stdio (its own CPU a call is shown apart:
   it is the agent's, and the same for any server). Goal: the boundary's p50 overhead
   ≤ 1 ms over loopback HTTP.
2. ``inprocess`` (``mcp_trials.py``): ``--trials`` (1,000) trials of a Python agent that asks
   ``tools.mcp_servers()`` and makes 5 calls with ``mcp.Client``, thinking ``--think-ms``
   (50 ms) per trial, 10 ms before each call, at ``--concurrency`` (50), through
   ``run_suite_async`` on SQLite. Ideal: trials × think time / concurrency (1 s). Goal:
   ≤ 1.3× the ideal. Each run is followed by its control, the same trials with
   ``tools.call``; ``--shared-client`` gives the agent one ``httpx2`` client for all its
   sessions (``mcp.Client(url)`` makes one per session).
3. ``subprocess`` (``mcp_launches.py``): ``--proc-trials`` (200) ``mcp:`` trials of
   ``mcp_script.py`` through ``openwop-eval run --concurrency`` ``--proc-concurrency`` (10),
   against the same script launched as many times, as many at a time, without the eval
   (``--bare``: the same imports, input and think time, no calls). Goal: ≤ 1.2× the bare
   launches.

Each part runs ``--rounds`` times: the call samples of every round are pooled; the trials'
figures are the median of the rounds' ratios (the subprocess arms alternate in order).
``--json PATH`` writes every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.runner import mcp_calls, mcp_launches, mcp_trials
from openwop_eval.runtime import gc_tuning

PARTS = ("calls", "inprocess", "subprocess")
HTTP_GOAL_MS = 1.0
INPROCESS_GOAL = 1.3
SUBPROCESS_GOAL = 1.2

Row = tuple[str, str, str, bool | None]
"""(figure, measured, goal, met: None where there is no goal)."""


def ms(value: float) -> str:
    """Milliseconds for the table (microseconds below 0.1 ms)."""
    return f"{value * 1000:.1f} µs" if value < 0.1 else f"{value:.2f} ms"


def call_rows(figures: dict[str, Any]) -> list[Row]:
    direct, wire, http, stdio = (figures[k] for k in ("direct", "wire", "http", "stdio"))
    n = f"{figures['calls'] * figures['rounds']:,}"
    cpu = http["cpuMsPerCall"]
    rows: list[Row] = [
        (f"direct tools.call, {n} calls: p50 / p99", f"{ms(direct['p50Ms'])} / "
         f"{ms(direct['p99Ms'])}", "–", None),
        (f"the MCP boundary over HTTP (the SDK client's request as bytes), {n} calls: p50 / p99",
         f"{ms(wire['p50Ms'])} / {ms(wire['p99Ms'])}", "–", None),
        ("  its overhead over direct: p50 (p99); the hub's CPU a call",
         f"{ms(wire['overheadP50Ms'])} ({ms(wire['overheadP99Ms'])}); "
         f"{ms(wire['hubCpuMsPerCall'])}", f"p50 ≤ {HTTP_GOAL_MS:g} ms",
         wire["overheadP50Ms"] <= HTTP_GOAL_MS),
        (f"the official Python client (mcp.Client) over HTTP, one session, {n} calls: p50 / p99",
         f"{ms(http['p50Ms'])} / {ms(http['p99Ms'])}", "–", None),
        ("  its overhead over direct: p50 (p99); CPU a call: the client's thread / the hub's",
         f"{ms(http['overheadP50Ms'])} ({ms(http['overheadP99Ms'])}); "
         f"{ms(cpu['clientThread'])} / {ms(cpu['hubThread'])}", "–", None),
        (f"the official Python client over stdio, one session, {n} calls: p50 / p99",
         f"{ms(stdio['p50Ms'])} / {ms(stdio['p99Ms'])}", "–", None),
        ("  its overhead over direct: p50 (p99)", f"{ms(stdio['overheadP50Ms'])} "
         f"({ms(stdio['overheadP99Ms'])})", "–", None),
    ]  # fmt: skip
    if http.get("session"):
        session = http["session"]
        rows.append(("opening and closing an HTTP session (mcp.Client): p50 / p99",
                     f"{ms(session['p50Ms'])} / {ms(session['p99Ms'])}", "–", None))  # fmt: skip
    return rows


def inprocess_rows(runs: list[dict[str, Any]], client_ms: float | None) -> list[Row]:
    """The in-process runs; ``client_ms``, the official client's own CPU a call (part 1),
    gives the floor no server can lower: the trials' calls alone, in one interpreter."""
    ratio = statistics.median(run["ratio"] for run in runs)
    first = runs[0]
    seconds = ", ".join(f"{run['seconds']:.2f}" for run in runs)
    cpu = statistics.median(run["cpuMsPerTrial"] for run in runs)
    hub = statistics.median(run["hubCpuSeconds"] / run["trials"] * 1000 for run in runs)
    label = (
        f"{first['trials']:,} in-process trials × {first['callsPerTrial']} MCP calls,"
        f" {first['thinkMsPerTrial']:g} ms think per trial, concurrency {first['concurrency']}"
    )
    measured = (
        f"{ratio:.2f}× ideal ({first['idealSeconds']:g} s) [runs: {seconds} s]"
        f"; CPU {cpu:.1f} ms a trial, of it the hub's thread {hub:.1f} ms"
    )
    control = statistics.median(run["directRatio"] for run in runs)
    control_cpu = statistics.median(run["directCpuMsPerTrial"] for run in runs)
    floor: list[Row] = []
    if client_ms is not None:
        seconds = first["trials"] * first["callsPerTrial"] * client_ms / 1000
        floor.append((
            "  its floor: the official client's own CPU for the calls alone"
            f" ({ms(client_ms)} a call, one interpreter)",
            f"{seconds:.1f} s = {seconds / first['idealSeconds']:.1f}× ideal", "–", None,
        ))  # fmt: skip
    return [
        (label, measured, f"≤ {INPROCESS_GOAL:g}× ideal", ratio <= INPROCESS_GOAL),
        (
            "  the control: the same trials with tools.call in place of the MCP client",
            f"{control:.2f}× ideal; CPU {control_cpu:.1f} ms a trial",
            "–",
            None,
        ),
        *floor,
    ]


def subprocess_rows(figures: dict[str, Any]) -> list[Row]:
    rounds = figures["rounds"]
    ratio = statistics.median(r["ratio"] for r in rounds)
    evals = statistics.median(r["evalSeconds"] for r in rounds)
    bares = statistics.median(r["bareSeconds"] for r in rounds)
    eval_cpu = statistics.median(r["evalCpuSeconds"] for r in rounds)
    bare_cpu = statistics.median(r["bareCpuSeconds"] for r in rounds)
    each = ", ".join(f"{r['ratio']:.2f}" for r in rounds)
    label = (
        f"{figures['trials']:,} mcp: subprocess trials vs the same launched bare,"
        f" concurrency {figures['concurrency']}"
    )
    measured = (
        f"{ratio:.2f}× [rounds: {each}] (medians {evals:.2f} s vs {bares:.2f} s bare;"
        f" CPU {eval_cpu:.1f} s vs {bare_cpu:.1f} s)"
    )
    alone = figures["alone"]
    own = (
        f"one process at a time (median of {mcp_launches.ALONE}): bare, and with its session"
        " and 5 calls to a trial's servers"
    )
    spent = (
        f"{alone['bareSeconds']:.2f} s vs {alone['callsSeconds']:.2f} s;"
        f" CPU {alone['bareCpuSeconds']:.2f} s vs {alone['callsCpuSeconds']:.2f} s"
    )
    return [
        (label, measured, f"≤ {SUBPROCESS_GOAL:g}× bare", ratio <= SUBPROCESS_GOAL),
        (f"  {own}", spent, "–", None),
    ]


def git() -> dict[str, Any]:
    """The commit measured, and whether the tree had changes (None outside a checkout)."""

    def out(*argv: str) -> str | None:
        done = subprocess.run(["git", *argv], capture_output=True, text=True, cwd=mcp_launches.ROOT)
        return done.stdout.strip() if done.returncode == 0 else None

    commit = out("rev-parse", "--short", "HEAD")
    return {"commit": commit, "changes": bool(out("status", "--porcelain")) if commit else None}


def table(rows: list[Row]) -> str:
    lines = ["| figure | measured | goal | met |", "| --- | --- | --- | --- |"]
    for figure, measured, goal, met in rows:
        verdict = "–" if met is None else ("yes" if met else "no")
        lines.append(f"| {figure} | {measured} | {goal} | {verdict} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=500, help="per path and round (part 1)")
    parser.add_argument("--trials", type=int, default=1000, help="in-process trials (part 2)")
    parser.add_argument("--think-ms", type=float, default=50.0, help="per trial (parts 2, 3)")
    parser.add_argument("--concurrency", type=int, default=50, help="part 2")
    parser.add_argument(
        "--shared-client", action="store_true", help="part 2: one httpx2 client for all trials"
    )
    parser.add_argument("--proc-trials", type=int, default=200, help="part 3")
    parser.add_argument("--proc-concurrency", type=int, default=10, help="part 3")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if min(args.rounds, args.calls, args.trials, args.proc_trials) < 1 or args.think_ms <= 0:
        parser.error("--rounds, --calls and the trial counts must be 1 or more, --think-ms above 0")
    gc_tuning.tune()  # as the command line does (openwop_eval.runtime.gc_tuning)

    results: dict[str, Any] = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "git": git(),
        "loadAverageStart": os.getloadavg()[0],
    }
    rows: list[Row] = []
    if "calls" in args.parts:
        results["calls"] = asyncio.run(mcp_calls.measure(args.calls, args.rounds))
        rows += call_rows(results["calls"])
        print(f"calls: {json.dumps(results['calls'])}", flush=True)
    if "inprocess" in args.parts:
        runs = []
        for _ in range(args.rounds):
            runs.append(
                asyncio.run(
                    mcp_trials.run_once(
                        args.trials, args.think_ms, args.concurrency, args.shared_client
                    )
                )
            )
            print(f"in process: {json.dumps(runs[-1])}", flush=True)
        results["inProcess"] = {"sharedClient": args.shared_client, "runs": runs}
        results["inProcess"]["ratio"] = statistics.median(run["ratio"] for run in runs)
        client = results.get("calls", {}).get("http", {}).get("cpuMsPerCall", {})
        rows += inprocess_rows(runs, client.get("clientThread"))
    if "subprocess" in args.parts:
        figures = asyncio.run(
            mcp_launches.measure(
                args.proc_trials, args.think_ms, args.proc_concurrency, args.rounds
            )
        )
        figures["ratio"] = statistics.median(r["ratio"] for r in figures["rounds"])
        results["subprocess"] = figures
        print(f"subprocess: {json.dumps(figures)}", flush=True)
        rows += subprocess_rows(figures)
    results["loadAverageEnd"] = os.getloadavg()[0]
    results["rows"] = [
        {"figure": f.strip(), "measured": m, "goal": g, "met": met} for f, m, g, met in rows
    ]
    print()
    print(table(rows))
    load = f"load average {results['loadAverageStart']:.2f} → {results['loadAverageEnd']:.2f}"
    tree = results["git"]
    at = (
        f", git {tree['commit']}{' with changes' if tree['changes'] else ''}"
        if tree["commit"]
        else ""
    )
    print(f"\n{results['cpus']} CPUs, {load}{at}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
