"""One judge request's conversation with a backend: the messages and schema sent, a repair
after an unusable reply, a larger token budget after a truncated one, the fallback from
structured output to the schema in the prompt, and the :class:`JudgeReply` at the end.

:class:`JudgeExchange` is the LLM-judge :class:`~ragmeter.calls.seam.Exchange`; the
runner owns slots, retries, hedging and the breaker.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ragmeter.calls.errors import CallError
from ragmeter.calls.record import CallRecord
from ragmeter.judges.backend import Completion
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.parsing import CompiledSchema, validate
from ragmeter.judges.prompts import schema_instruction
from ragmeter.text import detect_language

log = logging.getLogger("ragmeter.judges")

REPAIR_PROMPT = {
    "en": ("Your previous reply could not be used: {problem}. Reply again with only one JSON "
           "value that matches the schema, nothing else."),
    "ru": ("Твой предыдущий ответ нельзя использовать: {problem}. Ответь ещё раз только одним "
           "JSON-значением по схеме, без другого текста."),
}

#: in a pool, an unparseable reply is resent unchanged this many times before a repair
POOL_RESENDS = 3

_COMPILED: dict[str, CompiledSchema] = {}
_INSTRUCTIONS: dict[tuple[str, str], str] = {}
_MEMO_MAX = 256


def compiled_schema(schema: dict[str, Any], schema_json: str) -> CompiledSchema:
    """The compiled validator of ``schema`` (canonical JSON ``schema_json``), made once."""
    got = _COMPILED.get(schema_json)
    if got is None:
        if len(_COMPILED) >= _MEMO_MAX:
            _COMPILED.clear()
        got = _COMPILED[schema_json] = CompiledSchema.of(schema)
    return got


def cost_of(tokens_in: int, tokens_out: int, price_in: float, price_out: float) -> float:
    """Cost of one call with prices per 1M tokens."""
    return (tokens_in * price_in + tokens_out * price_out) / 1_000_000.0


@dataclass
class Session:
    """What the exchanges of one batch share: structured output still accepted, decisions."""

    schema_ok: bool
    decisions: Counter[str]
    pooled: bool = False
    #: called once when the server rejects structured output (the judge remembers it)
    on_schema_rejected: Callable[[], None] | None = None


class JudgeExchange:
    """See the module doc. ``schema_json`` is the request's canonical schema (from its digest)."""

    def __init__(self, request: JudgeRequest, config: JudgeConfig, model: str,
                 session: Session, schema_json: str, name: str = "judge"):
        self.request = request
        self.cfg = config
        self.session = session
        self.name = name
        self.max_tokens = (request.max_tokens if request.max_tokens is not None
                           else config.max_tokens)
        self.temperature = (request.temperature if request.temperature is not None
                            else config.temperature)
        self.messages = list(request.messages)
        self.text_mode = request.schema.get("type") == "string"
        self.schema_in_prompt = self.text_mode  # nothing to constrain: no response_format
        self.schema_json = schema_json
        self.repaired = self.widened = self.mock = False
        self.tokens_in = self.tokens_out = 0
        self.raw: str | None = None
        self.model = model
        self.token_prob: float | None = None
        self._lang: str | None = None
        self._usable = True
        self.moved = 0    # unparseable replies of a pool resent as they were

    @property
    def language(self) -> str:
        """The request's language (detected once, and only when a repair or the schema
        instruction needs it)."""
        if self._lang is None:
            setting = self.cfg.language
            self._lang = (setting if setting != "auto" else
                          detect_language([m.get("content", "") for m in self.request.messages]))
        return self._lang

    def sent(self) -> JudgeRequest:
        """The request as it goes out now: its messages (a repair's included), its effective
        token budget and temperature, its metric, call kind and sample; no follow-ups."""
        return replace(self.request, messages=tuple(self.messages), max_tokens=self.max_tokens,
                       temperature=self.temperature, then=None)

    # -- the runner's Exchange --------------------------------------------------------------
    def payload(self) -> dict[str, Any]:
        if not self.session.schema_ok and not self.schema_in_prompt:  # after taking a slot
            self.messages = _with_schema_instruction(self.messages, self.request.schema,
                                                     self.schema_json, self.language)
            self.schema_in_prompt = True
        return {"messages": self.messages,
                "schema": None if self.schema_in_prompt else self.request.schema,
                "max_tokens": self.max_tokens, "temperature": self.temperature,
                "seed": self.cfg.seed}

    def resend(self, err: CallError) -> bool:
        if err.reason != "schema_unsupported" or self.schema_in_prompt:
            return False
        self.session.schema_ok = False
        if self.session.on_schema_rejected is not None:
            self.session.on_schema_rejected()
        log.info("judge %s: server rejected response_format; using schema in prompt", self.name)
        return True

    def failed(self, err: CallError, detail: str, rec: CallRecord) -> JudgeReply:
        reason = err.reason if err.reason != "schema_unsupported" else "http_4xx"
        return self.finish(None, reason, detail, rec)

    def skipped(self, detail: str, rec: CallRecord) -> JudgeReply:
        return self.finish(None, "connection_error", detail, rec)

    def usable(self) -> bool:
        return self._usable

    def outcome(self, comp: Completion, rec: CallRecord) -> JudgeReply | None:
        self._usable = True
        self.tokens_in += comp.tokens_in
        self.tokens_out += comp.tokens_out
        self.raw = comp.text
        self.mock = self.mock or comp.mock
        self.token_prob = comp.token_prob
        if comp.model:
            self.model = comp.model
        if comp.refusal:
            return self.finish(None, "refused", comp.refusal[:300], rec)
        if comp.finish_reason == "length":
            return self._truncated(rec)
        if self.text_mode:
            text = (comp.text or "").strip()
            problems = validate(text, self.request.schema)
            if text and not problems:
                return self.finish(text, None, None, rec)
            return self.finish(None, "parse_error",
                               "empty reply" if not text else "; ".join(problems), rec)
        parsed = compiled_schema(self.request.schema, self.schema_json).parse(comp.text)
        if parsed.ok:
            return self.finish(parsed.data, None, None, rec)
        self._usable = parsed.reason != "parse_error"   # no JSON at all: an endpoint fault
        if not self._usable and self.session.pooled and self.moved < POOL_RESENDS:
            # in a pool, the same question goes again, most likely to another endpoint
            # (the one that answered it loses health and is taken out after a few)
            self.moved += 1
            self.session.decisions["resent_unparseable"] += 1
            return None
        if self.repaired:
            return self.finish(None, parsed.reason, f"{parsed.detail} (after one repair)", rec)
        self.repaired = True
        problem = parsed.detail or parsed.reason or "invalid"
        note = REPAIR_PROMPT.get(self.language, REPAIR_PROMPT["en"]).format(
            problem=problem[:300])
        self.messages = [*self.messages, {"role": "assistant", "content": comp.text or ""},
                         {"role": "user", "content": note}]
        return None

    # -- internals ---------------------------------------------------------------------------
    def _truncated(self, rec: CallRecord) -> JudgeReply | None:
        if not self.widened and self.cfg.truncation_retry_factor > 1.0:
            self.widened = True
            old = self.max_tokens
            self.max_tokens = max(old + 1, int(old * self.cfg.truncation_retry_factor))
            self.session.decisions["truncation_retry"] += 1
            log.debug("judge %s: truncated at max_tokens=%d, retry with %d", self.name, old,
                      self.max_tokens)
            return None
        return self.finish(None, "truncated",
                           f"finish_reason=length at max_tokens={self.max_tokens}", rec)

    def finish(self, data: Any, reason: str | None, detail: str | None,
               rec: CallRecord) -> JudgeReply:
        extra: dict[str, Any] = {"retries": rec.retries, "repaired": self.repaired,
                                 "structured": not self.schema_in_prompt and not self.text_mode}
        if self.widened:
            extra["truncation_retry"] = True
        if self.mock:
            extra["mock"] = True
        if self.token_prob is not None and data is not None:
            extra["token_prob"] = self.token_prob
        if self.session.pooled:
            extra["endpoints"] = rec.endpoints
        cfg = self.cfg
        return JudgeReply(
            data=data, reason=reason, detail=detail, raw=self.raw, model=self.model,
            latency_s=rec.latency, tokens_in=self.tokens_in, tokens_out=self.tokens_out,
            cost=cost_of(self.tokens_in, self.tokens_out, cfg.price_in, cfg.price_out),
            attempts=rec.attempts, extra=extra)


def _with_schema_instruction(messages: list[dict[str, str]], schema: dict[str, Any],
                             schema_json: str, lang: str) -> list[dict[str, str]]:
    note = _INSTRUCTIONS.get((schema_json, lang))
    if note is None:
        if len(_INSTRUCTIONS) >= _MEMO_MAX:
            _INSTRUCTIONS.clear()
        note = _INSTRUCTIONS[(schema_json, lang)] = schema_instruction(schema, lang)
    if any(note in m.get("content", "") for m in messages):
        return messages
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = out[0]["content"] + "\n\n" + note
    else:
        out.insert(0, {"role": "system", "content": note})
    return out


__all__ = ["REPAIR_PROMPT", "JudgeExchange", "Session", "compiled_schema", "cost_of"]
