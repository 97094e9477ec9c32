"""Target configs, reply paths, request templates, secrets in headers, id rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.calls.errors import CallError
from ragmeter.errors import ConfigError
from ragmeter.targets import load_target, parse_target
from ragmeter.targets.mapping import MISSING, IdRule, expand_env, extract, render
from ragmeter.targets.reading import read_mapped, read_plain

REPLY = {"data": {"answer": "42", "sources": [{"text": "a", "id": "d#0", "url": "https://x/d/"},
                                              {"text": "b", "id": "e#1", "url": "https://x/e"}]}}


@pytest.mark.parametrize(("path", "want"), [
    ("data.answer", "42"),
    ("/data/answer", "42"),
    ("data.sources[1].id", "e#1"),
    ("/data/sources/0/text", "a"),
    ("data.sources[*].url", ["https://x/d/", "https://x/e"]),
    ("data.sources.*.text", ["a", "b"]),
    ("data.sources[-1].text", "b"),
])
def test_extract_paths(path: str, want: object) -> None:
    assert extract(REPLY, path) == want


@pytest.mark.parametrize("path", ["data.nope", "data.sources[5].id", "/data/answer/x", "x.y"])
def test_extract_missing_is_missing_not_none(path: str) -> None:
    assert extract(REPLY, path) is MISSING


def test_render_keeps_types_of_whole_placeholders() -> None:
    tpl = {"q": "{question}", "n": "{k}", "h": "{history}", "s": "user {session_id}!",
           "fixed": {"mode": "fast", "list": ["{question}"]}}
    got = render(tpl, {"question": "why?", "k": 5, "history": [{"role": "user"}],
                       "session_id": "s1"})
    assert got == {"q": "why?", "n": 5, "h": [{"role": "user"}], "s": "user s1!",
                   "fixed": {"mode": "fast", "list": ["why?"]}}


def test_header_secret_from_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="secrets are not allowed"):
        parse_target({"kind": "http", "url": "http://h/a",
                      "headers": {"Authorization": "Bearer abc123"}})
    with pytest.raises(ConfigError, match="RAG_TEST_KEY is not set"):
        expand_env("Bearer ${env:RAG_TEST_KEY}", "target.headers.Authorization")
    monkeypatch.setenv("RAG_TEST_KEY", "s3cr3t-value")
    assert expand_env("Bearer ${env:RAG_TEST_KEY}", "h") == "Bearer s3cr3t-value"
    from ragmeter.secrets import mask

    assert "s3cr3t-value" not in mask("token=s3cr3t-value")


def test_config_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"'target.respnse': unknown key"):
        parse_target({"kind": "http", "url": "http://h/a", "respnse": {}})
    with pytest.raises(ConfigError, match=r"'target.response.answr': unknown response field"):
        parse_target({"kind": "http", "url": "http://h/a", "response": {"answr": "a"}})
    with pytest.raises(ConfigError, match=r"'target.kind': unknown target kind 'grpc'"):
        parse_target({"kind": "grpc"})
    with pytest.raises(ConfigError, match=r"'target.entries.search': unknown entry point"):
        parse_target({"kind": "http", "url": "http://h/a", "entries": {"search": {}}})
    with pytest.raises(ConfigError, match=r"'target\.url': is required"):
        parse_target({"kind": "http"})


def test_config_hash_ignores_name_and_holds_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_TEST_KEY", "zzzz-secret")
    a = parse_target({"kind": "http", "url": "http://h/a", "name": "a",
                      "headers": {"Authorization": "Bearer ${env:RAG_TEST_KEY}"}})
    b = parse_target({"kind": "http", "url": "http://h/a", "name": "b",
                      "headers": {"Authorization": "Bearer ${env:RAG_TEST_KEY}"}})
    c = parse_target({"kind": "http", "url": "http://h/b"})
    assert a.config_hash() == b.config_hash() != c.config_hash()


def test_load_target_spellings(tmp_path: object) -> None:
    assert load_target("os.path:join").kind == "python"
    assert load_target("http://127.0.0.1:1/answer").kind == "http"
    assert load_target(lambda q: q).kind == "python"
    with pytest.raises(ConfigError, match="cannot read a target"):
        load_target(42)


def test_read_mapped_names_the_missing_path() -> None:
    rep = read_mapped(REPLY, {"answer": "data.answer", "doc_ids": "data.sources[*].url"},
                      "answer", "{}")
    assert rep.answer == "42" and rep.doc_ids == ["https://x/d/", "https://x/e"]
    with pytest.raises(CallError) as err:
        read_mapped(REPLY, {"answer": "data.reply"}, "answer", "{}")
    assert err.value.reason == "unmapped" and "'data.reply'" in err.value.detail


def test_read_plain_shapes() -> None:
    class Doc:
        def __init__(self, text: str, source: str) -> None:
            self.page_content = text
            self.metadata = {"source": source}

    rep = read_plain({"result": "yes", "source_documents": [Doc("t1", "u1"), Doc("t2", "u2")]},
                     "answer", "")
    assert (rep.answer, rep.contexts, rep.doc_ids) == ("yes", ["t1", "t2"], ["u1", "u2"])
    assert read_plain("just text", "answer", "").answer == "just text"
    assert read_plain(["a#0", "b#1"], "retrieve", "").context_ids == ["a#0", "b#1"]
    with pytest.raises(CallError, match="no answer"):
        read_plain({"contexts": ["x"]}, "answer", "")


@pytest.mark.parametrize(("rule", "value", "want"), [
    (IdRule("exact"), "https://w/dorm-payment/", "https://w/dorm-payment/"),
    (IdRule("last_segment"), "https://w/dorm/dorm-payment/?x=1", "dorm-payment"),
    (IdRule("regex", r"/doc/(\w+)"), "https://w/doc/abc?x", "abc"),
    (IdRule("map", table={"https://w/a": "doc-a"}), "https://w/a/", "doc-a"),
])
def test_id_rules(rule: IdRule, value: str, want: str) -> None:
    assert rule.apply(value) == want


def test_python_file_paths_are_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("def answer(q):\n    return 'hi ' + q\n", encoding="utf-8")
    cfg = load_target({"kind": "python", "function": "bot.py:answer"}, base_dir=tmp_path)
    from ragmeter.targets import make_target

    target = make_target(cfg)   # imports tmp_path/bot.py whatever the working directory
    assert target.signature.kind == "python"
    assert str(tmp_path) in str(cfg.entries["answer"].function)
