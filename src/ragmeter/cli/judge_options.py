"""The judge option group, declared once: every command that asks an LLM judge takes the same
options with the same spellings and help, and reads them as one :class:`JudgeOptions`.

A command declares a parameter ``judge: JudgeOptions = NONE_GIVEN`` and is decorated with
:func:`judge_options`; the decorator puts the group's options in its place on the command line
(``--judge-config``, ``--judge-url``, ``--judge-model``, ``--judge-key-env``,
``--judge-backend``, ``--judge-record``, ``--judge-concurrency``, ``--judge-timeout``,
``--check-judge``) and hands the command their values as one object. Adding an option to the
group is one entry in :data:`OPTIONS` and one field of :class:`JudgeOptions`; a command that
has no use for one leaves it out with ``omit=``. The old spellings (``--base-url``,
``--model``, ``--api-key-env``, ...) are rewritten by ``cli/app.py`` (hidden aliases).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer

from ragmeter.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class JudgeOptions:
    """What the judge options of one invocation say (None: not given)."""

    config: Path | None = None
    url: str | None = None
    model: str | None = None
    key_env: str | None = None
    backend: str | None = None
    record: str | None = None
    concurrency: int | None = None
    timeout: float | None = None
    check: bool = False

    def given(self) -> bool:
        """Whether any option names a judge (a file, an endpoint or a backend)."""
        return self.config is not None or bool(self.url) or bool(self.backend)

    def _overrides(self, with_endpoint: bool) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        if with_endpoint:
            if self.url:
                changes["base_url"] = self.url
            if self.model:
                changes["model"] = self.model
            if self.key_env is not None:
                changes["api_key_env"] = self.key_env or None
        if self.concurrency is not None:
            changes["max_concurrency"] = self.concurrency
        if self.timeout is not None:
            changes["timeout_s"] = self.timeout
        if self.record:
            changes["record_path"] = self.record
        return changes

    def configs(self, **extra: Any) -> list[Any]:
        """Every judge the options name: each judge of ``--judge-config`` with the endpoint
        options overriding the file's, or one judge from ``--judge-url`` / ``--judge-backend``;
        ``[]`` when none is named. ``extra`` sets more fields (``language``, ``price_in`` ...;
        ``name`` only for a judge made from the options)."""
        from ragmeter.judges.config import JudgeConfig, load_judge_configs

        if self.config is not None:
            extra.pop("name", None)
            changes = {**self._overrides(with_endpoint=True), **extra}
            return [c.with_(**changes) if changes else c
                    for c in load_judge_configs(self.config)]
        if not self.url and not self.backend:
            if self.model:
                raise UsageError("--judge-model", "needs --judge-url (or --judge-config)")
            return []
        backend = self.backend or "openai"
        name = extra.pop("name", None) or ("judge" if backend == "openai" else backend)
        return [JudgeConfig(name=name, backend=backend,
                            base_url=self.url, model=self.model or "",
                            api_key_env="OPENAI_API_KEY" if self.key_env is None
                            else (self.key_env or None),
                            **self._overrides(with_endpoint=False), **extra)]

    def config_or_none(self, **extra: Any) -> Any | None:
        """The one judge of a command that asks one (the first of ``--judge-config``), or
        None when no option names a judge."""
        found = self.configs(**extra)
        return found[0] if found else None

    def required(self, command: str, **extra: Any) -> list[Any]:
        """:meth:`configs`, a usage error naming the options when none is named."""
        found = self.configs(**extra)
        if not found:
            raise UsageError("--judge-config", f"{command} needs a judge: --judge-config FILE, "
                             "or --judge-url URL with --judge-model NAME")
        return found

    def check_reachable(self, configs: Iterable[Any]) -> None:
        """``--check-judge``: one small request to each judge before any work (exit 2 when
        one cannot be reached)."""
        if not self.check:
            return
        from ragmeter.cli.common import check_judge_reachable

        for cfg in configs:
            check_judge_reachable(cfg)

    def with_(self, **changes: Any) -> JudgeOptions:
        return replace(self, **changes)


#: the default of a command's ``judge`` parameter (the decorator replaces it on the command line)
NONE_GIVEN = JudgeOptions()

#: the group: parameter name -> (field of JudgeOptions, annotation with its one declaration)
OPTIONS: dict[str, tuple[str, Any]] = {
    "judge_config": ("config", Annotated[Optional[Path], typer.Option(  # noqa: UP045 - typer
        "--judge-config", help="Judge config file (YAML/JSON: one judge, a 'judges' list or a "
        "Spring-AI application.yaml); a command that asks one judge takes the first.")]),
    "judge_url": ("url", Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--judge-url", help="OpenAI-compatible base URL of the judge (overrides the config "
        "file's).")]),
    "judge_model": ("model", Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--judge-model", help="Judge model name at --judge-url.")]),
    "judge_key_env": ("key_env", Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--judge-key-env", help="Name of the environment variable holding the judge API key "
        "(default OPENAI_API_KEY; '' for none).")]),
    "judge_backend": ("backend", Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--judge-backend", help="openai (default with --judge-url), mock, local-demo (the "
        "bundled demo judge), recorded, gguf; `judge bench` also takes tiny.")]),
    "judge_record": ("record", Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--judge-record", help="Recorded replies file (with --judge-backend recorded).")]),
    "judge_concurrency": ("concurrency", Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--judge-concurrency", min=1, help="Most judge calls in flight at once.")]),
    "judge_timeout": ("timeout", Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--judge-timeout", min=0.1, help="Seconds to wait for one judge reply.")]),
    "check_judge": ("check", Annotated[bool, typer.Option(
        "--check-judge", help="Send one small request to the judge before any work; exit 2 "
        "if it cannot be reached.")]),
}

#: ``--check-judge`` alone, for a command whose judges come from its config (``run``)
CheckJudgeOpt = OPTIONS["check_judge"][1]


def judge_options(*, omit: Iterable[str] = ()) -> Callable[[F], F]:
    """Give a command the judge option group in place of its ``judge: JudgeOptions``
    parameter (minus the parameter names in ``omit``)."""
    left_out = set(omit)
    unknown = left_out - set(OPTIONS)
    if unknown:
        raise ValueError(f"not judge options: {sorted(unknown)}")
    group = [(name, field, ann) for name, (field, ann) in OPTIONS.items()
             if name not in left_out]

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn, eval_str=True)
        if "judge" not in sig.parameters:
            raise TypeError(f"{fn.__name__} has no 'judge' parameter")
        params: list[inspect.Parameter] = []
        for p in sig.parameters.values():
            if p.name != "judge":
                params.append(p)
                continue
            params.extend(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                            default=False if field == "check" else None,
                                            annotation=ann)
                          for name, field, ann in group)

        @functools.wraps(fn)
        def command(*args: Any, **kwargs: Any) -> Any:
            values = {field: kwargs.pop(name) for name, field, _ in group if name in kwargs}
            return fn(*args, judge=JudgeOptions(**values), **kwargs)

        # every parameter keyword-only (typer passes them by name): the order stays as declared
        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]
        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params
                                   if p.annotation is not inspect.Parameter.empty}
        return command  # type: ignore[return-value]

    return decorate


__all__ = ["NONE_GIVEN", "OPTIONS", "CheckJudgeOpt", "JudgeOptions", "judge_options"]
