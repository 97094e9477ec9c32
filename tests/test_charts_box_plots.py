"""Box plots of per-query values: the engine's box plot, the report's and `ragmeter score baselines`'
chart files (context precision / recall and the other non-binary retrieval metrics)."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data.sample import Sample
from ragmeter.reports import svg
from ragmeter.reports.boxplot import box_plot
from ragmeter.reports.charts import per_query_panels, retriever_charts
from ragmeter.reports.html import render_run_html
from ragmeter.retrieval.base import Chunk, Hit
from ragmeter.retrieval.chunking import chunk_documents
from ragmeter.retrieval.corpus import Document
from ragmeter.tiers.compare_retrievers import compare_retrievers

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]


def _float(svg_text: str, cls: str, attr: str) -> list[float]:
    return [float(m) for m in re.findall(rf'class="{cls}"[^>]*? {attr}="([-0-9.]+)"', svg_text)]


def test_box_plot_draws_quartiles_median_whiskers_and_mean_ci() -> None:
    values = [0.0, 0.1, 0.2, 0.2, 0.3, 0.4, 0.5, 2.0]  # 2.0 lies beyond 1.5 IQR
    st = svg.box_stats(values)
    assert st is not None and st["hi"] == 0.5
    chart = box_plot("precision@5: per-sample values",
                     [("bm25", values, svg.Point(0.4625, 0.2, 0.9)),
                      ("dense", [float("nan")], svg.Point(None))])
    assert chart.count('class="rm-box"') == 1  # the row without values is n/a, not a box at 0
    assert ">n/a<" in chart
    assert chart.count('class="rm-median"') == 1 and chart.count('class="rm-outlier"') == 1
    assert chart.count('class="rm-whisker"') == 2 and chart.count('class="rm-ci"') == 1
    # the box spans q1..q3 on the drawn axis: its width is proportional to the IQR
    plot = re.search(r'data-x="([\d.]+)"[^>]*data-w="([\d.]+)"', chart)
    assert plot
    x0, w = float(plot.group(1)), float(plot.group(2))
    (bx,), (bw,) = _float(chart, "rm-box", "x"), _float(chart, "rm-box", "width")
    lo, hi = svg.nice_range([*values, 0.2, 0.9])
    assert lo == 0.0
    assert abs(bx - (x0 + w * st["q1"] / hi)) < 0.2
    assert abs(bw - w * (st["q3"] - st["q1"]) / hi) < 0.3
    assert f"median {st['median']:.4f}" in chart and "n=8" in chart


def test_per_query_panels_group_ks_and_leave_out_binary_metrics() -> None:
    res = builders.retrieval_result("bm25")
    res.add(builders.metric("precision@5", [0.2, 0.4, 0.0, 0.6]))
    res.add(builders.metric("precision@1", [1.0, 0.0, 1.0, 0.0]))  # binary: no box
    other = builders.retrieval_result("dense")
    other.add(builders.metric("precision@5", [0.0, 0.2, 0.2, 0.8]))
    panels = per_query_panels({"bm25": res, "dense": other})
    assert "hit_rate" not in panels  # hit@k is 0/1 per query
    assert set(panels) >= {"context_precision", "precision", "mrr", "ndcg"}
    labels = [label for label, _, _ in panels["precision"]]
    assert labels == ["k=1 · bm25", "k=5 · bm25", "k=5 · dense"]
    assert [label for label, _, _ in panels["context_precision"]] == ["bm25", "dense"]
    mean = panels["precision"][1][2][0]
    assert mean is not None and abs(mean - 0.3) < 1e-12


def test_report_shows_box_plot_of_context_precision() -> None:
    html = render_run_html(builders.make_run("boxes"), lang="en")
    boxes = re.findall(r'<svg class="rm-chart" data-chart="box".*?</svg>', html, re.S)
    titles = [re.search(r"<title>(.*?)</title>", b).group(1) for b in boxes]  # type: ignore[union-attr]
    assert "context_precision: per-sample values" in titles
    cp = boxes[titles.index("context_precision: per-sample values")]
    systems = {r.name for r in builders.make_run("boxes").tiers["retrieval"].results}
    assert cp.count('class="rm-box"') == len(systems) >= 2


class _Ranked:
    """A retriever that ranks the chunks in a fixed order for every query (for chart tests)."""

    def __init__(self, name: str, reverse: bool) -> None:
        self.name, self.reverse, self.chunks = name, reverse, []  # type: ignore[var-annotated]

    def index(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(reversed(chunks)) if self.reverse else list(chunks)

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        ranked = [Hit(c.chunk_id, c.doc_id, float(-i)) for i, c in enumerate(self.chunks)]
        return [ranked[:k] for _ in queries]

    def signature_fields(self) -> dict[str, Any]:
        return {"retriever": self.name}


def _comparison() -> Any:
    docs = [Document(f"d{i}", f"Документ номер {i} о предмете {i}.") for i in range(6)]
    chunks = chunk_documents(docs, chunk_size_chars=200, overlap_chars=0)
    samples = [Sample(f"q{i}", user_input=f"вопрос {i}",  # two gold chunks: recall 0, ½ or 1
                      gold_doc_ids=[f"d{i}", f"d{(i + 1) % 6}"],
                      gold_chunk_ids=[f"d{i}#0", f"d{(i + 1) % 6}#0"], type="fact")
               for i in range(6)]
    return compare_retrievers({"forward": _Ranked("forward", False),
                               "reverse": _Ranked("reverse", True)}, samples, chunks,
                              ks=(1, 3), n_resamples=200)


def test_retrievers_write_box_plots_of_per_query_precision_recall(tmp_path: Path) -> None:
    files = retriever_charts(_comparison(), tmp_path)
    boxes = tmp_path / "per_query_boxes.svg"
    assert boxes in files
    text = boxes.read_text(encoding="utf-8")
    titles = re.findall(r'data-chart="box"[^>]*aria-label="([^"]+)"', text)
    assert {"precision: per-sample values", "recall: per-sample values",
            "ndcg: per-sample values", "mrr: per-sample values"} <= set(titles)
    # precision@1 and precision@3 per retriever: 4 boxes in the precision panel
    precision = text.split('aria-label="precision: per-sample values"')[1].split("</svg>")[0]
    assert precision.count('class="rm-box"') == 4
    assert "k=1 · forward" in precision and "k=3 · reverse" in precision
    per_query = np.asarray(_comparison().results["forward"]["precision@3"].values)
    assert len(set(np.round(per_query, 6))) > 1  # a distribution, not one value
