"""``ragmeter label``: the labelling session writes the labels file ``judge card`` reads,
with the selection's inclusion probabilities; it resumes, revises, skips, refuses what would
bias the estimate, and reports agreement between labellers."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter.cli.app import run as cli
from ragmeter.errors import ConfigError, UsageError
from ragmeter.judge_trust.labelling import choose, open_session, run_task
from ragmeter.judge_trust.labels import load_labels
from ragmeter.results.store import ResultStore

QUESTIONS = ("What is the tuition fee for {s}?", "Какой срок подачи документов для {s}?")


def make_run(tmp_path: Path, n: int = 40, seed: int = 4, *, metric: str = "faithfulness",
             judge: str = "main", model: str = "m", token_probs: bool = True,
             run_id: str = "r1", name: str = "s.sqlite",
             sig_extra: dict[str, str] | None = None) -> str:
    """A stored run whose ``metric`` was judged (0/1) on ``n`` samples with their texts; each
    sample's judge call kept a verdict-token probability (``token_probs``)."""
    from ragmeter.results.records import EvalResult, MetricResult, SampleScore, Signature
    from ragmeter.results.store import TierRecord

    rng = np.random.default_rng(seed)
    ids = [f"q{i}" for i in range(n)]
    sig = Signature.make(metric=metric, judge=judge, judge_model=model,
                         prompt="gen.verify/v1", data="d", **(sig_extra or {}))
    values = (rng.random(n) < 0.6).astype(float)
    scores = []
    for sid, v in zip(ids, values, strict=True):
        call: dict[str, Any] = {"prompt": "gen.verify/v1", "ok": True}
        if token_probs:
            call["token_prob"] = float(0.5 + 0.5 * rng.random())
        scores.append(SampleScore(sid, float(v), None, {"calls": [call],
                                                         "reason": "JUDGE-REASON-" + sid}))
    res = EvalResult("sys")
    res.add(MetricResult.from_scores(metric, scores, sig))
    samples = {sid: {"id": sid, "user_input": QUESTIONS[i % 2].format(s=sid),
                     "response": f"The answer for {sid} is {i}.",
                     "retrieved_contexts": [f"First context of {sid}.",
                                            f"Second context of {sid}."],
                     "type": ("fact", "definition")[i % 2]}
               for i, sid in enumerate(ids)}
    url = f"sqlite:///{tmp_path / name}"
    ResultStore(url).save_run(name="r", tiers={"generation": TierRecord("generation",
                                                                         results=[res])},
                              samples=samples, run_id=run_id, git=False)
    return url


def session(url: str, path: Path, mode: str | None = None, *, n: int | None = None,
            seed: int = 1, rater: str = "anna", run_id: str = "r1") -> Any:
    from ragmeter.judge_trust.uncertainty import judge_uncertainty

    rs, _ = ResultStore.open_readonly(url)
    run = rs.load_run(run_id)
    rt = run_task(run, "faithfulness")
    strata = {sid: (run.samples[sid].get("type") or "") for sid in rt.values}

    def make(m: str, pilot: Any) -> Any:
        unc = judge_uncertainty(rt.values, rt.details)[0] if m == "active" else None
        return choose(m, rt.values, n=n, seed=seed, pilot=pilot,
                      strata=strata if m == "stratified" else None, uncertainty=unc)
    return open_session(path, rt.task, rt.items, rt.values, mode=mode, make=make,
                        default_rater=rater)


def label_n(s: Any, rater: str, k: int, grade_of: Any = lambda sid: 1) -> list[str]:
    """``rater`` labels the next ``k`` items; the ids labelled, in order."""
    done = []
    v = s.view(rater)
    for _ in range(k):
        sid = v["item"]["sample_id"]
        v = s.label(rater, v["index"], sid, grade_of(sid))
        done.append(sid)
    return done


def test_the_labels_file_is_what_judge_card_reads_with_its_selection(tmp_path: Path) -> None:
    url = make_run(tmp_path)
    path = tmp_path / "labels.jsonl"
    s = session(url, path)
    done = label_n(s, "anna", 12, lambda sid: int(sid[1:]) % 2)
    s.close()
    labs = load_labels(path)
    assert sorted(labs.values("faithfulness")) == sorted(done)
    sel = labs.selection("faithfulness")
    assert sel is not None and sel.mode == "uniform" and list(sel.chosen[:12]) == done
    out = tmp_path / "card.json"
    assert cli(["judge", "card", "r1", "--labels", str(path), "--store", url, "--out",
                str(out), "--no-save"]) == 0
    card = json.loads(out.read_text(encoding="utf-8"))
    assert card["judge_card"]["metrics"]["faithfulness"]["n"] == 12
    assert card["judge_card"]["meta"]["selections"] == {"faithfulness": sel.signature}
    assert card["ppi"]["faithfulness"]["selection"] == sel.signature
    assert card["ppi"]["faithfulness"]["n_labelled"] == 12


def test_a_labeller_resumes_where_they_stopped_with_skips_last_and_revisions(
        tmp_path: Path) -> None:
    url = make_run(tmp_path)
    path = tmp_path / "labels.jsonl"
    s = session(url, path)
    first = s.view("anna")
    assert first["index"] == 0 and "judge" not in json.dumps(first).lower()
    s.skip("anna", 0, first["item"]["sample_id"])
    done = label_n(s, "anna", 3)
    s.label("anna", 1, done[0], 0)                 # back to item 1 and changed
    s.close()
    s = session(url, path, seed=999)               # the file's selection wins over the seed
    assert s.resume_index("anna") == 4             # after the three labelled, the skip last
    assert s.resume_index("boris") == 0            # another labeller starts at the start
    v = s.view("anna", 1)
    assert v["label"] == 0 and v["item"]["sample_id"] == done[0]
    s.close()
    labs = load_labels(path)
    assert labs.values("faithfulness")[done[0]] == 0.0   # the revision counts
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert sum(1 for x in lines if x.get("revised")) == 1
    assert sum(1 for x in lines if x.get("kind") == "skip") == 1
    assert sum(1 for x in lines if x.get("kind") == "selection") == 1


def test_after_the_last_item_the_skipped_ones_come_back(tmp_path: Path) -> None:
    url = make_run(tmp_path, n=6)
    s = session(url, tmp_path / "l.jsonl")
    v = s.view("anna")
    skipped = v["item"]["sample_id"]
    v = s.skip("anna", 0, skipped)
    for _ in range(5):
        v = s.label("anna", v["index"], v["item"]["sample_id"], 1)
    assert v["index"] == 0 and v["item"]["sample_id"] == skipped and v["was_skipped"]
    v = s.label("anna", 0, skipped, 0)
    assert v.get("finished") and v["labelled"] == 6
    s.close()


def test_what_would_bias_the_estimate_is_refused(tmp_path: Path) -> None:
    url = make_run(tmp_path)
    s = session(url, tmp_path / "a.jsonl")
    v = s.view("anna")
    with pytest.raises(UsageError, match="takes 0/1"):
        s.label("anna", 0, v["item"]["sample_id"], 2)
    with pytest.raises(UsageError, match="out of date"):
        s.label("anna", 1, v["item"]["sample_id"], 1)
    with pytest.raises(UsageError, match="labeller id"):
        s.label("an na", 0, v["item"]["sample_id"], 1)
    label_n(s, "anna", 3)
    s.close()
    with pytest.raises(ConfigError, match="active selection cannot share"):
        session(url, tmp_path / "a.jsonl", "active", n=10)
    hand = tmp_path / "hand.jsonl"   # labels made elsewhere, no selection recorded
    hand.write_text('{"sample_id": "q1", "metric": "faithfulness", "label": "yes"}\n',
                    encoding="utf-8")
    with pytest.raises(ConfigError, match="no selection"):
        session(url, hand)
    other = make_run(tmp_path, run_id="r2", name="o.sqlite")
    with pytest.raises(ConfigError, match="labels run r1, not r2"):
        session(other, tmp_path / "a.jsonl", run_id="r2")
    with pytest.raises(UsageError, match="JSON Lines"):
        session(url, tmp_path / "labels.csv")


def test_active_labels_are_weighted_by_their_inclusion_probabilities(tmp_path: Path) -> None:
    from ragmeter.judge_trust.ppi import ppi_estimates
    from ragmeter.judge_trust.runs import judged_values
    from ragmeter.stats.ppi_estimators import estimate

    url = make_run(tmp_path, n=80)
    path = tmp_path / "l.jsonl"
    s = session(url, path, "active", n=25)
    sel = s.selection
    pi = dict(zip(sel.ids, sel.pi, strict=True))
    rt_details = s.items  # noqa: F841 - the items shown carry no judge value
    assert all("value" not in v.to_dict() for v in s.items.values())
    label_n(s, "anna", len(s.order), lambda sid: int(int(sid[1:]) % 3 != 0))
    s.close()
    # the most uncertain items (lowest token probability) got the largest probabilities
    run = ResultStore(url).load_run("r1")
    mr = run.tiers["generation"].results[0].results["faithfulness"]
    probs = {r.sample_id: r.details["calls"][0]["token_prob"] for r in mr.records()}
    lo = sorted(probs, key=probs.get)[:10]
    hi = sorted(probs, key=probs.get)[-10:]
    assert np.mean([pi[i] for i in lo]) > np.mean([pi[i] for i in hi])
    labs = load_labels(path)
    assert labs.selection("faithfulness").mode == "active"
    values, _, _ = judged_values(run, labs)
    got = ppi_estimates(values, labs, selections={"faithfulness": labs.selection(
        "faithfulness")})["faithfulness"].estimate
    want = estimate(labs.values("faithfulness"), values["faithfulness"], sel, "classic",
                    discrete=True, bounds=(0.0, 1.0))
    assert got.design == "poisson" and got.estimate == pytest.approx(want.estimate)
    plain = ppi_estimates(values, labs)["faithfulness"].estimate   # as if drawn at random
    assert plain.design == "srs" and plain.estimate != pytest.approx(got.estimate)


def test_a_pilot_kept_by_a_stratified_selection(tmp_path: Path) -> None:
    url = make_run(tmp_path, n=60)
    path = tmp_path / "l.jsonl"
    s = session(url, path)
    pilot = label_n(s, "anna", 10, lambda sid: int(sid[1:]) % 2)
    s.close()
    s = session(url, path, "stratified", n=30)
    assert s.selection.mode == "stratified" and s.selection.n == 30
    assert set(s.order[:10]) == set(pilot)      # the pilot stays chosen, first
    assert s.resume_index("anna") == 10
    s.close()
    labs = load_labels(path)
    assert labs.selection("faithfulness").mode == "stratified"   # the last one counts
    assert set(labs.selection("faithfulness").allocation) == {"fact", "definition"}


def test_agreement_between_labellers(tmp_path: Path) -> None:
    from ragmeter.judge_trust.raters import rater_agreement
    from ragmeter.stats import cohen_kappa

    url = make_run(tmp_path)
    path = tmp_path / "l.jsonl"
    s = session(url, path)
    a = label_n(s, "anna", 20, lambda sid: int(sid[1:]) % 2)
    b = label_n(s, "boris", 15, lambda sid: int(int(sid[1:]) % 3 == 0))
    summary = s.summary()
    s.close()
    assert summary["labels"] == {"anna": 20, "boris": 15}
    agree = rater_agreement(load_labels(path), "faithfulness")
    assert agree is not None and agree.shared_items == 15
    both = [x for x in a if x in b]
    want = cohen_kappa(np.array([int(x[1:]) % 2 for x in both], float),
                       np.array([int(int(x[1:]) % 3 == 0) for x in both], float))
    assert agree.pairs[0].kappa == pytest.approx(want) and agree.pairs[0].n == 15
    assert summary["agreement"]["pairs"][0]["kappa"] == pytest.approx(want)


def test_uncertainty_reads_token_probabilities_a_jury_and_the_margin() -> None:
    from ragmeter.judge_trust.uncertainty import judge_uncertainty

    values = {"a": 1.0, "b": 1.0, "c": 0.5, "d": 0.0}
    details = {"a": {"calls": [{"token_prob": 0.55}, {"token_prob": 0.99}]},
               "b": {"jury": {"members": ["x", "y", "z"], "splits": {"answer_in_context": [0]},
                              "ties": {}}},
               "c": {}, "d": {"calls": [{"token_prob": 0.999}]}}
    scores, used = judge_uncertainty(values, details)
    assert scores["a"] == pytest.approx(0.9) and scores["b"] == 0.75
    assert scores["c"] == 1.0 and scores["d"] == pytest.approx(0.002)
    assert used == {"logprobs": 2, "jury": 1, "margin": 1}


def test_terminal_labelling_and_option_errors(tmp_path: Path, monkeypatch, capsys) -> None:
    import io

    url = make_run(tmp_path)
    path = tmp_path / "l.jsonl"
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n0\ns\nb\n1\nq\n"))
    code = cli(["label", "r1", "--labels", str(path), "-m", "faithfulness",   # top level
                "--terminal", "--store", url, "--rater", "vera", "--lang", "en"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "JUDGE-REASON" not in out.out and "item 1 of 40" in out.out
    labs = load_labels(path)
    assert len(labs.values("faithfulness")) == 3 and labs.by_rater("faithfulness").keys() \
        == {"vera"}
    assert "labels in" in out.err and "vera 3" in out.err
    assert cli(["label", "r1", "--labels", str(tmp_path / "x.jsonl"), "-m",
                "faithfulness", "--terminal", "--store", url, "--select", "stratified"]) == 2
    assert "--by" in capsys.readouterr().err
    assert cli(["label", "r1", "--labels", str(tmp_path / "x.jsonl"), "-m",
                "answer_relevance", "--terminal", "--store", url]) == 2
    assert "no judged metric 'answer_relevance'" in capsys.readouterr().err
    assert cli(["label", "r1", "--labels", str(tmp_path / "x.jsonl"), "-m",
                "faithfulness", "--terminal", "--store", url, "--rater", "a b"]) == 2


def test_target_width_says_how_many_more_labels(tmp_path: Path, monkeypatch, capsys) -> None:
    import io

    url = make_run(tmp_path, n=200)
    path = tmp_path / "l.jsonl"
    base = ["label", "r1", "--labels", str(path), "-m", "faithfulness", "--terminal",
            "--store", url, "--rater", "vera", "--lang", "en", "--target-width", "0.3"]
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
    assert cli(base) == 0
    err = capsys.readouterr().err
    # before two labels: the worst case of labels alone at a rate of 1/2: (1.96 * 0.5 / 0.15)^2
    assert "target 95% CI width 0.3: about 43 more label(s), 43 in all" in err
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{k % 2}\n" for k in range(12))
                                                 + "q\n"))
    assert cli(base) == 0
    err = capsys.readouterr().err
    import re

    got = re.findall(r"target 95% CI width 0\.3 \(now (\d\.\d+)\): about (\d+) more label\(s\), "
                     r"(\d+) in all", err)
    assert got, err
    now, more, total = float(got[-1][0]), int(got[-1][1]), int(got[-1][2])
    assert now > 0.3 and more > 0 and total == 12 + more      # from the 12 labels made
