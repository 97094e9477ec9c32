"""Every target kind against the reference service over real sockets (or a real process):
answers, contexts, ids, TTFT, version, slow / failing / malformed replies, unreachable."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import needs_extra
from ragmeter.data.sample import Sample
from ragmeter.targets import TargetSession, TargetUnreachableError
from ragmeter.targets.example_service import ExampleService, KnowledgeBase, ServiceConfig

FIX = Path(__file__).parent / "fixtures" / "targets"
Q = "Сколько стоит общежитие для студентов-бюджетников?"


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase(ServiceConfig())


@pytest.fixture(scope="module")
def service(kb: KnowledgeBase) -> Iterator[ExampleService]:
    with ExampleService(kb=kb) as srv:
        yield srv


def serve(kb: KnowledgeBase, **cfg: Any) -> ExampleService:
    return ExampleService(ServiceConfig(**cfg), kb=kb).start()


def _session(cfg: dict[str, Any], tmp_path: Path, **kw: Any) -> TargetSession:
    return TargetSession(cfg, store=tmp_path / "replies.sqlite", **kw)


def _samples(n: int = 3) -> list[Sample]:
    return [Sample(f"s{i}", f"{Q} ({i})") for i in range(n)]


def test_http_answer_maps_answer_contexts_ids_and_version(service: ExampleService,
                                                          tmp_path: Path) -> None:
    s = _session({"kind": "http", "url": service.url + "/answer", "version_header":
                  "X-RAG-Version", "request": {"question": "{question}", "k": "{k}"},
                  "response": {"answer": "answer", "contexts": "contexts",
                               "context_ids": "context_ids", "scores": "scores"}}, tmp_path)
    out = s.answer(_samples(2), k=3)
    assert all(x.response for x in out)
    assert [len(x.retrieved_ids or []) for x in out] == [3, 3]
    assert out[0].retrieved_ids and "#" in out[0].retrieved_ids[0]
    assert out[0].retrieved_contexts and len(out[0].retrieved_contexts) == 3
    assert s.signature_fields()["target_version"] == "example-1"
    call = out[0].metadata["target_call"]
    assert call["latency_s"] > 0 and call["attempts"] == 1 and '"answer"' in call["raw"]


def test_http_doc_urls_mapped_to_gold_ids(service: ExampleService, tmp_path: Path) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")   # the service ranks with BM25 when it can
    s = _session({"kind": "http", "url": service.url + "/answer",
                  "ids": {"from": "doc_ids", "rule": "last_segment"}}, tmp_path)
    out = s.answer([Sample("a", Q)], k=2)
    ids = out[0].retrieved_ids or []
    assert ids and all("/" not in i and "#" not in i for i in ids)
    assert set(ids) <= {d.doc_id for d in service.kb.chunks}


def test_http_retrieve_and_generate_entries(service: ExampleService, tmp_path: Path) -> None:
    s = _session({"kind": "http", "url": service.url + "/answer", "entries": {
        "retrieve": {"url": service.url + "/retrieve"},
        "generate": {"url": service.url + "/generate"}}}, tmp_path)
    got = s.retrieve([Sample("a", Q)], k=4)
    assert len(got[0].retrieved_ids or []) == 4 and got[0].response is None
    gen = s.generate([Sample("a", Q)], [["Первое предложение. Второе. Третье."]])
    assert gen[0].response == "Первое предложение. Второе."


def test_url_credentials_never_in_signature_or_raw(service: ExampleService,
                                                   tmp_path: Path) -> None:
    url = service.url.replace("http://", "http://bot:pa55word-xyz@") + "/answer"
    s = _session({"kind": "http", "url": url}, tmp_path)
    out = s.answer([Sample("a", Q)])
    assert out[0].response
    assert "pa55word" not in str(s.signature_fields()) and "bot:" not in s.target.signature.where


def test_unmapped_reply_is_an_unscored_reason_naming_the_path(kb: KnowledgeBase,
                                                              tmp_path: Path) -> None:
    srv = serve(kb, malformed_rate=0.4, seed=5)      # some replies lack the answer field
    try:
        s = _session({"kind": "http", "url": srv.url + "/answer",
                      "response": {"answer": "answer"}}, tmp_path)
        out = s.answer(_samples(12))
    finally:
        srv.stop()
    lacking = [x for x in out if x.metadata.get("target_error", "").startswith(
        "target_unmapped")]
    assert lacking and all(x.response is None for x in lacking)
    assert all(x.metadata["target_error"] == "target_unmapped: answer: path 'answer' is not "
               "in the reply" for x in lacking)
    assert sum(x.response is not None for x in out) >= 4


def test_malformed_replies_are_reasons_never_values(kb: KnowledgeBase, tmp_path: Path) -> None:
    srv = serve(kb, malformed_rate=1.0, seed=3)
    try:
        s = _session({"kind": "http", "url": srv.url + "/answer"}, tmp_path)
        out = s.answer(_samples(8))
    finally:
        srv.stop()
    reasons = {x.metadata["target_error"].split(":")[0] for x in out}
    assert reasons == {"target_bad_reply", "target_unmapped"}
    assert all(x.response is None for x in out)


def test_429_and_500_are_retried_then_succeed(kb: KnowledgeBase, tmp_path: Path) -> None:
    srv = serve(kb, fault_rate=0.3, seed=1)
    try:
        s = _session({"kind": "http", "url": srv.url + "/answer", "retry_initial_s": 0.01,
                      "max_retries": 8}, tmp_path)
        out = s.answer(_samples(20))
        faults = srv.counts["fault_429"] + srv.counts["fault_500"]
    finally:
        srv.stop()
    assert faults > 0 and s.caller.counts.retries == faults
    assert all(x.response for x in out)
    assert max(x.metadata["target_call"]["attempts"] for x in out) > 1


def test_a_failing_server_gives_the_reason_after_retries(kb: KnowledgeBase,
                                                         tmp_path: Path) -> None:
    srv = serve(kb, fault_rate=1.0, fault_kinds=("500",))
    try:
        s = _session({"kind": "http", "url": srv.url + "/answer", "retry_initial_s": 0.01,
                      "max_retries": 2}, tmp_path)
        out = s.answer(_samples(2))
    finally:
        srv.stop()
    assert all(x.metadata["target_error"].startswith("target_http_5xx: HTTP 500") for x in out)
    assert all(x.metadata["target_call"]["attempts"] == 3 for x in out)


def test_slow_target_times_out(kb: KnowledgeBase, tmp_path: Path) -> None:
    srv = serve(kb, latency_s=1.0)
    try:
        s = _session({"kind": "http", "url": srv.url + "/answer", "timeout_s": 0.2,
                      "max_retries": 0}, tmp_path)
        t0 = time.perf_counter()
        out = s.answer(_samples(2))
        took = time.perf_counter() - t0
    finally:
        srv.stop()
    assert all(x.metadata["target_error"].startswith("target_timeout") for x in out)
    assert took < 0.9


def test_unreachable_target_raises_with_the_reason(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s = _session({"kind": "http", "url": f"http://127.0.0.1:{port}/answer",
                  "retry_initial_s": 0.01}, tmp_path)
    with pytest.raises(TargetUnreachableError, match="unreachable") as err:
        s.answer(_samples(5))
    assert err.value.exit_code == 3


def test_openai_streaming_measures_ttft_and_reads_sources(kb: KnowledgeBase,
                                                          tmp_path: Path) -> None:
    srv = serve(kb, latency_s=0.15)
    try:
        s = _session({"kind": "openai", "url": srv.url + "/v1", "model": "rag",
                      "version_header": "X-RAG-Version"}, tmp_path)
        out = s.answer([Sample("a", Q, metadata={"history": [
            {"question": "Привет", "answer": "Здравствуйте"}]})])
    finally:
        srv.stop()
    call = out[0].metadata["target_call"]
    assert out[0].response and out[0].retrieved_contexts
    assert out[0].retrieved_ids and "#" in out[0].retrieved_ids[0]
    assert 0.15 <= call["ttft_s"] < 0.15 + 0.1
    assert call["tokens_out"] == len((out[0].response or "").split(" "))
    assert s.signature_fields()["target_version"] == "example-1"


def test_openai_malformed_stream_is_bad_reply(kb: KnowledgeBase, tmp_path: Path) -> None:
    srv = serve(kb, malformed_rate=1.0)
    try:
        out = _session({"kind": "openai", "url": srv.url + "/v1"}, tmp_path).answer(
            [Sample("a", Q)])
    finally:
        srv.stop()
    assert out[0].metadata["target_error"].startswith("target_bad_reply")


def rag_fn(question: str, history: list[dict[str, str]]) -> dict[str, Any]:
    return {"answer": f"{question}|{len(history)}", "contexts": ["c1", "c2"],
            "context_ids": ["d#0", "d#1"]}


async def rag_async(question: str, *, k: int | None = None) -> dict[str, Any]:
    return {"response": question.upper(), "retrieved_ids": ["x#0"] * (k or 1)}


class Reply:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.contexts = ["ctx"]


def test_python_sync_async_and_objects(tmp_path: Path) -> None:
    hist = Sample("h", "q", metadata={"history": [{"role": "user", "content": "hi"},
                                                  {"role": "assistant", "content": "yo"}]})
    out = _session({"kind": "python", "function": rag_fn}, tmp_path).answer([hist])
    assert out[0].response == "q|2" and out[0].retrieved_ids == ["d#0", "d#1"]
    turns = Sample("t", "q", history=[{"role": "user", "content": "a"},
                                      {"role": "assistant", "content": "b"},
                                      {"role": "user", "content": "c"}])
    out = _session({"kind": "python", "function": rag_fn}, tmp_path).answer([turns])
    assert out[0].response == "q|3"
    out = _session({"kind": "python", "function": rag_async}, tmp_path).answer(
        [Sample("a", "abc")], k=3)
    assert out[0].response == "ABC" and out[0].retrieved_ids == ["x#0"] * 3
    out = _session({"kind": "python", "function": lambda q: Reply("obj " + q)},
                   tmp_path).answer([Sample("a", "q")])
    assert out[0].response == "obj q" and out[0].retrieved_contexts == ["ctx"]
    out = _session({"kind": "python", "function": f"{__name__}:rag_fn"}, tmp_path).answer(
        [Sample("a", "q")])
    assert out[0].response == "q|0"


def test_python_exception_is_the_sample_reason(tmp_path: Path) -> None:
    def broken(q: str) -> str:
        raise RuntimeError("index not loaded")

    out = _session({"kind": "python", "function": broken}, tmp_path).answer([Sample("a", "q")])
    assert out[0].metadata["target_error"] == "target_error: RuntimeError: index not loaded"


@pytest.mark.parametrize("jsonl", [False, True])
def test_command_one_shot_and_json_lines(tmp_path: Path, jsonl: bool) -> None:
    cmd = [sys.executable, str(FIX / "echo_rag.py"), *(["--jsonl"] if jsonl else [])]
    s = _session({"kind": "command", "command": cmd, "jsonl": jsonl}, tmp_path)
    out = s.answer([Sample(f"c{i}", f"q{i}") for i in range(5)], k=2)
    assert [x.response for x in out] == [f"echo: q{i}" for i in range(5)]
    assert out[0].retrieved_ids == ["doc-a#0", "doc-b#1"]


@pytest.mark.parametrize(("flag", "reason"), [("--fail", "target_error: "),
                                              ("--garbage", "target_bad_reply: ")])
def test_command_failures(tmp_path: Path, flag: str, reason: str) -> None:
    s = _session({"kind": "command", "command": [sys.executable, str(FIX / "echo_rag.py"),
                                                  flag]}, tmp_path)
    out = s.answer([Sample("a", "q")])
    assert out[0].metadata["target_error"].startswith(reason)
    if flag == "--fail":
        assert "the index is not built" in out[0].metadata["target_error"]


def test_openai_without_streaming_and_http_get(service: ExampleService, tmp_path: Path) -> None:
    s = _session({"kind": "openai", "url": service.url + "/v1", "stream": False}, tmp_path)
    out = s.answer([Sample("a", Q)])
    assert out[0].response and out[0].retrieved_ids
    assert out[0].metadata["target_call"]["ttft_s"] > 0


def test_ids_map_rule_over_http(service: ExampleService, tmp_path: Path) -> None:
    from ragmeter.retrieval.corpus import load_corpus
    from ragmeter.targets.example_service import DATA

    table = {d.url: f"gold-{d.doc_id}" for d in load_corpus(DATA / "corpus.jsonl") if d.url}
    s = _session({"kind": "http", "url": service.url + "/answer",
                  "ids": {"from": "doc_ids", "map": table}}, tmp_path)
    out = s.answer([Sample("a", Q)], k=3)
    assert out[0].retrieved_ids and all(i.startswith("gold-") for i in out[0].retrieved_ids)
