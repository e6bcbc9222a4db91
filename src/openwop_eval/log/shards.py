"""Shards: one run's (task, trial) pairs split across machines, and merged back into one run.

``run SUITE --shard I/N`` runs the pairs whose position in the runner's order (trial by
trial, each over every task) is ``I - 1`` modulo ``N``: a deterministic, balanced slice,
the same on every machine. Its ``eval.started`` carries a shard mark — the slice, the
digests of the suite document and of the fixture source, and the agent id — so that
:func:`merge_shards` can refuse what is missing, given twice or does not belong together,
and otherwise build the run the unsharded one would have been: the same trials under the
same terms, graded by the one reading of a log (:func:`~.verdict.read_verdict`), so the merged
summary equals the unsharded one.

Pure like the rest of this package: the logs come in as re-readable iterables (each is read
twice, streaming: once to check, once to merge) and the merged events go out to a sink.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..core import Suite, SuiteGrade, canonical_json
from ..core import names as cn
from ..core.gate import GateVerdict
from .event_names import (
    EVAL_COMPLETED,
    EVAL_SCORED,
    EVAL_STARTED,
    EXT,
    RUN_CANCELLED,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_STARTED,
    SCHEMA_VERSION,
)
from .verdict import completed_payload, read_verdict
from .versions import LogVersionError, check_version

MAX_SHARDS: Final = 1_000
"""The most shards a run may be split into (a CI matrix has far fewer jobs)."""

MAX_STRAYS: Final = 10
"""Trials outside its slice that a refusal names per shard."""

_SHARD = re.compile(r"([0-9]{1,4})/([0-9]{1,4})")
_HEADS = (RUN_STARTED, EVAL_STARTED)
_ENDS = (EVAL_COMPLETED, RUN_COMPLETED, RUN_FAILED, RUN_CANCELLED)


class ShardError(ValueError):
    """Shards that cannot be merged, with every reason."""

    def __init__(self, reasons: Sequence[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = list(reasons)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``I/N`` with ``1 ≤ I ≤ N ≤`` :data:`MAX_SHARDS`; ``ValueError`` saying why not."""
        found = _SHARD.fullmatch(text.strip())
        if found is None:
            raise ValueError(f"a shard is I/N, such as 2/4; got {text!r}")
        index, count = int(found[1]), int(found[2])
        if not 1 <= count <= MAX_SHARDS:
            raise ValueError(f"shard count {count} is outside 1..{MAX_SHARDS}")
        if not 1 <= index <= count:
            raise ValueError(f"shard index {index} is outside 1..{count}")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, task_position: int, trial: int, task_count: int) -> bool:
        """Whether trial ``trial`` of the task at ``task_position`` is this shard's."""
        return (trial * task_count + task_position) % self.count == self.index - 1


def document_digest(doc: Any) -> str:
    """The digest a shard mark names a document by: SHA-256 of its canonical JSON."""
    return "sha256:" + hashlib.sha256(canonical_json(doc).encode()).hexdigest()


@dataclass(frozen=True)
class ShardMark:
    """What a shard's ``eval.started`` says it is, under ``x-openwop-eval.shard``."""

    shard: Shard
    suite_digest: str
    fixtures_digest: str
    agent_id: str

    def as_json(self) -> dict[str, Any]:
        return {
            "index": self.shard.index,
            "count": self.shard.count,
            "suiteDigest": self.suite_digest,
            "fixturesDigest": self.fixtures_digest,
            "agentId": self.agent_id,
        }

    @classmethod
    def of(cls, started: dict[str, Any]) -> ShardMark | None:
        """The mark of an ``eval.started`` payload; None when it has none or a bad one."""
        ext = started.get(EXT)
        mark = ext.get(cn.EXT_SHARD) if isinstance(ext, dict) else None
        if not isinstance(mark, dict):
            return None
        index, count = mark.get("index"), mark.get("count")
        texts = [mark.get(k) for k in ("suiteDigest", "fixturesDigest", "agentId")]
        if type(index) is not int or type(count) is not int:
            return None
        if not all(isinstance(t, str) and t for t in texts):
            return None
        try:
            shard = Shard.parse(f"{index}/{count}")
        except ValueError:
            return None
        return cls(shard, *texts)  # type: ignore[arg-type]


@dataclass
class ShardHead:
    """One shard's log as the first reading found it."""

    source: str
    run_id: str | None = None
    opening: list[dict[str, Any]] = field(default_factory=list)
    """Its ``run.started`` and ``eval.started`` events."""
    mark: ShardMark | None = None
    ending: str | None = None
    ended_at: str = ""
    strays: list[str] = field(default_factory=list)
    """Trials in the log that are not its shard's."""


Opener = Callable[[], Iterable[dict[str, Any]]]
"""Reads one shard's log from its start, each time it is called."""


@dataclass(frozen=True)
class Merged:
    run_id: str
    summary: dict[str, Any]
    grade: SuiteGrade
    shards: int
    trials: int


def merge_shards(
    suite: Suite,
    suite_digest: str,
    logs: Sequence[tuple[str, Opener]],
    sink: Callable[[dict[str, Any]], object] | None = None,
) -> Merged:
    """Merge the logs of every shard of one run into that run; :class:`ShardError` with
    every reason when they are not exactly the shards of one run of ``suite`` (whose
    document has ``suite_digest``). ``sink`` gets the merged log's events in order."""
    task_positions = {t.task_id: i for i, t in enumerate(suite.tasks)}
    heads = [_head(source, open_log(), task_positions) for source, open_log in logs]
    reasons = check_shards(heads, suite_digest)
    if reasons:
        raise ShardError(reasons)
    ordered = sorted(heads, key=lambda h: h.mark.shard.index if h.mark else 0)
    by_source = dict(logs)
    run_id = "merged/" + document_digest([h.run_id for h in ordered])[7:31]
    counter = _Numbering(run_id, sink)
    trials = 0

    def merged() -> Iterator[dict[str, Any]]:
        nonlocal trials
        for doc in _opening(ordered[0]):
            yield counter.emit(doc)
        for head in ordered:
            for doc in by_source[head.source]():
                if doc.get("type") not in _HEADS and doc.get("type") not in _ENDS:
                    trials += doc.get("type") == EVAL_SCORED
                    yield counter.emit(doc)

    verified = read_verdict(suite, merged(), ordered=True)
    if verified.problems:
        raise ShardError([f"the merged log: {p}" for p in verified.problems])
    ended_at = max(h.ended_at for h in ordered)
    counter.close(verified.summary, verified.gate, ended_at)
    return Merged(run_id, verified.summary, verified.grade, len(ordered), trials)


def check_shards(heads: Sequence[ShardHead], suite_digest: str) -> list[str]:
    """Why these logs are not every shard of one run of the suite (empty: they are)."""
    if not heads:
        return ["no shard logs were given"]
    reasons = [*_each_reasons(heads, suite_digest)]
    marked = [(h, h.mark) for h in heads if h.mark is not None]
    if not marked:
        return reasons
    first, mark = marked[0]
    for head, other in marked[1:]:
        reasons += _differences(first, mark, head, other)
    seen: dict[int, str] = {}
    for head, other in marked:
        index = other.shard.index
        if index in seen:
            reasons.append(f"shard {other.shard} is given twice: {seen[index]} and {head.source}")
        seen.setdefault(index, head.source)
    count = mark.shard.count
    if all(other.shard.count == count for _, other in marked):
        missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
        if missing:
            reasons.append(f"missing shard(s) {', '.join(missing)}")
    return reasons


def _each_reasons(heads: Sequence[ShardHead], suite_digest: str) -> Iterator[str]:
    for head in heads:
        if head.mark is None:
            yield f"{head.source} is not a shard's log (its eval.started has no shard mark)"
            continue
        if head.mark.suite_digest != suite_digest:
            yield f"{head.source} ran another suite (digest {head.mark.suite_digest[:19]}…)"
        if head.ending != RUN_COMPLETED:
            state = "ended with " + head.ending if head.ending else "has no end"
            yield f"{head.source} did not complete (its log {state})"
        yield from (f"{head.source}: {stray}" for stray in head.strays)


def _differences(first: ShardHead, a: ShardMark, other: ShardHead, b: ShardMark) -> list[str]:
    reasons = []
    if a.shard.count != b.shard.count:
        reasons.append(
            f"the shards were split differently: {first.source} is {a.shard},"
            f" {other.source} is {b.shard}"
        )
    if a.agent_id != b.agent_id:
        reasons.append(f"{other.source} ran agent {b.agent_id!r}, {first.source} {a.agent_id!r}")
    if a.fixtures_digest != b.fixtures_digest:
        reasons.append(f"{other.source} was served other fixtures than {first.source}")
    if _terms(first) != _terms(other):
        reasons.append(f"{other.source} ran under other terms (eval.started) than {first.source}")
    return reasons


def _terms(head: ShardHead) -> Any:
    """The run's terms as its ``eval.started`` states them, without the shard's own mark
    and run diff reference (which name the shard's run)."""
    started = next((d for d in head.opening if d.get("type") == EVAL_STARTED), {})
    payload = dict(started.get("payload") or {})
    ext = payload.pop(EXT, None)
    if isinstance(ext, dict):
        kept = {k: v for k, v in ext.items() if k not in (cn.EXT_SHARD, cn.EXT_DIFF_REF)}
        payload[EXT] = kept
    return payload


def _head(source: str, docs: Iterable[dict[str, Any]], positions: dict[str, int]) -> ShardHead:
    """The first reading of a shard's log: its opening, mark, end and stray trials; an event
    this version cannot read is refused here, naming the shard's log."""
    head = ShardHead(source)
    task_count = len(positions)
    for position, doc in enumerate(docs, 1):
        try:
            check_version(doc, position)
        except LogVersionError as exc:
            raise LogVersionError(f"{source}: {exc}") from None
        kind, payload = doc.get("type"), doc.get("payload")
        payload = payload if isinstance(payload, dict) else {}
        if head.run_id is None and isinstance(doc.get("runId"), str):
            head.run_id = doc["runId"]
        if kind in _HEADS and len(head.opening) < len(_HEADS):
            head.opening.append(doc)
            if kind == EVAL_STARTED:
                head.mark = ShardMark.of(payload)
        elif kind in (RUN_COMPLETED, RUN_FAILED, RUN_CANCELLED):
            head.ending = kind
            head.ended_at = str(doc.get("timestamp", ""))
        elif kind == EVAL_SCORED and head.mark is not None:
            stray = _stray(head.mark.shard, payload, positions, task_count)
            if stray is not None and len(head.strays) < MAX_STRAYS:
                head.strays.append(stray)
    return head


def _stray(
    shard: Shard, payload: dict[str, Any], positions: dict[str, int], task_count: int
) -> str | None:
    """Why a trial's ``eval.scored`` is not the shard's (None: it is, or it is no trial of
    the suite, which the merged reading reports)."""
    ext = payload.get(EXT)
    ext = ext if isinstance(ext, dict) else {}
    task_id, trial = ext.get("taskId", payload.get("taskId")), ext.get("trial")
    position = positions.get(task_id) if isinstance(task_id, str) else None
    if position is None or type(trial) is not int or shard.holds(position, trial, task_count):
        return None
    return f"trial {trial} of task {task_id!r} is not shard {shard}'s"


def _opening(head: ShardHead) -> list[dict[str, Any]]:
    """The merged run's ``run.started`` and ``eval.started``: the first shard's, without
    its shard mark."""
    out = []
    for doc in head.opening:
        payload = dict(doc.get("payload") or {})
        ext = payload.get(EXT)
        if doc.get("type") == EVAL_STARTED and isinstance(ext, dict):
            kept = {k: v for k, v in ext.items() if k != cn.EXT_SHARD}
            if kept:
                payload[EXT] = kept
            else:
                payload.pop(EXT)
        out.append({**doc, "payload": payload})
    return out


class _Numbering:
    """Gives merged events the merged run's id and consecutive sequence numbers."""

    def __init__(self, run_id: str, sink: Callable[[dict[str, Any]], object] | None) -> None:
        self.run_id, self.sink, self.sequence = run_id, sink, 0

    def emit(self, doc: dict[str, Any]) -> dict[str, Any]:
        out = {**doc, "runId": self.run_id, "sequence": self.sequence}
        self.sequence += 1
        if self.sink is not None:
            self.sink(out)
        return out

    def close(self, summary: dict[str, Any], gate: GateVerdict, stamp: str) -> None:
        """The merged run's ``eval.completed`` and ``run.completed``."""
        outputs = {"outputs": {"evalSummary": summary}}
        for i, (kind, payload) in enumerate(
            ((EVAL_COMPLETED, completed_payload(summary, gate)), (RUN_COMPLETED, outputs))
        ):
            self.emit(
                {
                    "eventId": f"ev-{self.run_id[7:]}-end{i}",
                    "runId": self.run_id,
                    "type": kind,
                    "payload": payload,
                    "timestamp": stamp,
                    "sequence": 0,
                    "schemaVersion": SCHEMA_VERSION,
                }
            )
