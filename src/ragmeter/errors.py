"""Exceptions with actionable messages. User input never meets an ``assert``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The command-line exit-code contract (README "Exit codes"); one home, mapped in ``cli/app.py``.
EXIT_OK = 0
#: a quality gate or a regression check failed
EXIT_GATE = 1
#: usage, input or configuration error (clear message naming file, line, field, option or key)
EXIT_USAGE = 2
#: the work itself failed: a tier errored, a requested metric scored no sample, store not written
EXIT_WORK = 3
#: a bug in ragmeter (one line; ``--debug`` shows the traceback)
EXIT_INTERNAL = 4
#: interrupted with Ctrl-C
EXIT_INTERRUPTED = 130


class RagmeterError(Exception):
    """Base class of every error ragmeter raises on purpose (exit code 2 unless overridden)."""

    exit_code: int = EXIT_USAGE


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
    """Bad configuration: names the key (a dotted path, ``tiers[0].options.limit``), the
    allowed values and, when read from a file, ``where`` (``bench.yaml:12``)."""

    def __init__(self, key: str, message: str, allowed: list[str] | None = None,
                 where: str | None = None):
        self.key = key
        self.message = message
        self.allowed = allowed
        self.where = where
        # a command-line option (``--min``) is named as the option the user typed
        msg = f"{'option' if key.startswith('-') else 'config key'} '{key}': {message}"
        if allowed:
            msg += f" (allowed: {', '.join(map(str, allowed))})"
        if where:
            msg = f"{where}: {msg}"
        super().__init__(msg)

    def under(self, prefix: str) -> ConfigError:
        """The same error for a key inside ``prefix`` (``backend`` -> ``judges[1].backend``)."""
        if not prefix:
            return self
        return ConfigError(f"{prefix}.{self.key}", self.message, self.allowed, self.where)

    def at(self, where: str) -> ConfigError:
        """The same error located in a file (``bench.yaml:12``)."""
        return ConfigError(self.key, self.message, self.allowed, where)


class UsageError(RagmeterError):
    """A bad command-line option value or combination; names the option."""

    def __init__(self, option: str, message: str, allowed: list[str] | None = None):
        self.option = option
        self.allowed = allowed
        msg = f"option '{option}': {message}" if option else message
        if allowed:
            msg += f" (allowed: {', '.join(map(str, allowed))})"
        super().__init__(msg)


class WorkFailedError(RagmeterError):
    """The requested work failed (exit 3): a tier errored, a metric scored no sample, the results
    store could not be written. The message keeps the full reason."""

    exit_code = EXIT_WORK


class GateFailedError(RagmeterError):
    """A quality gate or regression check failed (exit 1); the message says which."""

    exit_code = EXIT_GATE


def exit_code_for(exc: BaseException) -> int:
    """The exit code of the contract for an exception raised by a command."""
    if isinstance(exc, RagmeterError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_INTERNAL


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


#: Most nodes a YAML file may expand to once its aliases are followed (an "alias bomb" of a few
#: lines can otherwise expand to 10^8 nodes when the config is walked or written out).
YAML_MAX_NODES = 1_000_000
#: Deepest nesting accepted in a YAML file.
YAML_MAX_DEPTH = 200


def yaml_expansion_problem(obj: object, limit: int = YAML_MAX_NODES) -> str | None:
    """Why a parsed YAML document is refused (too large once expanded, too deep, recursive)."""
    reason: list[str] = []

    def note(text: str) -> None:
        if not reason:
            reason.append(text)

    total = yaml_expanded_size(obj, limit, note)
    if reason:
        return reason[0]
    if total > limit:
        return (f"expands to more than {limit:,} nodes once its aliases (&anchor / *alias) are "
                "followed; write the repeated parts out or make the file smaller")
    return None


def yaml_expanded_size(obj: object, limit: int = YAML_MAX_NODES,
                       note: Callable[[str], None] | None = None) -> int:
    """Nodes ``obj`` has once every alias is expanded, counted in time linear in distinct nodes.

    PyYAML shares one object for every use of an alias; the expanded size is computed with a
    memo by object identity, so a bomb is measured without being expanded. Stops counting above
    ``limit``; a recursive alias (a node containing itself) counts as unbounded.
    """
    memo: dict[int, int] = {}
    active: set[int] = set()

    def size(node: object, depth: int) -> int:
        if not isinstance(node, (dict, list)):
            return 1
        ident = id(node)
        if ident in memo:
            return memo[ident]
        if ident in active or depth > YAML_MAX_DEPTH:
            if note is not None:
                note("contains a recursive alias (a node that contains itself)"
                     if ident in active else f"nests deeper than {YAML_MAX_DEPTH} levels")
            return limit + 1
        active.add(ident)
        total = 1
        items = list(node.items()) if isinstance(node, dict) else [(None, v) for v in node]
        for k, v in items:
            total += (1 if k is not None else 0) + size(v, depth + 1)
            if total > limit:
                break
        active.discard(ident)
        memo[ident] = total
        return total

    return size(obj, 0)


def read_yaml_file(path: object, key: str = "config",
                   lines: dict[int, tuple[Any, dict[Any, int]]] | None = None) -> object:
    """Parse a YAML (or JSON) file; a missing or malformed file raises :class:`ConfigError`.

    A file whose aliases expand to more than :data:`YAML_MAX_NODES` nodes, that nests deeper
    than :data:`YAML_MAX_DEPTH` or whose aliases refer to themselves is refused with a
    :class:`ConfigError` naming the file. ``lines``, when given, receives the line of every
    mapping key and list item: ``{id(container): (container, {key or index: line})}``
    (:func:`ragmeter.schema.line_of` reads it).
    """
    from pathlib import Path

    import yaml

    p = Path(str(path))
    if not p.is_file():
        raise ConfigError(key, f"file not found: {p}")
    raw = p.read_bytes()
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(key, f"{p} is UTF-16/32 encoded; save it as UTF-8")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(key, f"{p}:{line} is not UTF-8 text (byte 0x"
                               f"{raw[exc.start:exc.start + 1].hex()}); save it as UTF-8") from None
    try:
        if lines is None:
            data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
        else:
            loader = _UniqueKeyLoader.loader_class()(text)
            loader.ragmeter_lines = lines
            try:
                data = loader.get_single_data()
            finally:
                loader.dispose()
    except yaml.YAMLError as exc:
        raise ConfigError(key, f"{p} is not valid YAML/JSON: {exc}") from None
    except RecursionError:
        raise ConfigError(key, f"{p} nests deeper than {YAML_MAX_DEPTH} levels") from None
    problem = yaml_expansion_problem(data)
    if problem is not None:
        raise ConfigError(key, f"{p} {problem}")
    return data


def _unique_key_loader() -> type:
    """A ``yaml.SafeLoader`` that rejects a key repeated in one mapping (PyYAML keeps the last
    one silently), naming the key and its line."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict:
            seen: dict[object, int] = {}
            for key_node, _ in getattr(node, "value", []):
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` merges, never repeats
                    continue
                try:
                    k = self.construct_object(key_node, deep=deep)
                    hash(k)
                except TypeError:
                    continue
                if k in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {k!r} repeated (first on line {seen[k]})",
                        key_node.start_mark)
                seen[k] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

        # the lines of keys and items, recorded on the objects the document ends up holding
        def construct_lined_map(self, node: Any) -> Any:
            data: dict[Any, Any] = {}
            yield data
            data.update(self.construct_mapping(node))
            table = getattr(self, "ragmeter_lines", None)
            if table is not None:
                keys: dict[Any, int] = {}
                for key_node, _ in node.value:
                    try:
                        k = self.construct_object(key_node)  # already built: from the cache
                        hash(k)
                    except TypeError:
                        continue
                    keys.setdefault(k, key_node.start_mark.line + 1)
                table[id(data)] = (data, {k: line for k, line in keys.items() if k in data})

        def construct_lined_seq(self, node: Any) -> Any:
            data: list[Any] = []
            yield data
            data.extend(self.construct_sequence(node))
            table = getattr(self, "ragmeter_lines", None)
            if table is not None:
                table[id(data)] = (data, {i: child.start_mark.line + 1
                                          for i, child in enumerate(node.value)})

    UniqueKeyLoader.add_constructor("tag:yaml.org,2002:map",
                                    UniqueKeyLoader.construct_lined_map)
    UniqueKeyLoader.add_constructor("tag:yaml.org,2002:seq",
                                    UniqueKeyLoader.construct_lined_seq)
    return UniqueKeyLoader


class _LazyLoader:
    """Builds the loader class on first use (PyYAML is imported lazily)."""

    _cls: type | None = None

    def loader_class(self) -> type:
        if _LazyLoader._cls is None:
            _LazyLoader._cls = _unique_key_loader()
        return _LazyLoader._cls

    def __call__(self, stream: object) -> object:
        return self.loader_class()(stream)


_UniqueKeyLoader = _LazyLoader()
