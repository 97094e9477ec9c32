"""Tier 2 / Tier 3 runs over HTTP: generator and judge both talk to the fake OpenAI server."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ragmeter.calls import RetryPolicy
from ragmeter.data.sample import Sample
from ragmeter.errors import DataError
from ragmeter.generation.client import GeneratorClient, GeneratorConfig
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.factory import make_judge
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.metrics.judged.rows import JUDGED_DEFAULT
from ragmeter.retrieval.base import Chunk, Hit
from ragmeter.tiers.generation import run_tier2, run_tier3

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "generation"))
from fake_judge import make_script

SCRIPT = make_script()


def reply(body, schema):
    if schema is None:   # the generator: answer with the first context sentence
        user = body["messages"][-1]["content"]
        m = re.search(r"<context_1>\n(.*?)\n</context_1>", user, re.S)
        return m.group(1).split(" [")[0] if m else "Не знаю."
    req = SimpleNamespace(schema=schema, messages=body["messages"])
    return SCRIPT(req)


class ConstEmbedder:
    name = "const"

    def embed(self, texts, kind="symmetric"):
        import numpy as np
        return np.ones((len(texts), 2)) / 2 ** 0.5


FAST = RetryPolicy(initial=0.01, max=0.02, max_retries=2)


@pytest.fixture()
def server():
    with MockJudgeServer(MockConfig(reply_fn=reply, script=["500"])) as srv:
        yield srv


def _clients(srv):
    gen = GeneratorClient(GeneratorConfig(base_url=srv.base_url, model="gen-mock",
                                          api_key_env=None, retry=FAST))
    judge = make_judge(JudgeConfig(name="mock", backend="openai", base_url=srv.base_url,
                                   model="judge-mock", api_key_env=None, retry=FAST,
                                   no_cache=True))
    return gen, judge


CHUNKS = [Chunk("c1", "d1", "Paris is in France. [rel=2] [useful]"),
          Chunk("c2", "d2", "Berlin is in Germany. [rel=2] [useful]"),
          Chunk("c3", "d3", "Cats purr."), ]


def test_tier2_generates_from_gold_context_and_scores(server):
    gen, judge = _clients(server)
    samples = [
        Sample(id="q1", user_input="Where is Paris?", reference="Paris is in France.",
               gold_chunk_ids=["c1"]),
        Sample(id="q2", user_input="Where is Berlin?", reference="Berlin is in Germany.",
               reference_contexts=["Berlin is in Germany. [rel=1]"]),
    ]
    res = run_tier2(samples, gen, chunks=CHUNKS, metrics=[*JUDGED_DEFAULT, "rouge_l"],
                    judge=judge, embedder=lambda _n: ConstEmbedder())
    assert [s["response"] for s in res.meta["samples"]] == ["Paris is in France.",
                                                            "Berlin is in Germany."]
    assert res.meta["generation_errors"] == {}                 # the scripted 500 was retried
    assert res["faithfulness"].mean == 1.0
    assert res["rouge_l"].mean == 1.0
    assert res["context_relevance"].values.tolist() == [1.0, 0.5]
    sig = res["faithfulness"].signature
    assert sig.get("tier") == "2" and sig.get("generator") == "gen-mock"
    assert sig.get("judge_model") == "judge-mock"
    stats = server.stats()
    # counted at the server: 2 generations + 4 judge calls per sample, plus the scripted 500
    assert stats["ok"] == 2 + 2 * 4 and stats["faults"] == {"500": 1}
    assert stats["with_response_format"] == 2 * 4
    assert res.meta["judge_calls"]["per_sample"] == 4.0


def test_tier2_without_gold_context_lists_every_problem(server):
    gen, _ = _clients(server)
    with pytest.raises(DataError) as exc:
        run_tier2([Sample(id="a", user_input="q"), Sample(id="b", user_input="q",
                                                          gold_chunk_ids=["zz"])], gen,
                  chunks=CHUNKS, metrics=["rouge_l"])
    assert len(exc.value.problems) == 2 and "zz" in str(exc.value)


class KeywordRetriever:
    name = "keyword"

    def __init__(self, chunks):
        self.chunks = chunks

    def search(self, queries, k):
        out = []
        for q in queries:
            words = set(re.findall(r"\w+", q.lower()))
            scored = sorted(((len(words & set(re.findall(r"\w+", c.text.lower()))), c)
                             for c in self.chunks), key=lambda t: -t[0])
            out.append([Hit(c.chunk_id, c.doc_id, float(s)) for s, c in scored[:k]])
        return out

    def signature_fields(self):
        return {"kind": "keyword"}


def test_tier3_end_to_end_from_retriever(server):
    gen, judge = _clients(server)
    samples = [Sample(id="q1", user_input="Where is Berlin?", reference="Berlin is in Germany.",
                      gold_chunk_ids=["c2"])]
    res = run_tier3(samples, gen, KeywordRetriever(CHUNKS), CHUNKS, k=2,
                    metrics=["faithfulness", "id_context_recall", "id_context_precision",
                             "rouge_1"], judge=judge)
    s = res.meta["samples"][0]
    assert s["retrieved_ids"][0] == "c2" and s["response"] == "Berlin is in Germany."
    assert res["id_context_recall"].mean == 1.0
    assert res["faithfulness"].mean == 1.0
    assert res["rouge_1"].signature.get("tier") == "3"
    assert res["rouge_1"].signature.get("topk") == "2"


def test_generation_failure_is_recorded_not_raised():
    with MockJudgeServer(MockConfig(reply_fn=reply, script=["500"] * 10)) as srv:
        gen, _ = _clients(srv)
        res = run_tier2([Sample(id="a", user_input="Where?", reference="x",
                                reference_contexts=["x"])], gen, metrics=["rouge_1"])
    assert res.meta["generation_errors"] == {"http_5xx": 1}
    assert res["rouge_1"].reasons == {0: "missing_field:response"}
    assert res.meta["samples"][0]["metadata"]["generation_error"] == "http_5xx"
