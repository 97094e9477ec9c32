"""Judging through batch files: write -> (a batch service) -> collect -> run gives the online
run's values with 0 calls (the default judged set, a jury); bodies are the bodies posted online;
a repair and a rejected parameter take a second round as online; every result shape read (OpenAI
output and error files, vllm run-batch); lost, malformed and missing lines named and written
again; files split under the provider's limits; fake-server replies never reach a real judge."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from ragmeter.data.sample import Sample
from ragmeter.generation.evaluate import JUDGED_DEFAULT, evaluate_generation
from ragmeter.judges import JudgeConfig, make_judge
from ragmeter.judges.batchfiles import batch_scope
from ragmeter.judges.batchfiles.lines import (
    Limits,
    Malformed,
    ResultLine,
    SplitWriter,
    parse_result,
    read_results,
)
from ragmeter.judges.mock_batches import run_batch_file
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.judges.parsing import example_instance

FIX = Path(__file__).parent / "fixtures" / "runner" / "samples.jsonl"
DEAD = "http://127.0.0.1:9/v1"   # nothing listens: a run that calls fails


def _samples(n: int) -> list[Sample]:
    out = []
    for i in range(n):
        out.append(Sample(id=f"s{i}", user_input=f"question {i} about topic {i % 13}?",
                          response=f"answer {i}. It names topic {i % 13}.",
                          retrieved_contexts=[f"context {i} a", f"context {i} b"],
                          reference=f"reference {i}."))
    return out


def _results(path: Path) -> str:
    return json.dumps(json.loads(path.read_text(encoding="utf-8"))["results"], sort_keys=True)


def _by_model(body: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    """Replies that differ per model (a jury whose members disagree), valid for the schema."""
    if schema is None:
        return "OK"
    seed = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [])
    salt = int(hashlib.sha256(str(body.get("model")).encode()).hexdigest()[:6], 16)
    return example_instance(schema, seed + salt % 7)


# -- the cycle, byte for byte ------------------------------------------------------------------
@pytest.mark.slow
def test_generation_through_the_batch_api_gives_the_online_values_with_no_call(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = ",".join(JUDGED_DEFAULT)
    with MockJudgeServer(MockConfig()) as srv:
        judge = ["--judge-backend", "mock", "--judge-url", srv.base_url]
        monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "online-cache"))
        code, _, _ = run_cli(capsys, "generation", "-s", str(FIX), "-m", metrics, *judge,
                             "--out", str(tmp_path / "online.json"))
        assert code == 0
        online_calls = srv.stats()["requests"]
        monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "batch-cache"))
        code, out, _ = run_cli(capsys, "generation", "-s", str(FIX), "-m", metrics, *judge,
                               "--estimate")
        assert code == 0 and "rounds: 2" in out, out
        folder = tmp_path / "b"
        srv.reset()
        for rnd in (1, 2):
            code, out, _ = run_cli(capsys, "generation", "-s", str(FIX), "-m", metrics, *judge,
                                   "--judge-batch", "write", str(folder))
            assert code == 0 and f"round {rnd}: wrote" in out, out
            assert srv.stats()["requests"] == 0 if rnd == 1 else True
            code, out, _ = run_cli(capsys, "judge", "batch", "submit", str(folder), "--url",
                                   srv.base_url)
            assert code == 0 and "submitted as batch" in out, out
            code, out, _ = run_cli(capsys, "judge", "batch", "fetch", str(folder), "--url",
                                   srv.base_url, "--wait", "--poll", "0.05", "--timeout", "60")
            assert code == 0 and "output file saved" in out, out
            code, out, _ = run_cli(capsys, "generation", "-s", str(FIX), "-m", metrics, *judge,
                                   "--judge-batch", "collect", str(folder))
            assert code == 0 and " 0 failed, 0 malformed, 0 unknown, 0 missing" in out, out
        assert srv.stats()["requests"] == online_calls   # every request answered once
        code, out, _ = run_cli(capsys, "generation", "-s", str(FIX), "-m", metrics, *judge,
                               "--judge-batch", "write", str(folder))
        assert code == 0 and "nothing left to write" in out, out
    # the ordinary run, its judge pointed at a dead port: 0 calls or it would fail
    code, out, _ = run_cli(capsys, "generation", "-s", str(FIX), "-m", metrics,
                           "--judge-backend", "mock", "--judge-url", DEAD,
                           "--out", str(tmp_path / "batch.json"))
    assert code == 0, out
    assert _results(tmp_path / "batch.json") == _results(tmp_path / "online.json")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [r["number"] for r in manifest["rounds"]] == [1, 2]
    assert manifest["rounds"][1]["by_prompt"] == {"gen.verify/v1": 40}
    assert set(manifest["prompt_versions"]) >= {"gen.claims/v1", "gen.verify/v1"}
    assert manifest["judges"]["judge"]["model"] == "mock-judge"


@pytest.mark.slow
def test_a_jury_through_batch_files_gives_the_online_values(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ragmeter.results.store import ResultStore

    (tmp_path / "s.jsonl").write_text(FIX.read_text(encoding="utf-8"), encoding="utf-8")
    with MockJudgeServer(MockConfig(reply_fn=_by_model)) as srv:
        judges = "\n".join(f"  - {{name: {n}, backend: mock, base_url: '{srv.base_url}', "
                           f"model: m-{n}}}" for n in "abc")
        cfg = tmp_path / "jury.yaml"
        cfg.write_text(f"name: jury\nseed: 7\ndatasets:\n  - {{name: s, path: s.jsonl}}\n"
                       f"judges:\n{judges}\ntiers:\n  - name: generation\n    dataset: s\n"
                       f"    judges: [a, b, c]\n    metrics: [{', '.join(JUDGED_DEFAULT)}]\n",
                       encoding="utf-8")
        monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "online-cache"))
        code, _, _ = run_cli(capsys, "run", str(cfg), "--store",
                             f"sqlite:///{tmp_path / 'online.sqlite'}", "--run-id", "on")
        assert code == 0
        monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "batch-cache"))
        folder = tmp_path / "b"
        rounds = 0
        while True:
            code, out, _ = run_cli(capsys, "run", str(cfg), "--judge-batch", "write",
                                   str(folder))
            assert code == 0, out
            if "nothing left to write" in out:
                break
            rounds += 1
            # three judges, three models: one file per judge and round
            assert out.count("(judge ") == 3, out
            assert run_cli(capsys, "judge", "batch", "submit", str(folder), "--url",
                           srv.base_url)[0] == 0
            assert run_cli(capsys, "judge", "batch", "fetch", str(folder), "--url",
                           srv.base_url, "--wait", "--poll", "0.05")[0] == 0
            code, out, _ = run_cli(capsys, "run", str(cfg), "--judge-batch", "collect",
                                   str(folder))
            assert code == 0 and "0 missing" in out, out
        assert rounds == 2
        srv.reset()
        code, out, _ = run_cli(capsys, "run", str(cfg), "--store",
                               f"sqlite:///{tmp_path / 'batch.sqlite'}", "--run-id", "bt")
        assert code == 0, out
        assert srv.stats()["requests"] == 0        # answered from the judge cache
    online = ResultStore(f"sqlite:///{tmp_path / 'online.sqlite'}").load_run("on").results()
    batch = ResultStore(f"sqlite:///{tmp_path / 'batch.sqlite'}").load_run("bt").results()

    def scores(results: Any) -> str:
        d = results["generation"].to_dict()
        d["meta"].pop("timings_s", None)
        return json.dumps(d, sort_keys=True, default=str)

    assert scores(batch) == scores(online)
    # the members disagree somewhere: the votes were exercised, not three copies of one reply
    assert re.search(r'"splits": \{"[a-z_]+": \[\d', scores(online)), scores(online)[:2000]


def test_written_bodies_are_the_bodies_posted_online(tmp_path: Path) -> None:
    samples = _samples(5)
    with MockJudgeServer(MockConfig(record_bodies=True)) as srv:
        cfg = JudgeConfig(name="j", backend="mock", base_url=srv.base_url,
                          cache_dir=str(tmp_path / "online"))
        evaluate_generation(samples, list(JUDGED_DEFAULT), judge=make_judge(cfg))
        posted = sorted(json.dumps(json.loads(b), sort_keys=True) for b in srv.received)
    cfg = JudgeConfig(name="j", backend="mock", base_url=DEAD, cache_dir=str(tmp_path / "c"))
    written = []
    for rnd in (1, 2):
        with batch_scope("write", tmp_path / "b") as s:
            evaluate_generation(samples, list(JUDGED_DEFAULT), judge=make_judge(cfg))
        path = tmp_path / "b" / s.report.files[0]["path"]
        written += [json.loads(line) for line in path.read_text().splitlines()]
        (tmp_path / "b" / "results").mkdir(exist_ok=True)
        run_batch_file(path, tmp_path / "b" / "results" / f"{rnd}.jsonl")
        with batch_scope("collect", tmp_path / "b"):
            make_judge(cfg)
    assert all(w["method"] == "POST" and w["url"] == "/v1/chat/completions" for w in written)
    assert len({w["custom_id"] for w in written}) == len(written)
    assert sorted(json.dumps(w["body"], sort_keys=True) for w in written) == posted


def test_a_repair_is_a_second_round_with_the_online_repair_body(tmp_path: Path) -> None:
    samples = [Sample(id="q1", user_input="What is the capital of France?",
                      response="Paris is the capital.")]
    with MockJudgeServer(MockConfig(script=["invalid_json"], record_bodies=True)) as srv:
        cfg = JudgeConfig(name="j", backend="mock", base_url=srv.base_url,
                          cache_dir=str(tmp_path / "online"))
        online = evaluate_generation(samples, ["answer_relevance"], judge=make_judge(cfg))
        posted = [json.loads(b) for b in srv.received]
    assert len(posted) == 2          # the reply, then its repair
    cfg = JudgeConfig(name="j", backend="mock", base_url=DEAD, cache_dir=str(tmp_path / "c"))
    folder = tmp_path / "b"
    (folder / "results").mkdir(parents=True)
    scripts = [MockConfig(script=["invalid_json"]), MockConfig()]
    for rnd in (1, 2):
        with batch_scope("write", folder) as s:
            evaluate_generation(samples, ["answer_relevance"], judge=make_judge(cfg))
        path = folder / s.report.files[0]["path"]
        line = json.loads(path.read_text())
        assert line["body"] == posted[rnd - 1]     # the repair turn as posted online
        run_batch_file(path, folder / "results" / f"{rnd}.jsonl", scripts[rnd - 1])
        with batch_scope("collect", folder) as c:
            make_judge(cfg)
        assert (len(c.report.another_turn), c.report.matched) == ((1, 0) if rnd == 1
                                                                  else (0, 1))
    with batch_scope("write", folder) as s:
        evaluate_generation(samples, ["answer_relevance"], judge=make_judge(cfg))
    assert s.report.round is None
    batch = evaluate_generation(samples, ["answer_relevance"], judge=make_judge(cfg))
    assert batch.results["answer_relevance"].to_dict() == \
        online.results["answer_relevance"].to_dict()


# -- lost, malformed and missing lines ---------------------------------------------------------
def _corrupt(path: Path, rng: random.Random, n_bad: int, n_drop: int) -> tuple[set[str], int]:
    """Make ``n_bad`` lines malformed (four kinds) and drop ``n_drop``; the affected ids."""
    lines = path.read_text(encoding="utf-8").splitlines()
    picks = rng.sample(range(len(lines)), n_bad + n_drop)
    hit: set[str] = set()
    for j, i in enumerate(picks[:n_bad]):
        obj = json.loads(lines[i])
        hit.add(obj["custom_id"])
        kind = j % 4
        if kind == 0:
            lines[i] = lines[i][: len(lines[i]) // 2]               # cut in the middle
        elif kind == 1:
            del obj["custom_id"]                                   # no id at all
            lines[i] = json.dumps(obj)
        elif kind == 2:
            obj["response"]["body"] = {"object": "chat.completion"}   # no choices
            lines[i] = json.dumps(obj)
        else:
            obj["response"]["status_code"] = "200"                 # not an integer
            lines[i] = json.dumps(obj)
    for i in picks[n_bad:]:
        hit.add(json.loads(lines[i])["custom_id"])
    dropped = set(picks[n_bad:])
    path.write_text("".join(line + "\n" for i, line in enumerate(lines) if i not in dropped),
                    encoding="utf-8")
    return hit, len(dropped)


@pytest.mark.slow
def test_10000_requests_with_malformed_and_missing_lines_lose_nothing(tmp_path: Path) -> None:
    samples = _samples(5000)
    metrics = ["answer_relevance", "context_relevance"]      # 2 calls per sample, 1 round
    cfg = JudgeConfig(name="j", backend="mock", base_url=DEAD, cache_dir=str(tmp_path / "c"))
    folder = tmp_path / "b"
    with batch_scope("write", folder) as s:
        evaluate_generation(samples, metrics, judge=make_judge(cfg))
    assert s.report.requests == 10_000
    path = folder / s.report.files[0]["path"]
    (folder / "results").mkdir()
    out = folder / "results" / "r1.jsonl"
    run_batch_file(path, out)
    clean = out.read_text(encoding="utf-8")
    hit, dropped = _corrupt(out, random.Random(3), 200, 100)       # 2 % malformed, 1 % missing
    assert dropped == 100
    with batch_scope("collect", folder) as c:
        make_judge(cfg)
    rep = c.report
    assert (rep.lines, rep.matched, len(rep.malformed)) == (9_900, 9_700, 200)
    assert not rep.ok and rep.pending == 300
    named = {n.split(" ")[0] for n in rep.missing} | {
        n.split("[")[1].split(" ")[0] for n in rep.malformed if "[" in n}
    assert named == hit                      # every affected request named by its custom_id
    assert len(rep.missing) == 100 + 50      # dropped, and the lines that lost their id
    full = json.loads((folder / rep.report_file).read_text())
    assert len(full["malformed"]) == 200 and len(full["missing"]) == 150
    with batch_scope("write", folder) as s2:
        evaluate_generation(samples, metrics, judge=make_judge(cfg))
    again = folder / s2.report.files[0]["path"]
    ids = [json.loads(line)["custom_id"] for line in again.read_text().splitlines()]
    assert s2.report.round == 2 and sorted(ids) == sorted(hit) and len(s2.report.rewritten) == 300
    assert "malformed" in (folder / "round-02" / "written-again.txt").read_text()
    run_batch_file(again, folder / "results" / "r2.jsonl")
    with batch_scope("collect", folder) as c2:
        make_judge(cfg)
    assert c2.report.ok and c2.report.matched == 300 and c2.report.already == 9_700
    with batch_scope("collect", folder) as c3:     # every file settled: none read again
        make_judge(cfg)
    assert c3.report.ok and (c3.report.skipped_files, c3.report.lines) == (2, 0)
    result = evaluate_generation(samples, metrics, judge=make_judge(cfg))
    # a reference: the clean output collected into another cache
    ref_cfg = cfg.with_(cache_dir=str(tmp_path / "ref"))
    ref_dir = tmp_path / "ref-b"
    with batch_scope("write", ref_dir):
        evaluate_generation(samples, metrics, judge=make_judge(ref_cfg))
    (ref_dir / "results").mkdir()
    (ref_dir / "results" / "r.jsonl").write_text(clean, encoding="utf-8")
    with batch_scope("collect", ref_dir):
        make_judge(ref_cfg)
    ref = evaluate_generation(samples, metrics, judge=make_judge(ref_cfg))
    for m in metrics:
        assert result.results[m].aggregate.n == 5000 and result.results[m].aggregate.n_unscored == 0
        assert result.results[m].to_dict() == ref.results[m].to_dict()
    from ragmeter.judges.cache import JudgeCache

    assert len(JudgeCache(tmp_path / "c")) == 10_000     # each reply stored once


# -- the formats of other tools ----------------------------------------------------------------
_COMPLETION = {"id": "chatcmpl-abc123", "object": "chat.completion", "created": 1711652795,
               "model": "gpt-4o-mini-2024-07-18",
               "choices": [{"index": 0, "message": {"role": "assistant",
                                                    "content": "{\"verdict\": \"yes\"}",
                                                    "refusal": None},
                            "logprobs": None, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 22, "completion_tokens": 5, "total_tokens": 27},
               "system_fingerprint": "fp_3ba"}


def test_result_lines_written_by_openai_and_vllm_are_read() -> None:
    openai_ok = {"id": "batch_req_123", "custom_id": "k1", "response": {
        "status_code": 200, "request_id": "req_123", "body": _COMPLETION}, "error": None}
    got = parse_result(openai_ok, "out.jsonl:1", "")
    assert isinstance(got, ResultLine) and got.completion is not None
    assert (got.completion.text, got.completion.tokens_in, got.completion.model,
            got.completion.mock) == ('{"verdict": "yes"}', 22, "gpt-4o-mini-2024-07-18", False)
    openai_4xx = {"id": "batch_req_456", "custom_id": "k2", "response": {
        "status_code": 400, "request_id": "req_456", "body": {"error": {
            "message": "Invalid 'messages[0].content': string too long.",
            "type": "invalid_request_error", "param": "messages", "code": None}}},
        "error": None}
    got = parse_result(openai_4xx, "errors.jsonl:1", "")
    assert isinstance(got, ResultLine) and got.completion is None
    assert got.failure is not None and got.failure.reason == "http_4xx"
    assert "string too long" in (got.error or "")
    expired = {"id": "batch_req_789", "custom_id": "k3", "response": None,
               "error": {"code": "batch_expired",
                         "message": "This request could not be executed before the "
                                    "completion window expired."}}
    got = parse_result(expired, "errors.jsonl:2", "")
    assert isinstance(got, ResultLine) and "batch_expired" in (got.error or "")
    rate = {"id": "b", "custom_id": "k4", "response": {"status_code": 429, "request_id": "r",
                                                       "body": {"error": {"message": "slow"}}},
            "error": None}
    got = parse_result(rate, "errors.jsonl:3", "")
    assert isinstance(got, ResultLine) and got.failure is not None
    assert got.failure.reason == "rate_limited"
    vllm_ok = {"id": "vllm-8f3c", "custom_id": "k5", "response": {
        "status_code": 200, "request_id": "vllm-batch-1f2e", "body": {
            "id": "chatcmpl-9d", "object": "chat.completion", "created": 1720000000,
            "model": "Qwen/Qwen2.5-7B-Instruct",
            "choices": [{"index": 0, "message": {"role": "assistant", "reasoning_content": None,
                                                 "content": "{\"verdict\": \"no\"}",
                                                 "tool_calls": []},
                         "logprobs": None, "finish_reason": "length", "stop_reason": None}],
            "usage": {"prompt_tokens": 40, "total_tokens": 46, "completion_tokens": 6,
                      "prompt_tokens_details": None},
            "prompt_logprobs": None, "kv_transfer_params": None}}, "error": None}
    got = parse_result(vllm_ok, "vllm.jsonl:1", "")
    assert isinstance(got, ResultLine) and got.completion is not None
    assert (got.completion.finish_reason, got.completion.tokens_out) == ("length", 6)
    vllm_err = {"id": "vllm-1", "custom_id": "k6", "response": {
        "status_code": 400, "request_id": "vllm-batch-2", "body": None},
        "error": "This model's maximum context length is 4096 tokens."}
    got = parse_result(vllm_err, "vllm.jsonl:2", "")
    assert isinstance(got, ResultLine) and "maximum context length" in (got.error or "")
    vllm_obj = {"id": "vllm-3", "custom_id": "k7", "response": {
        "status_code": 404, "request_id": "vllm-batch-3", "body": None},
        "error": {"error": {"message": "The model `x` does not exist.",
                            "type": "NotFoundError", "param": None, "code": 404}}}
    got = parse_result(vllm_obj, "vllm.jsonl:3", "")
    assert isinstance(got, ResultLine) and "does not exist" in (got.error or "")
    bare = {"custom_id": "k8", "response": _COMPLETION}     # a proxy's: the completion itself
    got = parse_result(bare, "proxy.jsonl:1", "")
    assert isinstance(got, ResultLine) and got.completion is not None
    for bad, why in (([1, 2], "not a JSON object"), ({"response": {}}, "no custom_id"),
                     ({"custom_id": "k9"}, "neither a response"),
                     ({"custom_id": "k9", "response": {"status_code": 200, "body": {}}},
                      "malformed completion envelope")):
        got = parse_result(bad, "x:1", "")
        assert isinstance(got, Malformed) and why in got.why, (bad, got)
    cut = json.dumps(openai_ok)[:80]
    got = list(read_results([cut + "\n", "\n"], "x"))
    assert len(got) == 1 and isinstance(got[0], Malformed) and got[0].custom_id == "k1"
    assert got[0].where == "x:1" and "not JSON" in got[0].why


def test_an_error_file_line_is_named_and_its_request_written_again(tmp_path: Path) -> None:
    samples = _samples(3)
    cfg = JudgeConfig(name="j", backend="mock", base_url=DEAD, cache_dir=str(tmp_path / "c"))
    folder = tmp_path / "b"
    with batch_scope("write", folder) as s:
        evaluate_generation(samples, ["answer_relevance"], judge=make_judge(cfg))
    path = folder / s.report.files[0]["path"]
    (folder / "results").mkdir()
    run_batch_file(path, folder / "results" / "out.jsonl", MockConfig(script=["500", "ok",
                                                                              "ok"]))
    with batch_scope("collect", folder) as c:
        make_judge(cfg)
    assert c.report.matched == 2 and len(c.report.failed) == 1
    (name, why), = c.report.failed.items()
    assert "sample s0" in name and why.startswith("http_5xx")
    with batch_scope("write", folder) as s2:
        evaluate_generation(samples, ["answer_relevance"], judge=make_judge(cfg))
    assert s2.report.requests == 1 and "failed (http_5xx" in s2.report.rewritten[0]


def test_files_are_split_under_the_line_and_byte_limits(tmp_path: Path) -> None:
    w = SplitWriter(tmp_path / "r", "j", "j", tmp_path, Limits(max_lines=3, max_bytes=400))
    for i in range(8):
        w.write(f"k{i}", {"model": "m", "messages": [{"role": "user", "content": "x" * 50}]})
    files = w.close()
    assert [f.lines for f in files] == [2, 2, 2, 2]       # 2 lines of ~170 bytes < 400 bytes
    assert all(f.bytes <= 400 for f in files)
    assert all(hashlib.sha256((tmp_path / f.path).read_bytes()).hexdigest() == f.sha256
               for f in files)
    w = SplitWriter(tmp_path / "r2", "j", "j", tmp_path, Limits(max_lines=3, max_bytes=10_000))
    for i in range(7):
        w.write(f"k{i}", {"model": "m"})
    assert [f.lines for f in w.close()] == [3, 3, 1]
    with pytest.raises(ValueError, match="over the 400-byte file limit"):
        SplitWriter(tmp_path / "r3", "j", "j", tmp_path, Limits(3, 400)).write(
            "big", {"x": "y" * 500})


def test_replies_of_the_fake_server_never_reach_a_real_judges_cache(tmp_path: Path) -> None:
    samples = _samples(2)
    cfg = JudgeConfig(name="real", backend="openai", base_url=DEAD, model="m",
                      api_key_env=None, cache_dir=str(tmp_path / "c"))
    folder = tmp_path / "b"
    with batch_scope("write", folder) as s:
        evaluate_generation(samples, ["answer_relevance"], judge=make_judge(cfg))
    (folder / "results").mkdir()
    run_batch_file(folder / s.report.files[0]["path"], folder / "results" / "marked.jsonl")
    with batch_scope("collect", folder) as c:
        make_judge(cfg)
    assert c.report.matched == 0 and len(c.report.failed) == 2
    assert all("a mock reply for a real judge" in why for why in c.report.failed.values())
    (folder / "results" / "marked.jsonl").unlink()    # the same replies, unmarked
    run_batch_file(folder / s.report.files[0]["path"], folder / "results" / "plain.jsonl",
                   MockConfig(mark_replies=False))
    with batch_scope("collect", folder) as c:
        make_judge(cfg)
    assert c.report.matched == 2 and c.report.ok


def test_a_rejected_parameter_is_adapted_to_as_online(tmp_path: Path) -> None:
    samples = _samples(2)
    rejecting = MockConfig(reject_params=("max_tokens",), record_bodies=True)
    with MockJudgeServer(rejecting) as srv:
        cfg = JudgeConfig(name="j", backend="mock", base_url=srv.base_url,
                          cache_dir=str(tmp_path / "online"))
        online = evaluate_generation(samples, ["answer_relevance"], judge=make_judge(cfg))
        sent = [json.loads(b) for b in srv.received]
    assert "max_completion_tokens" in sent[-1] and "max_tokens" not in sent[-1]
    cfg = JudgeConfig(name="j", backend="mock", base_url=DEAD, cache_dir=str(tmp_path / "c"))
    folder = tmp_path / "b"
    (folder / "results").mkdir(parents=True)
    for rnd in (1, 2):
        with batch_scope("write", folder) as s:
            evaluate_generation(samples, ["answer_relevance"], judge=make_judge(cfg))
        path = folder / s.report.files[0]["path"]
        body = json.loads(path.read_text().splitlines()[0])["body"]
        assert ("max_completion_tokens" in body) == (rnd == 2)
        run_batch_file(path, folder / "results" / f"{rnd}.jsonl",
                       MockConfig(reject_params=("max_tokens",)))
        with batch_scope("collect", folder) as c:
            make_judge(cfg)
        assert (len(c.report.failed), c.report.matched) == ((2, 0) if rnd == 1 else (0, 2))
    assert json.loads((folder / "manifest.json").read_text())["adaptations"]["j"]
    batch = evaluate_generation(samples, ["answer_relevance"], judge=make_judge(cfg))
    assert batch.results["answer_relevance"].to_dict() == \
        online.results["answer_relevance"].to_dict()
