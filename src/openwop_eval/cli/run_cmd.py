"""``openwop-eval run``: run a suite against an agent and exit with the gate."""

from __future__ import annotations

import sys
from collections.abc import Coroutine
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console

from ..agents import (
    Agent,
    AgentSpecError,
    OpenAIAgentOptions,
    absolute_spec,
    parse_price,
    resolve_agent,
)
from ..core import SuiteError
from ..core.rubric import Judge
from ..judges import resolve_judge
from ..log.shards import Shard
from ..runner import Recording, merge_recordings
from ..runner.api import resume_async, run_suite_async
from ..runner.events import read_jsonl
from ..runner.ray_executor import RayExecutor
from ..runner.report_model import result_report
from ..runner.result import RunResult
from ..runner.run import RunOptions, TrialExecutor
from ..runner.tools import LiveTool, load_live_tools
from ..suitefile import LoadedSuite, load_suite
from ..terminal import print_modes, print_problems, print_run_table
from .codes import EXIT_FAILED, EXIT_INVALID, EXIT_OK
from .modes import mode_options, run_terms, safety_policy
from .progress import RunProgress
from .shell import (
    closing_judge,
    consoles,
    judge_options,
    lists_trials,
    open_output,
    open_store,
    output_options,
    run_to_end,
    usage,
    write_outputs,
)


@click.command()
@click.argument("suite", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--agent",
    "agent_spec",
    metavar="AGENT",
    help="module:function, file.py:function, scripted:PATH, cmd:COMMAND or openai:MODEL.",
)
@click.option(
    "--agent-base-url",
    metavar="URL",
    help="Base URL of the OpenAI-compatible endpoint of an openai:MODEL agent"
    " (default: $OPENAI_BASE_URL).",
)
@click.option("--agent-api-key", metavar="KEY", help="Its API key (default: $OPENAI_API_KEY).")
@click.option(
    "--tool-catalog",
    type=click.Path(dir_okay=False),
    help="For openai:MODEL: tool definitions, prices and system prompt (JSON or YAML).",
)
@click.option(
    "--price",
    "prices",
    multiple=True,
    metavar="MODEL=IN/OUT",
    help="For openai:MODEL: USD per million input/output tokens, for costUsd; repeatable.",
)
@output_options
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Trials that may run at once.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=300,
    show_default=True,
    help="Seconds a trial may take before it errors.",
)
@judge_options
@click.option(
    "--tools",
    "tools_spec",
    metavar="MODULE",
    help="Live tools: a module or .py file defining TOOLS = {name: callable}.",
)
@click.option(
    "--fixtures-from",
    "fixtures_from",
    multiple=True,
    metavar="[TASK=]EVENTS",
    help="Replay tool responses recorded in an earlier run's event log; repeatable.",
)
@click.option("--live-shadow", is_flag=True, help="Ignore fixtures and use live tools.")
@click.option(
    "--shard",
    metavar="I/N",
    help="Run only shard I of N of the (task, trial) pairs; merge the shards' --events files"
    " with `openwop-eval merge` for the verdict.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where trials play: in this process, or each as a Ray task (openwop-eval[ray]).",
)
@click.option(
    "--ray-address",
    metavar="ADDRESS",
    help="The Ray cluster of --executor ray (default: $RAY_ADDRESS, else a local Ray).",
)
@click.option("--store", "store_url", metavar="URL", help="Database URL of the run store.")
@click.option("--resume", "resume_id", metavar="RUN_ID", help="Run only what RUN_ID is missing.")
@click.option("--agent-id", help="The agentId recorded in the events.")
@click.option("--quiet", is_flag=True, help="No progress display.")
@mode_options
def run(
    suite: str | None,
    agent_spec: str | None,
    agent_base_url: str | None,
    agent_api_key: str | None,
    tool_catalog: str | None,
    prices: tuple[str, ...],
    out: str | None,
    events: str | None,
    report: str | None,
    junit: str | None,
    markdown_path: str | None,
    html_path: str | None,
    concurrency: int,
    timeout_s: float,
    judge_spec: str | None,
    judge_base_url: str | None,
    judge_api_key: str | None,
    tools_spec: str | None,
    fixtures_from: tuple[str, ...],
    live_shadow: bool,
    shard: str | None,
    executor: str,
    ray_address: str | None,
    store_url: str | None,
    resume_id: str | None,
    agent_id: str | None,
    quiet: bool,
    baseline: str | None,
    canaries: tuple[str, ...],
    canaries_file: str | None,
    no_secret_scan: bool,
    severities: tuple[str, ...],
    fail_on_severity: str | None,
) -> None:
    """Run SUITE against an agent: every task, every trial; exit 0 if the suite passed,
    1 if it did not, 2 on invalid input, 3 if the run could not complete."""
    out_console, err = consoles()
    _check_usage(err, suite, agent_spec, resume_id, fixtures_from, live_shadow)
    _check_shard(err, shard, resume_id, events)
    if ray_address is not None and executor != "ray":
        usage(err, "--ray-address is the cluster of --executor ray: give --executor ray")
    player: TrialExecutor | None = RayExecutor(ray_address) if executor == "ray" else None
    options = RunOptions(
        concurrency=concurrency,
        timeout_s=timeout_s,
        live_shadow=live_shadow,
        shard=shard,
        keep_trials=lists_trials(report, junit, html_path),  # their trials: graded once
    )
    store = open_store(err, store_url)
    endpoint = _AgentEndpoint(agent_base_url, agent_api_key, tool_catalog, prices)
    try:
        loaded = load_suite(suite) if suite else None
        live = load_live_tools(tools_spec) if tools_spec else None
        wiring = _Wiring(
            loaded,
            _agent(agent_spec, agent_id, concurrency, live, endpoint),
            absolute_spec(agent_spec or ""),
            resolve_judge(judge_spec, base_url=judge_base_url, api_key=judge_api_key),
            live,
        )
        recording = _recording(fixtures_from, wiring.task_ids)
    except SuiteError as exc:
        print_problems(err, exc.source or str(suite), exc.problems)
        sys.exit(EXIT_INVALID)
    except (AgentSpecError, ValueError, OSError, ImportError) as exc:
        usage(err, str(exc))
    modal: dict[str, Any] = {}
    if loaded is not None:
        modal = {
            "terms": run_terms(err, store, loaded.suite, baseline, fail_on_severity),
            "safety": safety_policy(
                err, loaded.suite, canaries, canaries_file, no_secret_scan, severities
            ),
        }
    elif baseline or canaries or canaries_file or no_secret_scan or severities or fail_on_severity:
        usage(err, "a resumed run keeps the baseline and detectors it was started with")
    with ExitStack() as stack:
        sink = open_output(stack, events, "w") if events else None
        progress = stack.enter_context(RunProgress(err, enabled=not quiet and err.is_terminal))
        common: dict[str, Any] = {
            "store": store,
            "observer": progress,
            "events": sink,
            "executor": player,
        }
        coro = _start(wiring, resume_id, options, recording, common, modal)
        result = run_to_end(err, progress, closing_judge(coro, wiring.judge))
    made = result_report(result, trials=options.keep_trials)
    write_outputs(made, out, report, junit, markdown_path, html_path)
    print_run_table(out_console, made)
    print_modes(out_console, made)
    if result.budget_exhausted:
        err.print("[yellow]maxCostUsd was exceeded: trials after that point did not run[/yellow]")
    if shard is not None:  # its summary counts the other shards' trials as not run
        err.print(f"shard {shard} completed; the verdict is the merge's (openwop-eval merge)")
        sys.exit(EXIT_OK)
    sys.exit(EXIT_OK if result.summary["passed"] else EXIT_FAILED)


@dataclass(frozen=True)
class _Wiring:
    """What the options resolve to, before anything runs."""

    loaded: LoadedSuite | None
    agent: Agent | None
    agent_spec: str
    judge: Judge | None
    live: dict[str, LiveTool] | None

    @property
    def task_ids(self) -> list[str] | None:
        return [t.task_id for t in self.loaded.suite.tasks] if self.loaded else None


@dataclass(frozen=True)
class _AgentEndpoint:
    """The ``run`` flags of an ``openai:MODEL`` agent."""

    base_url: str | None
    api_key: str | None
    tool_catalog: str | None
    prices: tuple[str, ...]

    @property
    def given(self) -> bool:
        return any((self.base_url, self.api_key, self.tool_catalog, self.prices))

    def options(self, live: dict[str, LiveTool] | None) -> OpenAIAgentOptions:
        prices = dict(parse_price(p) for p in self.prices)
        return OpenAIAgentOptions(self.base_url, self.api_key, self.tool_catalog, prices, live)


def _agent(
    spec: str | None,
    agent_id: str | None,
    threads: int,
    live: dict[str, LiveTool] | None,
    endpoint: _AgentEndpoint,
) -> Agent | None:
    """The ``--agent``, if given; the endpoint flags go to an ``openai:MODEL`` agent only."""
    if spec is None:
        if endpoint.given:
            raise AgentSpecError(
                "--agent-base-url, --agent-api-key, --tool-catalog and --price need"
                " --agent openai:MODEL"
            )
        return None
    openai = endpoint.options(live) if spec.startswith("openai:") or endpoint.given else None
    return resolve_agent(spec, agent_id=agent_id, threads=threads, openai=openai)


def _start(
    wiring: _Wiring,
    resume_id: str | None,
    options: RunOptions,
    recording: Recording | None,
    common: dict[str, Any],
    modal: dict[str, Any],
) -> Coroutine[Any, Any, RunResult]:
    common = {**common, "judge": wiring.judge, "live_tools": wiring.live}
    if resume_id is not None:  # the agent and options only when given again
        given = options if wiring.agent else None
        return resume_async(resume_id, agent=wiring.agent, options=given, **common)
    assert wiring.loaded is not None
    assert wiring.agent is not None
    return run_suite_async(
        wiring.loaded,
        wiring.agent,
        options=options,
        agent_spec=wiring.agent_spec,
        recording=recording,
        **common,
        **modal,
    )


def _check_usage(
    err: Console,
    suite: str | None,
    agent_spec: str | None,
    resume_id: str | None,
    fixtures_from: tuple[str, ...],
    live_shadow: bool,
) -> None:
    if (suite is None) == (resume_id is None):
        usage(err, "give a SUITE to run, or --resume RUN_ID (not both)")
    if resume_id is None and agent_spec is None:
        usage(err, "--agent is required, e.g. --agent my_agent:answer or scripted:agent.json")
    if resume_id is not None and (fixtures_from or live_shadow):
        usage(
            err,
            "a resumed run serves the fixtures it was started with;"
            " --fixtures-from and --live-shadow cannot be given with --resume",
        )


def _check_shard(
    err: Console, shard: str | None, resume_id: str | None, events: str | None
) -> None:
    if shard is None:
        return
    if resume_id is not None:
        usage(err, "a resumed run keeps its shard; --shard cannot be given with --resume")
    if events is None:
        usage(err, "a shard's --events file is what `openwop-eval merge` merges: give --events")
    try:
        Shard.parse(shard)
    except ValueError as exc:
        usage(err, f"--shard: {exc}")


def _recording(specs: tuple[str, ...], tasks: list[str] | None) -> Recording | None:
    """``--fixtures-from [TASK=]EVENTS``, each for one task or for every task of the suite."""
    if not specs:
        return None
    parts = []
    for spec in specs:
        task, sep, path = spec.rpartition("=")
        parts.append((read_jsonl(path if sep else spec), [task] if sep else tasks))
    return merge_recordings(parts)
