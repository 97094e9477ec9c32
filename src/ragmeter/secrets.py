"""Secrets never leave the process: one masking function for every string we write or print.

:func:`mask` (alias :func:`mask_text`) replaces, inside free text,

* the password of every URL (``scheme://user:PASSWORD@host`` -> ``scheme://user:***@host``),
* ``Bearer <token>`` and ``sk-...`` style API keys,
* every secret value registered with :func:`register_secret` — the values of the environment
  variables named by ``*_env`` config keys are registered when a config passes through
  :func:`mask_secrets`, and the values of environment variables whose *name* looks secret
  (``*_API_KEY``, ``*_TOKEN``, ``*PASSWORD*``, ``*SECRET*``) are always masked.

:func:`mask_secrets` deep-copies a config or record: a key whose name looks secret
(``api_key``, ``password``, ``token``, ``secret``, ``authorization``) has its value replaced by
``***``; every string is passed through :func:`mask`; ``api_key_env`` (the *name* of an
environment variable) is kept — it is not a secret.

Every function here runs in time linear in the length of its input (no backtracking regex): a
hostile multi-megabyte string is masked in milliseconds.

This module is on the ground floor: it imports nothing from ragmeter, so data loaders, the
results store, reports and the runner can all use it.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Mapping
from typing import Any

MASK = "***"
_SECRET_KEY = re.compile(r"(api[_-]?key|password|passwd|secret|token|authorization|auth)$",
                         re.IGNORECASE)
_SECRET_ENV_NAME = re.compile(r"(api[_-]?key|password|passwd|secret|token)", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._\-]+", re.IGNORECASE)
_SK = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
# one character class per scan: every search below advances past what it has read
_USER_END = re.compile(r"[:/@\s]")
_PASSWORD_END = re.compile(r"[@\s]")
_AUTHORITY_END = re.compile(r"[/?#\s]")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_MIN_SECRET_LEN = 4

_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Mask ``value`` wherever it appears in text passed to :func:`mask` from now on
    (values shorter than 4 characters are ignored: masking them would garble ordinary text)."""
    if value and len(value) >= _MIN_SECRET_LEN:
        _registered.add(value)


def register_env_secret(name: str | None) -> None:
    """Register the value of environment variable ``name`` (if set) as a secret."""
    if name:
        register_secret(os.environ.get(str(name)))


_cache: dict[str, Any] = {"key": None, "at": 0.0, "secrets": []}
_ENV_RESCAN_S = 0.5


def _known_secrets() -> list[str]:
    """Registered secrets and secret-named environment values, longest first (so a secret that
    contains another is masked whole). Recomputed when a secret is registered or a variable is
    added or removed, and at least every half second (a changed value of an existing variable)."""
    now = time.monotonic()
    key = (len(_registered), len(os.environ))
    if key != _cache["key"] or now - _cache["at"] > _ENV_RESCAN_S:
        env = [v for k, v in os.environ.items()
               if len(v) >= _MIN_SECRET_LEN and _SECRET_ENV_NAME.search(k)]
        _cache.update(key=key, at=now,
                      secrets=sorted(_registered.union(env), key=len, reverse=True))
    secrets: list[str] = _cache["secrets"]
    return secrets


def is_secret_key(key: str) -> bool:
    """Whether a config/record key names a secret value (``api_key_env`` names a variable)."""
    return bool(_SECRET_KEY.search(key)) and not key.lower().endswith("_env")


def _mask_url_passwords(text: str) -> str:
    """``scheme://user:password@`` -> ``scheme://user:***@`` in linear time.

    For each ``://`` (found with ``str.find``) the user part runs to the first ``:/@`` or
    whitespace; after a ``:`` the password runs to the next ``@`` (masked) or whitespace/end (not
    a password: a ``host:port``). The scan resumes after the password's end, so no character is
    read more than a constant number of times.
    """
    if "://" not in text:
        return text
    out: list[str] = []
    pos = 0  # text[:pos] is already copied to out
    i = text.find("://")
    while i != -1:
        if i == 0 or text[i - 1] not in _SCHEME_CHARS:
            i = text.find("://", i + 3)
            continue
        user_start = i + 3
        m = _USER_END.search(text, user_start)
        if m is None or m.group() != ":":
            i = text.find("://", m.end() if m else len(text))
            continue
        pw_start = m.end()
        end = _PASSWORD_END.search(text, pw_start)
        if end is None or end.group() != "@" or end.start() == pw_start:
            # no password here; any '://' before this point ends at the same place: skip it
            i = text.find("://", end.start() if end else len(text))
            continue
        # an unencoded '@' inside the password: the userinfo ends at the authority's last '@'
        stop = _AUTHORITY_END.search(text, end.end())
        last_at = text.rfind("@", end.end(), stop.start() if stop else len(text))
        out.append(text[pos:pw_start])
        out.append(MASK)
        pos = last_at if last_at != -1 else end.start()
        i = text.find("://", pos)
    out.append(text[pos:])
    return "".join(out)


def mask(text: str) -> str:
    """``text`` with URL passwords, bearer tokens, ``sk-`` keys and known secret values masked."""
    if not text:
        return text
    text = _mask_url_passwords(text)
    if "earer" in text or "EARER" in text:
        text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    if "sk-" in text:
        text = _SK.sub(MASK, text)
    for secret in _known_secrets():
        if secret in text:
            text = text.replace(secret, MASK)
    return text


mask_text = mask


def mask_url(url: str) -> str:
    """A URL (database, store, judge endpoint) with its password replaced by ``***``."""
    return mask(str(url))


def split_url_credentials(url: str) -> tuple[str, str | None]:
    """``(url without user:password, Authorization header value or None)``.

    Credentials written into an endpoint URL (``http://user:pass@host/v1``) are never sent in
    the URL: the caller puts the returned ``Basic`` value into the ``Authorization`` header
    (unless an API key is set, which wins — the two are never combined). The password is
    registered as a secret, so it is masked in every output.
    """
    from base64 import b64encode
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    register_secret(password)
    register_secret(unquote(password))
    token = b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
    register_secret(token)
    return urlunsplit(parts._replace(netloc=host)), f"Basic {token}"


def mask_secrets(obj: Any) -> Any:
    """A deep copy of ``obj`` with secret values masked (mappings, lists, strings).

    A ``*_env`` key's value names an environment variable holding a secret: that variable's
    value is registered, so it is masked in every later :func:`mask` call too.
    """
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if str(k).lower().endswith("_env") and isinstance(v, str):
                register_env_secret(v)
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
        return mask(obj)
    return obj


class MaskingFilter(logging.Filter):
    """A logging filter that masks secrets in a record's message (and drops its args)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a malformed record: leave it to logging's own error path
            return True
        record.msg, record.args = mask(msg), None
        return True


_LOGGERS = ("ragmeter", "ragmeter.calls", "ragmeter.judges", "ragmeter.runner", "ragmeter.data")


def install_log_masking() -> None:
    """Mask secrets in every record logged by ragmeter's loggers (idempotent)."""
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, MaskingFilter) for f in logger.filters):
            logger.addFilter(MaskingFilter())
