"""Endpoints: credentials out of URLs, a stable endpoint identity, URL masking.

An endpoint URL may carry credentials (``http://user:pass@host/v1``). They are moved into an
``Authorization: Basic`` header and never appear in the URL that is requested, logged or
put into an error detail; splitting and masking are :mod:`ragmeter.secrets`' (the one home of
masking), named here as the endpoint pools use them.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from ragmeter.errors import ConfigError
from ragmeter.secrets import mask as mask_url_credentials
from ragmeter.secrets import split_url_credentials as split_credentials

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Endpoint:
    """One server of a pool: the URL to call (no credentials), its identity, auth."""

    url: str                       # base URL without credentials, no trailing slash
    identity: str                  # normalised: lower-case scheme and host, no default port
    api_key_env: str | None = None
    basic_auth: str | None = None  # "Basic ..." from credentials that were in the URL

    def __repr__(self) -> str:
        return f"Endpoint({self.identity!r})"

    def secrets(self) -> list[str]:
        """Strings that must never appear in an error detail."""
        out = []
        if self.basic_auth:
            out.append(self.basic_auth.split(" ", 1)[-1])
            raw = base64.b64decode(self.basic_auth.split(" ", 1)[-1]).decode("utf-8", "replace")
            password = raw.partition(":")[2]
            out += [password, raw]
        return [s for s in out if s]


def endpoint_identity(url: str) -> str:
    """The endpoint a URL names, independent of spelling and credentials:
    ``HTTP://User:pw@Host:80/v1/`` → ``http://host/v1``."""
    clean, _ = split_credentials(url)
    parts = urlsplit(clean)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    path = parts.path.rstrip("/")
    if path.endswith("/chat/completions"):
        path = path[: -len("/chat/completions")]
    return urlunsplit((scheme, netloc, path.rstrip("/"), parts.query, ""))


def make_endpoints(urls: tuple[str, ...], key_envs: tuple[str | None, ...],
                   key_present: dict[str, bool]) -> list[Endpoint]:
    """Pair URLs with key variables: one URL and n keys, n URLs and one key, or n and n.

    ``key_present`` says which key variables hold a value now; a URL with credentials plus
    a key that is set is a :class:`ConfigError` (the server would get two identities).
    """
    if not urls:
        return []
    keys = key_envs or (None,)
    if len(urls) == 1 and len(keys) > 1:
        urls = urls * len(keys)
    elif len(keys) == 1:
        keys = keys * len(urls)
    elif len(keys) != len(urls):
        raise ConfigError("api_key_env", f"lists {len(keys)} variables for {len(urls)} base "
                          "URLs: give one variable, one per URL, or one URL and several keys")
    out = []
    for i, (url, key) in enumerate(zip(urls, keys, strict=True)):
        clean, basic = split_credentials(url)
        if basic and key and key_present.get(key):
            where = "base_url" if len(urls) == 1 else f"base_url[{i}]"
            raise ConfigError(where, f"has credentials in the URL and the API key variable "
                              f"{key} is set too; use one: remove user:password@ from the URL "
                              "or set api_key_env: null")
        out.append(Endpoint(url=clean.rstrip("/"), identity=endpoint_identity(clean),
                            api_key_env=key, basic_auth=basic))
    return out


__all__ = ["Endpoint", "endpoint_identity", "make_endpoints", "mask_url_credentials",
           "split_credentials"]
