"""The viewer's defaults and robustness: bad query parameters are 400s naming the parameter, a
corrupt run is an error on that run alone, the registry pages and takes its columns from the
filtered runs, the judges page reads cards only, and nothing is cached past a store change."""

from __future__ import annotations

import asyncio
import importlib.util
import sqlite3
import sys
from pathlib import Path

import pytest

from ragmeter.results.store import ResultStore

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]


def _run(run_id: str, name: str, day: int, tags=()):
    run = builders.make_run(run_id, n=12)
    run.name = name
    run.created_at = f"2026-02-{day:02d}T00:00:00+00:00"
    run.meta["tags"] = list(tags)
    return run


def _fill(path: Path, *runs) -> str:
    url = f"sqlite:///{path}"
    store = ResultStore(url)
    for run in runs:
        store.save_run(run)
    store.engine.dispose()
    store._write_engine.dispose()
    return url


async def _get(app, paths):
    from aiohttp.test_utils import TestClient, TestServer

    out = {}
    async with TestClient(TestServer(app)) as client:
        for path in paths:
            resp = await client.get(path)
            out[path] = (resp.status, await resp.text())
    return out


def _fetch(url: str, paths: list[str], **kw):
    from ragmeter.view import make_app

    return asyncio.run(_get(make_app(url, lang="en", **kw), paths))


@pytest.fixture
def store(tmp_path):
    runs = [_run(f"r{i:02d}", "alpha" if i % 2 else "beta", i + 1,
                 ("nightly",) if i % 3 == 0 else ()) for i in range(8)]
    return tmp_path / "s.sqlite", _fill(tmp_path / "s.sqlite", *runs)


def test_every_bad_query_parameter_is_a_400_naming_it(store):
    _, url = store
    bad = ["/?col=x", "/?since=yesterday", "/?page=0", "/?page=abc", "/?page=99", "/?bogus=1",
           "/?lang=xx", "/history?metric=nope%7Cx", "/history?bench=nobody",
           "/compare?tier=nope", "/compare?run=ghost", "/judges?stat=nope", "/diff?zzz=1",
           "/run/r01?x=1"]
    got = _fetch(url, bad)
    for path, (status, text) in got.items():
        assert status == 400, (path, status, text[-400:])
        name = path.split("?", 1)[1].split("=", 1)[0]
        assert f"query parameter &#x27;{name}&#x27;" in text, (path, text[:2000])
    assert "tier|system|metric" in got["/?col=x"][1]  # says what was expected
    ok = _fetch(url, ["/?col=retrieval%7Cbm25%7Cmrr", "/?since=2026-02", "/?page=1"])
    assert all(s == 200 for s, _ in ok.values())


def test_a_corrupt_run_is_an_error_on_that_run_alone(store):
    path, url = store
    with sqlite3.connect(path) as con:  # one broken per-sample row of the latest run
        con.execute("UPDATE rm_values SET details_json='{broken' WHERE run_id='r07' AND "
                    "rowid=(SELECT min(rowid) FROM rm_values WHERE run_id='r07' AND "
                    "details_json IS NOT NULL)")
        con.execute("UPDATE rm_runs SET config_json='{nope' WHERE id='r06'")
        # a metric's values that cannot be read (three bytes: not a float64 per sample)
        con.execute("UPDATE rm_metrics SET values_blob=x'616263' WHERE run_id='r04' AND "
                    "rowid=(SELECT min(rowid) FROM rm_metrics WHERE run_id='r04')")
        broken = con.execute("SELECT sample_id FROM rm_values WHERE run_id='r07' AND "
                             "details_json='{broken'").fetchone()[0]
    from ragmeter.view import make_app

    got = asyncio.run(_get(make_app(url, lang="en"), [
        "/", "/history", "/judges", "/run/r07", "/run/r05", "/compare?run=r07&run=r05",
        "/diff?a=r05&b=r07", "/compare?run=r04&run=r05", "/diff?a=r05&b=r04", "/run/r04",
        f"/run/r07/sample/{broken}"]))
    assert got["/"][0] == 200 and "r07" in got["/"][1]  # the registry lists it
    assert got["/history"][0] == 200 and got["/judges"][0] == 200
    assert got["/run/r05"][0] == 200
    # the run page reads no judge details (each row links to its sample's page): it is shown;
    # the broken sample's own page reads them: its error
    assert got["/run/r07"][0] == 200
    status, text = got[f"/run/r07/sample/{broken}"]
    assert status == 500 and "run r07 cannot be read" in text and "JSONDecodeError" in text
    # the compare page and the diff read aggregates and values, which r07 has intact
    assert got["/compare?run=r07&run=r05"][0] == 200
    assert got["/diff?a=r05&b=r07"][0] == 200
    status, text = got["/compare?run=r04&run=r05"]
    assert status == 200 and "data-corrupt" in text and "r04" in text  # the others shown
    assert got["/diff?a=r05&b=r04"][0] == 500 and got["/run/r04"][0] == 500


def test_registry_pages_and_columns_come_from_the_filtered_runs(tmp_path, monkeypatch):
    from ragmeter.view import registry

    monkeypatch.setattr(registry, "PAGE_SIZE", 3)
    runs = [_run(f"r{i:02d}", "alpha", i + 1, ("t",)) for i in range(7)]
    old = _run("old", "gamma", 1)  # only this old run has a 'dense2' system
    old.tiers["retrieval"].results[1].name = "dense2"
    url = _fill(tmp_path / "s.sqlite", *runs, old)
    from ragmeter.view import pages

    monkeypatch.setattr(pages, "PAGE_SIZE", 3)
    got = _fetch(url, ["/", "/?page=2", "/?page=3", "/?tag=t", "/?page=4"])
    first = got["/"][1]
    assert first.count("class=run-row") == 3 and 'data-run="r06"' in first
    assert "\" rel=next>" in first and "\" rel=prev>" not in first
    assert 'data-run="r03"' in got["/?page=2"][1] and "\" rel=prev>" in got["/?page=2"][1]
    assert got["/?page=3"][1].count("class=run-row") == 2
    assert got["/?page=4"][0] == 400  # 8 runs, 3 a page: 3 pages
    # columns from every filtered run, not the latest one only: the old run (on page 3) brings
    # its dense2 column to page 1; filtered out by tag, it brings none
    assert "dense2" in first
    assert "dense2" not in got["/?tag=t"][1]


def test_compare_rows_are_labelled_with_run_name_and_tags(store):
    _, url = store
    got = _fetch(url, ["/compare?run=r06&run=r03&tier=retrieval"])
    status, text = got["/compare?run=r06&run=r03&tier=retrieval"]
    assert status == 200
    assert "beta 02-07 00:00 #r06 [nightly] · bm25" in text
    assert "alpha 02-04 00:00 #r03 [nightly] · bm25" in text


def test_judges_page_reads_the_card_rows_only(tmp_path, monkeypatch):
    from ragmeter.judge_trust.runs import TIER
    from ragmeter.results.store import TierRecord
    from ragmeter.view.data import StoreData

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import bench_view

    run = _run("carded", "alpha", 3)
    card = builders.EvalResult("judge_card:j1", meta={"tier": TIER,
                                                      "judge_card": bench_view._card("j1", 0.7)})
    card.add(builders.metric("human_label(metric=faithfulness)", [1.0, 0.0, 1.0]))
    run.tiers[TIER] = TierRecord(TIER, "ok", None, [card])
    url = _fill(tmp_path / "s.sqlite", run, _run("plain", "alpha", 4))

    def no_load(*a, **k):
        raise AssertionError("the judges page loaded a whole run")
    monkeypatch.setattr(ResultStore, "load_run", no_load)
    got = _fetch(url, ["/judges"])
    status, text = got["/judges"]
    assert status == 200 and "j1-model" in text and "carded" in text
    cards = StoreData(ResultStore.open_readonly(url)[0]).judge_cards(10)
    assert [r.id for r in cards] == ["carded"]


def test_nothing_is_cached_past_a_store_change(tmp_path):
    from aiohttp.test_utils import TestClient, TestServer

    from ragmeter.view import make_app

    path = tmp_path / "s.sqlite"
    url = _fill(path, _run("r1", "alpha", 1))

    async def go():
        async with TestClient(TestServer(make_app(url, lang="en"))) as client:
            first = await (await client.get("/")).text()
            again = await (await client.get("/")).text()
            store = ResultStore(url)
            store.save_run(_run("r2-new", "alpha", 2))
            store.engine.dispose()
            store._write_engine.dispose()
            after = await (await client.get("/")).text()
            run = await client.get("/run/r2-new")
            return first, again, after, run.status
    first, again, after, status = asyncio.run(go())
    assert "r2-new" not in first and first == again
    assert "r2-new" in after and status == 200


def test_the_dashboard_run_page_folds_the_worst_200_rows_the_report_500(tmp_path):
    """Each row of the dashboard's explorer links to its sample page, so it folds the 200 worst
    samples in (the page's cost grows with its rows); the standalone report keeps 500."""
    from ragmeter.reports.html import render_run_body

    run = builders.make_run("big", n=600)
    url = _fill(tmp_path / "big.sqlite", run)
    status, html = _fetch(url, ["/run/big"])["/run/big"]
    assert status == 200
    assert html.count('<tr class="rm-sample"') == 200
    assert "Showing the 200 worst samples of 600." in html
    body, _, _ = render_run_body(ResultStore(url).load_run("big"), "en")
    assert body.count('<tr class="rm-sample"') == 500
