"""Redirects, answered by ragmeter itself: a configured header never reaches another origin.

aiohttp follows a redirect by itself and drops only ``Authorization`` on the way to another
host: a secret in ``X-Api-Key`` (or any configured header) would go wherever a server sends
the request. So every request of :mod:`ragmeter.calls.http` is sent with redirects off, and
:func:`next_hop` decides each one under a mode:

* ``never``: a redirect is the call's error ``redirected`` naming the ``Location``;
* ``same-origin`` (the default): followed while it stays on the origin of the URL that was
  configured (scheme, host name and port, compared as written: ``localhost`` and
  ``127.0.0.1`` are two origins), else the error ``redirected``;
* ``always``: followed anywhere, the configured headers sent only to the configured origin
  (:func:`origin` of the hop equal to the first one's).

No cookie jar is kept (:meth:`~ragmeter.calls.http.LoopSessions.get`): a cookie an
origin sets is never sent anywhere, so it cannot follow a redirect to another port of the
same host either. At most :data:`MAX_REDIRECTS` hops. 303 (and 301 / 302 after a POST) continue as a GET
without a body, as browsers do; 307 / 308 repeat the method and the body.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

from ragmeter.calls.errors import CallError
from ragmeter.secrets import mask

REDIRECT_MODES = ("never", "same-origin", "always")
#: followed on the same origin only: a trailing-slash redirect (``/ask`` -> ``/ask/``, as
#: FastAPI and Django answer) keeps working, and nothing configured leaves the origin
DEFAULT_REDIRECTS = "same-origin"
MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}

Origin = tuple[str, str, int | None]


def origin(url: str) -> Origin:
    """``(scheme, host, port)`` of ``url``: the host lower-cased as written (no name
    resolution), the port the scheme's default when none is given."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:      # a port that is not a number: an origin of its own
        port = None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def _shown(o: Origin) -> str:
    scheme, host, port = o
    default = _DEFAULT_PORTS.get(scheme)
    return f"{scheme}://{host}" + ("" if port == default else f":{port}")


@dataclass(frozen=True)
class Hop:
    """Where a redirect leads: the next URL, its method, whether the body goes with it."""

    url: str
    method: str
    keeps_body: bool


def next_hop(mode: str, status: int, location: str, current: str, method: str, home: Origin,
             hops: int) -> Hop:
    """The next request after a redirect ``status`` to ``location`` (relative to
    ``current``) under ``mode``, or the error ``redirected`` saying where it led and why it
    is not followed. ``home``: the origin of the configured URL; ``hops``: redirects so far."""
    target = _resolve(location, current)
    shown = mask(target)
    if mode == "never":
        raise _redirected(f"HTTP {status} to {shown} (follow_redirects: never)")
    if hops >= MAX_REDIRECTS:
        raise _redirected(f"more than {MAX_REDIRECTS} redirects; the last: HTTP {status} "
                          f"to {shown}")
    to = origin(target)
    if to[0] not in _DEFAULT_PORTS:
        raise _redirected(f"HTTP {status} to {shown}: not an http(s) URL")
    if mode != "always" and to != home:
        raise _redirected(f"HTTP {status} to {shown}: another origin than {_shown(home)}, "
                          "not followed (follow_redirects: same-origin); the configured "
                          "headers are never sent there")
    new = "GET" if (status == 303 and method != "HEAD") or (
        status in (301, 302) and method == "POST") else method
    return Hop(target, new, keeps_body=new == method)


def _resolve(location: str, current: str) -> str:
    """``location`` as an absolute URL without a ``user:password@`` part (credentials a
    server puts in a Location are not sent)."""
    try:
        parts = urlsplit(urljoin(current, location.strip()))
        netloc = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    except ValueError:
        raise _redirected(f"a redirect to an unreadable Location {mask(location)[:200]!r}"
                          ) from None


def _redirected(detail: str) -> CallError:
    return CallError("redirected", detail, fault=False)


__all__ = ["DEFAULT_REDIRECTS", "MAX_REDIRECTS", "REDIRECT_MODES", "REDIRECT_STATUSES", "Hop",
           "next_hop", "origin"]
