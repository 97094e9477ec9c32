"""Batch files re-checked from outside: the result files are written here, by hand, in the
shapes other tools write (OpenAI Batch output and error files, ``vllm run-batch`` output),
not by ragmeter's fake batch runner, for a real (``openai``) judge; collected, the ordinary run
gives the values of the online run on the same replies with 0 calls, and the error lines are
named and written again."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.generation.evaluate import JUDGED_DEFAULT, evaluate_generation
from ragmeter.judges import JudgeConfig, make_judge
from ragmeter.judges.batchfiles import batch_scope
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.judges.parsing import example_instance


def _samples(n: int) -> list[Sample]:
    return [Sample(id=f"s{i}", user_input=f"question {i} about topic {i % 5}?",
                   response=f"answer {i}. It names topic {i % 5}. A second claim {i}.",
                   retrieved_contexts=[f"context {i} a", f"context {i} b"],
                   reference=f"reference {i}.") for i in range(n)]


def _content(body: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    """The reply to a body: the same for the online server and the files written below."""
    if schema is None:
        return "OK"
    return example_instance(schema, sum(len(str(m.get("content") or ""))
                                        for m in body["messages"]) + 1)


def _completion(body: dict[str, Any], *, vllm: bool) -> dict[str, Any]:
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema")
    data = _content(body, schema)
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    chars = sum(len(str(m.get("content") or "")) for m in body["messages"])
    usage = {"prompt_tokens": chars // 4 + 1, "completion_tokens": len(text) // 4 + 1,
             "total_tokens": chars // 4 + len(text) // 4 + 2}
    message: dict[str, Any] = {"role": "assistant", "content": text}
    choice: dict[str, Any] = {"index": 0, "message": message, "logprobs": None,
                              "finish_reason": "stop"}
    if vllm:      # vLLM's server: its extra fields, null where unset
        message.update(reasoning_content=None, tool_calls=[])
        choice["stop_reason"] = None
        usage["prompt_tokens_details"] = None
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
                "created": 1720000000, "model": body["model"], "choices": [choice],
                "usage": usage, "prompt_logprobs": None, "kv_transfer_params": None}
    message["refusal"] = None
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion",
            "created": 1711652795, "model": body["model"], "choices": [choice],
            "usage": usage, "system_fingerprint": "fp_44709d6fcb"}


def _answer(folder: Path, written: list[str], rnd: int, errors: int) -> dict[str, int]:
    """Result files for the round's input files: the first ``errors`` requests in an OpenAI
    error file (one expired, one HTTP 500), then alternately OpenAI output and vllm lines."""
    res = folder / "results"
    res.mkdir(exist_ok=True)
    lines = [json.loads(t) for f in written
             for t in (folder / f).read_text(encoding="utf-8").splitlines() if t.strip()]
    out: dict[str, list[str]] = {"openai": [], "errors": [], "vllm": []}
    for i, req in enumerate(lines):
        cid, body = req["custom_id"], req["body"]
        if i < errors:
            if i % 2 == 0:
                line = {"id": f"batch_req_{i}", "custom_id": cid, "response": None,
                        "error": {"code": "batch_expired", "message": "This request could "
                                  "not be executed before the completion window expired."}}
            else:
                line = {"id": f"batch_req_{i}", "custom_id": cid, "response": {
                    "status_code": 500, "request_id": f"req_{i}",
                    "body": {"error": {"message": "The server had an error while processing "
                                       "your request.", "type": "server_error"}}},
                        "error": None}
            out["errors"].append(json.dumps(line))
        elif i % 2:
            out["openai"].append(json.dumps({
                "id": f"batch_req_{i}", "custom_id": cid,
                "response": {"status_code": 200, "request_id": f"req_{i}",
                             "body": _completion(body, vllm=False)}, "error": None}))
        else:
            out["vllm"].append(json.dumps({
                "id": f"vllm-{uuid.uuid4().hex}", "custom_id": cid,
                "response": {"status_code": 200, "request_id": f"vllm-batch-{i}",
                             "body": _completion(body, vllm=True)}, "error": None}))
    names = {"openai": f"batch_{rnd}_output.jsonl", "errors": f"batch_{rnd}_error.jsonl",
             "vllm": f"vllm_round{rnd}.out.jsonl"}
    for kind, rows in out.items():
        if rows:
            (res / names[kind]).write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return {k: len(v) for k, v in out.items()}


def test_result_files_of_other_tools_give_the_online_values(tmp_path: Path) -> None:
    samples = _samples(12)
    metrics = list(JUDGED_DEFAULT)
    with MockJudgeServer(MockConfig(reply_fn=_content, mark_replies=False)) as srv:
        cfg = JudgeConfig(name="gpt", backend="openai", base_url=srv.base_url, model="gpt-x",
                          api_key_env=None, cache_dir=str(tmp_path / "online"))
        online = evaluate_generation(samples, metrics, judge=make_judge(cfg))
        sent = srv.stats()["requests"]
        cfg = cfg.with_(cache_dir=str(tmp_path / "batch"))
        folder = tmp_path / "b"
        failed_names: list[str] = []
        for rnd in (1, 2, 3, 4):
            with batch_scope("write", folder) as w:
                evaluate_generation(samples, metrics, judge=make_judge(cfg))
            if w.report.round is None:
                break
            assert w.report.round == rnd and w.report.requests > 0
            if rnd == 2:   # the two error lines of round 1 are written again, named
                assert len(w.report.rewritten) == 2
                assert all(any(n in r for n in failed_names) for r in w.report.rewritten)
            counts = _answer(folder, [f["path"] for f in w.report.files], rnd,
                             errors=2 if rnd == 1 else 0)
            with batch_scope("collect", folder) as c:
                make_judge(cfg)
            rep = c.report
            assert rep.unknown == [] and rep.malformed == [] and rep.missing == []
            assert rep.matched == counts["openai"] + counts["vllm"]
            assert len(rep.failed) == counts["errors"]
            if rnd == 1:
                whys = sorted(rep.failed.values())
                assert whys[0].startswith("backend_error") and "batch_expired" in whys[0]
                assert whys[1].startswith("http_5xx")
                failed_names = [n.split(" ")[0] for n in rep.failed]
                assert not rep.ok
        # a claims call that failed in round 1 is answered in round 2: its verification
        # is a third round, as it would be online after a retry
        assert rnd == 4 and w.report.requests == 0        # nothing left to write
        batch = evaluate_generation(samples, metrics, judge=make_judge(cfg))
        assert srv.stats()["requests"] == sent   # the run after collect made 0 calls
    for m in metrics:
        assert batch.results[m].aggregate.n_unscored == 0
        assert json.dumps(batch.results[m].to_dict(), sort_keys=True, default=str) == \
            json.dumps(online.results[m].to_dict(), sort_keys=True, default=str), m
