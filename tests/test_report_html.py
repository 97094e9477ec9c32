"""HTML / Markdown reports: escaping, safe JSON in <script>, bands, charts, no external URL."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from conftest import run_cli, write_jsonl
from ragmeter.reports.bands import EXCELLENT, GOOD, NEEDS_ATTENTION, classify, find_band
from ragmeter.reports.html import json_for_script, render_run_html
from ragmeter.reports.markdown import md_escape, run_markdown
from ragmeter.reports.svg import Point, box_stats, forest, nice_range

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]


@pytest.mark.parametrize("metric, value, tier, band", [
    ("hit_rate@1", 0.81, None, EXCELLENT), ("hit_rate@1", 0.8, None, GOOD),
    ("hit_rate@1", 0.5, None, GOOD), ("hit_rate@1", 0.49, None, NEEDS_ATTENTION),
    ("hit_rate@5", 0.1, None, None),  # §11.2 has HitRate@1 only
    ("mrr", 0.9, None, EXCELLENT), ("mrr@10", 0.6, None, GOOD),
    ("ndcg@10", 0.3, None, NEEDS_ATTENTION), ("ndcg@10(gain=exp)", 0.85, None, EXCELLENT),
    ("ndcg@5", 0.3, None, None),
    ("faithfulness", 0.91, None, EXCELLENT), ("faithfulness", 0.7, None, GOOD),
    ("faithfulness", 0.69, None, NEEDS_ATTENTION),
    ("e2e_score", 0.61, None, GOOD), ("e2e_score", 0.59, None, NEEDS_ATTENTION),
    ("accuracy", 0.96, "judge_pipeline", EXCELLENT), ("accuracy", 0.9, "judge_pipeline", GOOD),
    ("accuracy", 0.96, "retrieval", None),
    ("consistency", 0.84, None, NEEDS_ATTENTION), ("consistency", 0.96, None, EXCELLENT),
    ("mrr", None, None, None), ("mrr", float("nan"), None, None),
])
def test_bands(metric, value, tier, band):
    assert classify(metric, value, tier) == band


def test_band_table_matches_design_doc():
    assert find_band("faithfulness").excellent_above == 0.9
    assert find_band("faithfulness").attention_below == 0.7
    assert find_band("e2e_score").attention_below == 0.6
    assert find_band("consistency").excellent_above == 0.95


def test_json_for_script_is_inert_and_round_trips():
    data = {"q": "</script><script>alert(1)</script> & <!-- \u2028 x"}
    text = json_for_script(data)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == data


def test_run_html_escapes_user_text():
    html = render_run_html(builders.make_run(demo=True))
    # the raw payloads never appear as markup
    assert builders.XSS not in html
    assert "<script>x()</script>" not in html
    assert "<b>bold</b>" not in html
    assert "&lt;script&gt;document.title=&#x27;PWNED&#x27;" in html
    # the only <script> tags are ours: the JSON block and the inline report script
    assert len(re.findall(r"<script\b", html, re.I)) == 2
    data = re.search(r'<script type="application/json" id="rm-data">(.*?)</script>', html, re.S)
    assert data and builders.XSS in [s["question"] for s in json.loads(data.group(1))["samples"]]
    # no external URL (the SVG namespace is an identifier, not a fetch)
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html)) - {"http://www.w3.org/2000/svg"}
    assert not urls, urls
    assert 'src="' not in html and "<link" not in html


def test_run_html_sections():
    run = builders.make_run(demo=True)
    html = render_run_html(run, lang="en")
    assert 'id="demo-banner"' in html
    assert "not available" in html and "&lt;i&gt;x&lt;/i&gt;" in html  # tier reason escaped
    # the decision table comes first, before the tier list and the charts
    assert html.index('id=decision') < html.index('id=tiers') < html.index('class=tier ')
    assert 'class="decision" data-tier="retrieval"' in html
    assert "paired randomization (sign-flip) test" in html and "seed 42" in html
    assert 'data-chart="forest"' in html  # key metrics with CI whiskers
    assert 'data-chart="bars"' in html  # hit@k per k, one bar per system
    assert 'data-chart="heatmap"' in html  # confusion matrix of the production judge
    assert "design doc" not in html and "§" not in html
    assert "Quality bands" in html and "needs attention" in html
    assert "claim 0 supported by context" in html  # judge reasons in the explorer
    assert "parse_error" in html
    assert run.signature in html
    assert "sk-secret" not in html and "hunter2" not in html
    plain = builders.make_run(demo=False)
    plain.tiers = {"retrieval": plain.tiers["retrieval"]}
    html2 = render_run_html(plain)
    assert 'id="demo-banner"' not in html2
    assert 'data-chart="heatmap"' not in html2  # no confusion data → no chart


def test_decision_marks_best_and_significance():
    from ragmeter.reports.decision import decide

    run = builders.make_run()
    strong = builders.retrieval_result("strong", shift=0.4)
    rec = run.tiers["retrieval"]
    dec = decide("retrieval", [(r.name, r) for r in [*rec.results, strong]])
    assert dec.primary == "mrr"
    assert dec.cells[("strong", "mrr")].best
    assert dec.cells[("bm25", "mrr")].significant  # 0.4 ahead on 30 samples
    assert "strong is best on mrr" in dec.verdict("en")
    assert "значим" in dec.verdict("ru")
    # close systems: the lead is not significant and the verdict says so
    dec2 = decide("retrieval", [(r.name, r) for r in rec.results], metrics=["mrr"])
    assert not any(c.significant for c in dec2.cells.values())  # 0.44 vs 0.40 on 30 samples
    assert "not significant" in dec2.verdict("en")


def test_metric_with_no_scored_samples_is_not_a_result():
    import numpy as np

    run = builders.make_run()
    res = run.tiers["generation"].results[0]
    res.add(builders.metric("id_context_precision@5", np.full(30, np.nan),
                            reasons={i: "missing_field:retrieved_ids" for i in range(30)}))
    html = render_run_html(run, lang="en")
    assert "no scored samples" in html
    html_ru = render_run_html(run, lang="ru")
    assert "нет оценённых примеров" in html_ru


def test_languages():
    run = builders.make_run()
    ru = render_run_html(run)  # the questions are Russian: the default is Russian
    assert "<html lang=ru>" in ru and "Решение" in ru and "Примеры" in ru
    en = render_run_html(run, lang="en")
    assert "<html lang=en>" in en and "Decision" in en and "Решение" not in en
    md = run_markdown(run, lang="ru")
    assert "### Решение" in md
    with pytest.raises(Exception, match="ru"):
        render_run_html(run, lang="de")


def test_charts_show_ci_and_say_when_axis_is_zoomed():
    svg = forest("t <t>", [("<x>", Point(0.9, 0.85, 0.95)), ("y", Point(None))])
    assert "n/a" in svg and "&lt;x&gt;" in svg and "<x>" not in svg
    assert 'class="rm-ci"' in svg and "axis starts at" in svg
    assert nice_range([0.0, 0.9]) == (0.0, 1.0)
    lo, hi = nice_range([0.93, 0.99])
    assert 0.8 <= lo < 0.93 and 0.99 <= hi <= 1.0
    st = box_stats([0.0, 1.0, 2.0, 3.0, 100.0, float("nan")])
    assert st is not None and st["n"] == 5 and st["hi"] == 3.0  # 100 is an outlier


def test_markdown_summary():
    run = builders.make_run(demo=True)
    from ragmeter.runner.gating import Threshold, check_thresholds

    gate = check_thresholds(run.results(), [Threshold("mrr", min=0.99)])
    md = run_markdown(run, gate, lang="en")
    assert "Demo judge" in md and "FAILED" in md and "🔴" in md
    assert "<script>" not in md
    assert "| retrieval | bm25 | `mrr` |" in md
    assert md.index("### Decision") < md.index("Quality gate")
    assert md_escape("a|b\nc<d>") == "a\\|b c&lt;d&gt;"


def test_demo_judge_results_get_no_quality_band() -> None:
    from ragmeter.reports.bands import from_demo_judge
    from ragmeter.reports.html import _band_badge

    assert from_demo_judge([], {"judge": "x", "demo": "yes"})
    assert from_demo_judge(["demo"], {"judge": "demo"})
    assert not from_demo_judge(["demo"], {"judge": "main"})
    assert "demo judge" in _band_badge("faithfulness", 0.99, "generation", demo=True)
    assert "excellent" in _band_badge("faithfulness", 0.99, "generation", demo=False)


def test_chart_files_use_the_report_engine(tmp_path):
    from ragmeter.reports.charts import confusion_chart, grouped_bar_chart, line_chart_by_k

    panels = {"hit@k": {"bm25 <b>": {1: (0.5, 0.4, 0.6), 5: (0.9, 0.85, 0.95)},
                        "dense": {1: (0.6, 0.5, 0.7), 5: (0.92, 0.88, 0.96)}}}
    bars = grouped_bar_chart(panels, tmp_path / "bars", title="t")
    lines = line_chart_by_k(panels, tmp_path / "lines")
    assert [p.suffix for p in bars + lines] == [".svg", ".svg"]
    text = bars[0].read_text(encoding="utf-8")
    assert text.startswith("<?xml") and 'class="rm-ci"' in text and "bm25 &lt;b&gt;" in text
    assert line_chart_by_k(panels, tmp_path / "again")[0].read_text("utf-8") == \
        lines[0].read_text("utf-8")  # byte-stable
    run = builders.make_run()
    res = run.tiers["judge_pipeline"].results[0]
    res.meta["confusion"] = res.meta["confusion_matrix"]
    assert 'data-chart="heatmap"' in confusion_chart(res, tmp_path)[0].read_text("utf-8")
    with pytest.raises(Exception, match="SVG only"):
        grouped_bar_chart(panels, tmp_path / "x", formats=("png",))


def test_decision_says_when_no_paired_test_is_possible():
    from ragmeter.reports.decision import decide
    from ragmeter.results.records import EvalResult

    run = builders.make_run()
    bm25, dense = run.tiers["retrieval"].results
    other = EvalResult("other-data")
    other.add(builders.metric("mrr", [0.1] * 10, ids=[f"z{i}" for i in range(10)]))
    twin = EvalResult("dense-twin")
    twin.add(dense.results["mrr"])
    dec = decide("retrieval", [("bm25", bm25), ("dense", dense), ("dense-twin", twin),
                               ("other-data", other)], metrics=["mrr"])
    assert not dec.cells[("other-data", "mrr")].paired
    text = dec.verdict("en")
    assert "dense (tied with dense-twin) is best on mrr" in text
    assert "No sample was scored by both it and other-data" in text
    html = render_run_html(run, lang="en")
    assert "∅" not in html  # one dataset: every system pairs with the best


run = run_cli
_jsonl = write_jsonl


DEMO = Path(__file__).parents[1] / "src" / "ragmeter" / "demo" / "data"


def test_judge_pipeline_accuracy_band_applies_and_is_translated(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from ragmeter.reports.bands import classify, find_band

    band = find_band("cls_accuracy", "judge_pipeline")
    assert band is not None and band.label == "Accuracy (judge pipeline)"
    assert classify("cls_accuracy", 0.9, "judge_pipeline") == "good"
    assert find_band("cls_accuracy", "generation") is None  # a plain accuracy has no row
    assert band.title("ru") != band.label and band.title("en") == band.label

    res = tmp_path / "jp.json"
    code, _, err = run(capsys, "judge", "pipeline", str(DEMO / "judge_pipeline.jsonl"),
                       "--out", str(res))
    assert code == 0, err
    for lang in ("ru", "en"):
        page = tmp_path / f"{lang}.html"
        code, _, err = run(capsys, "report", str(res), "--lang", lang, "--out", str(page))
        assert code == 0, err
        html = page.read_text(encoding="utf-8")
        assert band.title(lang) in html
        assert 'class="band mid"' in html  # accuracy 0.875 of the demo predictions: "good"
    assert "Accuracy (judge pipeline)" not in (tmp_path / "ru.html").read_text(encoding="utf-8")


def test_reports_from_results_json_follow_the_recorded_language(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import ragmeter
    from ragmeter.data.sample import Sample

    ru = [Sample(id="1", user_input="Когда начинается зимняя сессия?", reference="В январе.",
                 response="В январе.", retrieved_ids=["d1"], gold_chunk_ids=["d1"])]
    assert ragmeter.evaluate_generation(ru, metrics=["rouge_1"]).meta["lang"] == "ru"
    assert ragmeter.evaluate_retrieval(ru, metrics=["mrr"]).meta["lang"] == "ru"

    f = _jsonl(tmp_path / "allru.jsonl", [{"user_input": "Где находится библиотека?",
                                           "reference": "В корпусе Б.", "response": "В корпусе Б."}])
    res = tmp_path / "allru.json"
    code, _, err = run(capsys, "score", "generation", "--samples", str(f), "--metrics", "rouge_1",
                       "--out", str(res))
    assert code == 0, err
    page = tmp_path / "r.html"
    code, _, err = run(capsys, "report", str(res), "--out", str(page))
    assert code == 0, err
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>\n<html lang=ru>")
    code, _, err = run(capsys, "report", str(res), "--lang", "en", "--out", str(page))
    assert code == 0 and "<html lang=en>" in page.read_text(encoding="utf-8")
