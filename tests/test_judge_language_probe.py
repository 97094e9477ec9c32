"""The language probe compares the judge on the same item in Russian and in English: a judge
that errs in English has a significant negative effect, an unbiased one has none."""

from __future__ import annotations

import re
import zlib
from collections import Counter
from typing import Any

import pytest

from ragmeter.judge_trust.bench import BenchItem, load_bench, run_bench
from ragmeter.judge_trust.language import bundled_pairs, language_pairs
from ragmeter.judge_trust.probes import run_probes
from ragmeter.judges.base import JudgeRequest
from ragmeter.judges.scripted import ScriptedJudge

TASKS = ("faithfulness", "factual_correctness", "answer_relevance", "context_relevance",
         "production_gate")


def _fill(schema: dict[str, Any], yes: bool, grade: int) -> dict[str, Any]:
    """A reply to any of the benchmark's schemas saying ``yes`` / ``grade``."""
    out: dict[str, Any] = {}
    for key, prop in schema.get("properties", {}).items():
        if prop.get("type") == "array":
            out[key] = [{"id": 1, **_fill(prop["items"], yes, grade)}]
        elif prop.get("enum") == ["yes", "no"]:
            out[key] = "yes" if yes else "no"
        elif prop.get("type") == "integer" and key != "id":
            out[key] = grade
    return out


_TASK_OF = {"in_context": "faithfulness", "in_reference": "factual_correctness",
            "answer_relevance": "answer_relevance", "answers_question": "answer_relevance",
            "contexts": "context_relevance", "verdict": "production_gate"}


def _item(items: list[BenchItem], req: JudgeRequest) -> BenchItem:
    """The item a request asks about: its task from the reply schema, then the item of that
    task whose texts the prompt holds (the longest match)."""
    text = str(req.schema or {})
    task = next(t for k, t in _TASK_OF.items() if f"'{k}'" in text)
    user = req.messages[-1]["content"]

    def fits(i: BenchItem) -> int:
        fields = [i.answer, i.context, i.reference]
        if i.task != task or not all(f in user for f in fields if f):
            return -1
        return sum(len(f) for f in (*fields, i.question) if f and f in user)
    return max(items, key=fits)


def _judge(items: list[BenchItem], wrong_en: float = 0.0) -> tuple[ScriptedJudge, Counter]:
    """An oracle, except on the English items whose id hashes below ``wrong_en``: there it
    says the opposite (a graded item one grade off)."""
    asked: Counter[str] = Counter()

    def fn(req: JudgeRequest) -> dict[str, Any]:
        it = _item(items, req)
        asked[it.id] += 1
        yes, grade = it.label_value >= 0.5, round(it.label_value * 2)
        if it.lang == "en" and zlib.crc32(it.id.encode()) % 1000 < wrong_en * 1000:
            yes, grade = not yes, (grade + 1) % 3
        return _fill(req.schema or {}, yes, grade)
    return ScriptedJudge(fn, name=f"wrong-en-{wrong_en}"), asked


def _all_items() -> list[BenchItem]:
    return [*load_bench(), *(en for _, en in bundled_pairs())]


def test_the_bundled_pairs_are_balanced_translations() -> None:
    pairs = bundled_pairs()
    assert len(pairs) >= 40
    assert {ru.task for ru, _ in pairs} == set(TASKS)
    for task in TASKS:
        labels = {ru.label for ru, _ in pairs if ru.task == task}
        assert len(labels) >= 2, task                         # both labels represented
    for ru, en in pairs:
        assert (ru.lang, en.lang, en.pair) == ("ru", "en", ru.id)
        assert (en.task, en.label, en.kind) == (ru.task, ru.label, ru.kind)
        for f in ("question", "context", "answer", "reference"):
            a, b = getattr(ru, f), getattr(en, f)
            assert (a is None) == (b is None), (ru.id, f)
            if a:                                              # numbers kept (grouping aside)
                assert (sorted(re.findall(r"\d+", a.replace(" ", "")))
                        == sorted(re.findall(r"\d+", b.replace(",", "")))), (ru.id, f)
            if b:
                assert not re.search("[а-яА-ЯёЁ]", b), (en.id, f)   # really English


def test_the_bundled_benchmark_is_unchanged_by_the_pairs() -> None:
    ids = {i.id for i in load_bench()}
    assert not any(i.pair for i in load_bench())
    assert all(ru.id in ids and en.id not in ids for ru, en in bundled_pairs())


def _language(wrong_en: float, limit: int = 60) -> tuple[Any, Counter]:
    items = _all_items()
    judge, asked = _judge(items, wrong_en)
    report = run_probes(judge, load_bench(lang="ru"), probes=("language",),
                        pairs=bundled_pairs(), limit=limit, n_resamples=4000)
    (res,) = report.results
    return res, asked


def test_a_judge_that_errs_in_english_has_a_negative_paired_effect() -> None:
    res, asked = _language(0.5)
    assert res.paired and res.n == len(bundled_pairs()) and res.n_unscored == 0
    assert res.effect < -0.25 and res.ci_high < 0 and res.p_value < 0.001 and res.biased
    assert set(res.tasks) == set(TASKS) and "paired" in res.note
    assert len(asked) == 2 * res.n                       # both sides of every pair asked


def test_an_unbiased_judge_has_no_language_effect() -> None:
    res, _ = _language(0.0)
    # no pair changed: the exact interval of 0 discordant pairs in 52 (about +-0.07), not [0, 0]
    assert res.paired and res.effect == 0.0 and res.ci_low < 0.0 < res.ci_high
    assert res.ci_high == pytest.approx(1 - 0.025 ** (1 / res.n))
    assert res.p_value == 1.0 and not res.biased


def test_the_probe_limit_takes_a_seeded_choice_of_pairs() -> None:
    a, _ = _language(0.5, limit=20)
    b, _ = _language(0.5, limit=20)
    assert a.n == 20 and a == b


def test_the_run_s_values_are_reused_and_the_rest_asked() -> None:
    items = _all_items()
    judge, asked = _judge(items, 0.0)
    ru = load_bench(lang="ru", tasks=["faithfulness"], limit=30)
    run = run_bench(judge, ru, n_boot=50)
    in_run = {i.id for i in ru}
    asked.clear()
    pairs = [p for p in bundled_pairs() if p[0].task == "faithfulness"]
    report = run_probes(judge, ru, probes=("language",), run=run, pairs=pairs, limit=60)
    (res,) = report.results
    assert res.n == len(pairs) and res.effect == 0.0
    again = {r.id for r, _ in pairs if r.id in in_run}
    assert again and not (again & set(asked))            # read from the run, not re-asked
    assert set(asked) == {i.id for p in pairs for i in p} - again


def test_pairs_inside_a_users_file_are_found_else_the_gap_is_unpaired() -> None:
    items = _all_items()
    judge, _ = _judge(items, 0.0)
    ru, en = bundled_pairs()[0]
    assert language_pairs([ru, en]) == [(ru, en)]
    plain = [i for i in load_bench(lang="all") if i.task == "faithfulness"]
    assert language_pairs(plain) == []
    run = run_bench(judge, plain, n_boot=50)
    (gap,) = run_probes(judge, plain, probes=("language",), run=run).results
    assert not gap.paired and "unpaired" in gap.note and gap.effect == pytest.approx(0.0)


def test_the_cli_runs_the_paired_language_probe_alone(tmp_path, capsys) -> None:
    import json

    from ragmeter.cli.app import run as cli

    out = tmp_path / "card.json"
    code = cli(["judge", "bench", "--judge-backend", "mock", "--lang", "all", "--limit", "2",
                "--task", "faithfulness", "--probe", "language", "--probe-limit", "8",
                "--out", str(out)])
    assert code == 0
    (card,) = json.loads(out.read_text(encoding="utf-8"))["cards"]
    (res,) = card["meta"]["probes"]["results"]
    assert res["probe"] == "language" and res["paired"] and res["n"] + res["n_unscored"] == 8
    assert res["tasks"] == ["faithfulness"]
    assert cli(["judge", "bench", "--judge-backend", "mock", "--probe", "lang"]) == 2
    assert "unknown probe 'lang'" in capsys.readouterr().err
