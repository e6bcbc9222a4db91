"""``mcp_bench.py``, part 3: ``mcp:`` subprocess trials against the same processes launched
bare.

The agent is ``mcp_script.py``, a process per trial. The eval: ``openwop-eval run SUITE
--agent 'mcp:PYTHON mcp_script.py {mcp_config} --think-ms T' --concurrency C`` on a fresh
SQLite store, timed from its start to its exit (the command's own start-up, the hub, each
trial's servers and config file, the process, the calls through the boundary, recording,
grading, the store). Bare: the same number of ``PYTHON mcp_script.py --bare --think-ms T``
processes, C at a time, from this process: each started with the shell as the eval starts
it, the same task input on its stdin, its stdout read, its exit awaited and checked. A bare
process imports the same SDK and thinks the same time, but has no server to call: so the
ratio bills the eval for the agent's own client work too (opening its session, five calls),
which the agent would do against any server: it is an upper bound of what the eval adds.
That share is measured apart (:func:`alone`): a few processes one at a time, with their calls
to a trial's servers in this process and bare.
"""

from __future__ import annotations

import asyncio
import json
import resource
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.runner.mcp_calls import boundary, started_hub
from bench.runner.mcp_script import ANSWER
from bench.runner.mcp_trials import NAMES, suite
from openwop_eval.agents.mcp.listing import TrialTools

SCRIPT = Path(__file__).with_name("mcp_script.py")
ALONE = 5
"""Processes timed alone, each way (:func:`alone`)."""
ROOT = Path(__file__).resolve().parents[2]
"""The repository root: ``python -m bench.…`` runs from it."""


def children_cpu() -> float:
    """CPU seconds of this process's reaped children (and theirs) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def eval_command(doc: Path, store: str, think_ms: float, concurrency: int) -> list[str]:
    agent = "mcp:" + script_command("{mcp_config}", think_ms)
    cli = Path(sys.executable).with_name("openwop-eval")
    return [str(cli), "run", str(doc), "--agent", agent, "--concurrency", str(concurrency),
            "--store", store, "--quiet"]  # fmt: skip


def script_command(given: str, think_ms: float) -> str:
    """``PYTHON mcp_script.py GIVEN --think-ms T`` for the shell (GIVEN: ``--bare``, or the
    config's path, or ``{mcp_config}``)."""
    python, script = shlex.quote(sys.executable), shlex.quote(str(SCRIPT))
    return f"{python} {script} {given} --think-ms {think_ms:g}"


async def through_eval(
    doc: dict[str, Any], think_ms: float, concurrency: int
) -> tuple[float, float]:
    """Wall and CPU seconds (the eval's process and every agent process) of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "suite.json"
        path.write_text(json.dumps(doc))
        argv = eval_command(path, f"sqlite:///{Path(tmp) / 's.db'}", think_ms, concurrency)
        cpu, start = children_cpu(), time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=ROOT
        )
        out, _ = await proc.communicate()
        seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = out.decode("utf-8", "replace").strip()[-800:]
        raise RuntimeError(f"openwop-eval run exited {proc.returncode}: {tail}")
    return seconds, children_cpu() - cpu


async def bare(inputs: list[bytes], think_ms: float, concurrency: int) -> tuple[float, float]:
    """Wall and CPU seconds of the processes launched without the eval."""
    command = script_command("--bare", think_ms)
    gate = asyncio.Semaphore(concurrency)

    async def one(data: bytes) -> None:
        async with gate:
            proc = await asyncio.create_subprocess_shell(
                command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await proc.communicate(data)
        if proc.returncode != 0 or out.decode().strip() != ANSWER:
            raise RuntimeError(f"a bare launch exited {proc.returncode}: {err.decode()[-500:]}")

    cpu, start = children_cpu(), time.perf_counter()
    await asyncio.gather(*(one(data) for data in inputs))
    return time.perf_counter() - start, children_cpu() - cpu


def inputs_of(doc: dict[str, Any]) -> list[bytes]:
    """Each trial's input, as the eval writes it to the process's stdin."""
    count = doc["trials"]["count"]
    return [json.dumps(task["input"]).encode() for _ in range(count) for task in doc["tasks"]]


async def alone(think_ms: float, times: int) -> dict[str, Any]:
    """One process at a time, ``times`` each way in alternation, against a trial's servers
    in this process (the hub and a boundary with fixtures, as ``mcp_calls.py`` sets them
    up): what the agent's own client work (its session, five calls) costs a process, beside
    the same process bare. Medians of wall and CPU seconds."""
    hub = await started_hub()
    seen: dict[str, list[tuple[float, float]]] = {"bare": [], "calls": []}
    data = json.dumps({"orderId": "A-1000"}).encode()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "mcp.json"
        for _ in range(times):
            for mode in seen:
                port = boundary([(name, {"ok": True}) for name in NAMES])
                trial = TrialTools.of(NAMES, port, asyncio.get_running_loop())
                with hub.serving(trial) as servers:
                    config.write_text(json.dumps(servers.config()))
                    given = "--bare" if mode == "bare" else shlex.quote(str(config))
                    command = script_command(given, think_ms)
                    cpu, start = children_cpu(), time.perf_counter()
                    proc = await asyncio.create_subprocess_shell(
                        command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
                    )
                    out, _ = await proc.communicate(data)
                    seen[mode].append((time.perf_counter() - start, children_cpu() - cpu))
                calls = len(NAMES) if mode == "calls" else 0
                if out.decode().strip() != ANSWER or len(port.calls) != calls:
                    raise RuntimeError(f"a process alone ({mode}) did not play its trial")
    return {
        f"{mode}{key}": round(statistics.median(s[i] for s in samples), 3)
        for mode, samples in seen.items()
        for i, key in enumerate(("Seconds", "CpuSeconds"))
    }


async def measure(trials: int, think_ms: float, concurrency: int, rounds: int) -> dict[str, Any]:
    """``rounds`` rounds, each one eval run and one bare launch of as many processes, in an
    order that alternates; the figure is the median of the rounds' ratios."""
    doc = suite(trials, "bench.evals.mcp-subprocess")
    inputs = inputs_of(doc)
    single = await alone(think_ms, ALONE)
    rows: list[dict[str, float]] = []
    for i in range(rounds):
        row: dict[str, float] = {}
        for arm in ("eval", "bare") if i % 2 == 0 else ("bare", "eval"):
            if arm == "eval":
                row["evalSeconds"], row["evalCpuSeconds"] = await through_eval(
                    doc, think_ms, concurrency
                )
            else:
                row["bareSeconds"], row["bareCpuSeconds"] = await bare(
                    inputs, think_ms, concurrency
                )
        row["ratio"] = row["evalSeconds"] / row["bareSeconds"]
        rows.append({key: round(value, 3) for key, value in row.items()})
    return {
        "trials": len(inputs),
        "thinkMsPerTrial": think_ms,
        "concurrency": concurrency,
        "rounds": rows,
        "alone": single,
    }
