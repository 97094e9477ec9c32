"""Judging through a Batch API from a batch folder: ``judge batch submit|status|fetch`` against
the fake server's files + batches API (validated like OpenAI's), the API key from the
environment only, misuse of ``--judge-batch`` as usage errors, and ``--estimate``'s rounds and
batch price."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli, write_jsonl
from ragmeter.generation.evaluate import JUDGED_DEFAULT, evaluate_generation
from ragmeter.judges import JudgeConfig, make_judge
from ragmeter.judges.batchfiles import batch_scope
from ragmeter.judges.mock_batches import run_batch_file
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from test_judge_batch_files import _COMPLETION, DEAD, FIX, _samples


# -- the Batch API and the fake server ------------------------------------------------------------
def _post_file(base: str, data: bytes, purpose: str = "batch") -> dict[str, Any]:
    import asyncio

    import aiohttp

    async def go() -> dict[str, Any]:
        form = aiohttp.FormData()
        form.add_field("purpose", purpose)
        form.add_field("file", data, filename="in.jsonl")
        async with aiohttp.ClientSession() as s, s.post(base + "/files", data=form) as r:
            return {"status": r.status, **(await r.json())}

    return asyncio.run(go())


def test_the_fake_batch_api_validates_input_like_openai(tmp_path: Path) -> None:
    import time

    from ragmeter.judges.batchfiles.service import BatchAPI

    line = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}
    dup = "\n".join(json.dumps(x) for x in (line, line, {**line, "custom_id": "b", "body": {
        **line["body"], "model": "other"}})).encode()
    with MockJudgeServer(MockConfig()) as srv:
        assert _post_file(srv.base_url, b"{}", purpose="fine-tune")["status"] == 400
        api = BatchAPI(srv.base_url)
        import asyncio

        f = tmp_path / "in.jsonl"
        f.write_bytes(dup)
        fid = asyncio.run(api.upload(f))["id"]
        bid = asyncio.run(api.create(fid, {}))["id"]
        for _ in range(100):
            b = asyncio.run(api.batch(bid))
            if b["status"] in ("failed", "completed"):
                break
            time.sleep(0.02)
        assert b["status"] == "failed"
        codes = {(e["code"], e["line"]) for e in b["errors"]["data"]}
        assert ("duplicate_custom_id", 2) in codes and ("mismatched_model", None) in codes


def test_submit_reads_the_key_from_the_environment_and_never_shows_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-0123456789abcdefSECRET"
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    samples = write_jsonl(tmp_path / "s.jsonl", [{"id": "q1", "user_input": "q?",
                                                   "response": "a."}])
    with MockJudgeServer(MockConfig(require_api_key=secret)) as srv:
        folder = tmp_path / "b"
        code, out, _ = run_cli(capsys, "score", "generation", "-s", str(samples), "-m",
                               "answer_relevance", "--judge-backend", "mock", "--judge-url",
                               srv.base_url, "--judge-batch", "write", str(folder))
        assert code == 0, out
        code, _, err = run_cli(capsys, "judge", "batch", "submit", str(folder), "--url",
                               srv.base_url, "--key-env", "UNSET_VARIABLE_FOR_TEST")
        assert code == 2 and "UNSET_VARIABLE_FOR_TEST is not set" in err
        monkeypatch.setenv("MY_BATCH_KEY", "wrong-key-value-xyz")
        code, out, err = run_cli(capsys, "judge", "batch", "submit", str(folder),
                                 "--url", srv.base_url, "--key-env", "MY_BATCH_KEY")
        assert code == 3 and "HTTP 401" in out + err and "the API key variable" in out + err
        assert "wrong-key-value-xyz" not in out + err
        monkeypatch.setenv("MY_BATCH_KEY", secret)
        code, out, err = run_cli(capsys, "judge", "batch", "submit", str(folder),
                                 "--url", srv.base_url, "--key-env", "MY_BATCH_KEY")
        assert code == 0, out + err
        code, out2, err2 = run_cli(capsys, "judge", "batch", "fetch", str(folder), "--url",
                                   srv.base_url, "--key-env", "MY_BATCH_KEY", "--wait",
                                   "--poll", "0.05")
        assert code == 0, out2 + err2
        code, out3, _ = run_cli(capsys, "judge", "batch", "status", str(folder),
                                "--key-env", "MY_BATCH_KEY", "--url", srv.base_url)
        assert code == 0 and "completed (1 completed, 0 failed of 1)" in out3
    shown = out + err + out2 + err2 + out3 + "".join(
        p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())
    assert secret not in shown


def test_misuse_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    judge = ["--judge-backend", "mock", "--judge-url", DEAD]
    args = ["score", "generation", "-s", str(FIX), "-m", "answer_relevance", *judge]
    folder = str(tmp_path / "b")
    code, _, err = run_cli(capsys, *args, "--judge-batch", "send", folder)
    assert code == 2 and "unknown mode 'send'" in err
    code, _, err = run_cli(capsys, *args, "--judge-batch", "write", folder, "--estimate")
    assert code == 2 and "cannot be combined with --estimate" in err
    code, _, err = run_cli(capsys, *args, "--judge-batch", "collect", folder)
    assert code == 2 and "no manifest.json" in err
    assert run_cli(capsys, *args, "--judge-batch", "write", folder)[0] == 0
    code, _, err = run_cli(capsys, *args, "--judge-batch", "write", folder)
    assert code == 2 and "has not been collected" in err
    code, _, err = run_cli(capsys, *args, "--judge-batch", "collect", folder)
    assert code == 2 and "no result files" in err
    code, _, err = run_cli(capsys, "score", "generation", "-s", str(FIX), "-m", "answer_relevance",
                           "--judge-batch", "write", str(tmp_path / "c"))
    assert code == 2 and "needs a judge" in err
    code, _, err = run_cli(capsys, "score", "generation", "-s", str(FIX), "-m", "rouge_l,bleu", *judge,
                           "--judge-batch", "write", str(tmp_path / "c"))
    assert code == 2 and "none of the metrics rouge_l, bleu asks a judge" in err
    rec = tmp_path / "rec.json"
    rec.write_text("[]", encoding="utf-8")
    code, _, err = run_cli(capsys, "score", "generation", "-s", str(FIX), "-m", "answer_relevance",
                           "--judge-backend", "recorded", "--judge-record", str(rec),
                           "--judge-batch", "write", str(tmp_path / "d"))
    assert code == 2 and "cannot be judged through batch files" in err


def test_collect_names_unknown_lines_and_a_changed_judge(tmp_path: Path) -> None:
    samples = _samples(2)
    cfg = JudgeConfig(name="j", backend="mock", base_url=DEAD, cache_dir=str(tmp_path / "c"))
    folder = tmp_path / "b"
    with batch_scope("write", folder) as s:
        evaluate_generation(samples, ["answer_relevance"], judge=make_judge(cfg))
    (folder / "results").mkdir()
    run_batch_file(folder / s.report.files[0]["path"], folder / "results" / "out.jsonl")
    stray = {"id": "x", "custom_id": "not-a-key-of-this-folder", "response": {
        "status_code": 200, "request_id": "r", "body": _COMPLETION}, "error": None}
    with (folder / "results" / "stray.jsonl").open("w") as fh:
        fh.write(json.dumps(stray) + "\n")
    with batch_scope("collect", folder) as c:
        make_judge(cfg.with_(model="another-model"))
    assert c.report.matched == 0 and c.report.unknown == ["not-a-key-of-this-folder"]
    assert any("differs from the one the batch folder was written for (model)" in w
               for w in c.report.warnings)
    with batch_scope("collect", folder) as c:
        make_judge(cfg)
    # the stray file was settled (nothing in it can ever answer a request): not read again
    assert c.report.matched == 2 and c.report.skipped_files == 1 and not c.report.unknown


# -- the estimate --------------------------------------------------------------------------------
def test_estimate_counts_rounds_and_prices_the_batch(tmp_path: Path) -> None:
    from ragmeter.cost import estimate_scope, summarise
    from ragmeter.errors import ConfigError
    from ragmeter.judges.multi import MultiJudge

    samples = _samples(4)
    cfg = JudgeConfig(name="j", backend="mock", price_in=2.0, price_out=8.0,
                      batch_discount=0.4)
    with estimate_scope() as planned:
        evaluate_generation(samples, list(JUDGED_DEFAULT), judge=make_judge(cfg))
    e = summarise(planned[0])
    assert e.rounds == 2 and e.calls_by_round == {"1": 12, "2": 4}
    assert e.batch_cost == pytest.approx(e.cost * 0.6)
    assert any("rounds: 2" in line for line in e.lines())
    assert any("40% off" in line for line in e.lines())
    with estimate_scope() as planned:        # a jury asks its members round by round too
        jury = MultiJudge([make_judge(cfg), make_judge(cfg.with_(name="k"))])
        evaluate_generation(samples, ["faithfulness"], judge=jury)
    assert [summarise(j).rounds for j in planned] == [2, 2]
    with pytest.raises(ConfigError, match="batch_discount"):
        JudgeConfig(name="j", backend="mock", batch_discount=1.0)


# -- the Batch API client on the calls layer -----------------------------------------------------
def test_the_batch_api_client_retries_what_calls_retries_and_masks_the_rest() -> None:
    """A 503 with Retry-After and a broken connection are retried (calls' maps and backoff);
    a 400 is not, and its error names the request without the key."""
    from aiohttp import web

    from ragmeter.calls import RetryPolicy, run_sync
    from ragmeter.judges.batchfiles.service import BatchAPI, BatchAPIError
    from ragmeter.serving import BackgroundServer

    seen: list[str] = []

    class Flaky(BackgroundServer):
        what = "flaky batch api"

        def app(self) -> web.Application:
            async def batch(request: web.Request) -> web.StreamResponse:
                seen.append(request.match_info["bid"])
                n = seen.count(request.match_info["bid"])
                if request.match_info["bid"] == "bad":
                    return web.json_response({"error": {"message": "no such batch"}},
                                             status=400)
                if n == 1:
                    return web.json_response({"error": {"message": "busy"}}, status=503,
                                             headers={"Retry-After": "0"})
                return web.json_response({"id": request.match_info["bid"],
                                          "status": "completed"})

            app = web.Application()
            app.router.add_get("/v1/batches/{bid}", batch)
            return app

    fast = RetryPolicy(initial=0.01, max=0.05, max_retries=3)
    with Flaky() as srv:
        base = f"http://127.0.0.1:{srv.port}/v1"
        api = BatchAPI(base, policy=fast)
        got = run_sync(lambda: api.batch("b1"))
        assert got["status"] == "completed" and seen == ["b1", "b1"]
        with pytest.raises(BatchAPIError, match=r"GET .*/batches/bad failed: HTTP 400: .*no "
                                                r"such batch"):
            run_sync(lambda: api.batch("bad"))
        assert seen.count("bad") == 1                   # a 400 is not retried
    dead = BatchAPI("http://127.0.0.1:9/v1", policy=fast)
    with pytest.raises(BatchAPIError, match=r"GET http://127\.0\.0\.1:9/v1/batches/b1 failed"):
        run_sync(lambda: dead.batch("b1"))
