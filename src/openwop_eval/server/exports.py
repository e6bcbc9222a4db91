"""The host's ``[telemetry]``: every run it ends, exported to an OpenTelemetry collector.

    [telemetry]
    otlp_endpoint = "http://collector:4318"   # default: $OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT
    service_name = "openwop-eval"             # default: $OTEL_SERVICE_NAME, else openwop-eval
    capture_content = false                   # default: the GenAI conventions' opt-in variable
    export = true                             # false: never export, whatever the environment

A run is exported when it ends on this host (completed, failed or cancelled), whether it
played here or in a run worker, with the spans ``run --otlp-endpoint`` sends
(:func:`openwop_eval.telemetry.stored.export_stored_run`). The exports go one at a time, in
the order the runs ended, in one thread of their own: a slow or absent collector delays only
other exports, never a run, a request or a verdict. Exporting is at most once: a run whose
export had not started when the host stopped is not exported later (its event log still
holds all of it).
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..store import Store
from ..telemetry import OtlpTarget, endpoint_problem, otlp_target
from ..telemetry.stored import export_stored_run

log = logging.getLogger("openwop_eval.server")

REMEMBERED_RUNS: Final = 4096
"""Exported run ids kept, so a run two paths end (a worker lost as its run ended) is
exported once."""


class TelemetryConfig(BaseModel):
    """``[telemetry]``: where the host exports the runs it ends (docs/observability.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    export: bool = True
    otlp_endpoint: str | None = Field(None, min_length=1, max_length=2048)
    """The collector's base URL (``/v1/traces`` is added), as ``OTEL_EXPORTER_OTLP_ENDPOINT``."""
    service_name: str | None = Field(None, min_length=1, max_length=256)
    capture_content: bool | None = None
    """Outputs and arguments in the spans; by default as
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says (off unless ``true``)."""

    @field_validator("otlp_endpoint")
    @classmethod
    def _an_endpoint(cls, value: str | None) -> str | None:
        problem = None if value is None else endpoint_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    def target(self, environ: Mapping[str, str]) -> OtlpTarget | None:
        """Where the runs go (this section first, then the standard environment), or None."""
        found = otlp_target(self.otlp_endpoint, environ) if self.export else None
        if found is None:
            return None
        content = found.content if self.capture_content is None else self.capture_content
        return replace(found, service_name=self.service_name or found.service_name, content=content)


class RunExports:
    """Exports the runs this host ends, one at a time, off the event loop."""

    def __init__(self, store: Store, target: OtlpTarget | None) -> None:
        self.store, self.target = store, target
        self._pool = (
            ThreadPoolExecutor(1, thread_name_prefix="openwop-otlp") if target is not None else None
        )
        self._done: OrderedDict[str, None] = OrderedDict()

    def ended(self, run_id: str) -> None:
        """A run this host played has stopped playing: exported if it has ended."""
        if self._pool is None:
            return
        with contextlib.suppress(RuntimeError):  # the host is shutting down: no new export
            self._pool.submit(self._export, run_id)

    def _export(self, run_id: str) -> None:
        target = self.target
        if target is None or run_id in self._done:
            return
        try:
            run = self.store.get_run(run_id, False)
        except Exception as exc:  # the store away: the run is not exported, it is not lost
            log.warning("eval run %s was not exported: %s", run_id, type(exc).__name__)
            return
        if run is None or not run.terminal:  # stopped to be resumed: exported when it ends
            return
        self._done[run_id] = None
        if len(self._done) > REMEMBERED_RUNS:
            self._done.popitem(last=False)
        exported = export_stored_run(target, self.store, run_id)
        if exported.error is not None:
            log.warning(
                "eval run %s was not exported to %s: %s", run_id, target.endpoint, exported.error
            )
        else:
            log.info("eval run %s exported to %s", run_id, target.endpoint)

    def close(self) -> None:
        """Finish the export under way; drop those not started (the host is stopping)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
