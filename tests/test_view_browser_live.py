"""The live run page, the side-by-side page and the static export in real headless Chromium.

Live: a real `ragmeter run` subprocess is watched on its live page served by the real `ragmeter
view --runs` server; the progress advances in place (no reload) and the page says when the run
is stored. Side by side: two columns with answers, gold contexts and claims; sortable headers,
keyboard navigation and the dark theme. Export: `ragmeter view --export` opened from disk
(file://), links followed between the written files. Every page: no console error, no failed
or foreign request. Screenshots go to ``test-output/screenshots/``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import cdp
from ragmeter.results.store import ResultStore
from test_view_export import make_store
from test_view_live import start_slow_run
from test_view_side_by_side import _run

pytestmark = [
    pytest.mark.browser, pytest.mark.slow,
    pytest.mark.skipif(cdp.CHROMIUM is None, reason="chromium is not installed "
                       "(apt-get install -y chromium)"),
]
ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "test-output" / "screenshots"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(url: str, *extra: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "ragmeter", "view", "--store", url,
                             "--port", str(port), "--lang", "en", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(base + "/", timeout=2).read()
            return proc, base
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stdout.read().decode() if proc.stdout else "") from None
            time.sleep(0.3)
    raise TimeoutError("ragmeter view did not start")


@pytest.fixture
def browser(tmp_path):
    b = cdp.Browser(tmp_path / "profile")
    yield b
    b.close()


def _clean(browser: cdp.Browser, local: str) -> None:
    assert not browser.errors(), browser.errors()
    foreign = [u for u in browser.requests() if not u.startswith((local, "data:", "about:"))]
    assert not foreign, foreign


def _wait(browser: cdp.Browser, expression: str, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if browser.eval(f"!!({expression})"):
            return
        time.sleep(0.2)
    raise TimeoutError(expression)


def test_live_run_page_updates_in_place(tmp_path, browser):
    run, url, runs = start_slow_run(tmp_path, sleep=0.3)
    server, base = _serve(url, "--runs", str(runs))
    try:
        deadline = time.time() + 60  # the run folder appears once the run has started
        while not (runs / "live-run-1" / "progress.jsonl").exists() and time.time() < deadline:
            time.sleep(0.2)
        # the runs page lists it on top and refreshes its progress in place
        browser.open(f"{base}/?lang=en")
        cell = "document.querySelector('#live-runs tr[data-run=\"live-run-1\"]').cells[3]" \
               ".textContent"
        shown = browser.eval(cell)
        _wait(browser, f"+document.body.getAttribute('data-live-polls') >= 1 && {cell} !== "
                       f"{shown!r}")
        browser.screenshot(SHOTS / "live-runs-page.png", full=False)
        browser.open(f"{base}/live/live-run-1?lang=en")
        browser.eval("window.__sameDocument = 1")
        first = int(browser.eval("+document.getElementById('live').getAttribute('data-done')"
                                 " || 0"))
        _wait(browser, "+document.body.getAttribute('data-polls') >= 2 && "
                       f"+document.getElementById('live').getAttribute('data-done') > {first}")
        assert browser.eval("document.querySelector('.live-tier progress').value") > 0
        assert browser.eval("document.querySelectorAll('table.live-values tbody tr').length") == 2
        browser.screenshot(SHOTS / "live-run-running.png")
        _wait(browser, "document.getElementById('live').getAttribute('data-state') === "
                       "'stored'", timeout=120)
        assert browser.eval("window.__sameDocument") == 1  # updated without a reload
        assert browser.eval("!document.getElementById('live-stored').hidden")
        assert browser.eval("document.getElementById('live-state').textContent") == "finished"
        browser.screenshot(SHOTS / "live-run-stored.png")
        _clean(browser, base)
        assert run.wait(60) == 0
    finally:
        server.terminate()
        server.wait(10)
        if run.poll() is None:
            run.kill()


def test_side_by_side_sortable_keyboard_and_dark(tmp_path, browser):
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    store = ResultStore(url)
    store.save_run(_run("run-a", 1, "Use the HR portal; takes 3 days", 0, [1.0, 0.5, 0.2, 0.3]))
    store.save_run(_run("run-b", 2, "File it in the HR portal", 1, [0.2, 0.5, 1.0, 0.3]))
    store.engine.dispose()
    store._write_engine.dispose()
    server, base = _serve(url)
    try:
        browser.open(f"{base}/side?run=run-a&run=run-b&sample=q2&lang=en")
        _clean(browser, base)
        assert browser.eval("document.querySelectorAll('section.side-col').length") == 2
        assert browser.eval("document.querySelectorAll('li.gold').length") == 2
        assert browser.eval("document.querySelectorAll('table.claims td.no').length") == 1
        tops = browser.eval("[...document.querySelectorAll('section.side-col')]"
                            ".map(s => Math.round(s.getBoundingClientRect().top))")
        assert tops[0] == tops[1]  # next to each other, not stacked
        browser.screenshot(SHOTS / "side-by-side.png")
        browser.call("Emulation.setEmulatedMedia", {"features": [
            {"name": "prefers-color-scheme", "value": "dark"}]})
        bg = browser.eval("getComputedStyle(document.body).backgroundColor")
        assert bg == "rgb(22, 22, 22)", bg
        browser.screenshot(SHOTS / "side-by-side-dark.png", full=False)
        browser.call("Emulation.setEmulatedMedia", {"features": [
            {"name": "prefers-color-scheme", "value": "light"}]})
        # the registry: sortable columns and j/k/Enter
        browser.open(f"{base}/?lang=en")
        ids = "[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.run)"
        assert browser.eval(ids) == ["run-b", "run-a"]
        browser.eval("document.querySelectorAll('#runs thead th')[1].click()")
        assert browser.eval(ids) == ["run-a", "run-b"]
        assert browser.eval("document.querySelectorAll('#runs thead th')[1]"
                            ".getAttribute('aria-sort')") == "ascending"
        for key in ("j", "j", "k"):
            browser.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": key,
                                                    "text": key})
        assert browser.eval("document.body.getAttribute('data-kb-row')") == "0"
        browser.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Enter",
                                                "windowsVirtualKeyCode": 13})
        _wait(browser, "location.pathname === '/run/run-a'")
        _clean(browser, base)
    finally:
        server.terminate()
        server.wait(10)


def test_static_export_opens_from_disk(tmp_path, browser):
    url = make_store(tmp_path)
    site = tmp_path / "site"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    subprocess.run([sys.executable, "-m", "ragmeter", "view", "--store", url, "--export",
                    str(site), "--lang", "en", "--export-samples", "2"], check=True, env=env,
                   capture_output=True, timeout=300)
    browser.open((site / "index.html").as_uri())
    _clean(browser, "file://")
    assert browser.eval("document.querySelectorAll('#runs tbody tr').length") == 2
    assert browser.eval("getComputedStyle(document.querySelector('form.filters')).display") \
        == "none"  # filters need the server
    browser.screenshot(SHOTS / "export-index.png")
    href = browser.eval("document.querySelector('#runs tbody a[href]').getAttribute('href')")
    assert href.endswith(".html") and not href.startswith("/")
    browser.eval("document.querySelector('#runs tbody a[href]').click()")
    _wait(browser, "location.pathname.endsWith('/run/run-b.html') && document.body && "
                   "document.body.getAttribute('data-rendered') === 'true'")
    _clean(browser, "file://")
    assert browser.eval("document.querySelectorAll('svg.rm-chart').length") > 0
    browser.screenshot(SHOTS / "export-run.png")
    browser.eval("document.querySelector('nav.top a[href$=\"compare.html\"]').click()")
    _wait(browser, "location.pathname.endsWith('/compare.html')")
    _clean(browser, "file://")
    browser.screenshot(SHOTS / "export-compare.png")
