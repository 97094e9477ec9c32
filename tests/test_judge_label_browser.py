"""The labelling page of ``ragmeter label`` in real headless Chromium: a labeller grades 20
items with the keyboard (a skip and a revision on the way), each answer is in the labels file
the moment the page says so, the judge's verdict and reasons never reach the page, and a
second labeller works on the Russian page. No console error, no failed or foreign request.
Screenshots go to ``test-output/screenshots/``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import cdp
from ragmeter.journal import Journal
from ragmeter.judge_trust.labels import load_labels
from test_judge_label_crash import _free_port, start_server
from test_judge_label_session import make_run

pytestmark = [
    pytest.mark.browser, pytest.mark.slow,
    pytest.mark.skipif(cdp.CHROMIUM is None, reason="chromium is not installed "
                       "(apt-get install -y chromium)"),
]
SHOTS = Path(__file__).resolve().parents[1] / "test-output" / "screenshots"
KEYS = {"ArrowLeft": ("ArrowLeft", 37), "s": ("KeyS", 83), "0": ("Digit0", 48),
        "1": ("Digit1", 49)}


def press(b: cdp.Browser, key: str) -> None:
    code, vk = KEYS[key]
    for kind in ("keyDown", "keyUp"):
        b.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code,
                                          "windowsVirtualKeyCode": vk,
                                          **({"text": key} if len(key) == 1
                                             and kind == "keyDown" else {})})


def wait(b: cdp.Browser, expr: str, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if b.eval(f"!!({expr})"):
            return
        time.sleep(0.05)
    raise TimeoutError(expr)


def attr(b: cdp.Browser, name: str) -> str:
    return str(b.eval(f"document.getElementById('label').getAttribute('{name}')"))


def grade(b: cdp.Browser, key: str) -> str:
    """Press ``key`` on the shown item; wait until the server saved it; the item's id."""
    sid = attr(b, "data-sample")
    saves = int(b.eval("document.body.getAttribute('data-saves')"))
    press(b, key)
    wait(b, f"document.body.getAttribute('data-saves') === '{saves + 1}'")
    return sid


def test_a_labeller_grades_20_items_on_the_page_in_english_and_russian(tmp_path: Path) -> None:
    url = make_run(tmp_path, n=40)
    labels = tmp_path / "labels.jsonl"
    port = _free_port()
    proc = start_server(url, labels, port)
    base = f"http://127.0.0.1:{port}"
    b = cdp.Browser(tmp_path / "profile")
    try:
        b.open(base + "/label?rater=anna&lang=en",
               ready="document.getElementById('label').getAttribute('data-state') === 'item'")
        text = b.eval("document.body.innerText")
        assert "Blind labelling" in text and "Is everything the answer says supported" in text
        assert "JUDGE-REASON" not in text and "First context of" in text
        want: dict[str, int] = {}
        skipped = grade(b, "s")                       # skipped: it comes back at the end
        for k in range(20):
            key = "1" if k % 3 else "0"
            sid = grade(b, key)
            want[sid] = int(key)
            # saved the moment the page says so: the file already has it
            assert load_labels(labels).by_rater("faithfulness")["anna"][sid] == int(key)
        assert skipped not in want and attr(b, "data-labelled") == "20"
        # back to the last one (item 21: the skipped one was item 1), and revised
        assert attr(b, "data-index") == "21"
        press(b, "ArrowLeft")
        wait(b, "document.getElementById('label').getAttribute('data-index') === '20'")
        last = attr(b, "data-sample")
        assert b.eval("document.querySelector('#lb-keys button.chosen')"
                      ".getAttribute('data-key')") == str(want[last])
        revised = 1 - want[last]
        assert grade(b, str(revised)) == last
        want[last] = revised
        assert "JUDGE-REASON" not in b.eval("document.documentElement.outerHTML")
        cdp_errors = b.errors()
        assert not cdp_errors, cdp_errors
        b.screenshot(SHOTS / "label-en.png", full=False)

        # a second labeller, on the Russian page
        b.open(base + "/label?rater=boris&lang=ru",
               ready="document.getElementById('label').getAttribute('data-state') === 'item'")
        text = b.eval("document.body.innerText")
        assert "Слепая разметка" in text and "Подтверждается ли всё" in text
        assert "пример 1 из 40" in text and "Blind labelling" not in text
        boris = {grade(b, "1"): 1, grade(b, "0"): 0}
        assert "сохранено" in b.eval("document.getElementById('lb-status').textContent")
        assert not b.errors(), b.errors()
        foreign = [u for u in b.requests() if not u.startswith((base, "data:", "about:"))]
        assert not foreign, foreign
        b.screenshot(SHOTS / "label-ru.png", full=False)
    finally:
        b.close()
        proc.terminate()
        out = proc.communicate(timeout=30)[0].decode()
    Journal(labels).close()
    got = load_labels(labels).by_rater("faithfulness")
    assert got["anna"] == {k: float(v) for k, v in want.items()}
    assert got["boris"] == {k: float(v) for k, v in boris.items()}
    assert "anna 20" in out and "boris 2" in out
