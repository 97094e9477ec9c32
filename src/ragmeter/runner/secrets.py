"""Secrets never leave the process: mask them in stored configs, logs and reports.

A key whose name looks secret (``api_key``, ``password``, ``token``, ``secret``,
``authorization``) has its value replaced by ``***``; URLs have their password masked;
``api_key_env`` (the *name* of an environment variable) is kept — it is not a secret.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MASK = "***"
_SECRET_KEY = re.compile(r"(api[_-]?key|password|passwd|secret|token|authorization|auth)$",
                         re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(?P<pre>[a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]+:)(?P<pw>[^@\s]+)(?=@)")
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._\-]+", re.IGNORECASE)
_SK = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key)) and not key.lower().endswith("_env")


def mask_text(text: str) -> str:
    """Mask URL passwords, bearer tokens and ``sk-...`` keys inside free text."""
    text = _URL_PASSWORD.sub(lambda m: m.group("pre") + MASK, text)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    return _SK.sub(MASK, text)


def mask_secrets(obj: Any) -> Any:
    """A deep copy of ``obj`` with secret values masked (mappings, lists, strings)."""
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            key = str(k)
            if is_secret_key(key) and v not in (None, ""):
                out[key] = MASK
            elif key == "extra_headers" and isinstance(v, Mapping):
                out[key] = {h: MASK for h in v}
            else:
                out[key] = mask_secrets(v)
        return out
    if isinstance(obj, (list, tuple)):
        return [mask_secrets(v) for v in obj]
    if isinstance(obj, str):
        return mask_text(obj)
    return obj
