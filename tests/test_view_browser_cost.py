"""The cost of quality on the dashboard (``ragmeter view``) in real headless Chromium: an
A/B of three priced targets shows each target's cost per answer with its unknown count in
the latency block, and marks the quality–latency–cost front (◆ on the two targets no other
beats, none on the third) on the run page and on the compare page, in English and Russian,
light and dark, with WCAG AA contrast; no console error and no foreign request."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import cdp
from test_cost_of_quality import ab_cost_run
from test_view_browser_live import _serve
from test_view_browser_targets import _clean, _contrast, _scheme

pytestmark = [
    pytest.mark.browser, pytest.mark.slow,
    pytest.mark.skipif(cdp.CHROMIUM is None, reason="chromium is not installed "
                       "(apt-get install -y chromium)"),
]
SHOTS = Path(__file__).resolve().parents[1] / "test-output" / "screenshots"

#: per row of the latency block: the row's name, whether it carries the front mark, and the
#: text of its cost cell
ROWS = r"""
(() => {
  const table = document.querySelector('table.decision.latency');
  if (!table) { return null; }
  const heads = [...table.querySelectorAll('thead th')].map(th => th.textContent);
  const col = heads.findIndex(h => h.startsWith('cost_per_answer'));
  return [...table.querySelectorAll('tbody tr')].map(tr => {
    const th = tr.querySelector('th');
    return [th.childNodes[0].textContent.trim(), !!th.querySelector('.front'),
            col > 0 ? tr.children[col].innerText : null];
  });
})()
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = cdp.Browser(tmp_path_factory.mktemp("chromium"))
    yield b
    b.close()


def _rows(browser: cdp.Browser, label: str) -> dict[str, tuple[bool, str]]:
    got = browser.eval(ROWS)
    assert got, f"{label}: no latency block"
    return {name: (front, cost) for name, front, cost in got}


def test_the_front_and_the_cost_on_the_dashboard(tmp_path, browser):
    url, run = ab_cost_run(tmp_path, n=8)
    server, base = _serve(url)
    try:
        for lang, unknown, note in (("en", "usage unknown: 0", "at once"),
                                    ("ru", "расход неизвестен: 0", "сразу")):
            for scheme in ("light", "dark"):
                _scheme(browser, scheme)
                label = f"{lang}/{scheme}"
                browser.open(f"{base}/run/{run.id}?lang={lang}")
                _clean(browser, base)
                rows = _rows(browser, label)
                assert set(rows) == {"short", "long", "slow"}, (label, rows)
                assert rows["short"][0] and rows["long"][0] and not rows["slow"][0], rows
                for name, (_, cost) in rows.items():
                    assert cost and unknown in cost and "n=8" in cost, (label, name, cost)
                assert note in browser.eval(
                    "document.querySelector('.pareto-note').textContent"), label
                _contrast(browser, f"run {label}")
                browser.screenshot(SHOTS / f"cost-front-run-{lang}-{scheme}.png", full=False)
        # the compare page draws the same block from the same decision
        _scheme(browser, "light")
        browser.open(f"{base}/compare?tier=e2e&run={run.id}&lang=en")
        _clean(browser, base)
        rows = {k.split(" · ")[-1]: v for k, v in _rows(browser, "compare").items()}
        assert {k for k, (front, _) in rows.items() if front} == {"short", "long"}, rows
        browser.screenshot(SHOTS / "cost-front-compare-en.png", full=False)
    finally:
        server.terminate()
        server.wait(10)
