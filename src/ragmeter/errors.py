"""Exceptions with actionable messages. User input never meets an ``assert``."""

from __future__ import annotations

from dataclasses import dataclass


class RagmeterError(Exception):
    """Base class of every error ragmeter raises on purpose."""


@dataclass(frozen=True)
class RecordProblem:
    """One bad field of one record: where it is and what is wrong."""

    source: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.source
        if self.line is not None:
            where += f":{self.line}"
        if self.field:
            where += f" field '{self.field}'"
        return f"{where}: {self.message}"


class DataError(RagmeterError):
    """Bad input data. Lists every problem found (file, line, field), not just the first."""

    def __init__(self, problems: list[RecordProblem] | RecordProblem, hint: str | None = None):
        self.problems = problems if isinstance(problems, list) else [problems]
        self.hint = hint
        lines = [str(p) for p in self.problems[:50]]
        if len(self.problems) > 50:
            lines.append(f"... and {len(self.problems) - 50} more")
        msg = f"{len(self.problems)} problem(s) in input:\n  " + "\n  ".join(lines)
        if hint:
            msg += f"\nHint: {hint}"
        super().__init__(msg)


class ConfigError(RagmeterError):
    """Bad configuration: names the key and the allowed values."""

    def __init__(self, key: str, message: str, allowed: list[str] | None = None):
        self.key = key
        self.allowed = allowed
        msg = f"config key '{key}': {message}"
        if allowed:
            msg += f" (allowed: {', '.join(map(str, allowed))})"
        super().__init__(msg)


class MetricSpecError(RagmeterError):
    """A metric name or parameter that cannot be parsed or is not registered."""


class MissingExtraError(RagmeterError):
    """An optional dependency is missing; says which extra installs it."""

    def __init__(self, package: str, extra: str, purpose: str = ""):
        self.package = package
        self.extra = extra
        what = f" for {purpose}" if purpose else ""
        super().__init__(
            f"'{package}' is needed{what} but is not installed. "
            f"Install it with: pip install 'ragmeter[{extra}]'"
        )


def require(module: str, extra: str, purpose: str = "") -> object:
    """Import an optional module lazily, or raise :class:`MissingExtraError`."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(module, extra, purpose) from exc


def read_yaml_file(path: object, key: str = "config") -> object:
    """Parse a YAML (or JSON) file; a missing or malformed file raises :class:`ConfigError`."""
    from pathlib import Path

    import yaml

    p = Path(str(path))
    if not p.is_file():
        raise ConfigError(key, f"file not found: {p}")
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(key, f"{p} is not valid YAML/JSON: {exc}") from None
