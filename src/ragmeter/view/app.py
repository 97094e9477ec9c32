"""The ``ragmeter view`` web app (aiohttp.web): read-only pages over a results store.

Its routes come from the page table, :data:`ragmeter.view.table.PAGES` (the built-in pages are
declared in :mod:`ragmeter.view.routes`). Every response carries a strict
Content-Security-Policy (no network, no framing); nothing is ever written to the store. The
only POST entries are a labelling session's answers (``ragmeter label``), written to its
labels file: accepted as JSON from the viewer's own pages only (same origin, the viewer's
token in ``X-Ragmeter-Token``), see :func:`post_refused`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hmac
import ipaddress
import re
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ragmeter.errors import RagmeterError
from ragmeter.reports.i18n import LANGS, t
from ragmeter.results.store import ResultStore, StoredRun, mask_url
from ragmeter.text import detect_language
from ragmeter.view import pages
from ragmeter.view.data import MAX_CACHED_CHARS, StoreData, Unreadable
from ragmeter.view.errors import message
from ragmeter.view.live import runs_version
from ragmeter.view.params import BadQuery, check_names
from ragmeter.view.table import PAGES, Page, PageRequest

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
HEADERS = {"Content-Security-Policy": pages.CSP_HEADER, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
           "Cache-Control": "no-store"}


class Viewer:
    """The store behind the pages; reads go through :class:`~ragmeter.view.data.StoreData`,
    cached per store version (a change to the store is seen at the next request)."""

    def __init__(self, store_url: str | None = None, lang: str | None = None,
                 runs_dir: str | None = None, static: bool = False,
                 labelling: Any = None):
        self.store, self.note = ResultStore.open_readonly(store_url)
        self.shown_url = mask_url(self.store.url)
        self.lang = lang
        self.data = StoreData(self.store)
        self.runs_dir = runs_dir
        #: pages written as static files (``view --export``): no control that needs the
        #: server, no local path
        self.static = static
        #: the labelling session this server answers for (``ragmeter label``), if any
        self.labelling = labelling
        #: what the viewer's own pages send with a POST (a page elsewhere cannot read it)
        self.token = secrets.token_urlsafe(24)

    def run(self, run_id: str) -> StoredRun:
        """A run as the pages read it (see :meth:`StoreData.run`)."""
        return self.data.run(run_id)

    def default_lang(self) -> str:
        """``--lang``, else the language of the latest run's questions (English when the
        store is empty or that run cannot be read)."""
        if self.lang:
            return self.lang
        rows = self.data.rows()
        if not rows:
            return "en"

        def detect() -> str:
            try:
                texts = self.data.sample_texts(rows[0].id)
                return detect_language([t for t in texts if t] or [rows[0].name])
            except Exception:  # a corrupt latest run must not break every page
                return "en"
        return self.data.cached(("lang", rows[0].id), detect)


VIEWER = web.AppKey("viewer", Viewer)

#: the threads that render pages. Two: a page's work is Python (one GIL) or a query, so a
#: second thread overlaps a query with another page's rendering, and one slow page never holds
#: up every other; more threads only contend for the GIL. Measured with
#: ``benchmarks/bench_view.py`` (200 runs x 5,000 samples, concurrency 10, varied URLs):
#: CPU-s per run page 0.031 / 0.043 / 0.049 / 0.051 with 1 / 2 / 3 / 6 threads on SQLite;
#: on PostgreSQL one thread leaves the diff page's p95 at 1.23 s (queries not overlapped),
#: two 0.81 s.
PAGE_THREADS = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="ragmeter-view")


#: the largest body a POST entry reads
MAX_POST_BYTES = 64 * 1024


def post_refused(request: Any, token: str) -> str | None:
    """Why a POST is not from the viewer's own page (``None``: it is): a JSON body, the
    viewer's token in ``X-Ragmeter-Token``, and, when the browser says where the request
    comes from (``Origin``, ``Sec-Fetch-Site``), this very origin."""
    if request.content_type != "application/json":
        return "a JSON body is expected"
    given = request.headers.get("X-Ragmeter-Token", "")
    if not hmac.compare_digest(given.encode(), token.encode()):
        return "missing or wrong X-Ragmeter-Token (reload the page)"
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        return "cross-origin request refused"
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site != "same-origin":
        return "cross-site request refused"
    return None


_LOCAL_HOST = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\])(?::[0-9]{1,5})?", re.IGNORECASE)


def host_is_local(host: str, target: str = "/") -> bool:
    """Whether a request names this machine: a ``Host`` of exactly a loopback name with an
    optional numeric port (``localhost:evil`` and ``127.0.0.1:P@evil.example`` are not), and a
    request line in origin form (``/path``), since an absolute-form target names its own host."""
    if not target.startswith("/") or target.startswith("//"):
        return False
    return _LOCAL_HOST.fullmatch(host) is not None


def make_app(store_url: str | None = None, lang: str | None = None, *,
             local_only: bool = False, runs_dir: str | None = None,
             static: bool = False, labelling: Any = None) -> web.Application:
    """The aiohttp application for ``store_url`` (opened read-only; errors say why not).

    ``local_only`` refuses requests whose ``Host`` is not a loopback name (no DNS-rebinding
    trick reads the results); ``labelling``: the session the ``/label`` page serves."""
    viewer = Viewer(store_url, lang, runs_dir, static, labelling)
    warm_up()

    def lang_of(request: Any) -> str:
        q = request.query.get("lang", "")
        return q if q in LANGS else viewer.default_lang()

    def respond(request: Any, title: str, body: str, active: str, *, status: int = 200,
                data: dict[str, Any] | None = None) -> Any:
        html = pages.layout(title, body, lang=lang_of(request), active=active,
                            store=None if viewer.static else viewer.shown_url,
                            note=viewer.note if viewer.note != "schema 1" else "", data=data,
                            path=request.path, query=dict(request.query))
        return web.Response(text=html, content_type="text/html", charset="utf-8",
                            status=status, headers=HEADERS)

    def serve_page(page: Page) -> Callable[[Any], Awaitable[Any]]:
        def render(request: Any, body: Any = None) -> tuple[str, str, int, dict[str, Any] | None]:
            lang = lang_of(request)
            try:
                _check_query(request.query, page)
                out = page.handler(PageRequest(viewer, request, lang, body))
            except BadQuery as exc:
                return t("v_bad_query", lang), pages.error_body(
                    message(exc, lang), lang, "v_bad_query"), 400, None
            except Unreadable as exc:
                return t("v_corrupt", lang), pages.error_body(
                    message(exc, lang), lang, "v_corrupt"), 500, None
            except RagmeterError as exc:
                return t("v_not_found", lang), pages.error_body(message(exc, lang), lang), \
                    404, None
            return out.title or page.title_in(lang), out.body, out.status, out.data

        def cached(request: Any) -> tuple[str, str, int, dict[str, Any] | None]:
            with viewer.data.pinned() as version:  # the store looked at once per request
                if not page.cache:
                    return render(request)
                if page.watches_runs and viewer.runs_dir:
                    version += "|" + runs_version(viewer.runs_dir)
                key = ("page", page.name, request.path_qs, lang_of(request))
                out = viewer.data.cached(key, lambda: render(request), version)
                if len(out[1]) > MAX_CACHED_CHARS:
                    viewer.data.forget(key, version)
                return out

        async def posted(request: Any) -> Any:
            body = await _post_body(request, viewer.token)
            if isinstance(body, web.Response):
                return body
            return await asyncio.get_running_loop().run_in_executor(
                PAGE_THREADS, _pinned, viewer.data, lambda: render(request, body))

        async def handler(request: Any) -> Any:
            if page.method == "POST":
                out = await posted(request)
                if isinstance(out, web.Response):
                    return out
                title, body, status, data = out
            else:
                title, body, status, data = await asyncio.get_running_loop().run_in_executor(
                    PAGE_THREADS, cached, request)
            if page.json:
                return web.json_response(data if status < 400 or data else
                                         {"error": title, "status": status},
                                         status=status, headers=HEADERS)
            return respond(request, title, body, page.active, status=status, data=data)
        return handler

    app = web.Application(middlewares=[_only_local(local_only)])
    app[VIEWER] = viewer
    for page in PAGES:  # routes from the page table
        app.router.add_route(page.method, page.route, serve_page(page))
    return app


def _pinned(data: StoreData, fn: Callable[[], Any]) -> Any:
    """``fn()`` with the store looked at once for all it reads (a POST's page)."""
    with data.pinned():
        return fn()


def _check_query(query: Any, page: Page) -> None:
    """A ``BadQuery`` for an unknown language or a parameter the page does not take."""
    lang_q = query.get("lang", "")
    if lang_q and lang_q not in LANGS:
        raise BadQuery("lang", f"unknown language {lang_q[:20]!r}", LANGS)
    check_names(query, page.params)


def _only_local(local_only: bool) -> Any:
    """The middleware that refuses a request whose ``Host`` is not a loopback name (when
    ``local_only``)."""
    @web.middleware
    async def only_local(request: web.Request, handler: Any) -> Any:
        target = request.raw_path if request.method != "CONNECT" else ""
        if local_only and not host_is_local(request.headers.get("Host", ""), target):
            return web.Response(status=421, text="ragmeter view answers on localhost only\n")
        return await handler(request)
    return only_local


async def _post_body(request: Any, token: str) -> Any:
    """A POST's JSON body, or the JSON error response that refuses it (another origin or
    no token: 403; too large: 413; not JSON: 400)."""
    refused = post_refused(request, token)
    if refused is not None:
        return web.json_response({"error": refused, "status": 403}, status=403,
                                 headers=HEADERS)
    if (request.content_length or 0) > MAX_POST_BYTES:
        return web.json_response({"error": "body too large", "status": 413}, status=413,
                                 headers=HEADERS)
    try:
        return await request.json()
    except ValueError:
        return web.json_response({"error": "the body is not JSON", "status": 400},
                                 status=400, headers=HEADERS)


def warm_up() -> None:
    """Load what the first request of a page would otherwise load: the tier registry (every
    tier module: the pages show tiers in its order) and the report modules."""
    from ragmeter.reports import html  # noqa: F401
    from ragmeter.reports.tiers_view import tier_names

    tier_names()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(store_url: str | None = None, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          lang: str | None = None, print_fn: Callable[[str], None] = print,
          runs_dir: str | None = None, labelling: Any = None, path: str = "/") -> None:
    """Run the viewer until interrupted (Ctrl-C); ``runs_dir``: the runner's folder, whose runs
    still running are shown live; ``labelling``: a labelling session served at ``path``."""
    app = make_app(store_url, lang, local_only=is_loopback(host), runs_dir=runs_dir,
                   labelling=labelling)
    viewer = app[VIEWER]
    shown_host = f"[{host}]" if ":" in host else host
    print_fn(f"ragmeter view: {viewer.shown_url} (read-only) at http://{shown_host}:{port}"
             f"{path} - Ctrl-C to stop")
    if not is_loopback(host):
        print_fn(f"warning: listening on {host}, reachable from other machines; the pages show "
                 "questions, answers and configs (secrets masked) without a login")
    web.run_app(app, host=host, port=port, print=None)
