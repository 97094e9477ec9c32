"""Judge bias probes find a scripted judge's known bias and none in an unbiased one."""

from __future__ import annotations

import zlib
from typing import Any

import pytest

from ragmeter.judge_trust.bench import BenchItem, load_bench, run_bench
from ragmeter.judge_trust.probes import (
    PAD,
    family_warning,
    model_family,
    run_probes,
    verbosity_cases,
)
from ragmeter.judges.base import JudgeRequest
from ragmeter.judges.scripted import ScriptedJudge


def _items() -> list[BenchItem]:
    return [i for i in load_bench(lang="ru") if i.task in ("faithfulness", "answer_relevance")]


def _script(items: list[BenchItem], bias: str) -> Any:
    """``none``: the label; ``verbosity``: yes to every padded answer; ``first``: reads only
    the first passage (no when the supporting one is elsewhere)."""
    known = sorted(((i.answer or "", i.context or "", i) for i in items if i.answer),
                   key=lambda t: -len(t[0]) - len(t[1]))
    pads = [p for ps in PAD.values() for p in ps]

    def fn(req: JudgeRequest) -> dict[str, Any]:
        user = req.messages[-1]["content"]
        ans, ctx, it = next((a, c, i) for a, c, i in known if a in user and c in user)
        yes = it.label_value >= 0.5
        grade = round(it.label_value * 2)
        padded = (ans + " ") in user or any(p in user for p in pads)
        if bias == "verbosity" and padded:
            yes, grade = True, 2
        if bias == "first" and "<context_1>" in user and ctx not in user.split("<context_2>")[0]:
            yes = False
        props = req.schema["properties"]
        if "answer_claims" in props:
            return {"answer_claims": [{"id": 1, "in_context": "yes" if yes else "no"}]}
        return {k: grade for k in props if k == "answer_relevance"}
    return fn


def _probe(bias: str, probes: tuple[str, ...]) -> dict[str, Any]:
    items = _items()
    judge = ScriptedJudge(_script(items, bias), name=f"j-{bias}", model="qwen2.5-7b")
    report = run_probes(judge, items, probes=probes, limit=30, n_resamples=2000,
                        generator_model="Qwen/Qwen2.5-72B-Instruct")
    assert report.warnings and "'qwen' family" in report.warnings[0]
    return {r.probe: r for r in report.results}


def test_a_judge_that_prefers_long_answers_has_a_verbosity_effect() -> None:
    r = _probe("verbosity", ("verbosity",))["verbosity"]
    assert r.n == 30 and r.effect > 0.1 and r.ci_low > 0 and r.biased
    assert set(r.tasks) == {"faithfulness", "answer_relevance"}


def test_an_unbiased_judge_covers_zero_everywhere() -> None:
    res = _probe("none", ("verbosity", "context_order", "position"))
    assert set(res) == {"verbosity", "context_order", "position_middle", "position_last"}
    for r in res.values():
        assert r.n > 0 and r.ci_low <= 0 <= r.ci_high and not r.biased, r


def test_a_judge_that_reads_only_the_first_passage_has_a_position_effect() -> None:
    res = _probe("first", ("position", "context_order"))
    for name in ("position_middle", "position_last"):
        assert res[name].effect < 0 and res[name].ci_high < 0, res[name]
    order = res["context_order"]   # it says no once the supporting passage is not first
    assert order.n == 30 and order.effect <= 0
    # the order probe sees it on fewer items (two random orders put the supporting passage
    # first in only one of them 6 times in 16): on 100 items it is a measured bias
    items = _items()
    judge = ScriptedJudge(_script(items, "first"), name="j-first")
    (order,) = run_probes(judge, items, probes=("context_order",), limit=100,
                          n_resamples=2000).results
    assert order.n == 100 and order.effect < -0.1 and order.ci_high < 0 and order.biased


def _noisy(items: list[BenchItem], salt: str, share: int = 20) -> Any:
    """An unbiased judge that is wrong on ``share`` % of its calls, at random (a seeded hash
    of the whole prompt, so the two orders of one item err independently)."""
    base = _script(items, "none")

    def fn(req: JudgeRequest) -> dict[str, Any]:
        out = base(req)
        if zlib.crc32((salt + req.messages[-1]["content"]).encode()) % 100 < share:
            claim = out["answer_claims"][0]
            claim["in_context"] = "no" if claim["in_context"] == "yes" else "yes"
        return out
    return fn


def test_context_order_does_not_flag_an_unbiased_judge_with_random_errors() -> None:
    """20 % random errors flip verdicts between the two orders on about a third of the items;
    that is noise, not an order bias. The paired test flags it in at most 5 % of seeds (the
    mean absolute change used before flagged all 40)."""
    items = _items()
    flagged = []
    for seed in range(40):
        judge = ScriptedJudge(_noisy(items, f"s{seed}"), name="noisy")
        (r,) = run_probes(judge, items, probes=("context_order",), limit=30, seed=seed,
                          n_resamples=2000).results
        assert r.n == 30 and r.p_value is not None and "changed on" in r.note
        flagged.append(r.biased)
    assert sum(flagged) <= 2, sum(flagged)


def test_padding_keeps_a_faithful_answer_supported() -> None:
    it = next(i for i in _items() if i.task == "faithfulness")
    case = next(c for c in verbosity_cases([it]))
    long = case.samples[1].response or ""
    assert long.startswith(it.answer or "") and len(long) > len(it.answer or "")
    added = long[len(it.answer or ""):].strip()
    assert added and added in " ".join((it.context or "").split())


def test_language_gap_is_labelled_unpaired() -> None:
    items = [i for i in load_bench(lang="all") if i.task == "faithfulness"]
    judge = ScriptedJudge(_script(items, "none"), name="j")
    run = run_bench(judge, items, n_boot=100)
    report = run_probes(judge, items, probes=("language",), run=run)
    (gap,) = report.results
    assert gap.effect == pytest.approx(0.0) and not gap.paired and "translations" in gap.note


def test_model_family() -> None:
    assert model_family("openai/gpt-4o-mini") == model_family("gpt-4.1") == "gpt"
    assert model_family("Qwen/Qwen2.5-7B-Instruct") == "qwen"
    assert family_warning("claude-3-5-sonnet", "gpt-4o") is None
    assert family_warning("llama-3.1-8b", None) is None


def test_biased_needs_the_interval_and_the_exact_test() -> None:
    from ragmeter.judge_trust.probes import ProbeResult

    few = ProbeResult("verbosity", 0.417, 0.167, 0.667, 12, 0, 0.062)   # 5 one-way flips
    assert not few.biased
    assert ProbeResult("verbosity", 0.417, 0.25, 0.583, 30, 0, 0.0001).biased
    assert ProbeResult("language", 0.1, 0.02, 0.2, 60, 0, None, paired=False).biased
    assert ProbeResult.from_dict(few.to_dict()) == few


def test_probes_are_shown_on_the_judge_card_html() -> None:
    from ragmeter.reports.judge_card import card_html

    items = _items()
    judge = ScriptedJudge(_script(items, "verbosity"), name="verbose-judge")
    run = run_bench(judge, items[:10])
    run.card.meta["probes"] = run_probes(judge, items, probes=("verbosity",), limit=30,
                                         n_resamples=2000).to_dict()
    html = card_html(run.card, {}, "en")
    assert "<table class=probes>" in html and "<code>verbosity</code>" in html
    assert '<tr class="biased">' in html
