"""Judges earn the right to gate: ``ragmeter check`` on a judged metric gates on the
bias-corrected bound of a matching judge card stored with the run; without one the gate is
advisory, and ``--require-card`` fails it with the reason (exit 1)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ragmeter.cli.app import run as cli
from ragmeter.judge_trust.labelling import run_task
from ragmeter.results.store import ResultStore
from test_judge_label_session import label_n, make_run, session


def test_a_judged_gate_needs_a_matching_card_and_then_gates_on_the_corrected_bound(
        tmp_path: Path, capsys) -> None:
    url = make_run(tmp_path, n=80)
    judge = run_task(ResultStore.open_readonly(url)[0].load_run("r1"), "faithfulness").values
    raw = sum(judge.values()) / len(judge)
    low = f"faithfulness={raw - 0.2:.3f}"          # the judge's own mean passes it easily
    check = ["gate", "r1", "--store", url, "--min"]

    # no card: advisory (not enforced) by default, failed with the reason under --require-card
    assert cli([*check, low]) == 0
    out = capsys.readouterr().out
    assert "advisory" in out
    assert cli([*check, low, "--require-card"]) == 1
    out = capsys.readouterr().out
    assert "without a matching judge card" in out and "no judge card of this run" in out

    # a labeller who disagrees with the judge on every third item: a lenient judge
    labels = tmp_path / "labels.jsonl"
    s = session(url, labels)
    label_n(s, "anna", 40, lambda sid: int(judge[sid] if int(sid[1:]) % 3 else 0))
    s.close()
    card_json = tmp_path / "card.json"
    assert cli(["judge", "card", "r1", "--labels", str(labels), "--store", url, "--out",
                str(card_json)]) == 0
    ppi = json.loads(card_json.read_text(encoding="utf-8"))["ppi"]["faithfulness"]
    lo = float(ppi["ci_low"])
    assert lo < raw                                  # the corrected bound is below the mean
    capsys.readouterr()
    # a minimum under the corrected lower bound passes, card-backed, with --require-card
    assert cli([*check, f"faithfulness={lo - 0.01:.4f}", "--require-card"]) == 0
    out = capsys.readouterr().out
    assert "card-backed" in out and "bias-corrected with 40 human labels" in out
    # a minimum between the corrected bound and the raw judge mean: the judge alone would
    # pass it; the card-backed gate fails on the corrected bound
    mid = (lo + raw) / 2
    assert cli([*check, f"faithfulness={mid:.4f}", "--require-card"]) == 1
    assert "corrected CI lower bound" in capsys.readouterr().out

    # what the card must match: judge, model, served version, prompts, graded examples
    from ragmeter.judge_trust.backing import mismatch
    from ragmeter.judge_trust.runs import stored_cards
    from ragmeter.results.records import Signature

    run = ResultStore.open_readonly(url)[0].load_run("r1")
    card = stored_cards(run)[0][0]
    sig = str(next(r for rec in run.tiers.values() for r in rec.results
                   if "faithfulness" in r.results).results["faithfulness"].signature)
    assert mismatch(card, "faithfulness", Signature.parse(sig)) is None
    for changed, why in ((sig.replace("judge_model:m", "judge_model:m2"), "judge model"),
                         (sig + "|judge_version:m-2026-01", "judge version"),
                         (sig.replace("gen.verify/v1", "gen.verify/v2"), "prompt versions"),
                         (sig + "|shots:4@0123456789abcdef", "shots")):
        got = mismatch(card, "faithfulness", Signature.parse(changed))
        assert got is not None and got.startswith(why), (changed, got)
