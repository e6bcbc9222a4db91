"""An LLM judge over any OpenAI-compatible ``/chat/completions`` endpoint.

The model is asked for one JSON verdict per numbered criterion and its reply is parsed
strictly. A malformed reply is retried with a message saying exactly what was wrong; a
throttled or failing endpoint (408, 429, 5xx, transport errors) is retried with exponential
backoff. Every exchange is kept in a :class:`JudgeRecord`, so a report can show what the
model saw and said, and a re-grade reads the recorded verdicts instead of asking again.
When the request asks for safety findings, the model is asked for them too and a bad finding
is an unusable reply like a bad ``met``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ..core.canonical import JSON
from ..core.rubric import CriterionVerdict, JudgeRequest
from ..llm.chat import DEFAULT_BASE_URL, Backoff, ChatEndpoint, Sleep, env_value
from .errors import JudgeAttemptsError, JudgeHTTPError, JudgeSpecError, JudgeUnreachableError
from .prompt import build_messages, corrective_message, parse_verdicts

if TYPE_CHECKING:  # imported where a request is made: it is slow to import
    import httpx

__all__ = ["DEFAULT_BASE_URL", "JudgeAttempt", "JudgeRecord", "OpenAIJudge"]
Message: TypeAlias = dict[str, str]


@dataclass(frozen=True, slots=True)
class JudgeAttempt:
    """One request to the endpoint and what came back."""

    messages: tuple[Message, ...]
    reply: str | None = None
    """The model's reply text, or an excerpt of the response body when it had none."""
    error: str | None = None
    status: int | None = None
    model: str | None = None
    """The model the endpoint says answered (it may differ from the one asked for)."""
    usage: JSON = None

    def as_dict(self) -> dict[str, JSON]:
        return {
            "messages": [dict(m) for m in self.messages],
            "reply": self.reply,
            "error": self.error,
            "status": self.status,
            "model": self.model,
            "usage": self.usage,
        }


@dataclass(frozen=True, slots=True)
class JudgeRecord:
    """Everything exchanged to judge one trial; ``verdicts`` is None when judging failed."""

    model: str
    task_id: str
    trial_index: int
    attempts: tuple[JudgeAttempt, ...]
    verdicts: tuple[CriterionVerdict, ...] | None = None
    report_findings: bool = False
    """Whether findings were asked for; only then do the verdicts list theirs."""

    def as_dict(self) -> dict[str, JSON]:
        verdicts: list[JSON] | None = None
        if self.verdicts is not None:
            verdicts = [self._verdict(v) for v in self.verdicts]
        return {
            "judge": "openai",
            "model": self.model,
            "taskId": self.task_id,
            "trialIndex": self.trial_index,
            "attempts": [a.as_dict() for a in self.attempts],
            "verdicts": verdicts,
        }

    def _verdict(self, verdict: CriterionVerdict) -> JSON:
        entry: dict[str, JSON] = {"met": verdict.met, "rationale": verdict.rationale}
        if self.report_findings:
            entry["findings"] = [dict(t.as_dict()) for t in verdict.findings]
        return entry


@dataclass(frozen=True, slots=True)
class _Outcome:
    """One attempt and what to do next."""

    attempt: JudgeAttempt
    kind: Literal["ok", "malformed", "transient", "refused"]
    verdicts: tuple[CriterionVerdict, ...] = ()
    reasons: tuple[str, ...] = ()
    wait: float = 0.0
    """Seconds the server asked us to wait (Retry-After) before trying again."""


class OpenAIJudge:
    """Judges rubric trials with a chat model; see ``docs/judges.md``."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_attempts: int = 3,
        backoff_base: float = 1.0,
        max_backoff: float = 30.0,
        json_mode: bool = True,
        client: httpx.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if not model.strip():
            raise JudgeSpecError("the judge needs a model name")
        if max_attempts < 1 or timeout <= 0 or backoff_base < 0 or max_backoff < 0:
            raise JudgeSpecError(
                "max_attempts must be ≥ 1, timeout > 0, backoff_base and max_backoff ≥ 0"
            )
        self.model = model
        self.max_attempts = max_attempts
        self.json_mode = json_mode
        self._endpoint = ChatEndpoint(base_url, api_key, timeout=timeout, client=client)
        self._backoff = Backoff(backoff_base, max_backoff, sleep)

    @property
    def base_url(self) -> str:
        return self._endpoint.base_url

    @classmethod
    def from_env(
        cls,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        max_attempts: int = 3,
        json_mode: bool = True,
    ) -> OpenAIJudge:
        """Arguments first, then ``OPENWOP_EVAL_JUDGE_*``, then the ``OPENAI_*`` variables."""
        env = os.environ if environ is None else environ
        model = model or env_value(env, "OPENWOP_EVAL_JUDGE_MODEL")
        if not model:
            raise JudgeSpecError(
                "no judge model: give one (openai:MODEL) or set OPENWOP_EVAL_JUDGE_MODEL"
            )
        return cls(
            model,
            base_url=base_url
            or env_value(env, "OPENWOP_EVAL_JUDGE_BASE_URL", "OPENAI_BASE_URL")
            or DEFAULT_BASE_URL,
            api_key=api_key or env_value(env, "OPENWOP_EVAL_JUDGE_API_KEY", "OPENAI_API_KEY"),
            timeout=timeout,
            max_attempts=max_attempts,
            json_mode=json_mode,
        )

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIJudge(model={self.model!r}, base_url={self.base_url!r})"

    async def judge(self, request: JudgeRequest) -> list[CriterionVerdict]:
        verdicts, _ = await self.judge_with_record(request)
        return verdicts

    async def judge_with_record(
        self, request: JudgeRequest
    ) -> tuple[list[CriterionVerdict], JudgeRecord]:
        """The verdicts and the record of every attempt it took to get them."""
        count, findings = len(request.criteria), request.report_findings
        messages = build_messages(request)
        attempts: list[JudgeAttempt] = []
        failures: list[str] = []
        throttled, malformed = 0, False

        def record(verdicts: list[CriterionVerdict] | None = None) -> JudgeRecord:
            final = tuple(verdicts) if verdicts is not None else None
            return JudgeRecord(
                self.model, request.task_id, request.trial_index, tuple(attempts), final, findings
            )

        for number in range(1, self.max_attempts + 1):
            outcome = await self._attempt(tuple(messages), count, findings)
            attempt = outcome.attempt
            attempts.append(attempt)
            if outcome.kind == "ok":
                return list(outcome.verdicts), record(list(outcome.verdicts))
            if outcome.kind == "refused":  # retrying would not help: stop, keeping the exchange
                status = attempt.status or 0
                raise JudgeHTTPError(
                    f"POST {self._endpoint.url} answered HTTP {status}: "
                    f"{attempt.reply or '(empty body)'}",
                    status,
                    record(),
                )
            failures.append(f"attempt {number}: {attempt.error}")
            malformed = malformed or outcome.kind == "malformed"
            if number == self.max_attempts:
                break
            if outcome.kind == "malformed":
                messages += [
                    {"role": "assistant", "content": attempt.reply or ""},
                    corrective_message(outcome.reasons, count, findings=findings),
                ]
            else:
                throttled += 1
                await self._backoff.pause(throttled, outcome.wait)
        listed = "\n".join(f"  {f}" for f in failures)
        if not malformed:  # never an answer to judge: the endpoint, not the verdicts
            raise JudgeUnreachableError(
                f"the judge at {self._endpoint.url} could not be reached in"
                f" {len(attempts)} attempt(s):\n{listed}",
                record(),
                self._endpoint.url,
            )
        raise JudgeAttemptsError(
            f"the judge gave no usable verdicts for task {request.task_id!r} trial "
            f"{request.trial_index} after {len(attempts)} attempt(s):\n{listed}",
            record(),
        )

    async def _attempt(self, messages: tuple[Message, ...], count: int, findings: bool) -> _Outcome:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": 0,
        }
        if self.json_mode:
            payload["response_format"] = {"type": "json_object"}
        result = await self._endpoint.post(payload)
        status, excerpt = result.status, result.excerpt or None
        if result.kind != "ok":
            attempt = JudgeAttempt(messages, excerpt, result.error, status)
            kind: Literal["transient", "refused"] = result.kind
            return _Outcome(attempt, kind, wait=result.wait)
        model, usage, content = result.model, result.usage, result.message.get("content")
        if not isinstance(content, str):  # e.g. a refusal, or only tool calls
            error = "the reply had no text content"
            attempt = JudgeAttempt(messages, None, error, status, model, usage)
            return _Outcome(attempt, "malformed", reasons=(error,))
        verdicts, reasons = parse_verdicts(content, count, findings=findings)
        reply = self._endpoint.redact(content)
        if not reasons:
            attempt = JudgeAttempt(messages, reply, None, status, model, usage)
            return _Outcome(attempt, "ok", tuple(verdicts))
        attempt = JudgeAttempt(
            messages, reply, self._endpoint.redact("; ".join(reasons)), status, model, usage
        )
        return _Outcome(attempt, "malformed", reasons=tuple(reasons))

    async def aclose(self) -> None:
        """Close the HTTP client if this judge created it (an injected one is left open)."""
        await self._endpoint.aclose()

    async def __aenter__(self) -> OpenAIJudge:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
