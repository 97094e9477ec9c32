"""The Markdown summary shows names as text: no link, remote image, autolink or HTML."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from ragmeter.reports.markdown import md_code, md_escape, run_markdown

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]

HOSTILE = ["[click me](https://evil.example/x)", "![track](https://evil.example/p.png)",
           "https://evil.example/auto", "www.evil.example", "mail@evil.example",
           "<img src=https://evil.example/i.png>", "**bold** _it_ ~~gone~~", "a|b"]


def _html(md: str) -> str:
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py renders the check")
    return str(markdown_it.MarkdownIt("commonmark").enable("table").enable("strikethrough")
               .render(md))


@pytest.mark.parametrize("text", HOSTILE)
def test_names_render_as_their_own_text_without_links_or_images(text: str) -> None:
    html = _html(f"| system |\n|---|\n| {md_escape(text)} |\n")
    assert "<a " not in html and "<img" not in html and "<strong>" not in html
    assert "<em>" not in html and "<s>" not in html
    assert html.count("<td>") == 1


def test_autolink_triggers_are_broken() -> None:
    assert "https://" not in md_escape("see https://evil.example")
    assert "www." not in md_escape("WWW.evil.example").lower()
    assert "\\@" in md_escape("a@evil.example")


def test_code_spans_survive_backticks_and_pipes() -> None:
    assert md_code("a`b") == "``a`b``"
    assert md_code("`x") == "`` `x ``"
    html = _html(f"| m |\n|---|\n| {md_code('ndcg|x`[y](http://e)')} |\n")
    assert "<a " not in html and html.count("<td>") == 1


def test_run_summary_with_hostile_run_and_system_names_has_no_link() -> None:
    run = builders.make_run()
    run.name = "[win](https://evil.example) ![x](https://evil.example/p.png)"
    res = run.tiers["retrieval"].results[0]
    res.name = "![pixel](https://evil.example/t.png)"
    html = _html(run_markdown(run, lang="en"))
    assert "<img" not in html and 'href="https://evil' not in html
