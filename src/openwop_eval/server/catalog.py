"""What the host can run: the configured suites (by ``suiteId@version``) and agents."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..agents import Agent, OpenAIAgentOptions, absolute_spec, resolve_agent
from ..agents.a2a import CredentialVariables
from ..agents.mcp import McpOptions
from ..agents.mcp.upstream import Upstream, UpstreamError, Upstreams, with_upstream_tools
from ..agents.renames import with_renames
from ..core import SuiteError
from ..files.maps import tool_renames
from ..files.suites import LoadedSuite, load_suite, suite_document
from ..judges import resolve_judge
from ..runner import RunOptions
from ..runner.tools import LiveTool, load_live_tools
from ..store import RunRecord
from .agent_config import AgentConfig
from .config import ConfigError, HostConfig
from .deploy import unfailable

log = logging.getLogger("openwop_eval.server")
FIXTURE_IDS = ("conformance-eval-trajectory-gate", "conformance-eval-trajectory-gate-mean")
SUITE_SUFFIXES = (".json", ".yaml", ".yml")


@dataclass(frozen=True)
class CatalogSuite:
    loaded: LoadedSuite
    doc: dict[str, Any]
    source: str

    @property
    def ref(self) -> str:
        return f"{self.loaded.suite.suite_id}@{self.loaded.suite.version}"


@dataclass
class HostAgent:
    agent_id: str
    config: AgentConfig
    agent: Agent
    live: dict[str, LiveTool] | None
    judge: Any
    version: str | None = None
    """The version the configuration declares for the code it runs (None: undeclared)."""

    def options(self, tenant: str) -> RunOptions:
        """How the host runs this agent for ``tenant``."""
        config = self.config
        return RunOptions(
            concurrency=config.concurrency,
            timeout_s=config.timeout_s,
            tenant=tenant,
            fail_fast=config.fail_fast,
        )


class Catalog:
    def __init__(self, config: HostConfig) -> None:
        self.config = config
        self.suites: dict[tuple[str, str], CatalogSuite] = {}
        self.fixtures: list[str] = []
        problems: list[str] = []
        for source in self._suite_files():
            try:
                loaded = load_suite(source)
            except SuiteError as exc:
                problems.append("\n".join(f"{source}: {p}" for p in exc.problems))
                continue
            suite = loaded.suite
            key = (suite.suite_id, suite.version)
            if key in self.suites:
                problems.append(
                    f"{source}: {suite.suite_id}@{suite.version} is also defined in"
                    f" {self.suites[key].source}"
                )
                continue
            self.suites[key] = CatalogSuite(loaded, suite_document(suite), str(source))
        if config.conformance_fixtures:
            self.fixtures = list(FIXTURE_IDS)
        self.agents: dict[str, HostAgent] = {}
        self._upstreams: list[Upstreams] = []
        """The agents' MCP upstreams, connected while the catalog lives (:meth:`aclose`)."""
        for agent_id, agent_config in config.agents.items():
            try:
                self.agents[agent_id] = self._agent(agent_id, agent_config)
            except (ValueError, OSError, ImportError, UpstreamError) as exc:
                problems.append(f"agents.{agent_id}: {exc}")
        problems += self._required_suites()
        if problems:
            self._close_upstreams()
            raise ConfigError("the host configuration does not load:\n" + "\n".join(problems))
        for warning in self._gate_warnings():
            log.warning("%s", warning)

    def _required_suites(self) -> list[str]:
        """``[deployment] required_suites`` names configured agents and served suites."""
        problems = []
        for agent_id, refs in self.config.deployment.required_suites.items():
            if agent_id not in self.config.agents:
                problems.append(f"deployment.required_suites: agent {agent_id} is not configured")
            for ref in refs:
                if self.suite(ref) is None:
                    problems.append(
                        f"deployment.required_suites.{agent_id}: suite {ref} is not served"
                    )
        return problems

    def _gate_warnings(self) -> list[str]:
        """What keeps the deploy gate shut for good, said once at start."""
        policy = self.config.deployment
        if not policy.required_eval:
            return []
        warnings = []
        for suite in self.suites.values():
            why = unfailable(suite.loaded.suite)
            if why is not None:
                warnings.append(f"suite {suite.ref} cannot fail ({why}): no run of it is evidence")
        for agent_id, agent in self.agents.items():
            if not policy.suites_for(agent_id):
                warnings.append(
                    f"agent {agent_id} has no [deployment] required_suites: it cannot be"
                    " promoted into a gated state"
                )
            elif agent.version is None:
                warnings.append(
                    f"agent {agent_id} declares no version: its runs promote no version"
                )
        return warnings

    def _suite_files(self) -> list[Path]:
        files: list[Path] = []
        if self.config.conformance_fixtures:
            base = Path(str(resources.files("openwop_eval.conformance") / "fixtures"))
            files += [base / f"{name}.suite.json" for name in FIXTURE_IDS]
        for entry in self.config.suites:
            path = self.config.path(entry)
            if path.is_dir():
                files += sorted(p for p in path.rglob("*") if p.suffix in SUITE_SUFFIXES)
            else:
                files.append(path)
        return files

    def _agent(self, agent_id: str, config: AgentConfig) -> HostAgent:
        base = Path(self.config.base_dir)
        spec = absolute_spec(config.agent, base)
        live = load_live_tools(str(self.config.path(config.tools))) if config.tools else None
        if config.mcp_upstreams:
            live = self._with_upstreams(config, live)
        openai = self._openai(config, live) if spec.startswith("openai:") else None
        mcp = self._mcp(config, live) if spec.startswith("mcp:") else None
        a2a = _a2a_credentials(config) if spec.startswith("a2a:") else None
        agent = resolve_agent(
            spec,
            agent_id=agent_id,
            threads=config.concurrency,
            openai=openai,
            mcp=mcp,
            a2a=a2a,
        )
        if config.tool_map:
            agent = with_renames(agent, tool_renames(self.config.path(config.tool_map)))
        judge = resolve_judge(absolute_spec(config.judge, base)) if config.judge else None
        return HostAgent(agent_id, config, agent, live, judge, config.declared_version)

    def _openai(self, config: AgentConfig, live: dict[str, LiveTool] | None) -> OpenAIAgentOptions:
        """An ``openai:MODEL`` agent's endpoint and catalog; its key is read from the named
        environment variable, so the configuration file never holds it."""
        api_key = _variable("api_key_env", config.api_key_env) if config.api_key_env else None
        catalog = str(self.config.path(config.tool_catalog)) if config.tool_catalog else None
        return OpenAIAgentOptions(
            config.base_url, api_key, catalog, live_tools=live, api=config.api or "chat"
        )

    def _with_upstreams(
        self, config: AgentConfig, live: dict[str, LiveTool] | None
    ) -> dict[str, LiveTool]:
        """The live tools with those of the entry's MCP upstreams, connected now (a stdio
        command starts in the configuration's directory)."""
        upstreams = Upstreams.open(
            [
                Upstream.named(name, target, self.config.base_dir, where=f"mcp_upstreams.{name}")
                for name, target in config.mcp_upstreams.items()
            ]
        )
        self._upstreams.append(upstreams)
        clash = "a tools live tool and an mcp_upstreams'"
        return with_upstream_tools(live, upstreams, clash=clash)

    def _close_upstreams(self) -> None:
        for upstreams in self._upstreams:
            upstreams.close()
        self._upstreams.clear()

    def _mcp(self, config: AgentConfig, live: dict[str, LiveTool] | None) -> McpOptions:
        """An ``mcp:COMMAND`` agent's transport and catalog."""
        catalog = str(self.config.path(config.tool_catalog)) if config.tool_catalog else None
        return McpOptions(config.mcp_transport, catalog, live)

    def suite(self, ref: str) -> CatalogSuite | None:
        """``suiteId@version``, or ``suiteId`` alone for its highest configured version."""
        suite_id, _, version = ref.partition("@")
        if version:
            return self.suites.get((suite_id, version))
        versions = [v for (s, v) in self.suites if s == suite_id]
        if not versions:
            return None
        latest = max(versions, key=lambda v: tuple(int(x) for x in v.split(".")))
        return self.suites[(suite_id, latest)]

    def known(self, run: RunRecord) -> LoadedSuite | None:
        """The suite parsed here when it is exactly the run's (RunService.reopen): parsing
        it again would cost a large suite's run a good part of its time."""
        suite = self.suites.get((run.suite_id, run.suite_version))
        return suite.loaded if suite is not None and suite.doc == run.suite_doc else None

    @property
    def modes(self) -> list[str]:
        modes = ["golden"]
        if any(a.judge is not None for a in self.agents.values()):
            modes.append("rubric")
        return [*modes, "adversarial", "regression"]

    async def aclose(self) -> None:
        for agent in self.agents.values():
            if agent.judge is not None:
                await agent.judge.aclose()
            close = getattr(agent.agent, "close", None)
            if callable(close):
                close()
        self._close_upstreams()


def _a2a_credentials(config: AgentConfig) -> CredentialVariables | None:
    """The variables an ``a2a:URL`` entry names for its credentials (each checked set now),
    or None: the standard ones, as ``run`` reads them."""
    if not (config.api_key_env or config.headers_env):
        return None
    for key, variable in (("api_key_env", config.api_key_env), ("headers_env", config.headers_env)):
        if variable is not None:
            _variable(key, variable)
    return CredentialVariables(config.api_key_env, config.headers_env)


def _variable(key: str, variable: str) -> str:
    """The value of the environment variable an entry's ``key`` names; unset or blank is a
    configuration problem (the file names variables, never the secrets in them)."""
    value = os.environ.get(variable, "").strip()
    if not value:
        raise ValueError(f"{key}: ${variable} is not set")
    return value
