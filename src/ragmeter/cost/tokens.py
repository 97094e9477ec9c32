"""Token counts without a tokenizer, and a minimal valid reply to any judge schema.

No tokenizer for arbitrary remote models ships offline, so ragmeter counts characters and
divides by a measured characters-per-token rate, separately for Cyrillic and for other text
(:data:`CHARS_PER_TOKEN`, calibrated against the ``prompt_tokens`` that the bundled Qwen2.5
GGUF judge reported for the benchmark prompts; BPE tokenizers of other families land within
about ±25 %). Each message adds :data:`MESSAGE_OVERHEAD` tokens.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ragmeter.judges.base import JudgeRequest

#: characters per token: (Cyrillic letters, everything else); calibrated, see module doc
CHARS_PER_TOKEN = (2.9, 3.7)
MESSAGE_OVERHEAD = 4
#: a one-sentence reason in a reply, in characters
REASON_CHARS = 90
#: expected length of a free-text reply (a generated answer), in tokens
TEXT_REPLY_TOKENS = 200
_CYR = re.compile(r"[\u0400-\u04ff]")


def count_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (see :data:`CHARS_PER_TOKEN`)."""
    if not text:
        return 0
    cyr = len(_CYR.findall(text))
    rest = len(text) - cyr
    return math.ceil(cyr / CHARS_PER_TOKEN[0] + rest / CHARS_PER_TOKEN[1])


def request_tokens(req: JudgeRequest) -> int:
    """Estimated input tokens of a request (every message plus its overhead)."""
    return sum(count_tokens(m.get("content", "")) + MESSAGE_OVERHEAD for m in req.messages)


def minimal_instance(schema: Any, *, depth: int = 0) -> Any:
    """A small value valid against ``schema`` (the subset ragmeter's judge prompts use)."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties") or {}
        keys = list(schema.get("required") or props)
        if "reason" in props and "reason" not in keys:
            keys.append("reason")
        out = {}
        for k in keys:
            if k == "reason":
                out[k] = "x" * REASON_CHARS
            else:
                out[k] = minimal_instance(props.get(k, {}), depth=depth + 1)
        return out
    if kind == "array":
        lo = int(schema.get("minItems") or 0)
        hi = schema.get("maxItems")
        n = lo if hi is not None and hi == lo else max(lo, 3)
        items = [minimal_instance(schema.get("items", {}), depth=depth + 1) for _ in range(n)]
        for i, it in enumerate(items, 1):
            if isinstance(it, dict) and "id" in it:
                it["id"] = i
        return items
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0.0))
    if kind == "boolean":
        return True
    if kind == "string":
        return "placeholder claim text of typical length for an estimate"
    return None


def money(x: float) -> str:
    """A cost as it is printed: four decimals under one unit, two above."""
    return f"${x:,.4f}" if x < 1 else f"${x:,.2f}"


__all__ = ["CHARS_PER_TOKEN", "MESSAGE_OVERHEAD", "REASON_CHARS", "TEXT_REPLY_TOKENS",
           "count_tokens", "minimal_instance", "money", "request_tokens"]
