"""A target A/B run in real headless Chromium, in light and dark mode, in English and Russian:
the side-by-side page shows each target's own answer, contexts and latency; the run page has
the latency block apart from the quality table; every text of the decision table, the
explorer's heat cells and the tag chips has a WCAG AA contrast (4.5:1) against what is drawn
under it; j/k/Enter move through the run page's explorer. No console error, no failed or
foreign request. Screenshots go to ``test-output/screenshots/``."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import cdp
from test_target_runs_shown import ab_run
from test_view_browser_live import _serve

pytestmark = [
    pytest.mark.browser, pytest.mark.slow,
    pytest.mark.skipif(cdp.CHROMIUM is None, reason="chromium is not installed "
                       "(apt-get install -y chromium)"),
]
SHOTS = Path(__file__).resolve().parents[1] / "test-output" / "screenshots"

#: every element of ``selector`` with its own text: its contrast ratio against the first
#: opaque background under it (WCAG 2 relative luminance)
CONTRAST = r"""
((selector) => {
  const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const under = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) { return c; }
    }
    return [255, 255, 255];
  };
  const out = [];
  document.querySelectorAll(selector).forEach((el) => {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length) { return; }
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(under(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    out.push([el.tagName + '.' + el.className + ': ' + el.textContent.trim().slice(0, 30),
              Math.round(ratio * 100) / 100]);
  });
  return out;
})
"""
CHECKED = ("table.decision td, table.decision td *, table.decision th, table.decision th *, "
           "#rm-samples td.heat, .qtype, .band")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = cdp.Browser(tmp_path_factory.mktemp("chromium"))
    yield b
    b.close()


def _clean(browser: cdp.Browser, base: str) -> None:
    errors = browser.errors()
    assert not errors, errors
    foreign = [u for u in browser.requests() if not u.startswith((base, "data:"))]
    assert not foreign, foreign


def _contrast(browser: cdp.Browser, label: str) -> None:
    got = browser.eval(f"({CONTRAST})({json.dumps(CHECKED)})")
    assert got, f"{label}: nothing measured"
    low = [(what, r) for what, r in got if r < 4.5]
    assert not low, f"{label}: below 4.5:1: {low[:8]}"


def _scheme(browser: cdp.Browser, scheme: str) -> None:
    browser.call("Emulation.setEmulatedMedia", {"features": [
        {"name": "prefers-color-scheme", "value": scheme}]})


def test_a_target_ab_run_in_light_and_dark_in_two_languages(tmp_path, browser):
    url, run = ab_run(tmp_path, n=8)
    sid = next(iter(run.samples))
    answers = {name: run.samples[sid][f"target:{name}:answer"]["answer"]
               for name in ("short", "long")}
    server, base = _serve(url)
    try:
        for lang, not_returned in (("en", "text not returned"), ("ru", "текст не возвращён")):
            for scheme in ("light", "dark"):
                _scheme(browser, scheme)
                label = f"{lang}/{scheme}"
                browser.open(f"{base}/side?run={run.id}&sample={sid}&lang={lang}")
                _clean(browser, base)
                cols = browser.eval(
                    "Object.fromEntries([...document.querySelectorAll('section.side-col')]"
                    ".map(s => [s.dataset.target, s.innerText]))")
                assert set(cols) == {"short", "long"}, (label, list(cols))
                for name, answer in answers.items():
                    assert " ".join(answer.split())[:40] in " ".join(cols[name].split()), \
                        (label, name)
                    assert "RECORDED ANSWER" not in cols[name]
                assert not_returned in cols["long"] and not_returned not in cols["short"]
                tops = browser.eval("[...document.querySelectorAll('section.side-col')]"
                                    ".map(s => Math.round(s.getBoundingClientRect().top))")
                assert tops[0] == tops[1], label          # next to each other
                _contrast(browser, f"side {label}")
                browser.screenshot(SHOTS / f"target-ab-side-{label.replace('/', '-')}.png",
                                   full=False)

                browser.open(f"{base}/run/{run.id}?lang={lang}")
                _clean(browser, base)
                block = browser.eval(
                    "[...document.querySelectorAll('table.decision.latency tbody th')]"
                    ".map(t => t.childNodes[0].textContent.trim())")  # the name, not a mark
                assert block == ["short", "long"], (label, block)
                heads = browser.eval(
                    "[...document.querySelectorAll('table.decision:not(.latency) thead th code')]"
                    ".map(t => t.textContent)")
                assert heads and not any(h.startswith(("latency", "ttft", "throughput"))
                                         for h in heads), (label, heads)
                assert browser.eval("document.querySelectorAll('#rm-samples td.heat').length") > 0
                _contrast(browser, f"run {label}")
                browser.screenshot(SHOTS / f"target-ab-run-{label.replace('/', '-')}.png",
                                   full=False)
        # the run page by keyboard: j j moves to the explorer's second row, Enter opens it
        _scheme(browser, "light")
        browser.open(f"{base}/run/{run.id}?lang=en")
        for key in ("j", "j"):
            browser.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": key, "text": key})
        assert browser.eval("document.body.getAttribute('data-kb-row')") == "1"
        assert browser.eval("document.querySelector('tr.kb-focus').classList"
                            ".contains('rm-sample')")
        second = browser.eval("document.querySelector('tr.kb-focus').dataset.id")
        browser.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Enter",
                                                "windowsVirtualKeyCode": 13})
        deadline = time.time() + 30
        while time.time() < deadline and "/sample/" not in (
                browser.eval("location.pathname") or ""):
            time.sleep(0.2)
        assert browser.eval("location.pathname").endswith(f"/sample/{second}")
        _clean(browser, base)
        # the chips on the runs page, dark
        _scheme(browser, "dark")
        browser.open(f"{base}/?lang=en")
        assert browser.eval("document.querySelectorAll('.qtype').length") > 0
        _contrast(browser, "runs dark")
        _scheme(browser, "light")
    finally:
        server.terminate()
        server.wait(10)
