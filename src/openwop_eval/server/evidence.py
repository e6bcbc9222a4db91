"""The host's seal on the eval runs it ran: what makes a run evidence for a promotion.

When a run the host played completes, it stores with the run's summary, in one transaction,
an HMAC-SHA256 over what the run evaluated — its id, tenant, agent, the agent's version,
the suite (by digest) — the policy it ran under (the adversarial severity bar) and that
summary. The deploy gate accepts a run
only if the seal checks out under the host's key and its policy now, so a run written into
the store by anything else (`openwop-eval run` or `grade` on a shared store, a resume by
another process, a summary edited afterwards) is never evidence.

The key is the one ``[deployment] evidence_key_env`` names (the same for every replica),
else one the host makes once and keeps in its store — enough against everything that writes
through openwop-eval, not against a writer with raw access to the database, which the
configured key keeps out.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable
from functools import partial
from typing import Any

from ..core import canonical_json
from ..store import RunRecord
from ..store.host import HostStore
from .config import ConfigError, HostConfig

SECRET_NAME = "evidence-key"
MIN_KEY_CHARS = 32


def evidence_key(config: HostConfig, host_store: HostStore) -> bytes:
    """The key the host seals and checks runs with (read once, at start)."""
    variable = config.deployment.evidence_key_env
    if variable is None:
        return host_store.secret(SECRET_NAME).encode()
    value = os.environ.get(variable, "")
    if len(value.strip()) < MIN_KEY_CHARS:
        raise ConfigError(
            f"deployment.evidence_key_env: ${variable} must hold a secret of at least"
            f" {MIN_KEY_CHARS} characters"
        )
    return value.strip().encode()


def _policy(config: HostConfig) -> dict[str, Any]:
    """What of the host's policy a run's verdict depends on, beyond its suite."""
    return {"failOnSeverity": config.adversarial.fail_on_severity}


def seal(key: bytes, config: HostConfig, run: RunRecord, summary: dict[str, Any]) -> str:
    """The seal of ``run`` (as the host started it) completed with ``summary``."""
    body = {
        "runId": run.run_id,
        "tenant": run.tenant,
        "agentId": run.agent_id,
        "agentSpec": run.agent_spec,
        "agentVersion": run.agent_version,
        "suiteId": run.suite_id,
        "suiteVersion": run.suite_version,
        "suiteDigest": hashlib.sha256(canonical_json(run.suite_doc).encode()).hexdigest(),
        "policy": _policy(config),
        "summary": summary,
    }
    return "v1:" + hmac.new(key, canonical_json(body).encode(), hashlib.sha256).hexdigest()


def sealed(key: bytes, config: HostConfig, run: RunRecord) -> bool:
    """Whether ``run`` (read whole, with its summary) carries this host's seal under its
    policy now."""
    if run.evidence is None or run.summary is None:
        return False
    try:  # a row written by anything else may hold what no seal of ours can
        expected = seal(key, config, run, run.summary)
    except (TypeError, ValueError, OverflowError):
        return False
    # bytes: compare_digest refuses a str with anything beyond ASCII (a forged value may)
    return hmac.compare_digest(run.evidence.encode(), expected.encode())


def sealer(config: HostConfig, key: bytes) -> Callable[[RunRecord, dict[str, Any]], str]:
    """The runner's sealer (:class:`~openwop_eval.runner.RunService`): each run the host
    completes is sealed in the transaction that stores its summary."""
    return partial(seal, key, config)
