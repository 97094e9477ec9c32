"""The ``ragmeter view`` web app (aiohttp.web): read-only pages over a results store.

Routes (all GET): ``/`` runs registry, ``/history`` metric history, ``/run/{id}`` run details
(the HTML report), ``/run/{id}/sample/{sample}`` per-sample drill-down, ``/compare`` one tier
across runs, ``/diff`` two runs side by side, ``/judges`` the judge cards of stored runs side
by side. Every response carries a strict
Content-Security-Policy (no network, no framing); nothing is ever written to the store.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ragmeter.errors import RagmeterError
from ragmeter.reports.html import run_lang
from ragmeter.reports.i18n import LANGS, t
from ragmeter.results.store import ResultStore, StoredRun, mask_url
from ragmeter.view import pages

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


_LOCAL_HOST = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\])(?::[0-9]{1,5})?", re.IGNORECASE)


def host_is_local(host: str, target: str = "/") -> bool:
    """Whether a request names this machine: a ``Host`` of exactly a loopback name with an
    optional numeric port (``localhost:evil`` and ``127.0.0.1:P@evil.example`` are not), and a
    request line in origin form (``/path``), since an absolute-form target names its own host."""
    if not target.startswith("/") or target.startswith("//"):
        return False
    return _LOCAL_HOST.fullmatch(host) is not None


def make_app(store_url: str | None = None, lang: str | None = None, *,
             local_only: bool = False) -> web.Application:
    """The aiohttp application for ``store_url`` (opened read-only; errors say why not).

    ``local_only`` refuses requests whose ``Host`` is not a loopback name, so a web page
    elsewhere cannot read the results through a DNS-rebinding trick."""
    viewer = Viewer(store_url, lang)

    @web.middleware
    async def only_local(request: web.Request, handler: Any) -> Any:
        target = request.raw_path if request.method != "CONNECT" else ""
        if local_only and not host_is_local(request.headers.get("Host", ""), target):
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

    Handler = Callable[[Any], Awaitable[Any]]

    def guarded(active: str) -> Callable[[Callable[[Any], Any]], Handler]:
        def wrap(fn: Callable[[Any], Any]) -> Handler:
            async def handler(request: Any) -> Any:
                loop = asyncio.get_running_loop()
                try:
                    return await loop.run_in_executor(None, fn, request)
                except RagmeterError as exc:
                    return respond(request, t("v_not_found", lang_of(request)),
                                   pages.error_body(str(exc), lang_of(request)), active,
                                   status=404)
            return handler
        return wrap

    @guarded("v_runs")
    def registry(request: Any) -> Any:
        lang = lang_of(request)
        q = request.query
        rows = viewer.store.run_rows()
        params = {k: q.get(k, "").strip() for k in ("name", "tag", "commit", "since", "until")}
        shown = pages.filter_runs(rows, **params)
        ids = [r.id for r in shown]
        summaries = viewer.store.metric_summaries(ids) if ids else []
        cols = list(q.getall("col", []))
        latest = [m for m in summaries if shown and m.run_id == shown[0].id]
        columns = cols or pages.default_columns(latest)
        body = pages.registry_page(shown, len(rows), summaries, columns,
                                   {**params, "col_list": cols}, lang)
        return respond(request, t("v_runs", lang), body, "v_runs")

    @guarded("v_history")
    def history(request: Any) -> Any:
        lang = lang_of(request)
        name = request.query.get("name", "").strip()
        rows = pages.filter_runs(viewer.store.run_rows(), name=name)
        summaries = viewer.store.metric_summaries([r.id for r in rows]) if rows else []
        choices = pages.metric_choices(summaries)
        choice = request.query.get("metric") or (choices[0] if choices else "")
        if choice and "|" in choice and choice not in choices:
            raise RagmeterError(f"no metric '{choice.replace('|', ' · ')}' in this store")
        body = pages.history_page(rows, summaries, choices, choice, lang, name)
        return respond(request, t("v_history", lang), body, "v_history")

    @guarded("v_runs")
    def run_details(request: Any) -> Any:
        lang = lang_of(request)
        run = viewer.run(request.match_info["run_id"])
        body, data = pages.run_page(run, lang)
        return respond(request, f"{run.name} · {run.id}", body, "v_runs", data=data)

    @guarded("v_runs")
    def sample(request: Any) -> Any:
        lang = lang_of(request)
        run = viewer.run(request.match_info["run_id"])
        sid = request.match_info["sample_id"]
        body = pages.sample_page(run, sid, lang)
        status = 404 if "class=error" in body[:400] else 200
        return respond(request, f"{sid} · {run.id}", body, "v_runs", status=status)

    @guarded("v_compare")
    def compare(request: Any) -> Any:
        lang = lang_of(request)
        rows = viewer.store.run_rows()
        chosen = list(request.query.getall("run", []))
        if not chosen and rows:  # the latest runs of the latest benchmark (same data)
            chosen = [r.id for r in rows if r.name == rows[0].name][:5]
        runs = [viewer.run(rid, samples=False) for rid in chosen]
        runs.sort(key=lambda r: (r.created_at, r.id))
        tiers: list[str] = []
        for run in runs:
            tiers += [x for x, rec in run.tiers.items() if rec.status == "ok" and rec.results
                      and x not in tiers]
        tier = request.query.get("tier") or ("retrieval" if "retrieval" in tiers
                                             else (tiers[0] if tiers else ""))
        body = pages.compare_page(runs, tiers, tier, rows, [r.id for r in runs], lang)
        return respond(request, t("v_compare", lang), body, "v_compare")

    @guarded("v_diff")
    def diff(request: Any) -> Any:
        from ragmeter.runner.comparing import compare_runs

        lang = lang_of(request)
        rows = viewer.store.run_rows()
        picks = list(request.query.getall("pick", []))
        a_id = request.query.get("a") or (picks[0] if len(picks) >= 2 else None)
        b_id = request.query.get("b") or (picks[1] if len(picks) >= 2 else None)
        if not a_id and not b_id and len(rows) >= 2:
            a_id, b_id = rows[1].id, rows[0].id
        if a_id and b_id:
            a, b = viewer.run(a_id), viewer.run(b_id)
            if b.created_at < a.created_at and picks:  # ticked boxes: older one is A
                a, b = b, a
            cmp_rows = compare_runs(a.results(), b.results())
            regressions = pages.sample_regressions(a, b)
            body = pages.diff_page(a, b, cmp_rows, regressions, rows, lang)
        else:
            body = pages.diff_page(None, None, [], [], rows, lang)
        return respond(request, t("v_diff", lang), body, "v_diff")

    @guarded("judges")
    def judges(request: Any) -> Any:
        from ragmeter.judge_trust.card import STATS
        from ragmeter.judge_trust.runs import TIER

        lang = lang_of(request)
        stat = request.query.get("stat") or "kappa"
        if stat not in STATS:
            stat = "kappa"
        runs = [viewer.run(r.id, samples=False)
                for r in viewer.store.run_rows()[:pages.JUDGES_RUNS]]
        runs = [r for r in runs if TIER in r.tiers]
        return respond(request, t("judges", lang), pages.judges_page(runs, lang, stat), "judges")

    app = web.Application(middlewares=[only_local])
    app[VIEWER] = viewer
    app.router.add_get("/", registry)
    app.router.add_get("/history", history)
    app.router.add_get("/compare", compare)
    app.router.add_get("/diff", diff)
    app.router.add_get("/judges", judges)
    app.router.add_get("/run/{run_id}", run_details)
    app.router.add_get("/run/{run_id}/sample/{sample_id:.+}", sample)
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
