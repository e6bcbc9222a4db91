"""A stored run, exported: read back from the store (its suite, its event log and, only when
content is captured, its trials' outputs) and sent to a collector. The one export that
``run --otlp-endpoint`` and the host's ``[telemetry]`` share.

An export never raises: whatever goes wrong (no exporter installed, a collector away, a log
it cannot read) is the result's ``error``, for the caller to warn about. The verdict is
decided and stored before; nothing here can change it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ..core import JSON
from ..files.suites import parse_suite
from ..store import Store
from .settings import OtlpTarget

EXTRA: Final = "'openwop-eval[otlp]'"
"""The install extra that brings the OpenTelemetry SDK and its OTLP exporter."""


@dataclass(frozen=True)
class Exported:
    """The trials exported, and why the export failed (None when every span was sent)."""

    trials: int
    error: str | None = None


def export_stored_run(target: OtlpTarget, store: Store, run_id: str) -> Exported:
    """Export run ``run_id`` of ``store`` to ``target``."""
    try:
        from .export import export_run  # OpenTelemetry loads only when exporting
    except ImportError:
        return Exported(0, f"the OpenTelemetry exporter is not installed: pip install {EXTRA}")
    try:
        run = store.get_run(run_id)
        if run is None:
            return Exported(0, f"no run {run_id!r} in the store")
        suite = parse_suite(run.suite_doc, source=f"run {run_id}").suite
        outputs = _outputs(store, run_id) if target.content else None
        result = export_run(target, suite, store.iter_events(run_id), outputs=outputs)
    except Exception as exc:  # a store away, a log it cannot read: the export's failure only
        lines = str(exc).splitlines()
        return Exported(0, f"{type(exc).__name__}: {lines[0][:300] if lines else ''}")
    if result.ok:
        return Exported(result.trials)
    return Exported(result.trials, result.error or "not every span was sent")


def _outputs(store: Store, run_id: str) -> Callable[[str, int], JSON]:
    """The trials' final outputs, kept by the store beside the log (content: opt-in only)."""
    diagnostics = store.trial_results(run_id)

    def output(task_id: str, trial: int) -> JSON:
        return diagnostics.get((task_id, trial), {}).get("output")

    return output
