"""A configuration mistake in a target never yields a scored metric with exit 0: `ragmeter
run` against the reference service over real sockets, each mistake as a new user makes it.

Tier 2 without gold context texts, a misspelled placeholder, an id rule that maps no returned
id, a ``[*]`` path whose field no item has, lost replies over ``--max-lost``, an unset
``${env:NAME}``, a module that does not import, a bad regular expression."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import run_cli
from ragmeter.targets.example_service import DATA, ExampleService, KnowledgeBase, ServiceConfig

EVALSET = DATA / "evalset.jsonl"


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase(ServiceConfig())


@pytest.fixture(scope="module")
def service(kb: KnowledgeBase) -> Iterator[ExampleService]:
    with ExampleService(kb=kb) as srv:
        yield srv


def _bench(tmp_path: Path, target: dict[str, Any], tiers: list[dict[str, Any]],
           **extra: Any) -> Path:
    cfg = {"name": "mistakes", "datasets": [{"path": str(EVALSET), "format": "evalset"}],
           "store": str(tmp_path / "runs.sqlite"), "run_dir": str(tmp_path / "runs"),
           "target": target, "tiers": tiers, **extra}
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
         bench: Path, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    """`ragmeter run --json`: (exit code, the stored run as JSON or None, stderr)."""
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = run_cli(capsys, "run", str(bench), "--json", "--quiet", *args)
    start = out.find("{")
    return code, json.loads(out[start:]) if start >= 0 else None, err


def _mean(run: dict[str, Any], tier: str, metric: str, system: str = "target") -> Any:
    res = next(r for r in run["tiers"][tier]["results"] if r["name"] == system)
    return res["results"][metric]["aggregate"]


def test_tier2_generate_without_gold_texts_fails_instead_of_sending_no_context(
        service: ExampleService, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = service.counts["requests"]
    bench = _bench(tmp_path, {"kind": "http", "url": service.url + "/answer", "entries": {
        "generate": {"url": service.url + "/generate"}}},
        [{"name": "generation", "metrics": ["rouge_l"]}])
    code, run, err = _run(capsys, monkeypatch, tmp_path, bench)
    assert code == 3, err
    assert "no gold context" in err and "reference_contexts" in err
    assert service.counts["requests"] == before          # not one empty context was sent
    # with the corpus the gold chunk ids name, the same tier runs on the gold texts
    bench = _bench(tmp_path, {"kind": "http", "url": service.url + "/answer", "entries": {
        "generate": {"url": service.url + "/generate"}}},
        [{"name": "generation", "metrics": ["rouge_l"]}],
        corpus={"path": str(DATA / "corpus.jsonl")})
    code, run, err = _run(capsys, monkeypatch, tmp_path, bench)
    assert code == 0, err
    assert run is not None and _mean(run, "generation", "rouge_l")["mean"] > 0.3


def test_misspelled_placeholder_is_a_config_error_at_load(
        service: ExampleService, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = service.counts["requests"]
    bench = _bench(tmp_path, {"kind": "http", "url": service.url + "/answer",
                              "request": {"question": "{questoin}", "k": "{k}"}},
                   [{"name": "retrieval", "metrics": ["hit_rate@5"]}])
    code, _, err = _run(capsys, monkeypatch, tmp_path, bench)
    assert code == 2
    assert "target.request.question" in err and "{questoin}" in err and "{question}" in err
    assert service.counts["requests"] == before


def test_id_rule_that_maps_no_returned_id_fails_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a knowledge base whose pages end in /index.html: last_segment gives 'index.html' for
    # every URL, never a gold document id
    rows = [json.loads(line) for line in
            (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    corpus = tmp_path / "kb.jsonl"
    corpus.write_text("".join(json.dumps({**r, "url": r["url"] + "/index.html"},
                                         ensure_ascii=False) + "\n" for r in rows),
                      encoding="utf-8")
    tiers = [{"name": "retrieval", "metrics": ["hit_rate@5(level=doc)", "mrr(level=doc)"]}]
    with ExampleService(ServiceConfig(corpus=str(corpus))) as srv:
        target: dict[str, Any] = {"kind": "http", "url": srv.url + "/answer",
                                  "ids": {"from": "doc_ids", "rule": "last_segment"}}
        code, _, err = _run(capsys, monkeypatch, tmp_path, _bench(tmp_path, target, tiers))
        assert code == 3, err
        assert "id rule last_segment" in err
        assert "'https://wiki.sgut.example/" in err and "-> 'index.html'" in err
        assert "level=doc" in err and "target.ids" in err
        # the right rule (a table from URL to document id) scores and exits 0
        table = {r["url"] + "/index.html": r["doc_id"] for r in rows}
        target["ids"] = {"from": "doc_ids", "map": table}
        code, run, err = _run(capsys, monkeypatch, tmp_path, _bench(tmp_path, target, tiers))
    assert code == 0, err
    assert run is not None and _mean(run, "retrieval", "hit_rate@5(level=doc)")["mean"] > 0.5


def test_document_ids_scored_by_chunk_level_metrics_fail_the_run(
        service: ExampleService, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a table maps the service's URLs onto gold *documents*, while the evalset's gold is
    # chunks: chunk-level hit@5 would be 0.000 for every question
    rows = [json.loads(line) for line in
            (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    target = {"kind": "http", "url": service.url + "/answer",
              "ids": {"from": "doc_ids", "map": {r["url"]: r["doc_id"] for r in rows}}}
    code, _, err = _run(capsys, monkeypatch, tmp_path, _bench(
        tmp_path, target, [{"name": "retrieval", "metrics": ["hit_rate@5", "mrr",
                                                           "hit_rate@5(level=doc)"]}]))
    assert code == 3, err
    assert "are documents" in err and "hit_rate@5, mrr score chunks" in err
    assert "hit_rate@5(level=doc), mrr(level=doc)" in err and "context_ids" in err
    assert "(from doc_ids, rule map" in err and "'https://wiki.sgut.example/" in err
    # the tier's default metrics for a target that ranks documents are document-level
    code, run, err = _run(capsys, monkeypatch, tmp_path, _bench(
        tmp_path, target, [{"name": "retrieval"}]))
    assert code == 0, err
    assert run is not None
    res = next(r for r in run["tiers"]["retrieval"]["results"] if r["name"] == "target")
    ranking = [n for n in res["results"] if n.split("@")[0].split("(")[0] in
               ("hit_rate", "recall", "ndcg", "mrr")]
    assert len(ranking) >= 4 and all(n.endswith("(level=doc)") for n in ranking), ranking
    assert _mean(run, "retrieval", "hit_rate@5(level=doc)")["mean"] > 0.5
    # the same ids scored at document level only: no complaint
    code, run, err = _run(capsys, monkeypatch, tmp_path, _bench(
        tmp_path, target, [{"name": "retrieval", "metrics": ["hit_rate@5(level=doc)"]}]))
    assert code == 0, err


def test_evaluate_scores_a_document_ranking_target_at_document_level(
        service: ExampleService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ragmeter
    from ragmeter.targets.conformance import TargetMappingError

    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    rows = [json.loads(line) for line in
            (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    target = {"kind": "http", "url": service.url + "/answer",
              "ids": {"from": "doc_ids", "map": {r["url"]: r["doc_id"] for r in rows}}}
    res = ragmeter.evaluate(EVALSET, target=target, store=tmp_path / "replies", latency=False)
    ranking = [n for n in res.results if n.split("@")[0].split("(")[0] in
               ("hit_rate", "recall", "precision", "ndcg", "mrr", "map")]
    assert ranking and all(n.endswith("(level=doc)") for n in ranking), ranking
    mean = res.results["hit_rate@5(level=doc)"].aggregate.mean
    assert mean is not None and mean > 0.5
    with pytest.raises(TargetMappingError, match="are documents"):
        ragmeter.evaluate(EVALSET, target=target, metrics=["hit_rate@5"],
                          store=tmp_path / "replies2", latency=False)


def test_star_path_whose_field_no_item_has_fails_the_run(
        service: ExampleService, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the chat endpoint's sources are {"id", "url", "text"}: there is no chunk_id
    target = {"kind": "http", "url": service.url + "/v1/chat/completions",
              "request": {"model": "rag", "stream": False,
                          "messages": [{"role": "user", "content": "{question}"}]},
              "response": {"answer": "choices[0].message.content",
                           "context_ids": "sources[*].chunk_id"}}
    code, _, err = _run(capsys, monkeypatch, tmp_path, _bench(
        tmp_path, target, [{"name": "retrieval", "metrics": ["hit_rate@5"]}]))
    assert code == 3, err
    assert "'sources[*].chunk_id'" in err and "target.response.context_ids" in err
    assert 'sources[*] = {"id": ' in err          # what the items do have


def test_lost_replies_count_toward_max_lost(
        kb: KnowledgeBase, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    with ExampleService(ServiceConfig(malformed_rate=0.2, seed=11), kb=kb) as srv:
        bench = _bench(tmp_path, {"kind": "http", "url": srv.url + "/answer"},
                       [{"name": "e2e", "metrics": ["rouge_l"]}])
        code, _, err = _run(capsys, monkeypatch, tmp_path, bench)
        malformed = srv.counts["malformed"]
    assert malformed > 5
    assert code == 3, err
    assert "above --max-lost" in err
    line = next(x for x in err.splitlines() if x.strip().startswith("e2e/target/rouge_l:"))
    assert f"{malformed} of 110 values lost" in line, err     # every lost reply counted
    assert "target_bad_reply×" in line and "target_unmapped×" in line   # by reason
    with ExampleService(ServiceConfig(malformed_rate=0.2, seed=11), kb=kb) as srv:
        bench = _bench(tmp_path, {"kind": "http", "url": srv.url + "/answer"},
                       [{"name": "e2e", "metrics": ["rouge_l"]}])
        code, run, err = _run(capsys, monkeypatch, tmp_path, bench, "--max-lost", "0.5")
    assert code == 0, err
    assert run is not None
    agg = _mean(run, "e2e", "rouge_l")
    assert agg["n_unscored"] == malformed and agg["n"] == 110 - malformed


@pytest.mark.parametrize(("target", "key"), [
    ({"kind": "http", "url": "http://127.0.0.1:9/answer",
      "headers": {"X-Api-Key": "${env:RAGMETER_TEST_UNSET_KEY}"}},
     "target.headers.X-Api-Key"),
    ({"kind": "openai", "url": "http://127.0.0.1:9/v1",
      "api_key_env": "RAGMETER_TEST_UNSET_KEY"}, "target.api_key_env"),
    ({"kind": "python", "function": "no_such_module_xyz:answer"}, "target.function"),
    ({"kind": "http", "url": "http://127.0.0.1:9/answer",
      "ids": {"rule": "regex", "pattern": "(unclosed"}}, "target.ids.pattern"),
    ({"kind": "command", "command": ["no-such-program-xyz"]}, "target.command"),
])
def test_config_mistakes_exit_2_naming_the_key(
        target: dict[str, Any], key: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGMETER_TEST_UNSET_KEY", raising=False)
    bench = _bench(tmp_path, target, [{"name": "e2e", "metrics": ["rouge_l"]}])
    code, _, err = _run(capsys, monkeypatch, tmp_path, bench)
    assert code == 2, err
    assert key in err


def test_id_rule_that_maps_most_returned_ids_onto_no_corpus_id_fails_the_run(
        service: ExampleService, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the reference service's URLs end in /admission/documents while its documents are
    # admission-documents: last_segment maps only the few URLs whose last segment happens to
    # be a document id, so hit@5 would be a small number that looks like a weak system
    rows = [json.loads(line) for line in
            (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    corpus = {"path": str(DATA / "corpus.jsonl"),
              "chunking": {"chunk_size_chars": 800, "overlap_chars": 120}}
    tiers = [{"name": "retrieval", "metrics": ["hit_rate@5(level=doc)", "mrr(level=doc)"]}]
    target: dict[str, Any] = {"kind": "http", "url": service.url + "/answer",
                              "ids": {"from": "doc_ids", "rule": "last_segment"}}
    code, run, err = _run(capsys, monkeypatch, tmp_path,
                          _bench(tmp_path, target, tiers, corpus=corpus))
    assert code == 3, (err, run and _mean(run, "retrieval", "hit_rate@5(level=doc)"))
    assert "id rule last_segment" in err and "no id of the corpus" in err
    assert "'https://wiki.sgut.example/" in err and "target.ids" in err
    # the right rule maps every returned URL onto a corpus document: exit 0
    target["ids"] = {"from": "doc_ids", "map": {r["url"]: r["doc_id"] for r in rows}}
    code, run, err = _run(capsys, monkeypatch, tmp_path,
                          _bench(tmp_path, target, tiers, corpus=corpus))
    assert code == 0, err
    assert run is not None and _mean(run, "retrieval", "hit_rate@5(level=doc)")["mean"] > 0.5
