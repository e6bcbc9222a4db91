"""One ``[agents."ID"]`` entry of the host's configuration: the agent form it runs and what
that form needs (config.py shows the file; docs/host.md every key)."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..agents.mcp.upstream import Upstream
from .inputs import MAX_VERSION_CHARS, is_text


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str = Field(min_length=1)
    judge: str | None = None
    tools: str | None = None
    concurrency: int = Field(8, ge=1)
    timeout_s: float = Field(300, gt=0)
    fail_fast: bool = False
    """Stop a run of this agent once it can no longer pass (its unplayed trials not run)."""
    label: str | None = None
    model_class: Literal[
        "reasoning", "writing", "coding", "research", "classification", "general"
    ] = "general"
    description: str | None = None
    base_url: str | None = None
    """``openai:MODEL`` only: the endpoint (default ``$OPENAI_BASE_URL``, else OpenAI)."""
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The variable of an ``openai:MODEL``'s API key, or an ``a2a:URL``'s bearer token."""
    headers_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """``a2a:URL`` only: the variable of its JSON headers (not ``$OPENWOP_EVAL_A2A_HEADERS``)."""
    api: Literal["chat", "responses"] | None = None
    """``openai:MODEL`` only: the API it speaks (default ``chat``; ``run --agent-api``)."""
    tool_catalog: str | None = None
    """``openai:MODEL`` and ``mcp:COMMAND``: the tool catalog file."""
    tool_map: str | None = None
    """A map file whose ``tools`` rename the agent's tools to the suites' (``run --tool-map``)."""
    mcp_upstreams: dict[str, str] = Field(default_factory=dict, max_length=64)
    """Real MCP servers answering a tool namespace's calls as live tools, recorded as
    ``run --mcp-upstream`` records them: ``{crm = "https://…/mcp", files = "stdio:CMD"}``."""
    mcp_transport: Literal["http", "stdio"] = "http"
    """``mcp:COMMAND`` only: its config names each server by URL, or by a command."""
    version: str | None = None
    """The version of the agent this entry runs: stored with every eval run of it, and the
    only version such a run can promote."""
    version_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Instead of ``version``: the environment variable that holds it (set at deploy)."""

    @field_validator("mcp_upstreams")
    @classmethod
    def _upstreams_serve(cls, value: dict[str, str]) -> dict[str, str]:
        for name, target in value.items():
            Upstream.named(name, target, where=f"{name} = {target!r}")
        return value

    @field_validator("version")
    @classmethod
    def _version_text(cls, value: str | None) -> str | None:
        if value is not None and not is_text(value, MAX_VERSION_CHARS):
            raise ValueError(f"version must be 1 to {MAX_VERSION_CHARS} printable characters")
        return value

    @model_validator(mode="after")
    def _one_version(self) -> AgentConfig:
        if self.version is not None and self.version_env is not None:
            raise ValueError("give at most one of version and version_env")
        return self

    @property
    def declared_version(self) -> str | None:
        """The version this entry declares (``version_env`` read now); None: none."""
        if self.version_env is None:
            return self.version
        value = os.environ.get(self.version_env, "").strip()
        if not is_text(value, MAX_VERSION_CHARS):
            raise ValueError(
                f"version_env: ${self.version_env} must hold 1 to {MAX_VERSION_CHARS}"
                " printable characters"
            )
        return value

    @model_validator(mode="after")
    def _openai_only(self) -> AgentConfig:
        given = [k for k in ("base_url", "api") if getattr(self, k)]
        if self.tool_catalog and not self.agent.startswith("mcp:"):
            given.append("tool_catalog")
        if given and not self.agent.startswith("openai:"):
            raise ValueError(f"{', '.join(given)}: for an openai:MODEL agent only")
        if self.api_key_env and not self.agent.startswith(("openai:", "a2a:")):
            raise ValueError("api_key_env: for an openai:MODEL or a2a:URL agent only")
        if self.headers_env and not self.agent.startswith("a2a:"):
            raise ValueError("headers_env: for an a2a:URL agent only")
        if self.mcp_transport != "http" and not self.agent.startswith("mcp:"):
            raise ValueError("mcp_transport: for an mcp:COMMAND agent only")
        return self
