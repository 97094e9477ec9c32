"""``ragmeter judge card --estimator``: the card's bias-corrected estimate is made with the
chosen estimator (classic PPI, PPI++ or stratified PPI over the ``--by`` slices), and the card
names the estimator and its effective sample size."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ragmeter.cli.app import run as cli
from ragmeter.judge_trust.labelling import run_task
from ragmeter.results.store import ResultStore
from test_judge_label_session import label_n, make_run, session


def _card(tmp_path: Path, url: str, labels: Path, *extra: str) -> dict:
    out = tmp_path / f"card{len(list(tmp_path.glob('card*.json')))}.json"
    assert cli(["judge", "card", "r1", "--labels", str(labels), "--store", url, "--out",
                str(out), "--no-save", *extra]) == 0
    return dict(json.loads(out.read_text(encoding="utf-8")))


def test_the_card_names_its_estimator_and_effective_sample_size(tmp_path: Path,
                                                                 capsys) -> None:
    url = make_run(tmp_path, n=120)
    labels = tmp_path / "labels.jsonl"
    s = session(url, labels)
    # a labeller who agrees with the judge on 4 items of 5: the judge carries information
    judge = run_task(ResultStore.open_readonly(url)[0].load_run("r1"), "faithfulness").values
    done = label_n(s, "anna", 40,
                   lambda sid: int(judge[sid] if int(sid[1:]) % 5 else 1 - judge[sid]))
    s.close()
    assert len(done) == 40
    samples = tmp_path / "samples.jsonl"
    stored = ResultStore.open_readonly(url)[0].load_run("r1").samples
    samples.write_text("".join(json.dumps({k: d[k] for k in ("id", "user_input", "type")}) + "\n"
                               for d in stored.values()), encoding="utf-8")
    cards = {e: _card(tmp_path, url, labels, "--estimator", e, *extra)
             for e, extra in (("classic", ()), ("ppi++", ()),
                              ("stratified", ("--by", "type", "--samples", str(samples))))}
    for name, card in cards.items():
        ppi = card["ppi"]["faithfulness"]
        assert ppi["estimator"] == name and ppi["signature"].startswith(f"ppi:{name}|")
        assert ppi["ess"] is not None and ppi["ess"] > 0
        meta = card["judge_card"]["meta"]["estimators"]["faithfulness"]
        assert meta == {"estimator": name, "ess": ppi["ess"], "signature": ppi["signature"]}
    assert cards["stratified"]["ppi"]["faithfulness"]["n_strata"] == 2
    # PPI++ tunes the judge's weight: never a larger variance than classic on the same labels
    assert (cards["ppi++"]["ppi"]["faithfulness"]["width"]
            <= cards["classic"]["ppi"]["faithfulness"]["width"] + 1e-9 or
            cards["classic"]["ppi"]["faithfulness"]["interval"] == "exact")
    printed = capsys.readouterr().out
    assert "ppi++" in printed and "stratified" in printed


def test_an_unknown_or_unsliced_estimator_is_refused(tmp_path: Path, capsys) -> None:
    url = make_run(tmp_path)
    labels = tmp_path / "labels.jsonl"
    s = session(url, labels)
    label_n(s, "anna", 10)
    s.close()
    base = ["judge", "card", "r1", "--labels", str(labels), "--store", url, "--no-save"]
    assert cli([*base, "--estimator", "ppi+"]) == 2
    assert "--estimator': unknown estimator 'ppi+'" in capsys.readouterr().err
    assert cli([*base, "--estimator", "stratified"]) == 2
    assert "stratified needs slices" in capsys.readouterr().err
