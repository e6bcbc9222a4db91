"""Where a run's spans go and what they carry, from the standard OpenTelemetry settings.

The endpoint given (a base URL, as ``OTEL_EXPORTER_OTLP_ENDPOINT``: ``/v1/traces`` is added)
wins; else ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as it stands; else
``OTEL_EXPORTER_OTLP_ENDPOINT``; else nothing is exported. ``OTEL_SERVICE_NAME`` names the
resource. Content is captured only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
is ``true``. No OpenTelemetry import here: a run that exports nothing loads none of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from .names import CAPTURE_CONTENT

DEFAULT_SERVICE: Final = "openwop-eval"
TRACES_PATH: Final = "/v1/traces"


@dataclass(frozen=True)
class OtlpTarget:
    """Where the spans go (the traces URL, in full), under which service, with content or not."""

    endpoint: str
    service_name: str = DEFAULT_SERVICE
    content: bool = False


def endpoint_problem(url: str) -> str | None:
    """Why ``url`` cannot be an OTLP/HTTP endpoint, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{url!r} is not an http:// or https:// URL with a host"
    return None


def traces_url(base: str) -> str:
    """The traces URL of a base endpoint URL (kept as it is when it names it already)."""
    trimmed = base.rstrip("/")
    return trimmed if trimmed.endswith(TRACES_PATH) else trimmed + TRACES_PATH


def otlp_target(endpoint: str | None, environ: Mapping[str, str]) -> OtlpTarget | None:
    """The target the given endpoint (it wins) or the environment names; None when neither
    names one (nothing is exported)."""
    if endpoint:
        url = traces_url(endpoint)
    elif environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        url = environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    elif environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        url = traces_url(environ["OTEL_EXPORTER_OTLP_ENDPOINT"])
    else:
        return None
    service = environ.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE
    content = environ.get(CAPTURE_CONTENT, "").strip().lower() == "true"
    return OtlpTarget(url, service, content)
