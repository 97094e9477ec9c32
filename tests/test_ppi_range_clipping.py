"""A prediction-powered interval of a 0–1 metric stays inside 0–1 and says it was cut."""
from __future__ import annotations

import numpy as np

from ragmeter import stats as S
from ragmeter.judge_trust.card import card_from_values
from ragmeter.judge_trust.labels import labels_from_records
from ragmeter.judge_trust.ppi import ppi_estimates
from ragmeter.reports.judge_card import card_html


def _near_one() -> tuple[dict[str, float], object]:
    rng = np.random.default_rng(3)
    ids = [f"s{i}" for i in range(60)]
    judge = {s: float(v) for s, v in zip(ids, np.clip(rng.normal(0.9, 0.1, 60), 0, 1),
                                         strict=True)}
    recs = [(None, {"sample_id": s, "metric": "faithfulness", "label": lab})
            for s, lab in zip(ids[:6], [1, 1, 1, 1, 1, 0.0], strict=True)]
    return judge, labels_from_records(recs, "mem")


def test_unclipped_interval_would_leave_the_unit_range() -> None:
    judge, labels = _near_one()
    lab = labels.values("faithfulness")
    f = np.asarray(list(judge.values()))
    raw = S.ppi_mean(f, np.asarray([judge[s] for s in lab]), np.asarray(list(lab.values())),
                     discrete=True)
    assert raw.ci_high > 1.0 and raw.clipped_to is None


def test_judged_metric_interval_is_cut_to_zero_one_and_flagged() -> None:
    judge, labels = _near_one()
    est = ppi_estimates({"faithfulness": judge}, labels)["faithfulness"].estimate
    assert 0.0 <= est.ci_low <= est.estimate <= est.ci_high <= 1.0
    assert est.clipped_to == (0.0, 1.0)
    assert est.to_dict()["clipped_to"] == (0.0, 1.0)


def test_label_plan_uses_the_uncut_width() -> None:
    judge, labels = _near_one()
    est = ppi_estimates({"faithfulness": judge}, labels)["faithfulness"].estimate
    plan = S.labels_needed(est, est.width)
    assert plan.current_width > est.width and plan.n_more != 0


def test_report_says_the_interval_was_cut() -> None:
    judge, labels = _near_one()
    est = ppi_estimates({"faithfulness": judge}, labels)
    card = card_from_values({"faithfulness": judge}, labels, judge="j", model="m")
    html = card_html(card, {k: v.estimate.to_dict() for k, v in est.items()}, "en")
    assert "cut to the metric&#x27;s range 0–1" in html or "cut to the metric's range 0–1" in html
