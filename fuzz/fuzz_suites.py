"""Long fuzzing of the suite loader, run by hand: ``python -m fuzz.fuzz_suites --cases 10000``.

Every case is a hostile suite file (grammar-based generation and mutation of valid suites,
JSON and YAML; see ``tests/fuzz/generate.py``), checked in a worker process against the
loader's contract (``tests/fuzz/contract.py``): ``load_suite`` returns a suite or raises
``SuiteError`` with located problems; an accepted suite runs through the real runner and
store; every ``--cli-every``-th case also goes through ``openwop-eval validate``, which must
exit 0 or 2. A case that raises anything else is a crash; one that takes longer than
``--timeout`` seconds is a hang (its worker is killed and replaced). Crashing and hanging
cases are written to ``--out``; ``--case N`` reruns case N in this process, with its
traceback. Exits 1 when any case crashed or hung.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a file, too

from click.testing import CliRunner
from tests.fuzz.contract import check_file, run_for_real
from tests.fuzz.generate import RandomChooser, case

from openwop_eval.cli.main import main as cli
from openwop_eval.store import Store

MEMORY_LIMIT = 2 * 1024**3
"""Bytes of address space per worker: a memory bomb fails as MemoryError, not the machine."""


def make_case(seed: int, index: int) -> tuple[str, bytes]:
    return case(RandomChooser(seed * 1_000_003 + index))


def check_case(seed: int, index: int, workdir: Path, store: Store, cli_every: int) -> str:
    """Run case ``index`` under the contract; the outcome, or raise on a contract breach."""
    suffix, data = make_case(seed, index)
    path = workdir / f"case{suffix}"
    path.write_bytes(data)
    status, loaded = check_file(path)
    if loaded is not None:
        summary = run_for_real(loaded, store)
        assert isinstance(summary["passed"], bool)
    if cli_every and index % cli_every == 0:
        result = CliRunner().invoke(cli, ["validate", str(path)])
        if result.exit_code not in (0, 2) or not isinstance(result.exception, SystemExit | None):
            raise AssertionError(f"validate exited {result.exit_code}: {result.exception!r}")
    return status


def _worker(conn: Connection, seed: int, cli_every: int) -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    except (ImportError, ValueError, OSError):  # not on this platform: run unbounded
        pass
    with tempfile.TemporaryDirectory(prefix="fuzz-suites-") as tmp:
        workdir = Path(tmp)
        store = Store(f"sqlite:///{workdir / 'store.sqlite'}")
        conn.send(("ready", -1, ""))
        while True:
            index = conn.recv()
            if index is None:
                return
            try:
                conn.send(("ok", index, check_case(seed, index, workdir, store, cli_every)))
            except BaseException:  # the contract breach itself is the finding
                conn.send(("crash", index, traceback.format_exc()))


@dataclass
class Worker:
    process: Any
    conn: Connection
    index: int | None = None
    deadline: float = 0.0


def _spawn(context: Any, seed: int, cli_every: int) -> Worker:
    parent, child = context.Pipe()
    process = context.Process(target=_worker, args=(child, seed, cli_every), daemon=True)
    process.start()
    child.close()
    parent.recv()  # ready: imports and the store are set up before any case is timed
    return Worker(process, parent)


def fuzz(args: argparse.Namespace) -> int:
    context = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    out = Path(args.out or tempfile.mkdtemp(prefix="fuzz-findings-"))
    out.mkdir(parents=True, exist_ok=True)
    pending = iter(range(args.start, args.start + args.cases))
    workers = [_spawn(context, args.seed, args.cli_every) for _ in range(args.workers)]
    outcomes: Counter[str] = Counter()
    findings: list[tuple[str, int, str]] = []
    started, report_at = time.monotonic(), args.progress

    def assign(worker: Worker) -> None:
        worker.index = next(pending, None)
        if worker.index is not None:
            worker.deadline = time.monotonic() + args.timeout
            worker.conn.send(worker.index)

    def record(kind: str, index: int, detail: str) -> None:
        outcomes[detail if kind == "ok" else kind] += 1
        if kind != "ok":
            findings.append((kind, index, detail))

    for worker in workers:
        assign(worker)
    while busy := [w for w in workers if w.index is not None]:
        ready = wait(
            [w.conn for w in busy], max(0.0, min(w.deadline for w in busy) - time.monotonic())
        )
        for i, worker in enumerate(workers):
            index = worker.index
            if index is None:
                continue
            if worker.conn in ready:
                try:
                    record(*worker.conn.recv())
                except EOFError:  # the worker died under the case (a segfault, the OOM killer)
                    record("crash", index, "the worker process died")
                    workers[i] = worker = _replace(worker, context, args)
            elif time.monotonic() >= worker.deadline:
                record("hang", index, f"no answer within {args.timeout:g} s")
                workers[i] = worker = _replace(worker, context, args)
            else:
                continue
            assign(worker)
        if args.progress and sum(outcomes.values()) >= report_at:
            print(f"  {report_at} cases, {time.monotonic() - started:.0f} s", file=sys.stderr)
            report_at += args.progress
    for worker in workers:
        worker.conn.send(None)
        worker.process.join(5)
    for kind, index, detail in findings:
        suffix, data = make_case(args.seed, index)
        (out / f"{kind}-{index}{suffix}").write_bytes(data)
        print(f"{kind} in case {index} (seed {args.seed}): {detail.strip().splitlines()[-1]}")
    tried, crashes, hangs = sum(outcomes.values()), outcomes["crash"], outcomes["hang"]
    print(
        f"accepted {outcomes['accepted']}, refused {outcomes['refused']};"
        f" {time.monotonic() - started:.1f} s on {args.workers} workers; findings in {out}"
    )
    print(f"{tried} cases tried / {crashes} crashes / {hangs} hangs")
    return 1 if crashes or hangs else 0


def _replace(worker: Worker, context: Any, args: argparse.Namespace) -> Worker:
    worker.process.kill()
    worker.process.join()
    return _spawn(context, args.seed, args.cli_every)


def replay(args: argparse.Namespace) -> int:
    """Case ``--case`` in this process, so its traceback and a debugger are at hand."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'store.sqlite'}")
        suffix, data = make_case(args.seed, args.case)
        print(f"case {args.case} ({suffix}, {len(data)} bytes): {data[:300]!r}")
        print(check_case(args.seed, args.case, Path(tmp), store, cli_every=1))
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases to try")
    parser.add_argument("--start", type=int, default=0, help="index of the first case")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generator")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds before a hang")
    parser.add_argument("--cli-every", type=int, default=25, help="0: never through the CLI")
    parser.add_argument("--progress", type=int, default=1000, help="report every N cases")
    parser.add_argument("--out", help="where crashing and hanging cases are written")
    parser.add_argument("--case", type=int, help="replay one case in-process and stop")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse_args(sys.argv[1:])
    sys.exit(replay(arguments) if arguments.case is not None else fuzz(arguments))
