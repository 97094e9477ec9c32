"""Judge configuration: one :class:`JudgeConfig` per judge, validated on construction."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter import schema
from ragmeter.calls.retry import RetryPolicy
from ragmeter.errors import ConfigError
from ragmeter.paths import default_cache_dir
from ragmeter.schema import spec
from ragmeter.secrets import register_secret

if TYPE_CHECKING:
    from ragmeter.calls.endpoints import Endpoint

BACKENDS = ("openai", "gguf", "local-demo", "mock", "recorded", "scripted")
LANGUAGES = ("auto", "ru", "en")


@dataclass(frozen=True)
class JudgeConfig:
    """Everything needed to build a judge. ``api_key_env`` names the variable, never the key.

    The dataclass is the schema of a judge's config (:mod:`ragmeter.schema`): its fields are
    the keys, their types and ``spec`` rules the values; a judge built in Python is checked
    by the same rules as one read from a file."""

    name: str = spec("judge", nonempty=True)
    backend: str = spec("openai", choices=BACKENDS, noun="backend")
    #: one URL, or several (an endpoint pool: replicas serving the same model)
    base_url: str | tuple[str, ...] | None = None
    model: str = ""
    #: one variable, or several (one per URL, or several keys for one URL)
    api_key_env: str | tuple[str, ...] | None = "OPENAI_API_KEY"
    temperature: float = spec(0.0, ge=0.0, le=2.0)
    #: nucleus sampling: sent (and part of cache keys and signatures) only when set, 0 < p <= 1
    top_p: float | None = spec(None, gt=0.0, le=1.0)
    max_tokens: int = spec(1000, ge=1)
    seed: int | None = 0
    timeout_s: float = spec(60.0, ge=1e-3)
    max_concurrency: int = spec(16, ge=1)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    price_in: float = spec(0.0, ge=0.0)
    price_out: float = spec(0.0, ge=0.0)
    #: the share of the price a batch API takes off (OpenAI Batch: 0.5), for batch estimates
    batch_discount: float = spec(0.5, ge=0.0, le=0.99)
    cache_dir: str | None = None
    no_cache: bool = False
    language: str = spec("auto", choices=LANGUAGES, noun="language")
    gguf_path: str | None = None
    n_ctx: int = spec(4096, ge=256)
    threads: int | None = spec(None, ge=1)
    structured_output: bool = True
    record_path: str | None = None
    #: replies are cached per namespace: runs that must never share replies use different ones
    cache_namespace: str = spec("default", nonempty=True)
    #: retry a truncated reply (finish_reason=length) once with this many times the budget
    truncation_retry_factor: float = spec(2.0, ge=1.0)
    #: start a duplicate of a call that has run far longer than usual (None: never)
    hedge_after_p90: float | None = spec(3.0, ge=1.0)
    # e.g. OpenRouter's HTTP-Referer; a value "${NAME}" is read from the environment per call
    extra_headers: Mapping[str, str] = spec(default_factory=dict, repr=False)
    #: hosts the judge may be sent to (``api.example.com``, ``*.example.com``,
    #: ``127.0.0.1:8080``); empty: any. A base_url elsewhere is a ConfigError
    allow_hosts: tuple[str, ...] = spec((), one_or_many=True)
    #: replace personal data in every request by consistent tokens (ragmeter.privacy)
    pseudonymise: bool = False
    #: where the token map is written (kept locally; never in the store, reports or logs)
    pseudonymise_map: str | None = None
    #: ask an OpenAI-compatible server for token log-probabilities and keep, on each reply,
    #: the probability of its least certain verdict token (the judge's own uncertainty,
    #: which active selection of items to label reads)
    logprobs: bool = False
    #: an examples file (``ragmeter judge examples``): items people graded, shown in the
    #: prompt of the metric they grade (:mod:`ragmeter.judges.fewshot`)
    examples: str | None = spec(None, nonempty=True)

    def __repr__(self) -> str:
        fields_ = ", ".join(f"{f.name}={self._shown(f.name)!r}" for f in fields(self)
                            if f.repr)
        return f"JudgeConfig({fields_})"

    def _shown(self, name: str) -> Any:
        value = getattr(self, name)
        if name == "base_url" and value is not None:
            from ragmeter.calls.endpoints import mask_url_credentials

            if isinstance(value, tuple):
                return tuple(mask_url_credentials(v) for v in value)
            return mask_url_credentials(value)
        return value

    def __post_init__(self) -> None:
        schema.validate(self)  # types, bounds and choices of every field (the spec rules)
        for key in ("base_url", "api_key_env"):
            value = getattr(self, key)
            if isinstance(value, tuple):
                if not value or not all(v for v in value):
                    raise ConfigError(key, "must be a string or a non-empty list of strings")
                if len(value) == 1:
                    object.__setattr__(self, key, value[0])
        if self.backend == "openai":
            if not self.base_url:
                raise ConfigError("base_url", "is required for backend 'openai' "
                                  "(e.g. https://openrouter.ai/api/v1)")
            if not self.model:
                raise ConfigError("model", "is required for backend 'openai'")
        if self.backend == "gguf" and not self.gguf_path:
            raise ConfigError("gguf_path", "is required for backend 'gguf' (path to a .gguf file)")
        if self.backend == "recorded" and not self.record_path:
            raise ConfigError("record_path", "is required for backend 'recorded'")
        for i, url in enumerate(self.base_urls()):
            if not url.lower().startswith(("http://", "https://")):
                from ragmeter.calls.endpoints import mask_url_credentials

                where = "base_url" if len(self.base_urls()) == 1 else f"base_url[{i}]"
                raise ConfigError(where, f"must start with http:// or https://, got "
                                  f"{mask_url_credentials(url)!r}")
        r = self.retry
        if not isinstance(r, RetryPolicy):
            raise ConfigError("retry", "must be a RetryPolicy (or a mapping in from_dict)")
        schema.validate(r, "retry")
        if r.max < r.initial:
            raise ConfigError("retry.max", f"must be >= retry.initial ({r.initial}), got {r.max}")
        _check_allowed_hosts(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeConfig:
        """Build from a YAML/JSON mapping; unknown keys raise :class:`ConfigError`."""
        return schema.parse(cls, data, what="judge config key")

    def with_(self, **changes: Any) -> JudgeConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def base_urls(self) -> tuple[str, ...]:
        if self.base_url is None:
            return ()
        return self.base_url if isinstance(self.base_url, tuple) else (self.base_url,)

    def api_key_envs(self) -> tuple[str, ...]:
        if not self.api_key_env:
            return ()
        return (self.api_key_env if isinstance(self.api_key_env, tuple)
                else (self.api_key_env,))

    def endpoints(self) -> list[Endpoint]:
        """The servers of this judge (several for a pool), credentials moved out of URLs."""
        from ragmeter.calls.endpoints import make_endpoints

        envs = self.api_key_envs()
        return make_endpoints(self.base_urls(), envs,
                              {k: bool(os.environ.get(k)) for k in envs})

    def endpoint_identity(self) -> str:
        """What the cache key records about where replies come from (sorted for a pool)."""
        from ragmeter.calls.endpoints import endpoint_identity

        return "|".join(sorted({endpoint_identity(u) for u in self.base_urls()}))

    def api_key(self) -> str | None:
        """The (first) API key from the environment (``None`` when unset); never stored."""
        for env in self.api_key_envs():
            value = os.environ.get(env)
            if value:
                register_secret(value)  # masked in every output from now on
                return value
        return None

    def headers(self) -> dict[str, str]:
        """``extra_headers`` with ``${NAME}`` values read from the environment."""
        out = {}
        for key, value in self.extra_headers.items():
            m = _ENV_REF.match(str(value))
            out[str(key)] = os.environ.get(m.group(1), "") if m else str(value)
        return out

    def resolved_cache_dir(self) -> Path:
        """``cache_dir``, else ``$RAGMETER_CACHE_DIR``, else ``~/.cache/ragmeter``."""
        return default_cache_dir(self.cache_dir)

    def price_table(self) -> tuple[float, float]:
        return (self.price_in, self.price_out)


def _check_allowed_hosts(cfg: JudgeConfig) -> None:
    """Every base_url's host must be listed in ``allow_hosts`` (when it lists any)."""
    from urllib.parse import urlsplit

    allow = cfg.allow_hosts
    if isinstance(allow, (list, str)):
        allow = (allow,) if isinstance(allow, str) else tuple(allow)
        object.__setattr__(cfg, "allow_hosts", allow)
    if not allow:
        return
    for url in cfg.base_urls():
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        netloc = f"{host}:{parts.port}" if parts.port else host
        if not any(a.lower() in (host, netloc) or (a.startswith("*.") and
                                                    host.endswith(a[1:].lower()))
                   for a in allow):
            raise ConfigError("allow_hosts", f"the judge endpoint host {netloc!r} is not listed "
                              f"(allowed: {', '.join(allow)}); nothing was sent")


_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}$")


def _duration_s(value: Any, key: str) -> float:
    """``2000ms`` / ``2s`` / ``1m`` / a number (seconds) → seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(ms|s|m)?\s*", str(value))
    if not m:
        raise ConfigError(key, f"expected a duration like 2000ms or 2s, got {value!r}")
    n = float(m.group(1))
    return {"ms": n / 1000.0, "s": n, "m": n * 60.0, None: n}[m.group(2)]


def _section(parent: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    """``parent[key]`` as a mapping (empty when absent or null), else a :class:`ConfigError`
    naming the section: a wrongly typed section is the user's to fix, not a crash."""
    value = parent.get(key)
    return {} if value is None else schema.mapping(value, path)


def _number(value: Any, path: str, kind: type = float) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(path, f"must be a number, got {value!r:.60}")
    try:
        return kind(value)
    except ValueError:
        raise ConfigError(path, f"must be a number, got {value!r:.60}") from None


def configs_from_mapping(data: Mapping[str, Any], source: str = "config") -> list[JudgeConfig]:
    """Judge configs from a parsed YAML/JSON document.

    Accepted shapes: one judge mapping; ``{"judges": [mapping, ...]}`` (optional ``defaults``
    merged into each, optional ``prices: {model: [in, out]}`` per 1M tokens); or a Spring-AI ``application.yaml`` (``spring.ai.openai``
    base URL and ``${ENV}`` key, ``spring.ai.chat-models.list`` models, ``spring.ai.retry``
    backoff), which gives one ``openai`` judge per listed model.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(source, "expected a mapping at the top level")
    spring = data.get("spring")
    if isinstance(spring, Mapping) and isinstance(spring.get("ai"), Mapping):
        return _from_spring(spring["ai"])
    prices = data.get("prices") or {}
    if not isinstance(prices, Mapping):
        raise ConfigError("prices", "must map a model id to [price_in, price_out] per 1M tokens")
    if "judges" in data:
        defaults = dict(_section(data, "defaults", "defaults"))
        items = data["judges"]
        if not isinstance(items, list) or not items:
            raise ConfigError("judges", "must be a non-empty list of judge mappings")
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise ConfigError(f"judges[{i}]", "must be a mapping")
            merged = {**defaults, **item}
            if isinstance(defaults.get("retry"), Mapping) and isinstance(item.get("retry"),
                                                                          Mapping):
                merged["retry"] = {**defaults["retry"], **item["retry"]}
            try:
                judge = JudgeConfig.from_dict(merged)
            except ConfigError as exc:  # a key of this judge, or of the defaults it merged
                top = exc.key.split(".")[0].split("[")[0]
                from_defaults = top in defaults and top not in item
                raise exc.under("defaults" if from_defaults else f"judges[{i}]") from None
            out.append(_priced(judge, prices))
        return out
    return [_priced(JudgeConfig.from_dict({k: v for k, v in data.items() if k != "prices"}),
                    prices)]


def _priced(cfg: JudgeConfig, prices: Mapping[str, Any]) -> JudgeConfig:
    """Fill price_in/price_out from a ``prices: {model: [in, out]}`` table when unset."""
    if cfg.model not in prices or cfg.price_in or cfg.price_out:
        return cfg
    pair = prices[cfg.model]
    if isinstance(pair, Mapping):
        pair = (pair.get("in", 0.0), pair.get("out", 0.0))
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise ConfigError(f"prices.{cfg.model}", "must be [price_in, price_out] per 1M tokens")
    return cfg.with_(price_in=_number(pair[0], f"prices.{cfg.model}[0]"),
                     price_out=_number(pair[1], f"prices.{cfg.model}[1]"))


def _from_spring(ai: Mapping[str, Any]) -> list[JudgeConfig]:
    openai = _section(ai, "openai", "spring.ai.openai")
    base = str(openai.get("base-url") or "").rstrip("/")
    if not base:
        raise ConfigError("spring.ai.openai.base-url", "is required")
    if not base.endswith("/v1"):
        base += "/v1"  # Spring AI appends /v1/chat/completions itself
    key_ref = str(openai.get("api-key") or "")
    m = _ENV_REF.match(key_ref)
    if key_ref and not m:
        raise ConfigError("spring.ai.openai.api-key", "must reference an environment variable "
                          "like ${OPENROUTER_API_KEY}; keys never live in config files")
    key_env = m.group(1) if m else None
    chat = _section(_section(openai, "chat", "spring.ai.openai.chat"), "options",
                    "spring.ai.openai.chat.options")
    models_block = _section(ai, "chat-models", "spring.ai.chat-models")
    defaults = _section(models_block, "default-options", "spring.ai.chat-models.default-options")
    listing = models_block.get("list") or []
    if not isinstance(listing, list):
        raise ConfigError("spring.ai.chat-models.list", "must be a list of {id: model}")
    listed = [str(x["id"]) for x in listing if isinstance(x, Mapping) and "id" in x]
    if not listed and chat.get("model"):
        listed = [str(chat["model"])]
    if not listed:
        raise ConfigError("spring.ai.chat-models.list", "names no model")
    backoff = _section(_section(ai, "retry", "spring.ai.retry"), "backoff",
                       "spring.ai.retry.backoff")
    retry = RetryPolicy(
        initial=_duration_s(backoff.get("initial-interval", 2.0), "retry.initial-interval"),
        max=_duration_s(backoff.get("max-interval", 30.0), "retry.max-interval"),
        multiplier=_number(backoff.get("multiplier", 2.0), "spring.ai.retry.backoff.multiplier"))
    temperature = _number(defaults.get("temperature", chat.get("temperature", 0.0)),
                          "spring.ai temperature")
    max_tokens = _number(defaults.get("max-tokens", chat.get("max-tokens", 1000)),
                         "spring.ai max-tokens", int)
    top_p_raw = defaults.get("top-p", chat.get("top-p"))
    top_p = None if top_p_raw is None else _number(top_p_raw, "spring.ai top-p")
    return [JudgeConfig(name=model.split("/")[-1], backend="openai", base_url=base, model=model,
                        api_key_env=key_env, temperature=temperature, max_tokens=max_tokens,
                        top_p=top_p, retry=retry) for model in listed]


def load_judge_configs(path: str | os.PathLike[str]) -> list[JudgeConfig]:
    """Read judge configs from a YAML or JSON file (see :func:`configs_from_mapping`)."""
    # an error names the file and the line of its key (judges.yaml:7: 'judges[1].model')
    return schema.read_config_file(
        Path(path), lambda data: configs_from_mapping(data or {}, str(Path(path))))
