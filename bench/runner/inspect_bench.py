"""Inspect AI on the runner benchmark's workload, for a like-for-like time per trial.

Run with a Python that has `inspect-ai` installed: the project's `.venv` (it is a dev
dependency), or a virtualenv of its own:

    .venv/bin/python -m bench.runner.inspect_bench               # 100 samples x 10 epochs
    .venv/bin/python -m bench.runner.inspect_bench --samples 500 --json out.json
    .venv/bin/python -m bench.runner.inspect_bench --samples 0 --sleep-trials 10000 \
        --sleep-ms 1000 --sleep-concurrency 1000                  # the sleepy one only
    python3 -m venv bench/.venv-inspect && bench/.venv-inspect/bin/pip install inspect-ai

The work mirrors `bench/runner/run_bench.py` (same trial count as `--instant-trials` when
samples x epochs equals it, same concurrency, same pass condition), offline, through Inspect's own
machinery:

- Scenario 1, "instant": each sample runs the stock `generate()` solver (tool loop) against the
  `mockllm/model` provider. A scripted output function plays the agent: it asks for the three
  tools in order (`ModelOutput.for_tool_call`), then answers "refunded". The tools are real
  `@tool` functions that return canned responses for the sample's order. A custom scorer passes a
  trial only if the answer is right AND the assistant's tool calls are exactly the three tools in
  order with no forbidden one. `Epochs(n)` repeats each sample; the eval log is written to a
  temporary `log_dir`.
- Scenario 2, "sleepy": the scripted model waits 50 ms (`asyncio.sleep`) before its first output
  (a stand-in for a model call), then the agent makes one tool call and answers. 1,000 trials run
  at concurrency 100 (`max_samples` and `max_connections` both set). The ideal wall time is
  trials / concurrency x 50 ms. `--sleep-ms` and `--sleep-concurrency` change both.

`--samples 0` skips scenario 1 and `--sleep-trials 0` scenario 2, so each can have a process
of its own (a clean peak RSS); `bench/all` runs them that way, next to `run_bench.py`.

Wall time is measured from the `eval()` call to its return. Import time is measured apart, in a
fresh interpreter. After each run the log is read back from disk and every trial's score is
checked (all must pass), so a fast run that graded wrongly cannot count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from inspect_ai import Epochs, Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    GenerateConfig,
    Model,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import Tool, ToolChoice, ToolInfo, tool

TOOLS = ["crm_lookup_order", "crm_get_customer", "payments_refund"]
FORBIDDEN = "accounts_delete"
ANSWER = "refunded"
SCORER_NAME = "answer_and_path"

# Scripted outputs carry their own usage, so mockllm does not estimate tokens (which would need
# a tokenizer download).
USAGE = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)

OutputFn = Callable[
    [list[ChatMessage], list[ToolInfo], ToolChoice, GenerateConfig], Awaitable[ModelOutput]
]


# --- tools: canned responses keyed by order id -------------------------------------------------


def canned(order_id: str, name: str) -> str:
    return json.dumps({"ok": True, "tool": name, "n": int(order_id.removeprefix("A-"))})


@tool
def crm_lookup_order() -> Tool:
    async def execute(order_id: str) -> str:
        """Look up an order.

        Args:
            order_id: The order id.
        """
        return canned(order_id, "crm_lookup_order")

    return execute


@tool
def crm_get_customer() -> Tool:
    async def execute(order_id: str) -> str:
        """Get the customer of an order.

        Args:
            order_id: The order id.
        """
        return canned(order_id, "crm_get_customer")

    return execute


@tool
def payments_refund() -> Tool:
    async def execute(order_id: str) -> str:
        """Refund an order.

        Args:
            order_id: The order id.
        """
        return canned(order_id, "payments_refund")

    return execute


@tool
def accounts_delete() -> Tool:
    async def execute(order_id: str) -> str:
        """Delete the account behind an order (forbidden).

        Args:
            order_id: The order id.
        """
        return canned(order_id, "accounts_delete")

    return execute


def all_tools() -> list[Tool]:
    return [crm_lookup_order(), crm_get_customer(), payments_refund(), accounts_delete()]


# --- the scripted agent (mockllm custom_outputs) ---------------------------------------------


def scripted_agent(path: list[str], first_delay: float) -> OutputFn:
    """The model side of the agent: request `path` tool by tool, then answer.

    It is stateless (it reads the conversation), so concurrent samples cannot interleave.
    """

    async def output(
        messages: list[ChatMessage],
        tools: list[ToolInfo],
        _tool_choice: ToolChoice,
        _config: GenerateConfig,
    ) -> ModelOutput:
        done = sum(1 for m in messages if isinstance(m, ChatMessageTool))
        if done == 0 and first_delay > 0:
            await asyncio.sleep(first_delay)
        if done < len(path):
            if path[done] not in {t.name for t in tools}:
                raise RuntimeError(f"tool {path[done]} was not offered to the model")
            order_id = messages[0].text.rsplit(" ", 1)[-1]
            out = ModelOutput.for_tool_call(
                "mockllm", path[done], {"order_id": order_id}, tool_call_id=f"c{done}"
            )
        else:
            out = ModelOutput.from_content("mockllm", ANSWER)
        out.usage = USAGE
        return out

    return output


# --- scorer: answer AND tool-call path ---------------------------------------------------------


@scorer(metrics=[accuracy()], name=SCORER_NAME)
def answer_and_path() -> Scorer:
    async def score(state: TaskState, target: Target) -> Score:
        calls = [
            call.function
            for message in state.messages
            if isinstance(message, ChatMessageAssistant)
            for call in message.tool_calls or []
        ]
        expected = list(state.metadata["path"])
        answer_ok = state.output.completion.strip() == target.text
        path_ok = calls == expected and FORBIDDEN not in calls
        return Score(
            value=CORRECT if answer_ok and path_ok else INCORRECT,
            answer=state.output.completion,
            explanation=f"answer_ok={answer_ok} path_ok={path_ok} calls={calls}",
        )

    return score


# --- running -----------------------------------------------------------------------------------


def build_task(samples: int, epochs: int, path: list[str]) -> Task:
    dataset = [
        Sample(
            id=f"t-{i:05d}",
            input=f"Refund order A-{i}",
            target=ANSWER,
            metadata={"path": path},
        )
        for i in range(samples)
    ]
    return Task(
        dataset=dataset,
        solver=[use_tools(all_tools()), generate()],
        scorer=answer_and_path(),
        epochs=Epochs(epochs, "mean"),
        name="bench_runner",
    )


def mock_model(path: list[str], first_delay: float) -> Model:
    return get_model(
        "mockllm/model", memoize=False, custom_outputs=scripted_agent(path, first_delay)
    )


def timed_eval(
    samples: int,
    epochs: int,
    path: list[str],
    first_delay: float,
    concurrency: int | None,
    log_dir: Path,
) -> tuple[float, EvalLog]:
    task = build_task(samples, epochs, path)
    model = mock_model(path, first_delay)
    limits: dict[str, Any] = {}
    if concurrency is not None:
        limits = {"max_samples": concurrency, "max_connections": concurrency}
    started = time.perf_counter()
    logs = inspect_eval(task, model=model, display="none", log_dir=str(log_dir), **limits)
    elapsed = time.perf_counter() - started
    return elapsed, logs[0]


def verify(log: EvalLog, trials: int) -> dict[str, Any]:
    """Read the log back from disk and check every trial passed; raise if not."""
    if log.status != "success":
        raise SystemExit(f"eval status {log.status}: {log.error}")
    on_disk = read_eval_log(log.location)
    scored = on_disk.samples or []
    values = [s.scores[SCORER_NAME].value for s in scored if s.scores]
    passed = sum(1 for v in values if v == CORRECT)
    if len(scored) != trials or passed != trials:
        raise SystemExit(f"expected {trials} passing trials; log has {len(scored)}, {passed} pass")
    metrics = on_disk.results.scores[0].metrics if on_disk.results else {}
    if metrics["accuracy"].value != 1.0:
        raise SystemExit(f"accuracy {metrics['accuracy'].value}, expected 1.0")
    return {
        "passed": passed,
        "accuracy": metrics["accuracy"].value,
        "logBytes": Path(log.location).stat().st_size,
    }


def import_seconds() -> float:
    """Cold import of inspect_ai's eval machinery in a fresh interpreter, minus bare start-up."""

    def run(code: str) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            best = min(best, time.perf_counter() - started)
        return best

    heavy = "import inspect_ai, inspect_ai.model, inspect_ai.scorer, inspect_ai.solver"
    return run(heavy + "; from inspect_ai.model._providers import mockllm") - run("pass")


def instant(args: argparse.Namespace, log_dir: Path) -> dict[str, Any]:
    n = args.samples * args.epochs
    concurrency = args.max_connections or None
    elapsed, log = timed_eval(args.samples, args.epochs, TOOLS, 0, concurrency, log_dir)
    checked = verify(log, n)
    print(
        f"instant agent, 3 tool calls, log written: {n} trials in {elapsed:.2f} s"
        f" = {elapsed / n * 1000:.2f} ms/trial = {n / elapsed:,.0f} trials/s"
        f" (all {checked['passed']} pass; log {checked['logBytes'] / 1e6:.1f} MB)"
    )
    return {
        "trials": n,
        "samples": args.samples,
        "epochs": args.epochs,
        "concurrency": concurrency,
        "seconds": round(elapsed, 3),
        "msPerTrial": round(elapsed / n * 1000, 3),
        "trialsPerSecond": round(n / elapsed, 1),
        **checked,
    }


def sleepy(args: argparse.Namespace, log_dir: Path) -> dict[str, Any]:
    samples = max(1, args.sleep_trials // args.epochs)
    n = samples * args.epochs
    seconds = args.sleep_ms / 1000
    elapsed, log = timed_eval(
        samples, args.epochs, TOOLS[:1], seconds, args.sleep_concurrency, log_dir
    )
    checked = verify(log, n)
    ideal = n / args.sleep_concurrency * seconds
    print(
        f"{n} trials of a {args.sleep_ms:g} ms agent at concurrency"
        f" {args.sleep_concurrency}: {elapsed:.2f} s; ideal {ideal:.2f} s;"
        f" ratio {elapsed / ideal:.2f}"
    )
    return {
        "trials": n,
        "sleepMs": args.sleep_ms,
        "concurrency": args.sleep_concurrency,
        "seconds": round(elapsed, 3),
        "idealSeconds": round(ideal, 3),
        "ratio": round(elapsed / ideal, 3),
        **checked,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--samples", type=int, default=100, help="instant scenario samples (0 skips it)"
    )
    parser.add_argument("--epochs", type=int, default=10, help="trials per sample")
    parser.add_argument(
        "--max-connections",
        type=int,
        default=8,
        help="instant scenario max_samples = max_connections (0: Inspect's defaults)",
    )
    parser.add_argument("--sleep-trials", type=int, default=1000, help="0 skips the scenario")
    parser.add_argument("--sleep-ms", type=float, default=50)
    parser.add_argument("--sleep-concurrency", type=int, default=100)
    parser.add_argument("--warmup", action="store_true", help="run a 1-sample eval first")
    parser.add_argument("--no-import-time", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from importlib.metadata import version

    results: dict[str, Any] = {
        "inspectAi": version("inspect-ai"),
        "python": sys.version.split()[0],
        "machine": platform.machine(),
    }
    if not args.no_import_time:
        results["importSeconds"] = round(import_seconds(), 3)
        print(f"inspect-ai {results['inspectAi']}: cold import {results['importSeconds']:.2f} s")

    with tempfile.TemporaryDirectory() as tmp:
        if args.warmup:
            timed_eval(1, 1, TOOLS, 0, None, Path(tmp) / "warmup")

        if args.samples > 0:
            results["instant"] = instant(args, Path(tmp) / "i")
        if args.sleep_trials > 0:
            results["sleepy"] = sleepy(args, Path(tmp) / "s")

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results["peakRssMb"] = round(peak_mb, 1)
    print(f"peak RSS {peak_mb:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
