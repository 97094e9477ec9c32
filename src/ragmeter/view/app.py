"""The ``ragmeter view`` web app (aiohttp.web): read-only pages over a results store.

Its routes (all GET) come from the page table, :data:`ragmeter.view.table.PAGES` (the built-in
pages are declared in :mod:`ragmeter.view.routes`). Every response carries a strict
Content-Security-Policy (no network, no framing); nothing is ever written to the store.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ragmeter.errors import RagmeterError
from ragmeter.reports.html import run_lang
from ragmeter.reports.i18n import LANGS, t
from ragmeter.results.store import ResultStore, StoredRun, mask_url
from ragmeter.view import pages
from ragmeter.view.table import PAGES, Page, PageRequest

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
RUN_CACHE = 8
HEADERS = {"Content-Security-Policy": pages.CSP_HEADER, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
           "Cache-Control": "no-store"}


class Viewer:
    """The store behind the pages, with a small cache of loaded runs."""

    def __init__(self, store_url: str | None = None, lang: str | None = None):
        self.store, self.note = ResultStore.open_readonly(store_url)
        self.shown_url = mask_url(self.store.url)
        self.lang = lang
        self._runs: OrderedDict[str, StoredRun] = OrderedDict()

    def run(self, run_id: str, samples: bool = True) -> StoredRun:
        key = f"{run_id}|{samples}"
        if key in self._runs:
            self._runs.move_to_end(key)
            return self._runs[key]
        run = self.store.load_run(run_id, samples=samples)
        self._runs[key] = run
        while len(self._runs) > RUN_CACHE:
            self._runs.popitem(last=False)
        return run

    def default_lang(self) -> str:
        if self.lang:
            return self.lang
        rows = self.store.run_rows()
        if not rows:
            return "en"
        self.lang = run_lang(self.run(rows[0].id))
        return self.lang


VIEWER = web.AppKey("viewer", Viewer)


LOCAL_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def make_app(store_url: str | None = None, lang: str | None = None, *,
             local_only: bool = False) -> web.Application:
    """The aiohttp application for ``store_url`` (opened read-only; errors say why not).

    ``local_only`` refuses requests whose ``Host`` is not a loopback name, so a web page
    elsewhere cannot read the results through a DNS-rebinding trick."""
    viewer = Viewer(store_url, lang)

    @web.middleware
    async def only_local(request: web.Request, handler: Any) -> Any:
        if local_only and _host_name(request.host or "") not in LOCAL_NAMES:
            return web.Response(status=421, text="ragmeter view answers on localhost only\n")
        return await handler(request)

    def lang_of(request: Any) -> str:
        q = request.query.get("lang", "")
        return q if q in LANGS else viewer.default_lang()

    def respond(request: Any, title: str, body: str, active: str, *, status: int = 200,
                data: dict[str, Any] | None = None) -> Any:
        lang = lang_of(request)
        html = pages.layout(title, body, lang=lang, active=active, store=viewer.shown_url,
                            note=viewer.note if viewer.note != "schema 1" else "", data=data,
                            path=request.path, query=dict(request.query))
        return web.Response(text=html, content_type="text/html", charset="utf-8",
                            status=status, headers=HEADERS)

    def serve_page(page: Page) -> Callable[[Any], Awaitable[Any]]:
        def render(request: Any) -> Any:
            lang = lang_of(request)
            try:
                out = page.handler(PageRequest(viewer, request, lang))
            except RagmeterError as exc:
                return respond(request, t("v_not_found", lang), pages.error_body(str(exc), lang),
                               page.active, status=404)
            return respond(request, out.title or page.title_in(lang), out.body, page.active,
                           status=out.status, data=out.data)

        async def handler(request: Any) -> Any:
            return await asyncio.get_running_loop().run_in_executor(None, render, request)
        return handler

    app = web.Application(middlewares=[only_local])
    app[VIEWER] = viewer
    for page in PAGES:  # routes from the page table
        app.router.add_get(page.route, serve_page(page))
    return app


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(store_url: str | None = None, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          lang: str | None = None, print_fn: Callable[[str], None] = print) -> None:
    """Run the viewer until interrupted (Ctrl-C)."""
    app = make_app(store_url, lang, local_only=is_loopback(host))
    viewer = app[VIEWER]
    shown_host = f"[{host}]" if ":" in host else host
    print_fn(f"ragmeter view: {viewer.shown_url} (read-only) at http://{shown_host}:{port}/ "
             "- Ctrl-C to stop")
    if not is_loopback(host):
        print_fn(f"warning: listening on {host}, reachable from other machines; the pages show "
                 "questions, answers and configs (secrets masked) without a login")
    web.run_app(app, host=host, port=port, print=None)
