"""Tier 0: cluster metrics checked against scikit-learn and hand-computed cases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragmeter.errors import DataError
from ragmeter.metrics.embedding import cluster_stats
from ragmeter.metrics.registry import get_spec
from ragmeter.reports.charts import tier0_chart
from ragmeter.tiers.tier0 import (
    LabelledTexts,
    evaluate_embedding_quality,
    evaluate_vectors,
    load_labelled_texts,
    tier0_table,
)

sklearn_metrics = pytest.importorskip("sklearn.metrics")


class TableEmbedder:
    """Test double: fixed vectors per text (looked up), L2-normalised like the real ones."""

    def __init__(self, name: str, table: dict[str, list[float]]):
        self.name = name
        self.table = table
        self.calls: list[str] = []

    @property
    def dim(self) -> int:
        return len(next(iter(self.table.values())))

    def embed(self, texts, kind="symmetric"):
        self.calls.append(kind)
        X = np.array([self.table[t] for t in texts], dtype=np.float32)
        return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_silhouette_matches_sklearn_cosine(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = 150, 6
    centers = rng.normal(size=(k, 24))
    labels = rng.integers(0, k, size=n)
    X = centers[labels] + rng.normal(scale=0.8, size=(n, 24))
    lab = [f"c{v}" for v in labels]
    lab[0] = "singleton"  # a cluster of size 1: s = 0, as sklearn
    st = cluster_stats(X, lab)
    ref = sklearn_metrics.silhouette_score(X, np.array(lab), metric="cosine")
    assert st.silhouette_score == pytest.approx(ref, abs=1e-10)
    per = sklearn_metrics.silhouette_samples(X, np.array(lab), metric="cosine")
    np.testing.assert_allclose(st.silhouette, per, atol=1e-10)
    assert st.silhouette[0] == 0.0


def test_intra_and_inter_hand_computed() -> None:
    # cluster a: e1=(1,0), e2=(0,1) -> cos 0; cluster b: (1,0),(1,0),(1,0) -> cos 1
    X = np.array([[1.0, 0], [0, 2.0], [3.0, 0], [1.0, 0], [1.0, 0]])
    st = cluster_stats(X, ["a", "a", "b", "b", "b"])
    assert st.intra.tolist() == pytest.approx([0.0, 1.0])
    assert st.avg_intra_cluster_sim == pytest.approx(0.5)
    # centroids of normalised vectors: (0.5,0.5) and (1,0): distance sqrt(0.5)
    assert st.avg_inter_cluster_dist == pytest.approx(np.sqrt(0.5))
    assert st.total_pairs == 5
    assert st.intra_pairs == 1 + 3
    assert st.n_clusters == 2


def test_intra_matches_bruteforce_pairs() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 8))
    lab = [str(i % 4) for i in range(40)]
    st = cluster_stats(X, lab)
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    for ci, c in enumerate(st.clusters):
        idx = [i for i, v in enumerate(lab) if v == c]
        sims = [Xn[p] @ Xn[q] for a, p in enumerate(idx) for q in idx[a + 1:]]
        assert st.intra[ci] == pytest.approx(np.mean(sims))
    cents = np.stack([Xn[[i for i, v in enumerate(lab) if v == c]].mean(0) for c in st.clusters])
    d = [np.linalg.norm(cents[i] - cents[j]) for i in range(4) for j in range(i + 1, 4)]
    assert st.avg_inter_cluster_dist == pytest.approx(np.mean(d))


def test_singleton_cluster_excluded_from_intra_and_counted() -> None:
    X = np.array([[1.0, 0], [1.0, 0.1], [0, 1.0], [0.1, 1.0], [1.0, 1.0]])
    res = evaluate_vectors(X, ["a", "a", "b", "b", "c"], model="m")
    intra = res["intra_cluster_sim"]
    assert intra.aggregate.n == 2 and intra.aggregate.n_unscored == 1
    assert intra.reasons == {2: "singleton_cluster"}
    assert intra.counts["singleton_clusters"] == 1


@pytest.mark.parametrize("labels, needle", [
    (["a", None, "b", "b"], "missing label"),
    (["a", "", "b", "b"], "missing label"),
    (["a", "a", "a", "a"], "1 distinct cluster"),
    (["a", "b", "c", "d"], "4 distinct cluster"),
])
def test_bad_labels_raise_never_zero(labels, needle) -> None:
    X = np.eye(4)
    with pytest.raises(DataError, match=needle):
        cluster_stats(X, labels)


def test_loader_reports_every_missing_label_with_line(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    rows = [{"text": "a", "label": "x"}, {"text": "b"}, {"text": "c", "label": "y"},
            {"text": "", "label": "y"}, {"text": "d", "label": None}]
    p.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    with pytest.raises(DataError) as ei:
        load_labelled_texts(p)
    msg = str(ei.value)
    assert f"{p}:2 field 'label'" in msg and f"{p}:5 field 'label'" in msg
    assert f"{p}:4 field 'text'" in msg


def test_loader_uses_doc_id_for_chunks(tmp_path: Path) -> None:
    p = tmp_path / "chunks.jsonl"
    rows = [{"chunk_id": f"d{i % 2}#{i}", "doc_id": f"d{i % 2}", "text": f"t{i}"} for i in range(6)]
    p.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    data = load_labelled_texts(p)
    assert data.labels == ["d0", "d1"] * 3 and data.ids[0] == "d0#0"


def test_compare_models_table_and_chart(tmp_path: Path) -> None:
    texts = ["кот", "кошка", "котёнок", "авто", "машина", "грузовик"]
    labels = ["animal"] * 3 + ["car"] * 3
    good = TableEmbedder("good", {t: ([1, 0.1 * i, 0] if i < 3 else [0, 0.1 * i, 1])
                                  for i, t in enumerate(texts)})
    bad = TableEmbedder("bad", {t: [1, (i % 2), 0.5] for i, t in enumerate(texts)})
    data = LabelledTexts(texts, labels, [f"t{i}" for i in range(6)])
    res = evaluate_embedding_quality(data, [good, bad])
    rows = tier0_table(res)
    assert [r["model"] for r in rows] == ["good", "bad"]
    assert rows[0]["silhouette_score"] > 0.5 > rows[1]["silhouette_score"]
    assert rows[0]["total_pairs"] == 6 and rows[0]["n_clusters"] == 2
    assert good.calls == ["symmetric"]
    sig = res[0]["silhouette"].signature.as_dict()
    assert sig["model"] == "good" and sig["data"] == data.data_hash() and "ragmeter" in sig
    paths = tier0_chart(res, tmp_path)  # the chart of the CLI and the demo
    assert [p.name for p in paths] == ["tier0.svg"]  # the report's chart engine: SVG only
    chart = paths[0].read_text("utf-8")
    assert "<svg" in chart and "silhouette" in chart and "good" in chart


def test_specs_registered() -> None:
    for name in ("silhouette", "intra_cluster_sim", "inter_cluster_dist"):
        assert get_spec(name).family == "embedding"


def test_cli_reports_missing_labels_cleanly(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragmeter.cli.app import app

    p = tmp_path / "t.jsonl"
    p.write_text('{"text": "a", "label": "x"}\n{"text": "b"}\n', encoding="utf-8")
    r = CliRunner().invoke(app, ["score", "tier0", str(p)])
    assert r.exit_code != 0
    assert "missing cluster label" in str(r.exception)
