"""UX tier: cache hit / false-hit rate, context preservation and multi-turn consistency."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragmeter.errors import ConfigError, DataError
from ragmeter.judges import ScriptedJudge
from ragmeter.tiers.ux import (
    CacheEntry,
    Session,
    evaluate_cache,
    evaluate_sessions,
    evaluate_ux,
    load_questions,
    load_sessions,
)


class TableEmbedder:
    """Test double returning fixed unit vectors per text."""

    name = "table"

    def __init__(self, table: dict[str, list[float]]):
        self.table = table

    @property
    def dim(self) -> int:
        return 3

    def embed(self, texts, kind="symmetric"):
        X = np.array([self.table[t] for t in texts], dtype=np.float64)
        return X / np.linalg.norm(X, axis=1, keepdims=True)


def _unit(deg: float) -> list[float]:
    r = np.deg2rad(deg)
    return [float(np.cos(r)), float(np.sin(r)), 0.0]


def test_cache_hit_and_false_hit_hand_computed() -> None:
    # cache entries at 0 and 90 degrees; cos(θ) to the nearest entry decides the hit
    table = {"c0": _unit(0), "c90": _unit(90), "q10": _unit(10), "q30": _unit(30),
             "q80": _unit(80), "q45": _unit(45), "q0": _unit(0)}
    cache = [CacheEntry("c0", "c0", source="doc-a"), CacheEntry("c90", "c90", source="doc-b")]
    queries = [CacheEntry("1", "q10", source="doc-a"),   # cos .985 hit, same source
               CacheEntry("2", "q30", source="doc-a"),   # cos .866 hit (>.85), same
               CacheEntry("3", "q80", source="doc-a"),   # cos .985 to c90: hit, FALSE
               CacheEntry("4", "q45", source="doc-b"),   # cos .707 miss
               CacheEntry("5", "q0", source=None)]       # identical: hit, unknown source
    res = evaluate_cache(queries, cache, TableEmbedder(table), threshold=0.85)
    hit = res["cache_hit_rate"]
    assert hit.values.tolist() == [1, 1, 1, 0, 1]
    assert hit.mean == pytest.approx(0.8)
    false = res["cache_false_hit_rate"]
    assert false.sample_ids == ["1", "2", "3"] and false.mean == pytest.approx(1 / 3)
    assert false.counts == {"hits": 4, "unknown_source": 1, "misses": 1}
    strict = evaluate_cache(queries, cache, TableEmbedder(table), threshold=0.9)
    assert strict.results["cache_hit_rate(threshold=0.9)"].mean == pytest.approx(0.6)
    sweep = {r["threshold"]: r["hit_rate"] for r in res.meta["cache"]["sweep"]}
    assert sweep[0.85] == pytest.approx(0.8) and sweep[0.98] == pytest.approx(0.6)


def test_context_preservation_and_short_sessions() -> None:
    table = {"a": _unit(0), "b": _unit(60), "c": _unit(120), "x": _unit(0), "y": _unit(90)}
    sessions = [Session("s1", ["a", "b", "c"]), Session("s2", ["x", "y"]), Session("s3", ["a"])]
    res = evaluate_sessions(sessions, TableEmbedder(table))
    cp = res["context_preservation"]
    assert cp.sample_ids == ["s1", "s2"]
    assert cp.values.tolist() == pytest.approx([0.5, 0.0])
    assert cp.counts["short_sessions"] == 1
    assert "multi_turn_consistency" not in res.results
    assert res.meta["multi_turn"]["mode"] == "embedding_fallback"


def test_answer_similarity_fallback_is_named_differently() -> None:
    table = {"q": _unit(0), "a1": _unit(0), "a2": _unit(90), "a3": _unit(0)}
    s = Session("s", ["q", "q", "q"], ["a1", "a2", "a3"])
    res = evaluate_sessions([s], TableEmbedder(table))
    sim = res["multi_turn_answer_similarity"]
    assert sim.values.tolist() == pytest.approx([(0 + 1 + 0) / 3])


def test_multi_turn_consistency_with_judge_one_call_per_session() -> None:
    table = {t: _unit(i * 10) for i, t in enumerate(["q1", "q2", "q3", "q4", "a1", "a2", "a3",
                                                      "a4"])}
    sessions = [Session("s1", ["q1", "q2", "q3"], ["a1", "a2", "a3"]),
                Session("s2", ["q1", "q2"], ["a1", "a4"]),
                Session("s3", ["q1", "q2"], ["a1", None]),          # one answer: excluded
                Session("s4", ["q3", "q4"], ["a3", "a4"])]

    def fn(req):
        user = next(m["content"] for m in req.messages if "turn_1" in m["content"])
        if "turn_3" in user:
            return {"contradictions": [{"earlier": 1, "later": 3}]}   # 1 of 3 pairs
        if "a4" in user and "a1" in user:
            return {"contradictions": []}
        return {"contradictions": [{"earlier": 2, "later": 5}]}      # out of range

    judge = ScriptedJudge(fn)
    res = evaluate_sessions(sessions, TableEmbedder(table), judge=judge)
    mtc = res["multi_turn_consistency"]
    assert mtc.sample_ids == ["s1", "s2", "s4"]
    assert mtc.values[:2].tolist() == pytest.approx([2 / 3, 1.0])
    assert mtc.reasons == {2: "schema_error"}
    assert mtc.counts["short_sessions"] == 1
    assert judge.scripted.calls == 3  # one call per session with >= 2 answers
    assert "context_preservation" in res.results
    assert res["multi_turn_consistency"] is not res["context_preservation"]


def test_loaders_flat_and_nested(tmp_path: Path) -> None:
    nested = tmp_path / "s.jsonl"
    nested.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in [
        {"session_id": "a", "turns": [{"question": "q1", "answer": "x"}, {"question": "q2"}]},
        {"session_id": "b", "turns": [{"question": ""}]},
    ]), encoding="utf-8")
    with pytest.raises(DataError, match=r":2 field 'turns\[0\].question'"):
        load_sessions(nested)
    flat = tmp_path / "f.jsonl"
    flat.write_text("\n".join(json.dumps(r) for r in [
        {"session_id": "a", "turn": 2, "question": "second"},
        {"session_id": "a", "turn": 1, "question": "first", "answer": "ans"},
        {"session_id": "b", "turn": 1, "question": "only"}]), encoding="utf-8")
    ss = load_sessions(flat)
    assert [s.id for s in ss] == ["a", "b"]
    assert ss[0].questions == ["first", "second"] and ss[0].answers == ["ans", None]
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"question": "x", "url": "HTTP://Wiki.Example.com/p/1/?utm_source=a"})
                 + "\n" + json.dumps({"answer": "no question"}), encoding="utf-8")
    with pytest.raises(DataError, match=":2 field 'question'"):
        load_questions(q)
    q.write_text(json.dumps({"question": "x", "url": "HTTP://Wiki.Example.com/p/1/?utm_source=a"}),
                 encoding="utf-8")
    assert load_questions(q)[0].source == "https://wiki.example.com/p/1"


def test_evaluate_ux_needs_inputs() -> None:
    emb = TableEmbedder({"a": _unit(0)})
    with pytest.raises(ConfigError):
        evaluate_ux(emb)
    with pytest.raises(ConfigError):
        evaluate_ux(emb, cache=[CacheEntry("1", "a")])
