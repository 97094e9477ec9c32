"""A target's config: one mapping (a ``target:`` block, a YAML/JSON file, or Python), checked
into a :class:`TargetConfig`; :func:`load_target` accepts every spelling.

Every problem is a :class:`~ragmeter.errors.ConfigError` naming the dotted key
(``target.response.answer``). Secrets never live in the config: a header value names an
environment variable (``Authorization: "Bearer ${env:MY_KEY}"``); the config hash in the
target's signature is computed on the config as written, so it never contains a secret.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter import schema
from ragmeter.calls.redirects import DEFAULT_REDIRECTS, REDIRECT_MODES
from ragmeter.errors import ConfigError
from ragmeter.schema import spec
from ragmeter.targets.base import ENTRIES, MAX_REPLY_BYTES
from ragmeter.targets.mapping import ID_RULES, IdRule, check_template, env_names, parse_path

#: the fields a response mapping may name
RESPONSE_FIELDS = ("answer", "contexts", "context_ids", "doc_ids", "scores", "metadata",
                   "tokens_in", "tokens_out", "cache_hit")
_COMMON = ("name", "kind", "timeout_s", "max_concurrency", "max_retries", "retry_initial_s",
           "max_calls", "ids", "entries", "price_in", "price_out")
KEYS = {
    "http": (*_COMMON, "url", "method", "headers", "request", "response", "version_header",
             "follow_redirects", "max_reply_bytes"),
    "openai": (*_COMMON, "url", "model", "headers", "api_key_env", "sources_field",
               "system_prompt", "version_header", "stream", "response", "follow_redirects",
               "max_reply_bytes"),
    "python": (*_COMMON, "function", "max_reply_bytes"),
    "command": (*_COMMON, "command", "jsonl", "cwd", "max_reply_bytes"),
}
#: keys that change how calls are made, not what a reply says (outside the config hash, so
#: recorded replies stay valid when they change)
_NOT_HASHED = ("name", "timeout_s", "max_concurrency", "max_retries", "retry_initial_s",
               "max_calls", "max_reply_bytes", "price_in", "price_out")
_ENTRY_KEYS = {"http": ("url", "method", "request", "response"), "openai": (),
               "python": ("function",), "command": ("command",)}


@dataclass(frozen=True)
class EntryConfig:
    """One entry point's own settings (the kind's defaults where not given)."""

    url: str | None = None
    method: str = "POST"
    request: Any = None
    response: Mapping[str, str] = field(default_factory=dict)
    function: Any = None          # "module:function" or the callable
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class TargetConfig:
    """A checked target config. ``entries`` maps each entry point the target has to its
    settings; ``raw`` is the mapping as written (hashed into the signature)."""

    kind: str
    name: str = "target"
    entries: Mapping[str, EntryConfig] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    # the limits are checked by these rules (ragmeter.schema) when read from a config
    timeout_s: float = spec(60.0, ge=0.001)
    max_concurrency: int = spec(16, ge=1)
    max_retries: int = spec(4, ge=0)
    retry_initial_s: float = spec(0.5, ge=0.0)
    max_calls: int | None = spec(None, ge=0)
    #: the largest reply kept (bytes); a larger one is the sample's target_reply_too_large
    max_reply_bytes: int = spec(MAX_REPLY_BYTES, ge=1)
    #: redirects of an http / openai target: never, same-origin (default) or always; the
    #: configured headers never reach another origin (ragmeter.calls.redirects)
    follow_redirects: str = spec(DEFAULT_REDIRECTS, choices=REDIRECT_MODES, noun="mode")
    ids: IdRule = field(default_factory=IdRule)
    ids_from: str = "auto"
    url: str | None = None
    model: str = "rag"
    api_key_env: str | None = None
    sources_field: str | None = "sources"
    system_prompt: str | None = None
    version_header: str | None = None
    stream: bool = True
    jsonl: bool = False
    cwd: str | None = None
    #: prices per 1M input / output tokens of the target's own calls (cost_per_answer)
    price_in: float = spec(0.0, ge=0.0)
    price_out: float = spec(0.0, ge=0.0)
    raw: Mapping[str, Any] = field(default_factory=dict)

    def config_hash(self) -> str:
        """A short hash of the config as written, minus the keys that do not change a reply
        (name, limits, retries, timeouts); function objects by their qualified name."""
        text = json.dumps({k: v for k, v in self.raw.items() if k not in _NOT_HASHED},
                          sort_keys=True, ensure_ascii=False, default=_name_of)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def _name_of(obj: Any) -> str:
    mod = getattr(obj, "__module__", "?")
    return f"{mod}:{getattr(obj, '__qualname__', type(obj).__name__)}"


#: the call limits and the redirect mode of a target, checked by the rules on their
#: TargetConfig fields
_CHECKED = ("timeout_s", "max_concurrency", "max_retries", "retry_initial_s", "max_calls",
            "max_reply_bytes", "follow_redirects", "price_in", "price_out")


def _response(data: Any, path: str) -> dict[str, str]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(path, "must map answer / contexts / context_ids / doc_ids / scores "
                          "/ metadata to paths in the reply")
    out = {}
    for k, v in data.items():
        if k not in RESPONSE_FIELDS:
            raise ConfigError(f"{path}.{k}", "unknown response field", list(RESPONSE_FIELDS))
        try:
            parse_path(v)
        except ConfigError as exc:
            raise ConfigError(f"{path}.{k}", str(exc).split(": ", 1)[-1]) from None
        out[str(k)] = str(v)
    return out


def _command(value: Any, path: str) -> tuple[str, ...]:
    if isinstance(value, str) and value.strip():
        import shlex

        return tuple(shlex.split(value))
    if isinstance(value, list) and value and all(isinstance(x, str) for x in value):
        return tuple(value)
    raise ConfigError(path, f"must be a command line or a list of arguments, got {value!r}")


def _entry(kind: str, d: Mapping[str, Any], path: str, base: EntryConfig | None) -> EntryConfig:
    b = base or EntryConfig()
    url = d.get("url", b.url)
    if url is not None and (not isinstance(url, str) or "://" not in url):
        raise ConfigError(f"{path}.url", f"must be an http(s) URL, got {url!r}")
    method = str(d.get("method", b.method)).upper()
    if method not in ("POST", "GET", "PUT"):
        raise ConfigError(f"{path}.method", f"unknown method {method!r}", ["POST", "GET", "PUT"])
    function = d.get("function", b.function)
    if function is not None and not callable(function) and (
            not isinstance(function, str) or ":" not in function):
        raise ConfigError(f"{path}.function", f"must be 'module:function', got {function!r}")
    if isinstance(url, str) and "{" in url:
        check_template(url, f"{path}.url")
        if re.search(r"\{\s*[A-Za-z_]", url):
            raise ConfigError(f"{path}.url", "placeholders are not filled in a URL: send the "
                              "values in 'request' (with method: GET they become query "
                              "parameters)")
    if "request" in d:
        check_template(d["request"], f"{path}.request")
    command = _command(d["command"], f"{path}.command") if "command" in d else b.command
    response = _response(d["response"], f"{path}.response") if "response" in d else \
        dict(b.response)
    return EntryConfig(url=url, method=method, request=d.get("request", b.request),
                       response=response, function=function, command=command)


def _check(d: Mapping[str, Any], path: str, allowed: tuple[str, ...]) -> None:
    schema.mapping(d, path, allowed)


def _ids(data: Any, path: str) -> tuple[IdRule, str]:
    if data is None:
        return IdRule(), "auto"
    if isinstance(data, str):
        data = {"rule": data}
    if not isinstance(data, Mapping):
        raise ConfigError(path, "must be a mapping (from, rule, pattern, map)")
    _check(data, path, ("from", "rule", "pattern", "map"))
    src = data.get("from", "auto")
    if src not in ("auto", "context_ids", "doc_ids"):
        raise ConfigError(f"{path}.from", f"unknown source {src!r}",
                          ["auto", "context_ids", "doc_ids"])
    rule = data.get("rule", "map" if "map" in data else "exact")
    if rule not in ID_RULES:
        raise ConfigError(f"{path}.rule", f"unknown id rule {rule!r}", list(ID_RULES))
    if rule == "regex" and not isinstance(data.get("pattern"), str):
        raise ConfigError(f"{path}.pattern", "rule 'regex' needs a pattern")
    if "pattern" in data and rule != "regex":
        raise ConfigError(f"{path}.pattern", f"a pattern is read by rule 'regex' only, the "
                          f"rule is {rule!r}")
    if rule == "regex":
        try:
            re.compile(data["pattern"])
        except re.error as exc:
            raise ConfigError(f"{path}.pattern", f"not a valid regular expression "
                              f"{data['pattern']!r}: {exc}") from None
    table = data.get("map") or {}
    if not isinstance(table, Mapping):
        raise ConfigError(f"{path}.map", "must map returned ids or URLs to gold ids")
    return IdRule(rule, data.get("pattern"), {str(k): str(v) for k, v in table.items()}), src


def parse_target(data: Any, path: str = "target") -> TargetConfig:
    """Check a target mapping (see docs/targets.md) into a :class:`TargetConfig`."""
    if not isinstance(data, Mapping):
        raise ConfigError(path, f"must be a mapping with a 'kind', got {type(data).__name__}")
    from ragmeter.targets.base import KINDS

    kind = data.get("kind")
    if kind is None:
        kind = "http" if "url" in data and "model" not in data else (
            "openai" if "model" in data else "python" if "function" in data else
            "command" if "command" in data else None)
    if not isinstance(kind, str) or kind not in KEYS:
        raise ConfigError(f"{path}.kind", f"unknown target kind {kind!r}", KINDS.names())
    _check(data, path, KEYS[kind])
    headers = data.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        raise ConfigError(f"{path}.headers", "must map header names to strings")
    for h, v in headers.items():
        if str(h).lower() in ("authorization", "x-api-key", "api-key") and not env_names(v):
            raise ConfigError(f"{path}.headers.{h}", "secrets are not allowed in the config; "
                              "write the value as \"Bearer ${env:MY_KEY}\" and set MY_KEY")
    main = _entry(kind, data, path, None)
    if kind in ("http", "openai") and main.url is None:
        raise ConfigError(f"{path}.url", "is required for a target of kind " + kind)
    if kind == "python" and main.function is None:
        raise ConfigError(f"{path}.function", "is required ('module:function')")
    if kind == "command" and not main.command:
        raise ConfigError(f"{path}.command", "is required")
    entries: dict[str, EntryConfig] = {"answer": main}
    extra = data.get("entries") or {}
    if not isinstance(extra, Mapping):
        raise ConfigError(f"{path}.entries", "must map entry names to their settings")
    for name, e in extra.items():
        p = f"{path}.entries.{name}"
        if name not in ENTRIES:
            raise ConfigError(p, "unknown entry point", list(ENTRIES))
        if isinstance(e, str):
            e = {"function": e} if kind == "python" else {"command": e} \
                if kind == "command" else {"url": e}
        if not isinstance(e, Mapping):
            raise ConfigError(p, "must be a mapping")
        _check(e, p, _ENTRY_KEYS[kind])
        entries[name] = _entry(kind, e, p, main)
    if kind == "openai":
        entries.setdefault("generate", main)
    ids, ids_from = _ids(data.get("ids"), f"{path}.ids")
    name = schema.value(data.get("name", "target"), str, f"{path}.name", nonempty=True)
    cwd = data.get("cwd")
    return TargetConfig(
        kind=kind, name=name, entries=entries, headers={str(k): v for k, v in headers.items()},
        ids=ids, ids_from=ids_from,
        **schema.fields_of(TargetConfig, {k: v for k, v in data.items() if v is not None},
                           path, only=_CHECKED),
        url=main.url, model=str(data.get("model", "rag")),
        api_key_env=data.get("api_key_env"), sources_field=data.get("sources_field", "sources"),
        system_prompt=data.get("system_prompt"), version_header=data.get("version_header"),
        stream=bool(data.get("stream", True)), jsonl=bool(data.get("jsonl", False)),
        cwd=str(cwd) if cwd is not None else None, raw=dict(data))


def load_target(spec: Any, *, base_dir: str | Path = ".", key: str = "target") -> TargetConfig:
    """A :class:`TargetConfig` from a mapping, a TargetConfig, a callable, ``module:function``
    or the path of a YAML / JSON target file (relative to ``base_dir``)."""
    if isinstance(spec, TargetConfig):
        return spec
    if isinstance(spec, Mapping):
        return _relative_to(parse_target(spec, key), Path(base_dir))
    if callable(spec):
        return parse_target({"kind": "python", "function": spec,
                             "name": getattr(spec, "__name__", "target")}, key)
    if isinstance(spec, (str, Path)):
        text = str(spec)
        p = Path(text).expanduser()
        if not p.is_absolute():
            p = Path(base_dir) / p
        if p.suffix.lower() in (".yaml", ".yml", ".json") or p.is_file():
            def nested(data: Any) -> bool:
                return isinstance(data, Mapping) and "target" in data and "kind" not in data

            def parse(data: Any) -> TargetConfig:
                return parse_target(data["target"] if nested(data) else data, key)

            # an error names the file and the line of its key (rag.yaml:4: 'target.url')
            cfg = schema.read_config_file(
                p, parse, key, root=lambda data: (key, "target" if nested(data) else ""))
            return _relative_to(cfg, p.parent)
        if ":" in text and "://" not in text:
            return parse_target({"kind": "python", "function": text}, key)
        if text.startswith(("http://", "https://")):
            return parse_target({"kind": "http", "url": text}, key)
    raise ConfigError(key, f"cannot read a target from {spec!r}: give a YAML/JSON target file, "
                      "'module:function', a callable or a mapping with a 'kind'")


def _relative_to(cfg: TargetConfig, folder: Path) -> TargetConfig:
    """Paths in a target config are relative to the file that declares it: a command's
    working directory, a ``path/file.py:function``."""
    from dataclasses import replace

    if cfg.kind == "command":
        cwd = Path(cfg.cwd) if cfg.cwd else folder
        return replace(cfg, cwd=str(cwd if cwd.is_absolute() else folder / cwd))
    if cfg.kind != "python":
        return cfg
    entries = {}
    for name, e in cfg.entries.items():
        fn = e.function
        if isinstance(fn, str) and ".py:" in fn:
            file, _, func = fn.rpartition(":")
            if not Path(file).is_absolute():
                fn = f"{(folder / file).resolve()}:{func}"
        entries[name] = replace(e, function=fn)
    return replace(cfg, entries=entries)


def resolve_function(spec: Any, key: str) -> Callable[..., Any]:
    """The callable named by ``module:function`` (or ``path/file.py:function``)."""
    if callable(spec):
        return spec
    from ragmeter.registry import import_module_or_file

    mod_name, _, fn_name = str(spec).rpartition(":")
    try:
        module = import_module_or_file(mod_name, f"ragmeter_target_{Path(mod_name).stem}")
    except FileNotFoundError:
        raise ConfigError(key, f"cannot load {mod_name}") from None
    except Exception as exc:
        raise ConfigError(key, f"cannot import {mod_name!r}: {exc}") from None
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise ConfigError(key, f"{mod_name!r} has no function {fn_name!r}")
    return fn


__all__ = ["KEYS", "RESPONSE_FIELDS", "EntryConfig", "TargetConfig", "load_target",
           "parse_target", "resolve_function"]
