"""``results.json`` and ``results.md`` for ``bench/all``: every figure, the machine, the table.

Standard library only (see ``jobs``).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.driver.jobs import GRADE_BENCH, ROOT, Outcome
from bench.driver.rows import Line


def read(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip()


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def memory_mb() -> int | None:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return None


def machine(python: str) -> dict[str, Any]:
    """The facts a figure depends on. Git is only read (no optional locks: others use it)."""
    git = ["git", "--no-optional-locks"]
    return {
        "cpuModel": cpu_model(),
        "cpus": os.cpu_count(),
        "cpusUsable": len(os.sched_getaffinity(0)),
        "memoryMb": memory_mb(),
        "platform": platform.platform(),
        "python": read([python, "-c", "import platform; print(platform.python_version())"]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "gitCommit": read([*git, "rev-parse", "HEAD"]),
        "gitDirty": bool(read([*git, "status", "--porcelain", "--untracked-files=no"])),
        "loadAverage1m": {"start": round(os.getloadavg()[0], 2)},
    }


def peer_versions(outcomes: dict[str, Outcome]) -> dict[str, str]:
    versions: dict[str, str] = {}
    for outcome in outcomes.values():
        data = outcome.data or {}
        if "inspectAi" in data:
            versions["inspect-ai"] = data["inspectAi"]
        for peer in data.get("peers", []) if outcome.job.script == GRADE_BENCH else []:
            versions[peer["name"]] = peer["version"]
    return versions


def met(line: Line) -> str:
    if not line.measured:
        return "not measured"
    return {True: "yes", False: "no", None: "undecided"}[line.met]


def ratio(line: Line) -> str:
    """ours/peer per peer, named when there are several."""
    named = [(p.name.split()[0], p.ratio) for p in line.peers if p.ratio is not None]
    cells = [f"{n} {r:.3g}" if len(named) > 1 else f"{r:.3g}" for n, r in named]
    return "; ".join(cells) + f" ({line.better} is better)" if cells else "–"


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(lines: list[Line]) -> str:
    rows = [["row", "goal", "ours", "peer", "ours/peer", "met"], ["---"] * 6]
    for line in lines:
        peers = "; ".join(f"{p.name}: {p.text}" for p in line.peers) or "–"
        ours = line.ours + (f" [{line.note}]" if line.note else "")
        rows.append([line.label, line.goal, ours, peers, ratio(line), met(line)])
    return "\n".join("| " + " | ".join(cell(c) for c in row) + " |" for row in rows)


def markdown(results: dict[str, Any], lines: list[Line]) -> str:
    m = results["machine"]
    load = m["loadAverage1m"]
    versions = ", ".join(f"{k} {v}" for k, v in results["peerVersions"].items()) or "none"
    return (
        f"# bench/all, {results['mode']} run, {m['date']}\n\n"
        f"{m['cpuModel']}, {m['cpus']} CPUs, {m['memoryMb']:,} MB, {m['platform']},"
        f" Python {m['python']}; git {m['gitCommit'][:12]}"
        f"{' with uncommitted changes' if m['gitDirty'] else ''};"
        f" load average {load['start']} at the start, {load.get('end', '?')} at the end."
        f" Peers: {versions}.\n\n"
        + table(lines)
        + "\n\nours/peer is our figure divided by the peer's, measured in the same run:"
        " for trials/s higher is better, for wall time lower is better. Each benchmark ran in"
        " a fresh process (peak RSS is its own); the grading row's process was pinned to one"
        f" CPU. Total {results['seconds']:,.0f} s.\n"
    )


def write(out: Path, results: dict[str, Any], lines: list[Line]) -> str:
    text = markdown(results, lines)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n", "utf-8")
    (out / "results.md").write_text(text, "utf-8")
    return text
