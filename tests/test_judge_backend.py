"""The backend seam: every member declared, defaults from BackendBase, duck types adapted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.judges import JudgeConfig, JudgeRequest
from ragmeter.judges.backend import BackendBase, Completion, as_backend
from ragmeter.judges.llm_judge import EngineJudge
from ragmeter.judges.openai_http import OpenAIBackend

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


class Duck:
    """A backend written against the protocol's required members only."""

    kind = "duck"
    model = "duck-1"
    supports_schema = True

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, messages: Sequence[dict[str, str]], schema: dict[str, Any] | None,
                       *, max_tokens: int, temperature: float,
                       seed: int | None) -> Completion:
        self.calls += 1
        return Completion(text='{"ok": true}')

    async def aclose(self) -> None:
        return None


def test_base_declares_defaults_for_every_optional_member() -> None:
    b = BackendBase()
    assert (b.hedgeable, b.max_in_flight, b.identity, tuple(b.members)) == (False, None, None, ())


def test_a_duck_typed_backend_is_adapted_and_its_own_attributes_stay_readable() -> None:
    duck = Duck()
    adapted = as_backend(duck)
    assert adapted is not duck and adapted.kind == "duck" and adapted.hedgeable is False
    judge = EngineJudge(JudgeConfig(name="d", backend="scripted", model="duck-1",
                                    api_key_env=None, no_cache=True), duck)
    rep = judge.ask(JudgeRequest(messages=({"role": "user", "content": "x"},), schema=SCHEMA,
                                 prompt_version="d@1"))
    assert rep.ok and duck.calls == 1
    assert judge.backend.calls == 1  # type: ignore[attr-defined]  # read through


def test_http_backend_declares_what_the_engine_reads() -> None:
    cfg = JudgeConfig(name="h", backend="openai", base_url="http://127.0.0.1:9/v1", model="m",
                      api_key_env=None)
    b = OpenAIBackend(cfg)
    assert as_backend(b) is b
    assert b.hedgeable is True and b.max_in_flight is None and tuple(b.members) == ()
