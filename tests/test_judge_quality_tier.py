"""Judge quality: repeats are real calls, consistency / alpha / kappa / error rate are right,
items missing a field are unscored with their reason and never break the others."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.judges import ScriptedJudge
from ragmeter.tiers.judge_quality import (
    cohen_kappa,
    evaluate_judge_quality,
    judge_quality_table,
    krippendorff_alpha,
)

kd = pytest.importorskip("krippendorff")


def _samples(n: int) -> list[Sample]:
    return [Sample(id=f"s{i}", user_input=f"Вопрос {i}?", response=f"Ответ {i}.",
                   retrieved_contexts=[f"Контекст {i}."]) for i in range(n)]


def _item_and_repeat(req) -> tuple[int, int]:
    user = next(m["content"] for m in req.messages if "Вопрос " in m["content"])
    i = int(user.split("Вопрос ")[1].split("?")[0])
    return i, 0


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("missing", [False, True])
def test_alpha_interval_matches_krippendorff_package(seed: int, missing: bool) -> None:
    rng = np.random.default_rng(seed)
    M = rng.integers(0, 5, size=(3, 25)).astype(float) / 4
    M[1] = np.clip(M[0] + rng.normal(scale=0.2, size=25), 0, 1)
    if missing:
        M[rng.random(M.shape) < 0.15] = np.nan
    ours = krippendorff_alpha(M, "interval")
    ref = kd.alpha(reliability_data=M, level_of_measurement="interval")
    assert ours == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_alpha_nominal_matches_krippendorff_package(seed: int) -> None:
    rng = np.random.default_rng(seed)
    M = rng.integers(0, 3, size=(2, 40)).astype(float)
    M[1, :20] = M[0, :20]
    M[0, 3] = np.nan
    assert krippendorff_alpha(M, "nominal") == pytest.approx(
        kd.alpha(reliability_data=M, level_of_measurement="nominal"), abs=1e-9)


def test_cohen_kappa_matches_sklearn() -> None:
    skm = pytest.importorskip("sklearn.metrics")
    a = np.array([0, 0.5, 1, 1, 0, 0.5, 1, 0, 0, 1])
    b = np.array([0, 0.5, 1, 0.5, 0, 0, 1, 0, 1, 1])
    assert cohen_kappa(a, b) == pytest.approx(skm.cohen_kappa_score(a.astype(str),
                                                                   b.astype(str)))


def test_consistency_hand_computed_and_repeats_are_real_calls() -> None:
    # repeat 1 and repeat 2 of item i: scores from a table; |s1-s2|: 0, 0.5, 1.0, 0.25
    table = {0: [1.0, 1.0], 1: [1.0, 0.5], 2: [0.0, 1.0], 3: [0.25, 0.5]}
    seen: dict[int, int] = {}

    def fn(req):
        i, _ = _item_and_repeat(req)
        r = seen.get(i, 0)
        seen[i] = r + 1
        return {"score": table[i][r], "reason": "ok"}

    judge = ScriptedJudge(fn)
    res = evaluate_judge_quality(_samples(4), judge, n_repeats=2, delta=0.5)[0]
    assert judge.scripted.calls == 8  # 4 items x 2 repeats, none merged
    cons = res["judge_consistency"]
    assert cons.values.tolist() == [1.0, 1.0, 0.0, 1.0]
    assert cons.mean == pytest.approx(0.75)
    strict = evaluate_judge_quality(_samples(4), ScriptedJudge(
        lambda req: {"score": 0.5}), n_repeats=3, delta=0.0)[0]
    assert strict.results["judge_consistency(delta=0.0)"].mean == 1.0
    assert res["judge_mean_score"].values.tolist() == pytest.approx([1.0, 0.75, 0.5, 0.375])
    assert res.meta["latency_ms"]["n"] == 8 and res.meta["cached_replies"] == 0
    alpha = res.meta["krippendorff_alpha_interval"]["value"]
    M = np.array([[1.0, 1.0, 0.0, 0.25], [1.0, 0.5, 1.0, 0.5]])
    assert alpha == pytest.approx(kd.alpha(reliability_data=M, level_of_measurement="interval"))


def test_n_repeats_three_uses_max_minus_min() -> None:
    seq = {0: [0.0, 0.4, 0.6], 1: [0.5, 0.5, 0.5]}
    seen: dict[int, int] = {}

    def fn(req):
        i, _ = _item_and_repeat(req)
        r = seen.get(i, 0)
        seen[i] = r + 1
        return {"score": seq[i][r]}

    res = evaluate_judge_quality(_samples(2), ScriptedJudge(fn), n_repeats=3, delta=0.5)[0]
    assert res["judge_consistency"].values.tolist() == [0.0, 1.0]  # range 0.6 > 0.5


def test_missing_field_is_unscored_not_an_error_for_others() -> None:
    samples = _samples(3)
    samples.append(Sample(id="noans", user_input="Вопрос 9?", response=None,
                          retrieved_contexts=["c"]))
    samples.append(Sample(id="noctx", user_input="Вопрос 8?", response="a"))
    judge = ScriptedJudge(lambda req: {"score": 1.0})
    res = evaluate_judge_quality(samples, judge, n_repeats=2)[0]
    cons = res["judge_consistency"]
    assert cons.reasons == {3: "missing_field:answer", 4: "missing_field:context"}
    assert cons.mean == 1.0 and cons.aggregate.n == 3
    err = res["judge_error_rate"]
    assert err.mean == 0.0 and err.counts["calls"] == 6
    assert err.aggregate.unscored_by_reason == {"missing_field:answer": 1,
                                                "missing_field:context": 1}
    assert judge.scripted.calls == 6


def test_unparseable_replies_are_unscored_by_reason() -> None:
    def fn(req):
        i, _ = _item_and_repeat(req)
        if i == 0:
            return "I cannot decide"          # parse_error even after the repair attempt
        if i == 1:
            return {"score": "high"}          # schema_error
        if i == 2:
            return {"score": 7}               # off the 0..1 scale -> schema_error
        return {"score": 0.0}

    res = evaluate_judge_quality(_samples(4), ScriptedJudge(fn), n_repeats=2)[0]
    cons = res["judge_consistency"]
    assert cons.reasons == {0: "parse_error", 1: "schema_error", 2: "schema_error"}
    assert cons.mean == 1.0
    err = res["judge_error_rate"]
    assert err.mean == pytest.approx(6 / 8)
    assert res.meta["errors_by_reason"] == {"parse_error": 2, "schema_error": 4}
    assert not np.isnan(err.values).any()


def test_several_judges_one_result_each() -> None:
    j1 = ScriptedJudge(lambda req: {"score": 1.0}, name="a", model="m-a")
    j2 = ScriptedJudge(lambda req: {"score": 0.0}, name="b", model="m-b")
    out = evaluate_judge_quality(_samples(3), [j1, j2])
    rows = judge_quality_table(out)
    assert [r["judge"] for r in rows] == ["a:m-a", "b:m-b"]
    assert [r["mean_score"] for r in rows] == [1.0, 0.0]
    assert out[0]["judge_consistency"].signature.get("model") == "m-a"
    json.loads(out[0].to_json())


@pytest.mark.parametrize("n", [1, 0, "2", True])
def test_bad_repeat_count(n) -> None:
    with pytest.raises(ConfigError, match="n_repeats"):
        evaluate_judge_quality(_samples(1), ScriptedJudge(lambda r: {"score": 1}), n_repeats=n)


def test_cli_over_http_fake_server(tmp_path) -> None:
    from typer.testing import CliRunner

    from ragmeter.cli.app import app
    from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

    items = tmp_path / "items.jsonl"
    rows = [{"id": f"s{i}", "question": f"Вопрос {i}?", "answer": f"Ответ {i}.",
             "context": f"Контекст {i}."} for i in range(4)]
    rows.append({"id": "noctx", "question": "Вопрос 7?", "answer": "a"})
    items.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")

    def reply(body, schema):
        user = next(m["content"] for m in body["messages"] if "Вопрос " in m["content"])
        i = int(user.split("Вопрос ")[1].split("?")[0])
        return {"score": 1.0 if i % 2 else 0.0, "reason": "r"}

    with MockJudgeServer(MockConfig(reply_fn=reply)) as srv:
        cfg = tmp_path / "judge.yaml"
        cfg.write_text(f"name: j\nbackend: openai\nbase_url: {srv.base_url}\nmodel: m1\n"
                       "api_key_env: null\n", encoding="utf-8")
        out = tmp_path / "jq.json"
        r = CliRunner().invoke(app, ["judge", "quality", str(items), "--judge-config", str(cfg),
                                     "-n", "3", "--out", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text(encoding="utf-8"))[0]
    cons = data["results"]["judge_consistency"]["aggregate"]
    assert cons["mean"] == 1.0 and cons["n"] == 4
    assert cons["unscored_by_reason"] == {"missing_field:context": 1}
    assert data["meta"]["latency_ms"]["n"] == 12


def test_load_judge_items_accepts_missing_fields_rejects_wrong_types(tmp_path) -> None:
    from ragmeter.errors import DataError
    from ragmeter.tiers.judge_quality import load_judge_items

    p = tmp_path / "items.jsonl"
    p.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in [
        {"id": "a", "question": "q", "answer": "x", "context": "c"},
        {"id": "b", "question": "q", "contexts": ["c1", "c2"]},
    ]), encoding="utf-8")
    items = load_judge_items(p)
    assert items[1].response is None and items[1].retrieved_contexts == ["c1", "c2"]
    p.write_text(json.dumps({"id": "a", "question": 5, "context": [1]}), encoding="utf-8")
    with pytest.raises(DataError) as ei:
        load_judge_items(p)
    assert ":1 field 'question'" in str(ei.value) and ":1 field 'context'" in str(ei.value)
