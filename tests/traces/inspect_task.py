"""A tiny Inspect task that plays the scenario on Inspect's ``mockllm`` model and writes its
log: ``python -m tests.traces.inspect_task LOG_DIR`` prints the log's path.

It runs in a child process: Inspect sets up process-wide logging, trace files under the
user's data directory and exit hooks, which must not outlive it in the test process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import inspect_ai
from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import Generate, TaskState, generate, solver, use_tools
from inspect_ai.tool import Tool, tool

from tests.traces.scenario import TRIALS

RESULTS = {
    (c.tool, json.dumps(c.args, sort_keys=True)): c.result
    for trials in TRIALS.values()
    for t in trials
    for c in t.calls
}


def answer(tool: str, **args: Any) -> str:
    """What the scenario says the tool answered these arguments."""
    return json.dumps(RESULTS[(tool, json.dumps(args, sort_keys=True))])


@tool
def crm_lookup() -> Tool:
    async def execute(orderId: str) -> str:  # noqa: N803 - the suite's argument name
        """Look an order up.

        Args:
            orderId: The order.
        """
        return answer("crm_lookup", orderId=orderId)

    return execute


@tool
def payments_refund() -> Tool:
    async def execute(orderId: str, amountUsd: int) -> str:  # noqa: N803
        """Refund an order.

        Args:
            orderId: The order.
            amountUsd: How much.
        """
        return answer("payments_refund", orderId=orderId, amountUsd=amountUsd)

    return execute


@tool
def accounts_delete() -> Tool:
    async def execute(accountId: str) -> str:  # noqa: N803
        """Delete an account.

        Args:
            accountId: The account.
        """
        return answer("accounts_delete", accountId=accountId)

    return execute


@solver
def tag_epoch() -> Any:
    """Tell the mock model which epoch this is, so its script does not hang on scheduling."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.messages.insert(0, ChatMessageSystem(content=f"epoch {state.epoch}"))
        return state

    return solve


def scripted_model(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
    """Plays the scenario: the trial from the system and user messages, the step from the
    tool results so far."""
    epoch = int(messages[0].text.removeprefix("epoch "))
    task = next(m.text for m in messages if m.role == "user")
    trial = TRIALS[task][epoch - 1]
    done = sum(1 for m in messages if m.role == "tool")
    if done < len(trial.calls):
        call = trial.calls[done]
        output = ModelOutput.for_tool_call("mockllm/model", call.tool, call.args)
    else:
        output = ModelOutput.from_content("mockllm/model", trial.output)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tokenizer
    return output


def write_log(log_dir: Path) -> Path:
    task = Task(
        dataset=[Sample(id=task, input=task, target="") for task in TRIALS],
        solver=[
            tag_epoch(),
            use_tools(crm_lookup(), payments_refund(), accounts_delete()),
            generate(),
        ],
        scorer=includes(),
        epochs=2,
    )
    model = get_model("mockllm/model", custom_outputs=scripted_model)
    (log,) = inspect_ai.eval(task, model=model, log_dir=str(log_dir), display="none")
    if log.status != "success":
        raise SystemExit(f"the Inspect run failed: {log.error}")
    return Path(log.location)


if __name__ == "__main__":
    print(write_log(Path(sys.argv[1])))
