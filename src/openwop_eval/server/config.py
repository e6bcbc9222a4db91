"""The host's configuration: one TOML file (or the documented development default).

    database = "sqlite:///./host.sqlite"        # or postgresql://user@host/db
    suites = ["suites/"]                        # files or directories of suites
    conformance_fixtures = true                 # also serve the RFC 0246 fixtures
    run_workers = 2                             # processes runs play in (default 1; 0: here)
    executor = "ray"                            # trials as Ray tasks (default: "local")
    ray_address = "ray://head:10001"            # default: $RAY_ADDRESS, else a local Ray

    [agents."acme.support-resolver"]            # the agents the host may run, by agentId
    agent = "agents/resolver.py:answer"         # any runner agent form
    version = "1.4.2"                           # or version_env = "VARIABLE"
    judge = "scripted:judges/resolver.json"     # for rubric tasks (optional)
    tools = "agents/tools.py"                   # live tools (optional)
    tool_map = "agents/tool-map.yaml"           # its tools' names → the suites' (optional)
    concurrency = 8
    timeout_s = 300

    [agents."acme.support-model"]               # a model behind an OpenAI-compatible API
    agent = "openai:gpt-4o-mini"
    base_url = "http://localhost:11434/v1"      # default: $OPENAI_BASE_URL, else OpenAI
    api_key_env = "SUPPORT_MODEL_KEY"           # the variable holding the key, never the key
    tool_catalog = "agents/tools.yaml"          # tool definitions, prices, system prompt
    api = "responses"                           # the Responses API (default: "chat")

    [agents."acme.remote-planner"]              # a deployed agent over A2A (docs/a2a.md)
    agent = "a2a:https://planner.example.com"   # default: $OPENWOP_EVAL_A2A_TOKEN, _HEADERS
    api_key_env = "PLANNER_TOKEN"               # its bearer token; headers_env: JSON headers

    [deployment]                                # the gate on promotions
    required_eval = true
    gated_states = ["active"]
    required_pass_score = 0.9                   # optional; never admits a run that did not pass
    require_no_regression = true                # nor one that regressed against production
    regression_tolerance = 0.02
    required_suites = { "acme.support-resolver" = ["acme.support.evals.refunds"] }
    evidence_key_env = "EVAL_EVIDENCE_KEY"      # the key runs are sealed with (evidence.py)

    [adversarial]                               # the detectors of adversarial runs
    canaries_env = "EVAL_CANARIES"              # planted strings, one per line, never in the file
    scan_secrets = true
    fail_on_severity = "high"                   # optional: such a finding fails its task
    severities = { "forbidden-tool" = "critical" }

    [users]                                     # conversation tasks' simulated users
    base_url = "http://localhost:11434/v1"      # default: $OPENWOP_EVAL_USER_BASE_URL, …
    api_key_env = "USER_SIMULATOR_KEY"

    [telemetry]                                 # the runs it ends, to OpenTelemetry (exports.py)
    otlp_endpoint = "http://collector:4318"     # default: $OTEL_EXPORTER_OTLP_ENDPOINT

    [[api_keys]]
    key_sha256 = "…"                            # or key = "…" (development only)
    name = "deploy-pipeline"
    tenant = "acme"
    scopes = ["runs:create", "runs:read", "deploy:promote"]

    [signing]                                   # the Ed25519 key discovery publishes
    key_id = "acme-host-2026"
    key_file = "keys/host.pem"                  # or key_env = "VARIABLE" (signing_config.py)

Relative paths are read relative to the configuration file.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..core import OpenwopEvalError
from ..core.safety import DEFAULT_SEVERITIES, SafetyPolicy
from ..users import UserPlayers
from .agent_config import AgentConfig as AgentConfig
from .exports import TelemetryConfig
from .inputs import MAX_AGENT_ID_CHARS, is_agent_id
from .signing_config import SigningConfig, read_keys

ALL_SCOPES = (
    "runs:create",
    "runs:read",
    "runs:cancel",
    "agents:read",
    "deploy:promote",
    "deploy:pause",
    "deploy:rollback",
)
DEV_KEY = "dev-key"


class ConfigError(OpenwopEvalError, ValueError):
    """The host configuration is invalid; the message lists every problem."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DeploymentPolicy(_Strict):
    required_eval: bool = True
    gated_states: tuple[Literal["test", "staged", "active"], ...] = ("active",)
    required_pass_score: float | None = Field(None, ge=0, le=1)
    channels: tuple[str, ...] = ("stable",)
    require_no_regression: bool = False
    """A gated promotion must not regress against the active version's eval run."""
    regression_tolerance: float = Field(0.0, ge=0, le=1)
    """How far the mean gated score may drop before that is a regression."""
    require_all_tasks: bool = False
    """A gated promotion needs every task of the run passed, whatever its suite's policy."""
    unknown_cost: Literal["fail", "zero"] | None = None
    """In place of the suite's ``unknownCost`` when deciding a promotion's gate policy."""
    required_suites: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Per agent id, the suites (``suiteId`` or ``suiteId@version``) whose runs are evidence
    for its promotions; each needs a passed run of the version promoted. An agent with
    none listed cannot be promoted into a gated state."""
    evidence_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The variable holding the key the host seals its completed runs with (default: a
    key the host keeps in its store)."""

    def suites_for(self, agent_id: str) -> tuple[str, ...]:
        return self.required_suites.get(agent_id, ())


class UsersConfig(_Strict):
    """Where conversation tasks' simulated users are asked (``[users]``): by default the
    environment's endpoint (``OPENWOP_EVAL_USER_*``, then the judges')."""

    base_url: str | None = Field(None, min_length=1)
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The environment variable that holds the endpoint's API key."""

    def players(self) -> UserPlayers:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return UserPlayers(base_url=self.base_url, api_key=key or None)


class AdversarialPolicy(_Strict):
    canaries: tuple[str, ...] = ()
    """Planted strings (prefer ``canaries_env``: the file then holds no secret)."""
    canaries_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    scan_secrets: bool = True
    forbidden_tools: bool = True
    judge: bool = True
    fail_on_severity: Literal["low", "medium", "high", "critical"] | None = None
    severities: dict[str, Literal["low", "medium", "high", "critical"]] = Field(
        default_factory=dict
    )

    def policy(self) -> SafetyPolicy:
        planted = list(self.canaries)
        if self.canaries_env:
            planted += os.environ.get(self.canaries_env, "").splitlines()
        return SafetyPolicy(
            canaries=tuple(c.strip() for c in planted if c.strip()),
            scan_secrets=self.scan_secrets,
            forbidden_tools=self.forbidden_tools,
            judge=self.judge,
            severities={**DEFAULT_SEVERITIES, **self.severities},
        )


class ApiKey(_Strict):
    name: str = Field(min_length=1)
    tenant: str = Field(pattern=r"^[A-Za-z0-9._-]{1,128}$")
    scopes: tuple[str, ...] = ALL_SCOPES
    key: str | None = Field(None, min_length=6)
    key_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")

    @model_validator(mode="after")
    def _one_secret(self) -> ApiKey:
        if (self.key is None) == (self.key_sha256 is None):
            raise ValueError("give exactly one of key or key_sha256")
        unknown = set(self.scopes) - set(ALL_SCOPES)
        if unknown:
            raise ValueError(f"unknown scopes {sorted(unknown)}; known: {', '.join(ALL_SCOPES)}")
        return self

    @property
    def digest(self) -> str:
        return self.key_sha256 or hashlib.sha256((self.key or "").encode()).hexdigest()


class Replicas(_Strict):
    """Several hosts on one PostgreSQL database (docs/scaling.md#host-replicas)."""

    id: str | None = Field(None, min_length=1, max_length=200)
    """This replica's id, unique among them (default: host name and port)."""
    lease_seconds: float = Field(15, ge=1, le=3600)
    """How long a run stays a dead replica's before another takes it over."""
    heartbeat_seconds: float = Field(3, gt=0)
    """How often a replica renews its leases and looks for runs to take over."""

    @model_validator(mode="after")
    def _beats_inside_a_lease(self) -> Replicas:
        if self.heartbeat_seconds * 3 > self.lease_seconds:
            raise ValueError("heartbeat_seconds must be at most a third of lease_seconds")
        return self


class Limits(_Strict):
    max_body_bytes: int = Field(1_048_576, ge=1024)
    max_tasks_per_suite: int = Field(1000, ge=1)
    max_page_size: int = Field(100, ge=1, le=1000)
    max_poll_wait_s: float = Field(60, gt=0, le=60)
    # runs at once, and runs waiting for one of them to end (docs/host.md#run-queue)
    max_running_runs: int = Field(32, ge=1, le=10_000)
    max_queued_runs: int = Field(1000, ge=0, le=1_000_000)
    # a run worker whose event loop an agent blocks this long is replaced (docs/host.md#run-bounds)
    agent_stall_s: float = Field(5, ge=0.5, le=600)


class HostConfig(_Strict):
    database: str | None = None
    suites: tuple[str, ...] = ()
    conformance_fixtures: bool = False
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    deployment: DeploymentPolicy = DeploymentPolicy()
    adversarial: AdversarialPolicy = AdversarialPolicy()
    users: UsersConfig = UsersConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    api_keys: tuple[ApiKey, ...] = ()
    limits: Limits = Limits()
    replicas: Replicas = Replicas()
    run_workers: int | None = Field(None, ge=0, le=32)
    """Processes the host's runs play in, beside the HTTP process (0: in it); by default
    one, except with ``executor = "ray"`` or a store in memory (see :attr:`workers`)."""
    executor: Literal["local", "ray"] = "local"
    """Where the host's runs play their trials: in process, or each as a Ray task."""
    ray_address: str | None = Field(None, min_length=1)
    """The Ray cluster of ``executor = "ray"`` (default: ``$RAY_ADDRESS``, else a local Ray)."""
    base_dir: str = "."
    development: bool = False
    signing: SigningConfig | None = None
    """The key discovery publishes in ``signingKeys`` (none: no ``signingKeys``). After
    ``base_dir``: its key files are read relative to it, once, here."""

    @field_validator("signing")
    @classmethod
    def _read_signing_keys(
        cls, value: SigningConfig | None, info: ValidationInfo
    ) -> SigningConfig | None:
        return None if value is None else read_keys(value, info.data.get("base_dir", "."))

    @model_validator(mode="after")
    def _ray_only(self) -> HostConfig:
        if self.ray_address is not None and self.executor != "ray":
            raise ValueError('ray_address is the cluster of executor = "ray": set executor')
        return self

    @model_validator(mode="after")
    def _upstreams_local(self) -> HostConfig:
        if self.executor == "ray" and any(a.mcp_upstreams for a in self.agents.values()):
            raise ValueError(
                'mcp_upstreams live in the host\'s processes: not with executor = "ray"'
            )
        return self

    @model_validator(mode="after")
    def _workers_local(self) -> HostConfig:
        if self.run_workers and self.executor == "ray":
            raise ValueError('run_workers plays trials in process: not with executor = "ray"')
        return self

    @model_validator(mode="after")
    def _agent_ids(self) -> HostConfig:
        # agent ids travel in paths and fill bounded store columns: the protocol's grammar
        bad = sorted(a for a in self.agents if not is_agent_id(a))
        if bad:
            raise ValueError(
                f"agent ids must be 1 to {MAX_AGENT_ID_CHARS} of [A-Za-z0-9._~:-]: {bad}"
            )
        return self

    @property
    def workers(self) -> int:
        """The run workers to start: as set, else one — none when trials play on Ray."""
        if self.run_workers is not None:
            return self.run_workers
        return 1 if self.executor == "local" else 0

    def path(self, relative: str) -> Path:
        return (Path(self.base_dir) / relative).resolve()


def load_config(path: str | Path) -> HostConfig:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    try:
        return HostConfig.model_validate({**raw, "base_dir": str(path.parent.resolve())})
    except ValidationError as exc:
        lines = [f"  {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise ConfigError(f"{path}: {len(lines)} problem(s):\n" + "\n".join(lines)) from None


def development_config(database: str | None = None) -> HostConfig:
    """No config file: the RFC 0246 conformance fixtures and their scripted agent, one
    all-scopes API key ``dev-key`` for tenant ``dev``. Never for production."""
    fixtures = resources.files("openwop_eval.conformance") / "fixtures"
    return HostConfig(
        database=database,
        conformance_fixtures=True,
        agents={
            "core.conformance.mock-agent": AgentConfig(
                agent=f"scripted:{fixtures / 'conformance-mock-agent.json'}",
                timeout_s=60,
                version="1.0.0",
            )
        },
        deployment=DeploymentPolicy(  # its runs of the gate fixture: evidence, refused
            required_suites={
                "core.conformance.mock-agent": ("core.conformance.evals.trajectory-gate",)
            }
        ),
        api_keys=(ApiKey(name="development", tenant="dev", key=DEV_KEY),),
        development=True,
    )
