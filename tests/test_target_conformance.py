"""Which returned ids a run can score: documents scored by chunk-level metrics are a mapping
mistake; chunk ids that miss, single-chunk documents and document-level metrics are not."""

from __future__ import annotations

import pytest

from ragmeter.data.sample import Sample
from ragmeter.targets.base import TargetReply
from ragmeter.targets.config import parse_target
from ragmeter.targets.conformance import (
    CONCLUSIVE,
    Conformance,
    TargetMappingError,
    chunk_level_metrics,
    known_ids,
)

N = CONCLUSIVE


def _samples(chunks: bool = True) -> list[Sample]:
    return [Sample(id=f"q{i}", user_input=f"q{i}", gold_doc_ids=[f"doc{i}"],
                   gold_chunk_ids=[f"doc{i}#2"] if chunks else None) for i in range(N)]


def _check(returned: list[list[str]], metrics: list[str], *, chunks: bool = True,
           ids_from: str = "doc_ids") -> None:
    samples = _samples(chunks)
    conf = Conformance(parse_target({"kind": "http", "url": "http://127.0.0.1:9/ask",
                                     "ids": {"from": ids_from}}))
    replies = [TargetReply(answer="a", doc_ids=r, context_ids=r) for r in returned]
    known = known_ids(samples, chunk_metrics=chunk_level_metrics(metrics, samples))
    conf.observe_ids("answer", samples, replies, known)
    conf.check(final=True)


def test_chunk_level_metrics_follow_the_level_and_the_gold() -> None:
    with_chunks, docs_only = _samples(True), _samples(False)
    asked = ["hit_rate@5", "mrr(level=doc)", "ndcg@10(level=chunk)", "rouge_l"]
    assert chunk_level_metrics(asked, with_chunks) == ("hit_rate@5", "ndcg@10(level=chunk)")
    assert chunk_level_metrics(asked, docs_only) == ("ndcg@10(level=chunk)",)


def test_documents_scored_as_chunks_are_a_mapping_mistake() -> None:
    docs = [[f"doc{i}", f"doc{(i + 1) % N}"] for i in range(N)]
    with pytest.raises(TargetMappingError) as err:
        _check(docs, ["hit_rate@5", "recall@5(level=doc)"])
    text = str(err.value)
    assert "are documents" in text and f"in {N} of the {N} replies" in text
    assert "hit_rate@5 score chunks" in text and "hit_rate@5(level=doc)" in text
    _check(docs, ["hit_rate@5(level=doc)", "mrr(level=doc)"])        # scored as documents
    _check(docs, ["hit_rate@5"], chunks=False)                        # no chunk gold: auto=doc
    _check(docs, ["hit_rate@5(level=chunk)"], chunks=False)   # no chunk known: unscored, not 0


def test_chunks_that_miss_and_single_chunk_documents_are_not_documents() -> None:
    # the right document's other chunk, every time: a poor system, not a mapping mistake
    _check([[f"doc{i}#5"] for i in range(N)], ["hit_rate@5"])
    # one of the returned ids is a known chunk: the ids are chunks
    _check([["doc0", "doc1#2"]] + [[f"doc{i}"] for i in range(1, N)], ["hit_rate@5"])


def test_too_few_replies_are_not_conclusive_before_the_end() -> None:
    samples = _samples()
    conf = Conformance(parse_target({"kind": "http", "url": "http://127.0.0.1:9/ask",
                                     "ids": {"from": "doc_ids"}}))
    few = N // 2
    conf.observe_ids("answer", samples[:few], [TargetReply(answer="a", doc_ids=[f"doc{i}"])
                                               for i in range(few)],
                     known_ids(samples, chunk_metrics=("hit_rate@5",)))
    conf.check(final=False)
    with pytest.raises(TargetMappingError):
        conf.check(final=True)


def _check_corpus(returned: list[list[str]], corpus_docs: list[str] | None) -> None:
    samples = _samples(False)
    conf = Conformance(parse_target({"kind": "http", "url": "http://127.0.0.1:9/ask",
                                     "ids": {"from": "doc_ids", "rule": "last_segment"}}))
    replies = [TargetReply(answer="a", doc_ids=r) for r in returned]
    known = known_ids(samples, docs=corpus_docs or (),
                      chunk_metrics=chunk_level_metrics(["hit_rate@5(level=doc)"], samples))
    conf.observe_ids("answer", samples, replies, known)
    conf.check(final=True)


def test_with_the_corpus_known_most_returned_ids_outside_it_are_a_mapping_mistake() -> None:
    corpus = [f"doc{i}" for i in range(N)] + ["extra-a", "extra-b"]
    # the rule fits the gold document's URL, not the other four of every reply
    partly = [[f"https://kb/doc{i}", f"https://kb/sec/{i}/page", "https://kb/x/a",
               "https://kb/y/b", "https://kb/z/c"] for i in range(N)]
    with pytest.raises(TargetMappingError) as err:
        _check_corpus(partly, corpus)
    text = str(err.value)
    assert f"maps {4 * N} of the {5 * N} ids returned" in text and "no id of the corpus" in text
    assert "'https://kb/sec/0/page' -> 'page'" in text
    _check_corpus(partly, None)            # no corpus: an unknown id may be any document
    # a rule that fits: every returned id is a corpus document (most of them not gold)
    fits = [[f"https://kb/doc{i}", "https://kb/extra-a", "https://kb/extra-b"]
            for i in range(N)]
    _check_corpus(fits, corpus)
    # one returned id in five outside the corpus (an index a little larger): no complaint
    _check_corpus([[*r[:4], "https://kb/new"] for r in ([f"https://kb/doc{i}"] * 4
                                                         for i in range(N))], corpus)
