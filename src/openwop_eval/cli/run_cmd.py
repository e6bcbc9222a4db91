"""``openwop-eval run``: run a suite against an agent and exit with the gate."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Literal

import click
from rich.console import Console
from rich.markup import escape

from ..agents import (
    AgentSpecError,
    absolute_spec,
)
from ..agents.a2a import tool_path_warning
from ..agents.mcp import TRANSPORTS
from ..agents.mcp.upstream import UpstreamError
from ..core import SuiteError
from ..files.suites import load_suite
from ..judges import resolve_judge
from ..reports.model import result_report
from ..reports.terminal import print_modes, print_problems, print_run_table
from ..runner import Recording, merge_recordings
from ..runner.api import run_spec_async
from ..runner.events import read_jsonl
from ..runner.fixtures import merge_listings
from ..runner.ray_executor import RayExecutor
from ..runner.spec import RunOptions, RunSpec
from ..runner.tools import load_live_tools
from .codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_INVALID, EXIT_OK
from .modes import ModeArgs, checked, mode_options, with_terms
from .otlp_out import export_traces, otlp_option
from .progress import RunProgress
from .run_agent import AgentEndpoint, agent_of, renamed, with_upstreams
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
@click.option("--agent-api", type=click.Choice(["chat", "responses"]), help="The API it speaks.")
@click.option(
    "--tool-catalog",
    type=click.Path(dir_okay=False),
    help="For openai:MODEL: tool definitions, prices and system prompt (JSON or YAML); for"
    " mcp:COMMAND: what its servers list of each tool.",
)
@click.option(
    "--tool-map",
    type=click.Path(dir_okay=False),
    help="Rename the agent's tools to the suite's: a map file's tools"
    ' ({"tools": {"search_flights": "flights:search"}}, as grade --map reads).',
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
    "--mcp-transport",
    type=click.Choice(TRANSPORTS),
    default="http",
    show_default=True,
    help="For mcp:COMMAND: its config names each server by URL, or by a command (stdio).",
)
@click.option(
    "--mcp-upstream",
    "mcp_upstreams",
    multiple=True,
    metavar="NAME=URL|NAME=stdio:COMMAND",
    help="A real MCP server answers the tools of namespace NAME as live tools (recorded, with"
    " its tool list, for --fixtures-from); repeatable.",
)
@click.option(
    "--shard",
    metavar="I/N",
    help="Run only shard I of N of the (task, trial) pairs; merge the shards' --events files"
    " with `openwop-eval merge` for the verdict.",
)
@click.option(
    "--fail-fast",
    is_flag=True,
    help="Stop once no outcome of the trials still to come can make the run pass (the RFC"
    " rule and the gate policy, exactly); the trials not played count as not run.",
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
@otlp_option
@mode_options
def run(**given: Any) -> None:
    """Run SUITE against an agent: every task, every trial; exit 0 if the suite passed,
    1 if it did not, 2 on invalid input, 3 if the run could not complete."""
    args = RunArgs(**given)
    out_console, err = consoles()
    _check_usage(err, args)
    store = open_store(err, args.store_url)
    with ExitStack() as stack:
        spec = checked(err, _spec(err, args, stack), store)
        if warned := tool_path_warning(spec.agent, spec.suite):  # said before the run starts
            err.print(f"[yellow]warning:[/yellow] {escape(warned)}", highlight=False)
        sink = open_output(stack, args.events, "w") if args.events else None
        progress = stack.enter_context(RunProgress(err, enabled=not args.quiet and err.is_terminal))
        coro = run_spec_async(spec, store=store, observer=progress, events=sink)
        result = run_to_end(err, progress, closing_judge(coro, spec.judge))
    made = result_report(result, trials=spec.keep_trials)
    write_outputs(made, args.out, args.report, args.junit, args.markdown_path, args.html_path)
    print_run_table(out_console, made)
    print_modes(out_console, made)
    export_traces(err, args.otlp_endpoint, store, result.run_id)
    if result.budget_exhausted:
        err.print("[yellow]maxCostUsd was exceeded: trials after that point did not run[/yellow]")
    if result.skipped:
        err.print(
            f"[yellow]--fail-fast: {result.skipped} trial(s) were not run: no outcome of them"
            " could make the run pass[/yellow]"
        )
    unreachable = result.unreachable()
    for endpoint, count in unreachable.items():
        err.print(
            f"[red]the run could not complete: {count} trial(s) could not reach {escape(endpoint)}"
            " after the retries (infrastructure, not the agent); the gate stays shut[/red]",
            highlight=False,
        )
    simulator = sum(t.user_simulator for t in result.outline.tasks)
    if simulator:
        err.print(
            f"[red]the run could not complete: {simulator} conversation(s) ended because the"
            " simulated user failed (the simulator, not the agent); the gate stays shut[/red]",
            highlight=False,
        )
    if unreachable or simulator:
        sys.exit(EXIT_INCOMPLETE)
    if args.shard is not None:  # its summary counts the other shards' trials as not run
        err.print(f"shard {args.shard} completed; the verdict is the merge's (openwop-eval merge)")
        sys.exit(EXIT_OK)
    sys.exit(EXIT_OK if result.gate.passed else EXIT_FAILED)


@dataclass(frozen=True)
class RunArgs(ModeArgs):
    """The options of ``run``, as given."""

    suite: str | None = None
    agent_spec: str | None = None
    agent_base_url: str | None = None
    agent_api_key: str | None = None
    agent_api: Literal["chat", "responses"] | None = None
    tool_catalog: str | None = None
    tool_map: str | None = None
    prices: tuple[str, ...] = ()
    out: str | None = None
    events: str | None = None
    report: str | None = None
    junit: str | None = None
    markdown_path: str | None = None
    html_path: str | None = None
    concurrency: int = 8
    timeout_s: float = 300
    judge_spec: str | None = None
    judge_base_url: str | None = None
    judge_api_key: str | None = None
    tools_spec: str | None = None
    fixtures_from: tuple[str, ...] = ()
    live_shadow: bool = False
    mcp_transport: str = "http"
    mcp_upstreams: tuple[str, ...] = ()
    shard: str | None = None
    fail_fast: bool = False
    executor: str = "local"
    ray_address: str | None = None
    store_url: str | None = None
    resume_id: str | None = None
    agent_id: str | None = None
    quiet: bool = False
    otlp_endpoint: str | None = None

    @property
    def options(self) -> RunOptions | None:
        """The options of a new run, or of a resumed one given its agent again (else it
        keeps its own)."""
        if self.resume_id is not None and self.agent_spec is None:
            return None
        return RunOptions(
            self.concurrency,
            self.timeout_s,
            live_shadow=self.live_shadow,
            shard=self.shard,
            fail_fast=self.fail_fast,
        )

    @property
    def endpoint(self) -> AgentEndpoint:
        return AgentEndpoint(
            self.agent_base_url, self.agent_api_key, self.tool_catalog, self.prices, self.agent_api
        )


def _spec(err: Console, args: RunArgs, stack: ExitStack) -> RunSpec:
    """The run the options ask for; what cannot be read or resolved is a usage error. The
    MCP upstreams it connects to are closed with ``stack``."""
    try:
        loaded = load_suite(args.suite) if args.suite else None
        live = load_live_tools(args.tools_spec) if args.tools_spec else None
        live = with_upstreams(live, args.mcp_upstreams, stack)
        agent = renamed(agent_of(args, live), args.tool_map)
        judge = resolve_judge(
            args.judge_spec, base_url=args.judge_base_url, api_key=args.judge_api_key
        )
        tasks = [t.task_id for t in loaded.suite.tasks] if loaded else None
        recording, listing = _recording(args.fixtures_from, tasks)
    except SuiteError as exc:
        print_problems(err, exc.source or str(args.suite), exc.problems)
        sys.exit(EXIT_INVALID)
    except (AgentSpecError, UpstreamError, ValueError, OSError, ImportError) as exc:
        usage(err, str(exc))
    spec = RunSpec(
        loaded,
        agent,
        absolute_spec(args.agent_spec or ""),
        args.options,
        recording,
        judge,
        live,
        listing,
        executor=RayExecutor(args.ray_address) if args.executor == "ray" else None,
        resume=args.resume_id,
        keep_trials=lists_trials(args.report, args.junit, args.html_path),  # graded once, as run
    )
    return with_terms(err, spec, args)


def _check_usage(err: Console, args: RunArgs) -> None:
    """Which options go together (what they ask for is the spec's check)."""
    resuming = args.resume_id is not None
    if (args.suite is None) != resuming:
        usage(err, "give a SUITE to run, or --resume RUN_ID (not both)")
    if not resuming and args.agent_spec is None:
        usage(err, "--agent is required, e.g. --agent my_agent:answer or scripted:agent.json")
    if resuming and (args.fixtures_from or args.live_shadow):
        usage(
            err,
            "a resumed run serves the fixtures it was started with;"
            " --fixtures-from and --live-shadow cannot be given with --resume",
        )
    if args.shard is not None and resuming:
        usage(err, "a resumed run keeps its shard; --shard cannot be given with --resume")
    if args.shard is not None and args.events is None:
        usage(err, "a shard's --events file is what `openwop-eval merge` merges: give --events")
    if args.mcp_upstreams and args.executor == "ray":
        usage(
            err, "--mcp-upstream serves from this process: it cannot be given with --executor ray"
        )
    if args.ray_address is not None and args.executor != "ray":
        usage(err, "--ray-address is the cluster of --executor ray: give --executor ray")


def _recording(
    specs: tuple[str, ...], tasks: list[str] | None
) -> tuple[Recording | None, dict[str, Any]]:
    """``--fixtures-from [TASK=]EVENTS``, each for one task or for every task of the suite,
    and what the recorded runs' MCP servers listed."""
    if not specs:
        return None, {}
    parts = []
    for spec in specs:
        task, sep, path = spec.rpartition("=")
        parts.append((read_jsonl(path if sep else spec), [task] if sep else tasks))
    return merge_recordings(parts), merge_listings(docs for docs, _ in parts)
