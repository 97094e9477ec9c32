"""The HTML report in real headless Chromium: charts drawn, filter works, no console error,
and an injected ``<script>`` in a question does not run.

Chromium comes from Debian (``scripts/browser_setup.sh``); without it these tests skip with
that reason. Screenshots go to ``test-output/``.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.reports.comparison import render_comparison_html
from ragmeter.reports.html import write_run_html

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser",
                                                        "google-chrome")) if p), None)
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                       "(run scripts/browser_setup.sh: apt-get install -y chromium)"),
]
OUT_DIR = Path(__file__).resolve().parent.parent / "test-output"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000"]


def chromium(url: str, tmp: Path, *extra: str) -> tuple[str, list[str]]:
    """Run Chromium on ``url``; return stdout and the console-error lines of its log."""
    proc = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *extra,
                           url], capture_output=True, text=True, timeout=120)
    errors = [line for line in proc.stderr.splitlines()
              if "Uncaught" in line or ("CONSOLE" in line and "error" in line.lower())]
    return proc.stdout, errors


def dom(path: Path, tmp: Path, fragment: str = "") -> tuple[str, list[str]]:
    out, errors = chromium(path.as_uri() + fragment, tmp, "--dump-dom")
    assert "<body" in out, "chromium printed no DOM"
    return out, errors


def body_attrs(html: str) -> dict[str, str]:
    tag = re.search(r"<body([^>]*)>", html)
    assert tag
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag.group(1)))


def test_detectors_catch_errors_and_injection(tmp_path):
    """Negative control: the checks below would notice a script error and an injection."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><head><title>ok</title></head><body>"
                   "<script>document.title='PWNED'</script>"
                   "<script>undefinedFunction()</script></body></html>", encoding="utf-8")
    out, errors = dom(bad, tmp_path)
    assert "<title>PWNED</title>" in out
    assert errors, "console error detector saw nothing"


def test_run_report_in_chromium(tmp_path):
    run = builders.make_run("browser-run", demo=True)
    page = write_run_html(run, tmp_path / "report.html")
    out, errors = dom(page, tmp_path)
    assert not errors, errors
    attrs = body_attrs(out)
    assert attrs.get("data-rendered") == "true"  # our script ran to the end
    assert attrs.get("data-json") == "ok"  # the escaped JSON block parsed
    n_charts = int(attrs["data-charts"])
    assert n_charts >= 6
    assert attrs["data-charts-rendered"] == str(n_charts)
    assert out.count("data-rendered=") == n_charts + 1  # every chart + <body>
    assert attrs["data-samples"] == "30" and attrs["data-visible-samples"] == "30"
    # the injected script did not run: the title is ours and the payload is text
    title = re.search(r"<title>(.*?)</title>", out, re.S)
    assert title and "PWNED" not in title.group(1) and "ragmeter" in title.group(1)
    assert "document.title='PWNED'" in out  # shown as text in the explorer
    assert 'id="demo-banner"' in out

    # the filter box works (query taken from the URL fragment)
    filtered, errors = dom(page, tmp_path, "#q=q17")
    assert not errors, errors
    assert body_attrs(filtered)["data-visible-samples"] == "1"
    filtered2, _ = dom(page, tmp_path, "#q=parse_error")
    assert body_attrs(filtered2)["data-visible-samples"] == "1"  # only q3 is unscored

    OUT_DIR.mkdir(exist_ok=True)
    shot = OUT_DIR / "report_run.png"
    shot.unlink(missing_ok=True)
    chromium(page.as_uri(), tmp_path, f"--screenshot={shot}", "--window-size=1400,2600")
    assert shot.is_file() and shot.stat().st_size > 20_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_comparison_report_in_chromium(tmp_path):
    from ragmeter.runner.comparing import compare_runs
    from ragmeter.runner.sources import Source

    a, b = builders.make_run("A <a>"), builders.make_run("B", shift=-0.3)
    rows = compare_runs(a.results(), b.results(), n_resamples=1000)
    page = tmp_path / "cmp.html"
    page.write_text(render_comparison_html(Source("A <a>", a), Source("B", b), rows),
                    encoding="utf-8")
    out, errors = dom(page, tmp_path)
    assert not errors, errors
    attrs = body_attrs(out)
    assert attrs["data-rendered"] == "true" and attrs["data-charts-rendered"] == "1"
    assert 'class="regression"' in out
    OUT_DIR.mkdir(exist_ok=True)
    shot = OUT_DIR / "report_compare.png"
    chromium(page.as_uri(), tmp_path, f"--screenshot={shot}", "--window-size=1200,1400")
    assert shot.is_file() and shot.stat().st_size > 10_000
