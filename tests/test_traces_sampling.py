"""Per-hop retrieval (Tier 1 per retrieval span, first degraded hop) and the selection of
imported requests (dedup by normalised question, stratified sample recorded in the sidecar)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ragmeter.cli import app as cli
from ragmeter.data import load_samples
from ragmeter.data.sample import Sample
from ragmeter.data.traces.sampling import dedupe, normalise_question, select
from ragmeter.errors import UsageError
from ragmeter.retrieval.evaluate import evaluate_retrieval
from ragmeter.retrieval.hops import hop_results

FIX = Path(__file__).parent / "fixtures" / "traces"
GOLD = {"0af7651916cd43dd8448eb211c80319c": ["d1"], "1bf7651916cd43dd8448eb211c80319d": ["d2"],
        "2cf7651916cd43dd8448eb211c80319e": ["d9"]}


def test_each_retrieval_span_is_a_hop_scored_against_the_gold() -> None:
    samples = load_samples(FIX / "otlp_current.json").samples
    for s in samples:
        s.gold_doc_ids = GOLD[s.id]
    rep = hop_results(samples, evaluate_retrieval, ["hit_rate@1(level=doc)", "mrr(level=doc)"])
    first, second = rep.per_hop
    assert first["mrr(level=doc)"].values.tolist() == [1.0, 0.0, 1.0]  # hop 1 of request 2
    assert second["mrr(level=doc)"].sample_ids == ["1bf7651916cd43dd8448eb211c80319d"]
    assert second["mrr(level=doc)"].values.tolist() == [1.0]  # hop 2 found d2 first
    assert rep.first_degraded == {"0af7651916cd43dd8448eb211c80319c": None,
                                  "1bf7651916cd43dd8448eb211c80319d": 0,
                                  "2cf7651916cd43dd8448eb211c80319e": None}


def test_requests_without_gold_have_no_hop_scores() -> None:
    samples = load_samples(FIX / "otlp_current.json").samples
    rep = hop_results(samples, evaluate_retrieval)
    assert rep.per_hop == [] and rep.first_degraded == {}


def _samples(n: int) -> list[Sample]:
    models = ["a"] * (n * 3 // 4) + ["b"] * (n - n * 3 // 4)
    return [Sample(id=f"q{i}", user_input=f"вопрос {i}", metadata={"model": m})
            for i, m in enumerate(models)]


def test_dedupe_uses_the_normalised_question() -> None:
    assert normalise_question("  Где  БИБЛИОТЕКА?! ") == normalise_question("где библиотека")
    assert normalise_question("Ёлка") == normalise_question("елка")
    samples = [Sample(id="1", user_input="Где библиотека?"),
               Sample(id="2", user_input="где  библиотека"),
               Sample(id="3", user_input="Где столовая?"), Sample(id="4")]
    kept, dropped = dedupe(samples)
    assert [s.id for s in kept] == ["1", "3", "4"] and dropped == 1


def test_stratified_sample_is_proportional_seeded_and_recorded() -> None:
    samples = _samples(400)
    chosen, sel = select(samples, n=40, stratify="model", seed=7)
    assert Counter(s.metadata["model"] for s in chosen) == {"a": 30, "b": 10}
    assert sel.strata == {"a": 30, "b": 10} and sel.n_selected == 40
    again, sel2 = select(samples, n=40, stratify="model", seed=7)
    assert [s.id for s in again] == [s.id for s in chosen] and sel2.ids_sha256 == sel.ids_sha256
    _, sel3 = select(samples, n=40, stratify="model", seed=8)
    assert sel3.ids_sha256 != sel.ids_sha256
    with pytest.raises(UsageError, match="--sample"):
        select(samples, stratify="model")


def test_cli_sample_goes_into_the_sidecar(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "many.jsonl"
    rows = [{"id": s.id, "question": s.user_input, "metadata": s.metadata} for s in _samples(40)]
    rows.append({"id": "dup", "question": "ВОПРОС 3?", "metadata": {"model": "a"}})
    src.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    out = tmp_path / "s.jsonl"
    code = cli.run(["traces", "import", str(src), "--out", str(out), "--dedupe", "--sample", "8",
                    "--stratify", "model", "--seed", "3"])
    assert code == 0, capsys.readouterr()
    meta = json.loads((tmp_path / "s.import.json").read_text("utf-8"))
    assert meta["selection"]["n_duplicates"] == 1 and meta["selection"]["strata"] == {
        "a": 6, "b": 2}
    assert meta["selection"]["seed"] == 3 and len(load_samples(out).samples) == 8


def test_sample_size_from_a_target_ci_width() -> None:
    from ragmeter.data.traces.sampling import size_for_width

    assert size_for_width(0.1, 10**7) == 385  # 1.96² · 0.25 / 0.05², rounded up
    assert size_for_width(0.1, 500) == 218    # fewer from a small population
    assert size_for_width(0.5, 3) == 3
    chosen, sel = select(_samples(400), ci_width=0.2, stratify="model", seed=1)
    assert sel.ci_width == 0.2 and len(chosen) == sel.sample == size_for_width(0.2, 400)
    with pytest.raises(UsageError, match="not both"):
        select(_samples(10), n=3, ci_width=0.2)
    with pytest.raises(UsageError, match="--ci-width"):
        size_for_width(1.5, 10)


def test_two_systems_hops_are_paired_by_question() -> None:
    from ragmeter.retrieval.hops import compare_hops

    a = load_samples(FIX / "otlp_current.json").samples
    b = load_samples(FIX / "mlflow_traces.json").samples  # same questions, other trace ids
    for s in a:
        s.gold_doc_ids = GOLD[s.id]
    for s in b:
        s.gold_doc_ids = GOLD[s.id.removeprefix("tr-")]
        if s.user_input == "А когда она заканчивается?":  # B finds d2 at its first hop
            s.metadata["hops"][0]["ids"] = ["d2", "d3"]
    metrics = ["mrr(level=doc)"]
    ra, rb = (hop_results(a, evaluate_retrieval, metrics), hop_results(b, evaluate_retrieval,
                                                                        metrics))
    cmp = compare_hops(ra, a, rb, b, n_resamples=200)
    first = cmp["hops"][0]["tests"][0]
    assert first["n"] == 3 and first["mean_b"] - first["mean_a"] == pytest.approx(1 / 3)
    assert cmp["first_degraded_hop_of_b"] == {"earlier": 0, "later": 1, "same": 2}


def test_hops_without_gold_get_a_judged_context_metric(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    from ragmeter.generation.evaluate import evaluate_generation
    from ragmeter.judges import JudgeConfig, make_judge
    from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
    from ragmeter.retrieval.hops import hop_context_relevance

    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path))
    seen: list[str] = []

    def reply(body: dict, schema: dict | None) -> dict:
        user = body["messages"][-1]["content"]
        seen.append(user)
        n = user.count("<context_")  # one verdict per numbered context, relevant iff d2's text
        return {"contexts": [{"id": i, "relevance": 2 if "31 января" in part else 0}
                             for i, part in enumerate(user.split("<context_")[1:n + 1], 1)]}

    samples = load_samples(FIX / "otlp_current.json").samples  # no gold at all
    with MockJudgeServer(MockConfig(reply_fn=reply)) as srv:
        judge = make_judge(JudgeConfig(base_url=srv.base_url, model="m", api_key_env=None))
        results = hop_context_relevance(samples, evaluate_generation, judge)
    assert len(results) == 2 and len(seen) == 4  # 3 first hops + 1 second hop
    second = results[1]["context_relevance"]
    assert second.sample_ids == ["1bf7651916cd43dd8448eb211c80319d"]
    assert second.values[0] > results[0]["context_relevance"].values[1]
    assert any("дата окончания зимней сессии" in u for u in seen)  # the hop's own query
