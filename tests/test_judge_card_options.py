"""``judge card``: option values are checked, and labels must name samples of the run."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragmeter.cli.app import run as cli


def _store(tmp_path: Path) -> str:
    from ragmeter.results.records import EvalResult, MetricResult, Signature
    from ragmeter.results.store import ResultStore, TierRecord

    rng = np.random.default_rng(4)
    ids = [f"q{i}" for i in range(40)]
    sig = Signature.make(metric="faithfulness", judge="main", judge_model="m", data="d")
    results = []
    for name in ("A", "B"):
        res = EvalResult(name)
        res.add(MetricResult("faithfulness", ids, (rng.random(40) < 0.6).astype(float), sig))
        results.append(res)
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    ResultStore(url).save_run(name="r", tiers={"generation": TierRecord("generation",
                                                                         results=results)},
                              run_id="r1", git=False)
    return url


def _labels(tmp_path: Path, ids: list[str], system: str = "") -> Path:
    p = tmp_path / "labels.jsonl"
    p.write_text("".join(json.dumps({"sample_id": s, "metric": "faithfulness",
                                     "label": i % 2, "system": system}) + "\n"
                         for i, s in enumerate(ids)), encoding="utf-8")
    return p


def _card(url: str, labels: Path, *extra: str) -> int:
    return cli(["judge", "card", "r1", "--labels", str(labels), "--store", url, "--system", "A",
                *extra])


@pytest.mark.parametrize("opt, value", [("--threshold", "2"), ("--threshold", "nan"),
                                        ("--threshold", "-1"), ("--threshold", "0"),
                                        ("--target-width", "0"), ("--target-width", "-0.1"),
                                        ("--target-width", "inf"), ("--seed", "-1")])
def test_out_of_range_options_are_usage_errors(tmp_path: Path, capsys, opt: str,
                                               value: str) -> None:
    url = _store(tmp_path)
    code = _card(url, _labels(tmp_path, [f"q{i}" for i in range(10)]), opt, value)
    err = capsys.readouterr().err
    assert code == 2 and opt in err and "internal error" not in err


def test_labels_matching_no_sample_fail_and_save_no_card(tmp_path: Path, capsys) -> None:
    from ragmeter.results.store import ResultStore

    url = _store(tmp_path)
    code = _card(url, _labels(tmp_path, [f"other-{i}" for i in range(10)]))
    err = capsys.readouterr().err
    assert code == 2 and "labels.jsonl" in err and "'other-0'" in err and "'q0'" in err
    assert "judge_trust" not in ResultStore(url).load_run("r1").tiers


def test_partly_matching_labels_warn_with_examples(tmp_path: Path, capsys) -> None:
    url = _store(tmp_path)
    ids = [f"q{i}" for i in range(10)] + ["zz1", "zz2"]
    code = _card(url, _labels(tmp_path, ids), "--no-save")
    err = capsys.readouterr().err
    assert code == 0
    assert "2 of 12 labels name samples the run did not judge" in err and "'zz1'" in err


def test_unknown_compare_systems_is_refused_with_the_run_systems(tmp_path: Path,
                                                                  capsys) -> None:
    url = _store(tmp_path)
    labels = _labels(tmp_path, [f"q{i}" for i in range(10)], system="A")
    code = cli(["judge", "card", "r1", "--labels", str(labels), "--store", url,
                "--compare-systems", "A,C", "--no-save"])
    err = capsys.readouterr().err
    assert code == 2 and "'C' is not a system of the run" in err and "A, B" in err
    code = cli(["judge", "card", "r1", "--labels", str(labels), "--store", url,
                "--compare-systems", "A", "--no-save"])
    assert code == 2 and "A,B" in capsys.readouterr().err
