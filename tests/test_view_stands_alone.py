"""Every page of the viewer stands alone: a malformed running-run folder or a stored metric row
that is not a number is an error on its own row or page; the runs page and the other lists stay
200 and show the bad item as unreadable with its reason."""

from __future__ import annotations

import asyncio
import importlib.util
import json
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

#: running-run folders, each broken in its own way: (folder, meta.json text, log lines)
BROKEN = {
    "r-meta-list": ("[1, 2]", None),
    "r-tiers-number": ('{"run_id": "r-tiers-number", "tiers": 5}', None),
    "r-tags-number": ('{"run_id": "r-tags-number", "tags": 5}', None),
    "r-record-list": ('{"run_id": "r-record-list", "tiers": ["toy"]}', ["[1, 2]"]),
    "r-total-text": ('{"run_id": "r-total-text", "tiers": ["toy"]}',
                     ['{"type": "tier_start", "tier": "toy", "total": "abc"}']),
    "r-ids-number": ('{"run_id": "r-ids-number", "tiers": ["toy"]}',
                     ['{"type": "batch", "tier": "toy", "sample_ids": 5, "results": []}']),
    "r-meta-broken": ("{not json", None),
}
GOOD = "r-good-live"


def _runs_dir(root: Path) -> Path:
    runs = root / "runs"
    for name, (meta, lines) in BROKEN.items():
        folder = runs / name
        folder.mkdir(parents=True)
        (folder / "meta.json").write_text(meta, encoding="utf-8")
        if lines is not None:
            (folder / "progress.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    good = runs / GOOD
    good.mkdir()
    (good / "meta.json").write_text(json.dumps({"run_id": GOOD, "name": "fine",
                                                "tiers": ["toy"]}), encoding="utf-8")
    batch = {"type": "batch", "tier": "toy", "sample_ids": ["a", "b"], "results": [
        {"name": "sys", "results": {"acc": {"per_sample": [
            {"sample_id": "a", "value": 1.0}, {"sample_id": "b", "value": "x"}]}}}]}
    (good / "progress.jsonl").write_text(
        json.dumps({"type": "tier_start", "tier": "toy", "total": 4}) + "\n"
        + json.dumps(batch) + "\n", encoding="utf-8")
    return runs


def _store(path: Path) -> str:
    url = f"sqlite:///{path}"
    store = ResultStore(url)
    for i, rid in enumerate(("good-run", "bad-metric")):
        run = builders.make_run(rid, n=8)
        run.created_at = f"2026-03-0{i + 1}T00:00:00+00:00"
        store.save_run(run)
    store.close()
    con = sqlite3.connect(path)  # a metric row whose aggregate is not a number
    con.execute("UPDATE rm_metrics SET mean = 'not a number', n = 'many' "
                "WHERE run_id = 'bad-metric'")
    con.commit()
    con.close()
    return url


def _fetch(app, paths):
    from aiohttp.test_utils import TestClient, TestServer

    async def go():
        out = {}
        async with TestClient(TestServer(app)) as client:
            for path in paths:
                resp = await client.get(path)
                out[path] = (resp.status, await resp.text())
        return out
    return asyncio.run(go())


@pytest.fixture
def viewer(tmp_path):
    from ragmeter.view import make_app

    url = _store(tmp_path / "s.sqlite")
    return make_app(url, lang="en", runs_dir=str(_runs_dir(tmp_path)))


def test_the_runs_page_lists_every_malformed_live_folder_as_unreadable(viewer):
    got = _fetch(viewer, ["/", "/api/live", "/?col=retrieval%7Cbm25%7Cmrr"])
    status, html = got["/"]
    assert status == 200, html[-2000:]
    for name in BROKEN:
        row = html.split(f'data-run="{name}"', 1)
        assert len(row) == 2, name
        assert "unreadable:" in row[1].split("</tr>", 1)[0], (name, row[1][:500])
    good_row = html.split(f'data-run="{GOOD}"', 1)[1].split("</tr>", 1)[0]
    assert "unreadable" not in good_row and "2/4" in good_row
    status, text = got["/api/live"]
    assert status == 200
    runs = {x["run_id"]: x for x in json.loads(text)["runs"]}
    assert all(runs[n]["state"] == "unreadable" and runs[n]["error"] for n in BROKEN)
    assert runs[GOOD]["state"] != "unreadable"
    # the metric row that is not a number: its cell says so, the other runs' cells are numbers
    status, html = got["/?col=retrieval%7Cbm25%7Cmrr"]
    assert status == 200
    bad = html.split('data-run="bad-metric"', 1)[1].split("</tr>", 1)[0]
    good = html.split('data-run="good-run"', 1)[1].split("</tr>", 1)[0]
    assert "unreadable" in bad and "ValueError" in bad
    assert "unreadable" not in good


def test_a_malformed_folder_is_an_error_on_its_own_page_only(viewer):
    paths = [f"/live/{n}" for n in BROKEN] + [f"/live/{GOOD}", f"/api/live/{GOOD}",
                                              "/api/live/r-meta-list", "/history",
                                              "/history?bench=bench%20%3Cdemo%3E&metric=retrieval%7Cmrr",
                                              "/run/good-run", "/judges", "/compare", "/side"]
    got = _fetch(viewer, paths)
    for name in BROKEN:
        status, text = got[f"/live/{name}"]
        assert status == 500 and "cannot be read" in text, (name, status, text[-800:])
    assert got[f"/live/{GOOD}"][0] == 200
    assert got["/api/live/r-meta-list"][0] == 500
    live = json.loads(got[f"/api/live/{GOOD}"][1])
    toy = live["tiers"][0]
    assert toy["values"][0]["n"] == 1 and toy["values"][0]["n_unscored"] == 1  # "x": no value
    for path in ("/history", "/history?bench=bench%20%3Cdemo%3E&metric=retrieval%7Cmrr",
                 "/run/good-run", "/judges", "/compare", "/side"):
        assert got[path][0] == 200, (path, got[path][1][-1500:])
    assert "unreadable" in got["/history?bench=bench%20%3Cdemo%3E&metric=retrieval%7Cmrr"][1]
