"""The benchmark config: one YAML file, validated into typed dataclasses.

Every problem raises :class:`ConfigError` naming the key as a dotted path
(``judges[1].backend``, ``tiers[0].metrics[2]``) and, where the set is closed, the allowed
values. Unknown keys are errors (a typo must not silently disable a check). Relative paths
are resolved against the directory of the config file. Secrets never live in the config:
judges name an environment variable (``api_key_env``) instead.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ragmeter import schema
from ragmeter.data.formats import FORMATS
from ragmeter.errors import ConfigError
from ragmeter.runner.gating import Threshold, thresholds_from_mapping
from ragmeter.schema import spec
from ragmeter.seeds import check_seed
from ragmeter.tiers.registry import (
    TIER_ALIASES,
    Tier,
    canonical_tier,
    get_tier,
    is_builtin,
    load_plugin,
    tier_names,
)

DATASET_FORMATS = FORMATS  # the sample layouts' one home is ragmeter.data.formats
RETRIEVER_TYPES = ("bm25", "dense", "hybrid")
TOP_KEYS = ("name", "description", "seed", "k", "limit", "batch_size", "store", "run_dir",
            "datasets", "corpus", "embeddings", "retrievers", "generator", "judges", "tiers",
            "thresholds", "plugins", "tags", "target", "targets", "target_mode",
            "slices")
#: config keys that do not change results: editing them does not block ``--resume``
RUN_CONTROL_KEYS = ("store", "run_dir", "description", "tags", "target_mode")


# The sections below are schemas (ragmeter.schema): their fields are the config's keys, their
# types and spec() rules the values; a relative path is resolved against the config's folder
# after the check.
@dataclass(frozen=True)
class DatasetConfig:
    path: Path
    name: str = spec("main", nonempty=True)
    format: str = spec("auto", choices=FORMATS.names(), noun="format")
    skip_invalid: bool = False


@dataclass(frozen=True)
class ChunkingConfig:
    chunk_size_chars: int = spec(800, ge=1)
    overlap_chars: int = spec(120, ge=0)

    def __post_init__(self) -> None:
        if self.overlap_chars >= self.chunk_size_chars:
            raise ConfigError("overlap_chars", f"must be smaller than chunk_size_chars "
                              f"({self.chunk_size_chars}), got {self.overlap_chars}")


@dataclass(frozen=True)
class CorpusSection:
    """``corpus:`` as written (``path`` and ``chunking``)."""

    path: Path
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)


@dataclass(frozen=True)
class CorpusConfig:
    path: Path
    chunk_size_chars: int = 800
    overlap_chars: int = 120


@dataclass(frozen=True)
class EmbeddingConfig:
    name: str = spec(nonempty=True)
    model: str = spec(nonempty=True)
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RetrieverConfig:
    type: str = spec(choices=RETRIEVER_TYPES, noun="retriever type")
    name: str = ""  # the type's name when not given
    embedding: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TierConfig:
    """One tier to run. ``judge`` names a judge of ``judges`` (default: the first).
    ``options`` is the tier's ``Options`` instance, validated from the config (a plug-in
    without ``Options`` gets the mapping as written)."""

    name: str
    dataset: str | None = None
    judge: str | None = None
    judges: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    retrievers: tuple[str, ...] = ()
    batch_size: int | None = None
    options: Any = field(default_factory=dict)


@dataclass
class BenchConfig:
    """A validated benchmark config (see ``ragmeter init`` for a commented example)."""

    name: str
    seed: int = 42
    k: tuple[int, ...] = (1, 5, 10)
    limit: int | None = None
    batch_size: int = 16
    store: str | None = None
    run_dir: Path = Path(".ragmeter/runs")
    description: str = ""
    #: labels of the runs of this config (``runs list`` / ``ragmeter view`` filter by them)
    tags: tuple[str, ...] = ()
    datasets: list[DatasetConfig] = field(default_factory=list)
    corpus: CorpusConfig | None = None
    embeddings: list[EmbeddingConfig] = field(default_factory=list)
    retrievers: list[RetrieverConfig] = field(default_factory=list)
    generator: Any | None = None  # JudgeConfig of the answer generator endpoint
    judges: list[Any] = field(default_factory=list)  # JudgeConfig
    tiers: list[TierConfig] = field(default_factory=list)
    thresholds: list[Threshold] = field(default_factory=list)
    #: how results are broken down (``slices: {by: [...], min_n: 10, correction: holm}``)
    slices: Any | None = None  # SliceSpec
    plugins: dict[str, str] = field(default_factory=dict)
    plugin_tiers: dict[str, Tier] = field(default_factory=dict)
    #: the user's own RAG systems (TargetConfig): the tiers run on them (docs/targets.md)
    targets: list[Any] = field(default_factory=list)
    #: live (call the targets), replay (recorded replies only), resume (recorded, else call)
    target_mode: str = "live"
    base_dir: Path = Path(".")
    raw: dict[str, Any] = field(default_factory=dict)

    def tier(self, name: str) -> Tier:
        """The :class:`Tier` behind a configured tier name (a plug-in or a built-in)."""
        return self.plugin_tiers[name] if name in self.plugin_tiers else get_tier(name)

    def judge_config(self, name: str | None) -> Any | None:
        if name is None:
            return self.judges[0] if self.judges else None
        for j in self.judges:
            if j.name == name:
                return j
        return None

    def dataset(self, name: str | None) -> DatasetConfig | None:
        if name is None:
            return self.datasets[0] if self.datasets else None
        return next((d for d in self.datasets if d.name == name), None)

    def fingerprint(self) -> str:
        """Hash of the validated config (minus run-control keys) to guard ``--resume``."""
        data = {k: v for k, v in self.raw.items() if k not in RUN_CONTROL_KEYS}
        text = json.dumps(data, sort_keys=True, default=str, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def masked(self) -> dict[str, Any]:
        from ragmeter.secrets import mask_secrets

        masked: dict[str, Any] = mask_secrets(copy.deepcopy(self.raw))
        return masked


# --------------------------------------------------------------------------- helpers
def _check_keys(data: Any, path: str, allowed: Sequence[str], required: Sequence[str] = ()) \
        -> Mapping[str, Any]:
    return schema.mapping(data, path, allowed, required=required)


def _join(path: str, key: str) -> str:
    return schema.join(path, key)


def _int(value: Any, path: str, lo: int = 0) -> int:
    out: int = schema.value(value, int, path, ge=lo)
    return out


def _str(value: Any, path: str) -> str:
    out: str = schema.value(value, str, path, nonempty=True)
    return out


def _str_list(value: Any, path: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else schema.value(value, list[Any], path)
    return tuple(_str(v, f"{path}[{i}]") for i, v in enumerate(items))


def parse_tags(value: Any, path: str = "tags") -> tuple[str, ...]:
    """Run tags: a list of short labels (or one string); no commas, no line breaks, at most 64
    characters each; duplicates dropped, order kept."""
    tags = _str_list(value, path)
    for i, tag in enumerate(tags):
        where = f"{path}[{i}]" if not isinstance(value, str) else path
        if tag != tag.strip() or any(c in tag for c in ",\n\r\t"):
            raise ConfigError(where, f"a tag is one label without commas, tabs, line breaks or "
                                     f"surrounding spaces, got {tag!r}")
        if len(tag) > 64:
            raise ConfigError(where, f"a tag has at most 64 characters, got {len(tag)}")
    return tuple(dict.fromkeys(tags))


def _path(value: Any, key: str, base: Path) -> Path:
    p = Path(_str(value, key)).expanduser()
    return p if p.is_absolute() else (base / p)


def _unique(names: list[str], path: str) -> None:
    seen: set[str] = set()
    for i, n in enumerate(names):
        if n in seen:
            raise ConfigError(f"{path}[{i}].name", f"duplicate name {n!r}")
        seen.add(n)


def _judge(data: Any, path: str) -> Any:
    from ragmeter.judges.config import JudgeConfig

    d = schema.mapping(data, path)
    if any(k in d for k in ("api_key", "key", "password")):
        bad = next(k for k in ("api_key", "key", "password") if k in d)
        raise ConfigError(f"{path}.{bad}", "secrets are not allowed in the config; put the key "
                          "in an environment variable and name it with 'api_key_env'")
    try:
        return JudgeConfig.from_dict(d)
    except ConfigError as exc:
        raise exc.under(path) from None


def _store_relative_to(url: str, base: Path) -> str:
    """[contact, issue 11] A relative SQLite store path in a config (``x.sqlite`` or
    ``sqlite:///x.sqlite``) is resolved against the config's folder, like dataset paths."""
    if url.startswith("sqlite:///"):
        rest = url[len("sqlite:///"):]
        if rest and not rest.startswith("/") and not rest.startswith(":memory:") \
                and not Path(rest).is_absolute():
            return f"sqlite:///{(base / rest).resolve()}"
        return url
    if "://" not in url:
        p = Path(url).expanduser()
        return str(p if p.is_absolute() else (base / p).resolve())
    return url


# --------------------------------------------------------------------------- parsing
def parse_config(data: Any, base_dir: str | Path = ".") -> BenchConfig:
    """Validate a config mapping (as loaded from YAML) into a :class:`BenchConfig`."""
    base = Path(base_dir).resolve()
    d = _check_keys(data, "", TOP_KEYS, required=("name",))
    cfg = BenchConfig(name=_str(d["name"], "name"), base_dir=base,
                      raw=copy.deepcopy(dict(d)))
    _parse_settings(cfg, d, base)
    _parse_datasets(cfg, d, base)
    _parse_corpus(cfg, d, base)
    _parse_retrievers(cfg, d)
    if d.get("generator") is not None:
        cfg.generator = _judge(d["generator"], "generator")
    for i, j in enumerate(_list(d.get("judges"), "judges")):
        cfg.judges.append(_judge(j, f"judges[{i}]"))
    _unique([j.name for j in cfg.judges], "judges")
    _targets(d, cfg, base)
    _parse_plugins(cfg, d, base)
    _parse_tiers(cfg, d)
    if d.get("thresholds") is not None:
        cfg.thresholds = thresholds_from_mapping(d["thresholds"])
    if d.get("slices") is not None:
        cfg.slices = _slices(d["slices"])
    return cfg


def _parse_settings(cfg: BenchConfig, d: Mapping[str, Any], base: Path) -> None:
    """description, tags, seed, k, limit, batch_size, store, run_dir."""
    cfg.description = str(d.get("description") or "")
    if d.get("tags") is not None:
        cfg.tags = parse_tags(d["tags"], "tags")
    if "seed" in d:
        cfg.seed = check_seed(d["seed"], "seed")
    if "k" in d:
        ks = d["k"] if isinstance(d["k"], list) else [d["k"]]
        if not ks:
            raise ConfigError("k", "must list at least one cutoff, e.g. [1, 5, 10]")
        cfg.k = tuple(sorted({_int(v, f"k[{i}]", 1) for i, v in enumerate(ks)}))
    if d.get("limit") is not None:
        cfg.limit = _int(d["limit"], "limit", 1)
    if "batch_size" in d:
        cfg.batch_size = _int(d["batch_size"], "batch_size", 1)
    if d.get("store") is not None:
        cfg.store = _str(d["store"], "store")
        from ragmeter.secrets import mask_text

        if mask_text(cfg.store) != cfg.store:
            raise ConfigError("store", "contains a password; give the URL through "
                              "$RAGMETER_STORE_URL or --store instead of the config")
        cfg.store = _store_relative_to(cfg.store, base)
    if d.get("run_dir") is not None:
        cfg.run_dir = _path(d["run_dir"], "run_dir", base)
    else:
        cfg.run_dir = base / ".ragmeter" / "runs"


def _resolved(p: Path, base: Path) -> Path:
    return p if p.is_absolute() else base / p


def _parse_datasets(cfg: BenchConfig, d: Mapping[str, Any], base: Path) -> None:
    for i, ds in enumerate(_list(d.get("datasets"), "datasets")):
        p = f"datasets[{i}]"
        named = {"name": f"dataset{i}" if i else "main", **schema.mapping(ds, p)}
        dataset = schema.parse(DatasetConfig, named, p)
        cfg.datasets.append(replace(dataset, path=_resolved(dataset.path, base)))
    _unique([x.name for x in cfg.datasets], "datasets")


def _parse_corpus(cfg: BenchConfig, d: Mapping[str, Any], base: Path) -> None:
    if d.get("corpus") is not None:
        c = schema.parse(CorpusSection, d["corpus"], "corpus")
        cfg.corpus = CorpusConfig(_resolved(c.path, base), c.chunking.chunk_size_chars,
                                  c.chunking.overlap_chars)


def _parse_retrievers(cfg: BenchConfig, d: Mapping[str, Any]) -> None:
    """The embedding models, then the retrievers that name them."""
    for i, e in enumerate(_list(d.get("embeddings"), "embeddings")):
        cfg.embeddings.append(schema.parse(EmbeddingConfig, e, f"embeddings[{i}]"))
    _unique([x.name for x in cfg.embeddings], "embeddings")
    emb_names = [x.name for x in cfg.embeddings]

    for i, r in enumerate(_list(d.get("retrievers"), "retrievers")):
        p = f"retrievers[{i}]"
        ret = schema.parse(RetrieverConfig, r, p)
        ret = replace(ret, name=ret.name or ret.type, options=dict(ret.options))
        emb = ret.embedding
        if emb is not None and emb not in emb_names:
            raise ConfigError(f"{p}.embedding", f"no embedding named {emb!r}", emb_names)
        if ret.type in ("dense", "hybrid") and emb is None and not emb_names:
            raise ConfigError(f"{p}.embedding", f"retriever type {ret.type!r} needs an "
                              "embedding model: add one under 'embeddings' and name it here")
        cfg.retrievers.append(ret)
    _unique([x.name for x in cfg.retrievers], "retrievers")
    if cfg.retrievers and cfg.corpus is None:
        raise ConfigError("corpus", "is required when retrievers are configured "
                          "(the corpus they index)")


def _parse_plugins(cfg: BenchConfig, d: Mapping[str, Any], base: Path) -> None:
    plugins = _mapping(d.get("plugins"), "plugins")
    for pname, target in plugins.items():
        if not isinstance(target, str) or ":" not in target:
            raise ConfigError(f"plugins.{pname}", "must be 'module:function' or "
                              f"'path/to/file.py:function', got {target!r}")
        if is_builtin(pname):
            raise ConfigError(f"plugins.{pname}", "a plugin cannot replace a built-in tier",
                              tier_names())
    cfg.plugins = {str(k): str(v) for k, v in plugins.items()}
    cfg.plugin_tiers = {name: load_plugin(name, target, base)
                        for name, target in cfg.plugins.items()}


def _parse_tiers(cfg: BenchConfig, d: Mapping[str, Any]) -> None:
    allowed_tiers = [*tier_names(), *TIER_ALIASES, *cfg.plugins]
    judge_names = [j.name for j in cfg.judges]
    for i, t in enumerate(_list(d.get("tiers"), "tiers")):
        cfg.tiers.append(_tier(t, f"tiers[{i}]", allowed_tiers, judge_names, cfg))
    if not cfg.tiers:
        raise ConfigError("tiers", "must list at least one tier to run", allowed_tiers)
    _unique([t.name for t in cfg.tiers], "tiers")


def _targets(d: Mapping[str, Any], cfg: BenchConfig, base: Path) -> None:
    """``target:`` (one) or ``targets:`` (several, each with a name), checked."""
    from ragmeter.targets.config import load_target

    if d.get("target") is not None and d.get("targets") is not None:
        raise ConfigError("targets", "give 'target' (one system) or 'targets' (several), "
                          "not both")
    if d.get("target") is not None:
        cfg.targets.append(load_target(d["target"], base_dir=base, key="target"))
    for i, t in enumerate(_list(d.get("targets"), "targets")):
        cfg.targets.append(load_target(t, base_dir=base, key=f"targets[{i}]"))
    names = [t.name for t in cfg.targets]
    if len(set(names)) != len(names):
        raise ConfigError("targets", f"target names must differ (give each a 'name'), got "
                          f"{names}")
    mode = d.get("target_mode", "live")
    if mode not in ("live", "replay", "resume"):
        raise ConfigError("target_mode", f"unknown mode {mode!r}", ["live", "replay", "resume"])
    cfg.target_mode = mode


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    out: list[Any] = schema.value(value, list[Any], path)
    return out


def _slices(value: Any) -> Any:
    """``slices: {by: [type, section], min_n: 10, correction: holm}`` (``by`` may be a
    comma-separated string)."""
    from ragmeter.results.slices import DEFAULT_MIN_N, SliceSpec, parse_by

    d = _check_keys(value, "slices", ("by", "min_n", "correction"), required=("by",))
    by = d["by"]
    if isinstance(by, list):
        by = ",".join(_str_list(by, "slices.by"))
    elif not isinstance(by, str):
        raise ConfigError("slices.by", f"expected a field name or a list of them, got {by!r}")
    correction = d.get("correction", "holm")
    return SliceSpec(parse_by(by), _int(d.get("min_n", DEFAULT_MIN_N), "slices.min_n", 1),
                     _str(correction, "slices.correction"))


def _mapping(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    out: dict[str, Any] = schema.value(value, dict[str, Any], path)
    return out


def _tier(t: Any, p: str, allowed: list[str], judge_names: list[str],
          cfg: BenchConfig) -> TierConfig:
    if isinstance(t, str):
        t = {"name": t}
    t = _check_keys(t, p, ("name", "dataset", "judge", "judges", "metrics", "retrievers",
                           "batch_size", "options"), ("name",))
    name = t["name"]
    if name not in allowed:
        raise ConfigError(f"{p}.name", f"unknown tier {name!r}", allowed)
    name = canonical_tier(name)
    ds = t.get("dataset")
    if ds is not None and cfg.dataset(ds) is None:
        raise ConfigError(f"{p}.dataset", f"no dataset named {ds!r}",
                          [x.name for x in cfg.datasets])
    judge = t.get("judge")
    if judge is not None and judge not in judge_names:
        raise ConfigError(f"{p}.judge", f"no judge named {judge!r}", judge_names)
    judges = _str_list(t.get("judges", []), f"{p}.judges")
    for j, jn in enumerate(judges):
        if jn not in judge_names:
            raise ConfigError(f"{p}.judges[{j}]", f"no judge named {jn!r}", judge_names)
    metrics = _str_list(t.get("metrics", []), f"{p}.metrics")
    tier = cfg.tier(name)
    if not tier.plugin:
        from ragmeter.errors import MetricSpecError
        from ragmeter.metrics.registry import parse_metrics

        canon: list[str] = []
        for j, m in enumerate(metrics):  # cutoff lists (hit_rate@1,5,10) expand in place
            try:
                canon += [str(x) for x in parse_metrics([m]) if str(x) not in canon]
            except MetricSpecError as exc:
                raise ConfigError(f"{p}.metrics[{j}]", str(exc)) from None
        metrics = tuple(canon)
    rnames = [r.name for r in cfg.retrievers]
    retrievers = _str_list(t.get("retrievers", []), f"{p}.retrievers")
    for j, rn in enumerate(retrievers):
        if rn not in rnames:
            raise ConfigError(f"{p}.retrievers[{j}]", f"no retriever named {rn!r}", rnames)
    bs = t.get("batch_size")
    return TierConfig(name=name, dataset=ds, judge=judge, judges=judges, metrics=metrics,
                      retrievers=retrievers,
                      batch_size=None if bs is None else _int(bs, f"{p}.batch_size", 1),
                      options=_options(tier, t.get("options"), f"{p}.options", cfg))


def _options(tier: Tier, data: Any, path: str, cfg: BenchConfig) -> Any:
    """The tier's options validated into its ``Options``; an ``embedding`` option must name a
    configured embedding."""
    from ragmeter.tiers.options import parse_options

    options = parse_options(tier.options, data, path)
    emb = options.get("embedding") if isinstance(options, dict) else getattr(
        options, "embedding", None)
    names = [e.name for e in cfg.embeddings]
    if emb is not None and not tier.plugin and emb not in names:
        raise ConfigError(f"{path}.embedding", f"no embedding named {emb!r}", names)
    return options


def load_config(path: str | Path) -> BenchConfig:
    """Read and validate a YAML benchmark config; an error names the file and line."""
    p = Path(path)

    def parse(data: Any) -> BenchConfig:
        if data is None:
            raise ConfigError("config", f"{p} is empty", where=str(p))
        return parse_config(data, base_dir=p.parent)

    # an error names the file and the line of its key: bench.yaml:12: config key 'tiers[0]...'
    return schema.read_config_file(p, parse)
