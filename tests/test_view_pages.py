"""``ragmeter view`` without a browser: every route over real SQLite and PostgreSQL stores
(aiohttp's test server, real HTTP), read-only opening, old/foreign stores refused with the
reason, escaping of user text, and ``runs list --json`` with metric columns."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sqlite3
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from ragmeter.errors import RagmeterError
from ragmeter.results.store import ResultStore
from ragmeter.view import pages

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]

PAYLOAD = "<img src=x onerror=\"window.__xss=1\">"


def planted_pair(prefix: str = "") -> tuple:
    """Run A and run B = A with one sample made much worse on bm25 mrr (the planted one)."""
    a = builders.make_run(f"{prefix}run-a")
    a.created_at = "2026-01-01T00:00:00+00:00"
    b = builders.make_run(f"{prefix}run-b")
    b.created_at = "2026-01-02T00:00:00+00:00"
    mr = b.tiers["retrieval"].results[0].results["mrr"]
    vals = mr.values.copy()
    target = int(np.argmax(a.tiers["retrieval"].results[0].results["mrr"].values))
    vals[target] = 0.0
    mr.values = vals
    return a, b, mr.sample_ids[target]


def xss_run(run_id: str = "xss-run"):
    run = builders.make_run(run_id)
    run.name = f"bench {PAYLOAD}"
    run.meta["tags"] = [PAYLOAD, "nightly"]
    run.git_commit = "<script>window.__xss=2</script>"[:64]
    run.tiers["retrieval"].results[0].name = f"bm25 {PAYLOAD}"
    return run


def fill(store: ResultStore, *runs) -> None:
    for run in runs:
        store.save_run(run)
    # close the writer's pooled connections now: closing the last one checkpoints SQLite's WAL
    # into the file, which must not happen later, while the test checks nothing is written
    store.close()


async def _fetch_all(app, paths: list[str]) -> dict[str, tuple[int, str]]:
    from aiohttp.test_utils import TestClient, TestServer

    out = {}
    async with TestClient(TestServer(app)) as client:
        for path in paths:
            resp = await client.get(path)
            out[path] = (resp.status, await resp.text())
            assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
        resp = await client.post("/", data={"x": "1"})
        out["POST /"] = (resp.status, "")
    return out


def _routes(a, b, sid: str) -> list[str]:
    return ["/", "/?name=bench&lang=en", f"/?tag={PAYLOAD}", "/history",
            "/history?metric=retrieval%7Cmrr&lang=en", f"/history?name={PAYLOAD}",
            "/history?bench=bench+%3Cdemo%3E&metric=retrieval%7Cmrr",
            "/compare?lang=en", f"/compare?tier=retrieval&run={a.id}&run={b.id}",
            f"/diff?a={a.id}&b={b.id}&lang=en", f"/diff?a={PAYLOAD}&b={b.id}",
            f"/run/{b.id}", f"/run/{b.id}/sample/{sid}", "/run/xss-run",
            "/run/xss-run/sample/q1", "/run/missing-run"]


def check_pages(url: str, prefix: str = "") -> None:
    from ragmeter.view import make_app

    a, b, sid = planted_pair(prefix)
    app = make_app(url, lang="en")
    got = asyncio.run(_fetch_all(app, _routes(a, b, sid)))
    for path, (status, text) in got.items():
        if path == "POST /":
            assert status == 405  # read-only: no route takes a write
            continue
        expected = 404 if ("missing-run" in path or (PAYLOAD in path and "diff" in path)) else 200
        assert status == expected, (path, status, text[:500])
        assert PAYLOAD not in text and "<script>window.__xss" not in text, path
        assert "http://" not in text.replace("http://www.w3.org/2000/svg", ""), path
    diff = got[f"/diff?a={a.id}&b={b.id}&lang=en"][1]
    first = diff.split('class=sample-regression data-sample="', 1)[1].split('"', 1)[0]
    assert first == sid  # the planted regression comes first
    assert "no run &#x27;missing-run&#x27;" in got["/run/missing-run"][1]
    hist = got["/history?metric=retrieval%7Cmrr&lang=en"][1]
    # one benchmark per history, by default the latest run's (run-b): the XSS run has a name of
    # its own and is not joined into the same line
    assert 'data-runs="2"' in hist
    assert 'data-runs="2"' in got["/history?bench=bench+%3Cdemo%3E&metric=retrieval%7Cmrr"][1]


def test_view_routes_on_sqlite(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    a, b, _ = planted_pair()
    fill(ResultStore(url), a, b, xss_run())
    before = (tmp_path / "store.sqlite").read_bytes()
    check_pages(url)
    assert (tmp_path / "store.sqlite").read_bytes() == before  # nothing written


@pytest.mark.postgres
def test_view_routes_on_postgres():
    url = os.environ.get("RAGMETER_TEST_PG_URL")
    if not url:
        pytest.skip("RAGMETER_TEST_PG_URL is not set")
    prefix = f"view-{uuid.uuid4().hex[:6]}-"
    store = ResultStore(url)
    a, b, _ = planted_pair(prefix)
    x = xss_run()
    x.id = "xss-run"
    existing = [r.id for r in store.list_runs()]
    fill(store, a, b, x)
    try:
        from ragmeter.view import make_app

        app = make_app(url, lang="en")
        got = asyncio.run(_fetch_all(app, [f"/diff?a={a.id}&b={b.id}", f"/run/{b.id}",
                                           "/history?metric=retrieval%7Cmrr"]))
        for path, (status, text) in got.items():
            if path != "POST /":
                assert status == 200, (path, text[:300])
                assert PAYLOAD not in text
    finally:
        for rid in (a.id, b.id, "xss-run"):
            if rid not in existing:
                store.delete_run(rid)


def test_open_readonly_says_why_not(tmp_path):
    with pytest.raises(RagmeterError, match="no results store at"):
        ResultStore.open_readonly(tmp_path / "missing.sqlite")
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("create table notes (x text)")
    with pytest.raises(RagmeterError, match="not a ragmeter results store"):
        ResultStore.open_readonly(foreign)
    newer = tmp_path / "newer.sqlite"
    ResultStore(f"sqlite:///{newer}").save_run(builders.make_run("r1"))
    with sqlite3.connect(newer) as conn:
        conn.execute("update rm_schema set version = 99")
    with pytest.raises(RagmeterError, match="newer ragmeter"):
        ResultStore.open_readonly(newer)
    legacy = tmp_path / "legacy.sqlite"
    ResultStore(f"sqlite:///{legacy}").save_run(builders.make_run("r1"))
    with sqlite3.connect(legacy) as conn:  # a store from before schema versions
        conn.execute("drop table rm_schema")
    store, note = ResultStore.open_readonly(legacy)
    assert "earlier ragmeter" in note and store.load_run("r1").name == "bench <demo>"
    import sqlalchemy.exc

    with pytest.raises(sqlalchemy.exc.OperationalError, match="readonly"):  # SQLite refuses
        store.save_run(builders.make_run("r2"))


def test_registry_filters_and_columns(tmp_path):
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    a, b, _ = planted_pair()
    fill(ResultStore(url), a, b, xss_run())
    store, _ = ResultStore.open_readonly(url)
    rows = store.run_rows()
    assert [r.id for r in pages.filter_runs(rows, tag="nightly")] == ["xss-run"]
    assert [r.id for r in pages.filter_runs(rows, since="2026-01-02", until="2026-01-02")] \
        == ["run-b"]
    assert pages.filter_runs(rows, commit="abc1")[0].git_commit == "abc1234"
    cols = pages.default_columns(store.metric_summaries(["run-b"]))
    assert "retrieval|bm25|mrr" in cols and "retrieval|dense|mrr" in cols


def test_runs_list_json(tmp_path):
    from typer.testing import CliRunner

    from ragmeter.cli.app import app

    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    a, b, _ = planted_pair()
    fill(ResultStore(url), a, b)
    res = CliRunner().invoke(app, ["runs", "list", "--store", url, "--json", "-m",
                                   "retrieval/bm25/mrr"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [r["id"] for r in data] == ["run-b", "run-a"]
    m = data[0]["metrics"]["retrieval/bm25/mrr"]
    assert m["n"] == 30 and m["ci_low"] <= m["mean"] <= m["ci_high"]
    table = CliRunner().invoke(app, ["runs", "list", "--store", url])
    assert table.exit_code == 0 and "mrr" in table.output


def test_local_only_refuses_foreign_host_names(tmp_path):
    from aiohttp.test_utils import TestClient, TestServer

    from ragmeter.view import make_app

    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    fill(ResultStore(url), builders.make_run("r1"))

    async def go() -> tuple[int, int]:
        async with TestClient(TestServer(make_app(url, local_only=True))) as client:
            ok = await client.get("/")
            evil = await client.get("/", headers={"Host": "attacker.example:8765"})
            return ok.status, evil.status

    assert asyncio.run(go()) == (200, 421)


def test_a_new_page_is_one_entry_of_the_page_table(tmp_path):
    import subprocess
    from html import escape

    from ragmeter.view import make_app
    from ragmeter.view.table import PAGES, PageOut, PageRequest, page, page_list

    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    fill(ResultStore(url), xss_run("r1"))
    paths = ["/notes", "/notes?lang=ru", "/notes?fail=1", "/"]
    with PAGES.scoped():
        # the whole declaration of the new page:
        @page("/notes", title=("Notes", "Заметки"), nav=True, doc="the run names")
        def notes(req: PageRequest) -> PageOut:
            if req.param("fail"):
                raise RagmeterError("no such note")
            return PageOut("<ul id=notes>" + "".join(
                f"<li>{escape(r.name)}</li>" for r in req.viewer.store.run_rows()) + "</ul>")

        got = asyncio.run(_fetch_all(make_app(url, lang="en"), paths))
        assert "| Notes (`/notes`) | the run names |" in page_list()
    status, html = got["/notes"]
    assert status == 200 and "<title>Notes · ragmeter</title>" in html
    assert '<a href="/notes?lang=en" class=active>Notes</a>' in html  # its navigation entry
    assert "<ul id=notes><li>bench &lt;img" in html and PAYLOAD not in html
    assert "<title>Заметки · ragmeter</title>" in got["/notes?lang=ru"][1]
    assert got["/notes?fail=1"][0] == 404 and "no such note" in got["/notes?fail=1"][1]
    assert '<a href="/notes?lang=en">Notes</a>' in got["/"][1]  # on every page's navigation
    # gone with its entry
    after = asyncio.run(_fetch_all(make_app(url, lang="en"), ["/"]))
    assert "/notes" not in after["/"][1]
    # the page list in docs/reports.md is generated from the table
    out = subprocess.run([sys.executable, "-m", "ragmeter.view.reference", "--check"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")})
    assert out.returncode == 0, out.stderr  # stale: python -m ragmeter.view.reference
