"""A run's fixture source: what answers its tool calls, stored with the run.

A run answers tool calls from its suite's ``toolResponses`` (the suite document is stored
with the run), from responses recorded in earlier runs (``--fixtures-from``, the host's
``fixtureRuns``) laid over them task by task, or — live-shadow — from live tools alone. The
whole source is stored as an immutable copy when the run is created, so every resume serves
exactly what the run started with; a run whose source cannot be read back is ended as failed,
never continued on other fixtures (a resumed trial served other answers could flip the gate).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import CompiledTask, OpenwopEvalError
from ..core.records import Recording
from ..log.event_names import EXT, INVOCATION_STARTED, TOOL_LISTING, v2_type
from ..log.replay import replay
from .tools import FixtureBook, FixtureSheet

FORMAT = 1
"""The version of the stored form; a reader refuses any other."""


class FixtureSourceError(OpenwopEvalError):
    """A stored fixture source that cannot be read back exactly."""


@dataclass(frozen=True)
class FixtureSource:
    recording: Recording | None = None
    """Recorded responses for the tasks they name; other tasks use the suite's fixtures."""
    live_shadow: bool = False
    """No fixtures at all: every call goes to a live tool (``live-shadow`` suites only)."""
    listing: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """What the recorded runs' MCP servers listed of their tools (:func:`listing_from`)."""
    _sheets: dict[str, tuple[Any, FixtureSheet]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Each task's ``toolResponses``, and them grouped once (a suite's never change)."""

    def book(self, task: CompiledTask, index: int) -> FixtureBook | None:
        """The fixture answers of trial ``index`` of ``task``, fresh; None: live tools."""
        if self.live_shadow:
            return None
        if self.recording is not None and task.task_id in self.recording:
            trials = self.recording[task.task_id]
            if not trials:
                return FixtureBook(listing=self.listing)  # recorded nothing: every call misses
            keys = sorted(trials)
            book = FixtureBook.from_recording(trials[keys[index % len(keys)]])
            book.listing = self.listing
            return book
        fixtures = task.task.fixtures
        if fixtures is None or fixtures.tool_responses is None:
            return None
        responses = fixtures.tool_responses
        held = self._sheets.get(task.task_id)
        if held is None or held[0] is not responses:  # a source may serve another suite
            sheet = FixtureSheet.of([(r.tool, r.response) for r in responses])
            self._sheets[task.task_id] = held = (responses, sheet)
        book = held[1].deal()
        book.listing = self.listing
        return book

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"format": FORMAT, "liveShadow": self.live_shadow}
        if self.recording is not None:
            doc["recording"] = {
                task_id: [
                    {
                        "trial": index,
                        "calls": [
                            {"tool": tool, "args": args, "result": result}
                            for tool, args, result in trials[index]
                        ],
                    }
                    for index in sorted(trials)
                ]
                for task_id, trials in self.recording.items()
            }
        if self.listing:  # absent otherwise: a source stored before listings reads the same
            doc["toolListing"] = dict(self.listing)
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> FixtureSource:
        """The source stored by :meth:`to_json`; anything else is refused, never guessed."""
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise FixtureSourceError("the run has no readable fixture source")
        live_shadow = doc.get("liveShadow")
        if not isinstance(live_shadow, bool):
            raise FixtureSourceError("the fixture source has no liveShadow flag")
        listing = doc.get("toolListing", {})
        if not isinstance(listing, dict) or listing != listed(listing):
            raise FixtureSourceError("the fixture source's tool listing is damaged")
        stored = doc.get("recording")
        if stored is None:
            return cls(None, live_shadow, listing)
        if not isinstance(stored, dict):
            raise FixtureSourceError("the fixture source's recording is not an object")
        trials = {task: _trials(trials) for task, trials in stored.items()}
        return cls(trials, live_shadow, listing)


def _trials(stored: Any) -> dict[int, list[tuple[str, Any, Any]]]:
    if not isinstance(stored, list):
        raise FixtureSourceError("a recorded task is not a list of trials")
    trials: dict[int, list[tuple[str, Any, Any]]] = {}
    for entry in stored:
        index = entry.get("trial") if isinstance(entry, dict) else None
        calls = entry.get("calls") if isinstance(entry, dict) else None
        if type(index) is not int or index in trials or not isinstance(calls, list):
            raise FixtureSourceError("a recorded trial is damaged")
        trials[index] = [_call(call) for call in calls]
    return trials


def _call(stored: Any) -> tuple[str, Any, Any]:
    if not isinstance(stored, dict) or not isinstance(stored.get("tool"), str):
        raise FixtureSourceError("a recorded call is damaged")
    if "args" not in stored or "result" not in stored:
        raise FixtureSourceError("a recorded call is damaged")
    return stored["tool"], stored["args"], stored["result"]


def recording_from(docs: Sequence[dict[str, Any]], tasks: Iterable[str] | None = None) -> Recording:
    """The answered calls of a recorded run, per task and trial; a named task the log does
    not answer is recorded as answering nothing (every call to it misses)."""
    wanted = None if tasks is None else list(tasks)
    found: dict[str, dict[int, list[tuple[str, Any, Any]]]] = {}
    for (task_id, trial), calls in replay(docs).responses.items():
        if wanted is None or task_id in wanted:
            found.setdefault(task_id, {})[trial] = calls
    for task_id in wanted or ():
        found.setdefault(task_id, {})
    return found


def merge_recordings(
    parts: Iterable[tuple[Sequence[dict[str, Any]], Iterable[str] | None]],
) -> Recording:
    """One recording from several logs, each for the tasks named (all when None); a later
    log replaces an earlier one for the tasks both name."""
    merged: dict[str, Mapping[int, list[tuple[str, Any, Any]]]] = {}
    for docs, tasks in parts:
        merged.update(recording_from(docs, tasks))
    return merged


def merge_listings(logs: Iterable[Sequence[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """What the MCP servers of several recorded runs listed; a later log's entry wins."""
    merged: dict[str, dict[str, Any]] = {}
    for docs in logs:
        merged.update(listing_from(docs))
    return merged


def listing_from(docs: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """What the MCP servers of a recorded run listed of their tools, as its trials recorded it
    (``agent.invocation-started``'s ``toolListing``); a later trial's entry for a tool wins,
    and an entry of the wrong shape is left out."""
    found: dict[str, dict[str, Any]] = {}
    for doc in docs:
        kind = doc.get("type")
        if not isinstance(kind, str) or v2_type(kind) != INVOCATION_STARTED:
            continue
        payload = doc.get("payload")
        ext = payload.get(EXT) if isinstance(payload, dict) else None
        value = ext.get(TOOL_LISTING) if isinstance(ext, dict) else None
        if isinstance(value, dict):
            found.update(listed(value))
    return found


def listed(value: Mapping[Any, Any]) -> dict[str, dict[str, Any]]:
    """The entries of a tool listing that have its shape: ``tool: {"inputSchema": {...},
    "description"?: str}``."""
    return {
        tool: entry
        for tool, entry in value.items()
        if isinstance(tool, str)
        and isinstance(entry, dict)
        and isinstance(entry.get("inputSchema"), dict)
        and isinstance(entry.get("description", ""), str)
        and set(entry) <= {"inputSchema", "description"}
    }
