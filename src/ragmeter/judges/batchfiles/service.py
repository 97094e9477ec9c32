"""An OpenAI-compatible Batch API driven from a batch folder: submit a round's files, follow
their batches, fetch the output and error files into ``results/``.

* files: ``POST {base}/files`` (multipart, ``purpose=batch``), ``GET {base}/files/{id}/content``;
* batches: ``POST {base}/batches`` (``input_file_id``, ``endpoint``, ``completion_window``
  ``24h``), ``GET {base}/batches/{id}``.

``base`` is the judge's base URL (``…/v1``) unless another is given. The API key is read from
the environment variable the judge names (or ``key_env``) when a request is made; it is only
ever placed in the ``Authorization`` header, never printed or stored, and every error detail is
masked. What was submitted (file and batch ids, status, request counts, the files fetched) is
kept in the manifest, so ``status`` and ``fetch`` need nothing else and a second ``submit``
does not send a file twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ragmeter.calls import RetryPolicy, http, run_sync
from ragmeter.calls.retry import retry_delay
from ragmeter.errors import ConfigError, UsageError, WorkFailedError
from ragmeter.judges.batchfiles.lines import CHAT_URL, FileEntry
from ragmeter.judges.batchfiles.manifest import RESULTS, Manifest, now_iso
from ragmeter.secrets import mask, register_secret, split_url_credentials

#: batch statuses after which nothing changes
FINAL = ("completed", "failed", "expired", "cancelled")


class BatchAPIError(WorkFailedError):
    """A Batch API request failed (after retries); the message is masked."""


@dataclass
class BatchAPI:
    """A client of one OpenAI-compatible files + batches API. Transport, error maps and
    backoff are :mod:`ragmeter.calls`' (a 429, 5xx, 408 or a lost connection is retried,
    waiting the server's ``Retry-After`` when it sent one; any other status is not)."""

    base_url: str
    key_env: str | None = None
    timeout_s: float = 120.0
    policy: RetryPolicy = field(default_factory=lambda: RetryPolicy(initial=1.0, max=30.0,
                                                                    max_retries=4))
    _basic: str | None = field(default=None, init=False, repr=False)
    _http: http.LoopSessions | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        url, basic = split_url_credentials(self.base_url.rstrip("/"))
        self.base_url, self._basic = url, basic
        self._http = http.LoopSessions(timeout_s=self.timeout_s,
                                       connect_s=min(10.0, self.timeout_s))

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.key_env) if self.key_env else None
        if key:
            register_secret(key)
            return {"Authorization": f"Bearer {key}"}
        return {"Authorization": self._basic} if self._basic else {}

    async def _call(self, method: str, path: str, *, body: Any = None,
                    form: Callable[[], Any] | None = None) -> bytes:
        assert self._http is not None
        url = self.base_url + path
        await self._http.enter()
        try:
            for attempt in range(self.policy.max_retries + 1):
                try:
                    async with self._http.get().request(
                            method, url, json=body, data=form() if form else None,
                            headers=self._headers()) as resp:
                        data = await resp.read()
                        if resp.status == 200:
                            return data
                        err = http.status_error(resp.status, data.decode("utf-8", "replace"),
                                                resp.headers)
                except http.transport_exceptions() as exc:
                    err = http.transport_error(exc, url)
                if not err.retryable or attempt >= self.policy.max_retries:
                    break
                await asyncio.sleep(retry_delay(self.policy, attempt + 1, err.retry_after))
        finally:
            await self._http.exit()
        raise BatchAPIError(mask(f"{method} {url} failed: {err.detail}"))

    async def _json(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        data = await self._call(method, path, **kw)
        try:
            obj = json.loads(data)
        except ValueError:
            raise BatchAPIError(mask(f"{method} {self.base_url}{path}: the reply is not "
                                     f"JSON: {data[:200]!r}")) from None
        if not isinstance(obj, dict):
            raise BatchAPIError(f"{method} {self.base_url}{path}: the reply is not an object")
        return obj

    async def upload(self, path: Path) -> dict[str, Any]:
        import aiohttp

        def form() -> Any:
            f = aiohttp.FormData()
            f.add_field("purpose", "batch")
            f.add_field("file", path.read_bytes(), filename=path.name,
                        content_type="application/jsonl")
            return f

        return await self._json("POST", "/files", form=form)

    async def create(self, file_id: str, metadata: dict[str, str]) -> dict[str, Any]:
        return await self._json("POST", "/batches", body={
            "input_file_id": file_id, "endpoint": CHAT_URL, "completion_window": "24h",
            "metadata": metadata})

    async def batch(self, batch_id: str) -> dict[str, Any]:
        return await self._json("GET", f"/batches/{batch_id}")

    async def content(self, file_id: str) -> bytes:
        return await self._call("GET", f"/files/{file_id}/content")


def _api_for(manifest: Manifest, entry: FileEntry, url: str | None,
             key_env: str | None) -> BatchAPI:
    ident = manifest.judges.get(entry.judge)
    base = url or (entry.submitted.get("url") if entry.submitted else None) or (
        ident.base_url if ident else "")
    if not base:
        raise UsageError("--url", f"no base URL known for judge {entry.judge!r}: pass --url "
                         "(e.g. https://api.openai.com/v1)")
    env = key_env or (ident.api_key_env if ident else None)
    if key_env and not os.environ.get(key_env):
        raise ConfigError("--key-env", f"the environment variable {key_env} is not set")
    return BatchAPI(base, env)


def _load(folder: Path) -> Manifest:
    m = Manifest.load(folder)
    if m is None or not m.rounds:
        raise UsageError("", f"{folder} holds no round: write one with --judge-batch write "
                         f"{folder}")
    return m


def submit(folder: Path, *, url: str | None = None, key_env: str | None = None,
           round_no: int | None = None, echo: Callable[[str], Any] = print) -> list[FileEntry]:
    """Upload every file of a round (the last by default) not submitted yet and create its
    batch; the ids are saved in the manifest after each file."""
    manifest = _load(folder)
    rounds = {r.number: r for r in manifest.rounds}
    rnd = rounds.get(round_no) if round_no is not None else manifest.rounds[-1]
    if rnd is None:
        raise UsageError("--round", f"no round {round_no} in {folder}",
                         [str(n) for n in rounds])
    done: list[FileEntry] = []
    for entry in rnd.files:
        if entry.submitted.get("batch_id"):
            echo(f"{entry.path}: already submitted as {entry.submitted['batch_id']}")
            continue
        api = _api_for(manifest, entry, url, key_env)
        uploaded = run_sync(partial(api.upload, folder / entry.path))
        batch = run_sync(partial(api.create, str(uploaded["id"]), {
            "ragmeter_round": str(rnd.number), "ragmeter_file": entry.path}))
        entry.submitted = {"url": api.base_url, "file_id": uploaded["id"],
                           "batch_id": batch["id"], "status": batch.get("status"),
                           "submitted_at": now_iso()}
        manifest.save(folder)
        echo(f"{entry.path}: {entry.lines} requests submitted as batch {batch['id']} "
             f"({batch.get('status')})")
        done.append(entry)
    return done


def _submitted(manifest: Manifest) -> list[FileEntry]:
    return [f for r in manifest.rounds for f in r.files if f.submitted.get("batch_id")]


def status(folder: Path, *, url: str | None = None, key_env: str | None = None,
           echo: Callable[[str], Any] = print) -> list[FileEntry]:
    """Ask the API for every submitted batch not finished yet; the manifest is updated."""
    manifest = _load(folder)
    entries = _submitted(manifest)
    if not entries:
        raise UsageError("", f"nothing of {folder} was submitted: ragmeter judge batch "
                         f"submit {folder}")
    for entry in entries:
        sub = entry.submitted
        if sub.get("status") not in FINAL:
            api = _api_for(manifest, entry, url, key_env)
            b = run_sync(partial(api.batch, str(sub["batch_id"])))
            sub.update(status=b.get("status"), request_counts=b.get("request_counts"),
                       output_file_id=b.get("output_file_id"),
                       error_file_id=b.get("error_file_id"), errors=b.get("errors"))
        counts = sub.get("request_counts") or {}
        echo(f"{entry.path}: batch {sub['batch_id']} {sub.get('status')}"
             + (f" ({counts.get('completed', 0)} completed, {counts.get('failed', 0)} failed "
                f"of {counts.get('total', 0)})" if counts else "")
             + _errors_text(sub.get("errors")))
    manifest.save(folder)
    return entries


def _errors_text(errors: Any) -> str:
    data = errors.get("data") if isinstance(errors, dict) else None
    if not data:
        return ""
    first = data[0] if isinstance(data[0], dict) else {}
    return (f"; {len(data)} error(s), first: line {first.get('line')}: "
            f"{mask(str(first.get('message')))[:200]}")


def fetch(folder: Path, *, url: str | None = None, key_env: str | None = None,
          wait: bool = False, timeout_s: float = 86400.0, poll_s: float = 30.0,
          echo: Callable[[str], Any] = print) -> dict[str, list[str]]:
    """Download the output and error files of every finished batch into ``results/``
    (``wait``: poll until every batch finished or ``timeout_s`` passed). Returns the files
    written, the batches still running and the batches that failed, expired or were
    cancelled."""
    deadline = time.monotonic() + timeout_s
    while True:
        entries = status(folder, url=url, key_env=key_env, echo=echo)
        running = [e for e in entries if e.submitted.get("status") not in FINAL]
        if not (wait and running) or time.monotonic() >= deadline:
            break
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))
    manifest = _load(folder)
    out = folder / RESULTS
    got: list[str] = []
    for entry in _submitted(manifest):
        sub = entry.submitted
        if sub.get("status") not in FINAL:
            continue
        api = _api_for(manifest, entry, url, key_env)
        stem = Path(entry.path).name.removesuffix(".jsonl")
        for kind in ("output", "error"):
            fid = sub.get(f"{kind}_file_id")
            if not fid or fid in (sub.get("fetched") or {}).values():
                continue
            out.mkdir(parents=True, exist_ok=True)
            target = out / f"{stem}.{sub['batch_id']}.{kind}.jsonl"
            target.write_bytes(run_sync(partial(api.content, str(fid))))
            sub.setdefault("fetched", {})[kind] = fid
            got.append(target.relative_to(folder).as_posix())
            echo(f"{entry.path}: {kind} file saved as {target.relative_to(folder)}")
        manifest.save(folder)
    entries = _submitted(manifest)
    return {"fetched": got,
            "running": [e.path for e in entries if e.submitted.get("status") not in FINAL],
            "unfinished": [f"{e.path}: {e.submitted.get('status')}" for e in entries
                           if e.submitted.get("status") in ("failed", "expired",
                                                             "cancelled")]}


__all__ = ["FINAL", "BatchAPI", "BatchAPIError", "fetch", "status", "submit"]
