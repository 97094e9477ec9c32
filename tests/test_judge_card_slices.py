"""``ragmeter judge card --by``: per slice, the judge's mean beside the bias-corrected
(prediction-powered) estimate from the labels in the slice; small cells withheld with their n;
the same table on the card in the HTML report and the Markdown summary."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragmeter.cli.app import run as cli
from ragmeter.data.sample import Sample
from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.results.slices import SliceSpec, attach_slices
from ragmeter.results.store import ResultStore, TierRecord

SLICES = {"fact": 40, "definition": 30, "rare": 6}


def _world() -> tuple[list[Sample], dict[str, float], dict[str, float]]:
    """Samples by type, the truth per sample, and a judge lenient on facts: it says 1 on
    60 % of the facts a human would mark 0; exact on definitions."""
    rng = np.random.default_rng(21)
    samples, truth, judge = [], {}, {}
    for kind, n in SLICES.items():
        for i in range(n):
            sid = f"{kind}-{i}"
            samples.append(Sample(id=sid, user_input=f"q {sid}", response="a",
                                  metadata={"type": kind}))
            y = float(rng.random() < 0.5)
            truth[sid] = y
            judge[sid] = 1.0 if (kind == "fact" and y == 0 and rng.random() < 0.6) else y
    return samples, truth, judge


def _setup(tmp_path: Path, sliced: bool) -> tuple[str, Path, Path, dict[str, float],
                                                  dict[str, float]]:
    samples, truth, judge = _world()
    ids = [s.id for s in samples]
    res = EvalResult("A")
    sig = Signature.make(metric="faithfulness", judge="lenient", judge_model="m", data="d")
    res.add(MetricResult("faithfulness", ids, np.asarray([judge[s] for s in ids]), sig))
    if sliced:
        attach_slices([res], samples, SliceSpec(("type",)))
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    ResultStore(url).save_run(name="r", tiers={"generation": TierRecord("generation",
                                                                         results=[res])},
                              run_id="r1", git=False)
    rng = np.random.default_rng(5)
    labelled = [s for s in ids if rng.random() < 0.6]           # a random subset
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"sample_id": s, "metric": "faithfulness",
                                          "label": int(truth[s])}) + "\n" for s in labelled),
                      encoding="utf-8")
    data = tmp_path / "samples.jsonl"
    data.write_text("".join(json.dumps({"id": s.id, "user_input": s.user_input,
                                        "response": s.response, "metadata": s.metadata})
                            + "\n" for s in samples), encoding="utf-8")
    return url, labels, data, truth, judge


def _rows(out: Path) -> dict[str, dict]:
    meta = json.loads(out.read_text(encoding="utf-8"))
    table = meta["judge_card"]["meta"]["ppi_by_slice"]
    assert table["by"] == ["type"] and table["min_n"] == 10
    return {r["slice"]: r for r in table["rows"]}


@pytest.mark.parametrize("sliced", [True, False])
def test_the_correction_moves_a_lenient_slice_toward_the_truth(tmp_path: Path, capsys,
                                                               sliced: bool) -> None:
    url, labels, data, truth, judge = _setup(tmp_path, sliced)
    out = tmp_path / "card.json"
    extra = [] if sliced else ["--samples", str(data)]
    code = cli(["judge", "card", "r1", "--labels", str(labels), "--store", url, "--by", "type",
                "--out", str(out), *extra])
    assert code == 0
    printed = capsys.readouterr().out
    assert "estimates by type" in printed and "type=fact" in printed
    rows = _rows(out)
    fact = rows["type=fact"]
    true_fact = np.mean([v for s, v in truth.items() if s.startswith("fact")])
    assert fact["judge_mean"] == pytest.approx(
        np.mean([v for s, v in judge.items() if s.startswith("fact")]))
    assert fact["correction"] < 0 and fact["estimate"] < fact["judge_mean"]
    assert abs(fact["estimate"] - true_fact) < abs(fact["judge_mean"] - true_fact) / 2
    assert fact["ci_low"] <= true_fact <= fact["ci_high"] and fact["n"] == 40
    exact = rows["type=definition"]
    assert exact["correction"] == pytest.approx(0.0) and not exact["withheld"]
    rare = rows["type=rare"]
    assert rare["withheld"] and rare["n"] == 6 and rare["estimate"] is None
    assert rare["judge_mean"] is None and rare["n_labelled"] > 0


def test_the_report_and_the_summary_show_the_table(tmp_path: Path) -> None:
    from ragmeter.reports.html import render_run_html
    from ragmeter.reports.markdown import run_markdown

    url, labels, _, _, _ = _setup(tmp_path, True)
    assert cli(["judge", "card", "r1", "--labels", str(labels), "--store", url,
                "--by", "type"]) == 0
    stored = ResultStore(url).load_run("r1")
    html = render_run_html(stored, lang="en")
    sec = html[html.index("<table class=judge-ppi-slices>"):]
    sec = sec[:sec.index("</table>")]
    assert "type=fact" in sec and "type=rare" in sec and "withheld" in sec
    assert "Bias-corrected estimates by type" in html
    md = run_markdown(stored, lang="en")
    line = next(x for x in md.splitlines() if "type=rare" in x)
    assert "| 6 |" in line and "withheld" in line
    assert "по type" in run_markdown(stored, lang="ru")


def test_slices_the_run_does_not_keep_need_the_samples(tmp_path: Path, capsys) -> None:
    url, labels, data, _, _ = _setup(tmp_path, False)
    base = ["judge", "card", "r1", "--labels", str(labels), "--store", url, "--no-save"]
    assert cli([*base, "--by", "type"]) == 2
    cap = capsys.readouterr()
    assert "no slices by type" in cap.err and "--samples FILE" in cap.err
    assert "judge card" not in cap.out                  # refused before any work is shown
    assert cli([*base, "--by", "typo", "--samples", str(data)]) == 2
    assert "no sample has a value for typo" in capsys.readouterr().err
    assert cli([*base, "--samples", str(data)]) == 2    # --samples alone would be ignored
    assert "--by" in capsys.readouterr().err
