"""The fake server's batch side: an OpenAI-compatible files + batches API, and an offline
``vllm run-batch``-shaped runner.

Endpoints (mounted on :class:`~ragmeter.judges.mock_server.MockJudgeServer`, same API-key rule
as its chat endpoint):

* ``POST /v1/files`` (multipart: ``purpose``, ``file``) → a file object; ``GET /v1/files/{id}``;
  ``GET /v1/files/{id}/content`` → the bytes;
* ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``) → a batch
  object; ``GET /v1/batches/{id}``; ``POST /v1/batches/{id}/cancel``.

A batch is validated like OpenAI's (every line a JSON object with a unique ``custom_id``,
``method`` POST, the batch's ``url``, one ``model``; else status ``failed`` with ``errors``
naming the line), then each line is answered as the chat endpoint would answer it (the same
replies, faults and counters: :meth:`MockJudgeServer._answer`); successful lines go to the
output file, failed ones to the error file, in OpenAI's per-line shape (``id``,
``custom_id``, ``response: {status_code, request_id, body}``, ``error``). Replies are marked
as the chat endpoint marks them (``response.headers["x-ragmeter-mock"]``), so a real judge
never stores them.

:func:`run_batch_file` (``ragmeter serve mock-judge --run-batch IN --output OUT``) answers an input
file offline and writes what ``vllm run-batch -i IN -o OUT`` writes: one line per request, in
input order, ``id`` ``vllm-…``, a failed request with ``status_code`` 400-599, ``body: null``
and ``error`` its message.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.judges.batchfiles.lines import MOCK_MARK

if TYPE_CHECKING:
    from ragmeter.judges.mock_server import MockJudgeServer

#: lines answered at once while a batch is processed
BATCH_CONCURRENCY = 32


def _hex() -> str:
    return uuid.uuid4().hex


async def answer_line(server: MockJudgeServer, body: Any) -> tuple[int, dict[str, Any]]:
    """``(status, reply body)`` of one chat request, as the chat endpoint answers it (a hang
    is a 408 in a batch: nothing waits on it)."""
    cfg = server.config
    if not isinstance(body, dict):
        return 400, {"error": {"message": "body must be a JSON object",
                               "type": "invalid_request_error"}}
    for param in cfg.reject_params:
        if param in body:
            hint = " Use 'max_completion_tokens' instead." if param == "max_tokens" else ""
            return 400, {"error": {"message": f"Unsupported parameter: '{param}' is not "
                                              f"supported with this model.{hint}",
                                   "type": "invalid_request_error", "param": param}}
    action = server._next_action()
    if body.get("response_format") and (not cfg.supports_response_format
                                        or action == "no_response_format"):
        return 400, {"error": {"message": "response_format json_schema is not supported"}}
    if action == "429":
        return 429, {"error": {"message": "rate limit exceeded", "code": "rate_limit_exceeded"}}
    if action == "timeout":
        return 408, {"error": {"message": "the request timed out", "code": "timeout"}}
    resp = await server._answer(body, action)
    return int(resp.status), json.loads(resp.body)


class BatchService:
    """The files and batches of one fake server (see the module doc)."""

    def __init__(self, server: MockJudgeServer):
        self.server = server
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def add_routes(self, app: Any) -> None:
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{file_id}", self._file)
        app.router.add_get("/v1/files/{file_id}/content", self._content)
        app.router.add_post("/v1/batches", self._create)
        app.router.add_get("/v1/batches/{batch_id}", self._batch)
        app.router.add_post("/v1/batches/{batch_id}/cancel", self._cancel)

    # -- files ----------------------------------------------------------------------------------
    def add_file(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        fid = f"file-{_hex()[:24]}"
        obj = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
               "filename": filename, "purpose": purpose, "status": "processed"}
        self.files[fid] = obj
        self.contents[fid] = data
        return obj

    async def _upload(self, request: Any) -> Any:
        from aiohttp import web

        if (denied := self.server._denied(request)) is not None:
            return denied
        try:
            form = await request.post()
        except Exception:  # a body that is not multipart form data
            return _error(400, "expected multipart/form-data with purpose and file")
        purpose = form.get("purpose")
        upload = form.get("file")
        if purpose != "batch":
            return _error(400, f"purpose must be 'batch', got {purpose!r}", param="purpose")
        if upload is None or not hasattr(upload, "file"):
            return _error(400, "no file part", param="file")
        data = upload.file.read()
        return web.json_response(self.add_file(data, str(upload.filename or "input.jsonl"),
                                               "batch"))

    async def _file(self, request: Any) -> Any:
        from aiohttp import web

        if (denied := self.server._denied(request)) is not None:
            return denied
        obj = self.files.get(request.match_info["file_id"])
        return web.json_response(obj) if obj else _error(404, "no such file")

    async def _content(self, request: Any) -> Any:
        from aiohttp import web

        if (denied := self.server._denied(request)) is not None:
            return denied
        data = self.contents.get(request.match_info["file_id"])
        if data is None:
            return _error(404, "no such file")
        return web.Response(body=data, content_type="application/octet-stream")

    # -- batches --------------------------------------------------------------------------------
    async def _create(self, request: Any) -> Any:
        from aiohttp import web

        if (denied := self.server._denied(request)) is not None:
            return denied
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            return _error(400, "body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "body must be a JSON object")
        fid = body.get("input_file_id")
        if fid not in self.files:
            return _error(400, f"no such input file {fid!r}", param="input_file_id")
        endpoint = body.get("endpoint")
        if endpoint != "/v1/chat/completions":
            return _error(400, "endpoint must be /v1/chat/completions", param="endpoint")
        if body.get("completion_window") != "24h":
            return _error(400, "completion_window must be 24h", param="completion_window")
        bid = f"batch_{_hex()[:24]}"
        batch = {"id": bid, "object": "batch", "endpoint": endpoint, "errors": None,
                 "input_file_id": fid, "completion_window": "24h", "status": "validating",
                 "output_file_id": None, "error_file_id": None,
                 "created_at": int(time.time()), "in_progress_at": None, "expires_at":
                 int(time.time()) + 86400, "finalizing_at": None, "completed_at": None,
                 "failed_at": None, "expired_at": None, "cancelling_at": None,
                 "cancelled_at": None,
                 "request_counts": {"total": 0, "completed": 0, "failed": 0},
                 "metadata": body.get("metadata")}
        self.batches[bid] = batch
        task = asyncio.ensure_future(self._process(bid))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return web.json_response(batch)

    async def _batch(self, request: Any) -> Any:
        from aiohttp import web

        if (denied := self.server._denied(request)) is not None:
            return denied
        batch = self.batches.get(request.match_info["batch_id"])
        return web.json_response(batch) if batch else _error(404, "no such batch")

    async def _cancel(self, request: Any) -> Any:
        from aiohttp import web

        if (denied := self.server._denied(request)) is not None:
            return denied
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return _error(404, "no such batch")
        if batch["status"] in ("validating", "in_progress"):
            batch["status"], batch["cancelling_at"] = "cancelling", int(time.time())
        return web.json_response(batch)

    async def _process(self, bid: str) -> None:
        batch = self.batches[bid]
        lines = self.contents[batch["input_file_id"]].decode("utf-8", "replace").splitlines()
        requests, errors = validate_input(lines, batch["endpoint"])
        if errors:
            batch.update(status="failed", failed_at=int(time.time()),
                         errors={"object": "list", "data": errors[:100]})
            return
        counts = batch["request_counts"]
        counts["total"] = len(requests)
        batch.update(status="in_progress", in_progress_at=int(time.time()))
        sem = asyncio.Semaphore(BATCH_CONCURRENCY)
        results: list[tuple[str, int, dict[str, Any]] | None] = [None] * len(requests)

        async def one(i: int, req: dict[str, Any]) -> None:
            async with sem:
                if batch["status"] == "cancelling":
                    return
                status, reply = await answer_line(self.server, req["body"])
            results[i] = (req["custom_id"], status, reply)
            counts["completed" if status == 200 else "failed"] += 1

        await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
        batch.update(status="finalizing", finalizing_at=int(time.time()))
        mark = self.server.config.mark_replies
        out: list[str] = []
        err: list[str] = []
        for item in results:
            if item is None:
                continue
            cid, status, reply = item
            response: dict[str, Any] = {"status_code": status, "request_id": f"req_{_hex()}",
                                        "body": reply}
            if mark:
                response["headers"] = {MOCK_MARK: "1"}
            line = json.dumps({"id": f"batch_req_{_hex()}", "custom_id": cid,
                               "response": response, "error": None}, ensure_ascii=False)
            (out if status == 200 else err).append(line)
        if out:
            batch["output_file_id"] = self.add_file(
                ("\n".join(out) + "\n").encode("utf-8"), f"{bid}_output.jsonl",
                "batch_output")["id"]
        if err:
            batch["error_file_id"] = self.add_file(
                ("\n".join(err) + "\n").encode("utf-8"), f"{bid}_error.jsonl",
                "batch_output")["id"]
        if batch["status"] == "cancelling":
            batch.update(status="cancelled", cancelled_at=int(time.time()))
        else:
            batch.update(status="completed", completed_at=int(time.time()))


def validate_input(lines: list[str], endpoint: str
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The requests of an input file, or the errors that fail the batch (OpenAI's checks)."""
    requests: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    models: set[str] = set()
    for no, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            errors.append({"code": "invalid_json_line", "line": no,
                           "message": "This line is not parseable as valid JSON."})
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("custom_id"), str):
            errors.append({"code": "missing_required_parameter", "line": no, "param":
                           "custom_id", "message": "custom_id is required"})
            continue
        if obj["custom_id"] in seen:
            errors.append({"code": "duplicate_custom_id", "line": no, "param": "custom_id",
                           "message": f"the custom_id {obj['custom_id']} is used twice"})
        seen.add(obj["custom_id"])
        if obj.get("method") != "POST" or obj.get("url") != endpoint:
            errors.append({"code": "invalid_url", "line": no, "param": "url",
                           "message": f"method must be POST and url {endpoint}"})
        body = obj.get("body")
        if not isinstance(body, dict):
            errors.append({"code": "missing_required_parameter", "line": no, "param": "body",
                           "message": "body is required"})
            continue
        models.add(str(body.get("model")))
        requests.append(obj)
    if len(models) > 1:
        errors.append({"code": "mismatched_model", "line": None, "param": "body.model",
                       "message": f"all requests of a batch must name one model, got "
                                  f"{sorted(models)}"})
    return requests, errors


def _error(status: int, message: str, param: str | None = None) -> Any:
    from aiohttp import web

    return web.json_response({"error": {"message": message, "type": "invalid_request_error",
                                        "param": param}}, status=status)


def add_batch_routes(app: Any, server: MockJudgeServer) -> BatchService:
    """Mount the files and batches API of ``server`` on ``app`` (its service is kept on the
    server as ``batch_service``)."""
    service = getattr(server, "batch_service", None)
    if service is None:
        service = BatchService(server)
        server.batch_service = service  # type: ignore[attr-defined]
    service.add_routes(app)
    return service


# -- the offline vllm run-batch shape ---------------------------------------------------------------
def vllm_body(reply: dict[str, Any]) -> dict[str, Any]:
    """A chat completion as vLLM's server writes it (its extra fields, null where unset)."""
    choice = (reply.get("choices") or [{}])[0]
    msg = choice.get("message") or {}
    usage = reply.get("usage") or {}
    message: dict[str, Any] = {"role": "assistant", "reasoning_content": None,
                               "content": msg.get("content"), "tool_calls": []}
    if msg.get("refusal"):
        message["refusal"] = msg["refusal"]
    return {"id": f"chatcmpl-{_hex()}", "object": "chat.completion",
            "created": int(time.time()), "model": reply.get("model"),
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": choice.get("finish_reason"), "stop_reason": None}],
            "usage": {"prompt_tokens": usage.get("prompt_tokens", 0),
                      "total_tokens": usage.get("total_tokens", 0),
                      "completion_tokens": usage.get("completion_tokens", 0),
                      "prompt_tokens_details": None},
            "prompt_logprobs": None, "kv_transfer_params": None}


def run_batch_file(input_path: str | Path, output_path: str | Path,
                   config: Any = None) -> dict[str, int]:
    """Answer every line of an OpenAI Batch input file offline, as the fake server would, and
    write ``vllm run-batch``'s output shape (see the module doc); returns the counts."""
    from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

    server = MockJudgeServer(config or MockConfig())
    lines = Path(input_path).read_text(encoding="utf-8").splitlines()
    counts = {"requests": 0, "ok": 0, "failed": 0}

    async def run() -> list[str]:
        sem = asyncio.Semaphore(BATCH_CONCURRENCY)
        items = [ln for ln in lines if ln.strip()]

        async def one(text: str) -> str:
            async with sem:
                return await _vllm_line(server, text, counts)

        return list(await asyncio.gather(*(one(t) for t in items)))

    out = asyncio.run(run())
    Path(output_path).write_text("".join(line + "\n" for line in out), encoding="utf-8")
    return counts


async def _vllm_line(server: MockJudgeServer, text: str, counts: dict[str, int]) -> str:
    counts["requests"] += 1
    try:
        obj = json.loads(text)
        cid = str(obj["custom_id"])
        body = obj["body"]
    except (ValueError, KeyError, TypeError) as exc:
        counts["failed"] += 1
        return json.dumps({"id": f"vllm-{_hex()}", "custom_id": "",
                           "response": {"status_code": 400, "request_id":
                                        f"vllm-batch-{_hex()}", "body": None},
                           "error": f"invalid request line: {type(exc).__name__}"})
    status, reply = await answer_line(server, body)
    response: dict[str, Any] = {"status_code": status, "request_id": f"vllm-batch-{_hex()}",
                                "body": vllm_body(reply) if status == 200 else None}
    if server.config.mark_replies:
        response["headers"] = {MOCK_MARK: "1"}
    error = None
    if status != 200:
        error = str((reply.get("error") or {}).get("message") or f"HTTP {status}")
        counts["failed"] += 1
    else:
        counts["ok"] += 1
    return json.dumps({"id": f"vllm-{_hex()}", "custom_id": cid, "response": response,
                       "error": error}, ensure_ascii=False)


__all__ = ["BATCH_CONCURRENCY", "BatchService", "add_batch_routes", "answer_line",
           "run_batch_file", "validate_input", "vllm_body"]
