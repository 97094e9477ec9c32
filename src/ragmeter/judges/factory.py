"""``make_judge(config) -> Judge``: judge backends by name, one :data:`BACKENDS` entry each, and
the wrappers every judge built from a config gets, one :data:`WRAPPERS` entry each.

A new backend is one ``@BACKENDS.register("name")`` function ``(config, **kwargs) -> Judge``
(keyword arguments go to :class:`~ragmeter.judges.llm_judge.EngineJudge`). The wrappers are
declared in :mod:`ragmeter.judges.wrappers` by the packages that own them (cost control,
pseudonymisation); this module applies them and imports neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ragmeter.judges.base import Judge
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.llm_judge import EngineJudge
from ragmeter.judges.wrappers import WRAPPERS
from ragmeter.registry import Registry


class JudgeBuilder(Protocol):
    def __call__(self, config: JudgeConfig, **kwargs: Any) -> Judge: ...


BACKENDS: Registry[JudgeBuilder] = Registry("judge backend", key="backend")


def as_judge(judge: Any, **kwargs: Any) -> Any:
    """``judge`` itself when it is a judge (has ``ask_many``), else a plain function
    ``fn(request) -> dict | str`` made a judge (:func:`make_judge`)."""
    if judge is None or hasattr(judge, "ask_many"):
        return judge
    return make_judge(judge, **kwargs)


def make_judge(config: JudgeConfig | Callable[..., Any], **kwargs: Any) -> Judge:
    """Build the judge ``config`` describes — or make a plain function a judge.

    A function ``fn(request) -> dict | str`` (sync or async; ``request`` is the
    :class:`~ragmeter.judges.base.JudgeRequest` as it is sent: ``messages`` (a repair's
    included), ``schema``, ``prompt_version``, ``metric`` (the metrics the call is asked for),
    ``kind`` (the call kind: ``claims``, ``verify``, ``contexts``, ``answer``, ...) and
    ``sample_id``) is a first-class judge: its reply goes through the same parsing, repair,
    retries and unscored reasons as a model's (a reply that cannot be read is *unscored*, never
    0). Its name is the function's; keyword arguments go to
    :class:`~ragmeter.judges.scripted.ScriptedJudge` (``name``, ``model``, ``config``).
    ``evaluate_generation(..., judge=fn)`` does the same.

    ``openai``: an OpenAI-compatible endpoint. ``gguf``: a local GGUF file (extra ``gguf``).
    ``local-demo``: the bundled weak demonstration model (extra ``local-judge``), ``demo=True``.
    ``mock``: the fake server (``base_url`` of a running one, else one started in-process).
    ``recorded``: replays ``record_path``. Keyword arguments go to :class:`EngineJudge`
    (``progress``, ``keep_prompts``, ``send_gate``). With ``pseudonymise`` (or inside
    :func:`ragmeter.privacy.judge.privacy_scope`) every request is pseudonymised first.

    Inside :func:`ragmeter.cost.estimate_scope` nothing is built: a planning stand-in that
    counts tokens is returned; inside :func:`ragmeter.cost.budget_scope` the judge is wrapped
    so it stops at the budget; inside :func:`ragmeter.judges.batchfiles.batch_scope` it writes
    or collects batch files instead of calling (all through :data:`WRAPPERS`).
    """
    if callable(config) and not isinstance(config, JudgeConfig):
        from ragmeter.judges.scripted import ScriptedJudge

        fn = config
        name = str(kwargs.pop("name", getattr(fn, "__name__", "function")))
        return ScriptedJudge(fn, name=name, model=str(kwargs.pop("model", name)), **kwargs)
    wrappers = sorted(WRAPPERS, key=lambda w: w.order)
    for w in wrappers:
        stand_in = w.instead(config) if w.instead is not None else None
        if stand_in is not None:
            return stand_in
    judge = _build(config, **kwargs)
    for w in wrappers:
        if w.wrap is not None:
            judge = w.wrap(judge, config)
    return judge


def _build(config: JudgeConfig, **kwargs: Any) -> Judge:
    return BACKENDS.get(config.backend)(config, **kwargs)


@BACKENDS.register("openai")
def _openai(config: JudgeConfig, **kwargs: Any) -> Judge:
    from ragmeter.judges.openai_http import make_backend

    return EngineJudge(config, make_backend(config), **kwargs)


@BACKENDS.register("gguf")
def _gguf(config: JudgeConfig, **kwargs: Any) -> Judge:
    from ragmeter.judges.gguf import GGUFBackend, local_timeout_s

    config = config.with_(timeout_s=local_timeout_s(config))
    return EngineJudge(config, GGUFBackend(config), **kwargs)


@BACKENDS.register("local-demo")
def _local_demo(config: JudgeConfig, **kwargs: Any) -> Judge:
    from ragmeter.judges.gguf import make_demo_judge

    return make_demo_judge(config, **kwargs)


@BACKENDS.register("mock")
def _mock(config: JudgeConfig, **kwargs: Any) -> Judge:
    from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
    from ragmeter.judges.openai_http import make_backend

    server = None
    cfg = config
    if not cfg.base_url:
        server = MockJudgeServer(MockConfig()).start()
        cfg = cfg.with_(base_url=server.base_url)
    if not cfg.model:
        cfg = cfg.with_(model="mock-judge")
    backend = make_backend(cfg)
    backend.kind = "mock"  # its own cache namespace: never shared with a real endpoint
    judge = EngineJudge(cfg, backend, **kwargs)
    judge._mock_server = server  # type: ignore[attr-defined]  # keeps it alive
    return judge


@BACKENDS.register("recorded")
def _recorded(config: JudgeConfig, **kwargs: Any) -> Judge:
    from ragmeter.judges.scripted import RecordedJudge

    assert config.record_path is not None  # validated by JudgeConfig
    return RecordedJudge(config.record_path, name=config.name)


@BACKENDS.register("scripted")
def _scripted(config: JudgeConfig, **kwargs: Any) -> Judge:
    from ragmeter.errors import ConfigError

    raise ConfigError("backend", f"backend {config.backend!r} cannot be built from a config "
                      "(use ScriptedJudge(fn) in code)",
                      [n for n in BACKENDS.names() if n != "scripted"])
