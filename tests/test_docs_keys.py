"""Every configuration key and API field the documentation names exists: each YAML block of
the docs and the README goes through the real config readers (an unknown key is an error), and
each "`x` is a `Class` (`field`, ...)" names fields the class has."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml

import ragmeter
from ragmeter.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
#: what a config fragment is completed with to be a whole benchmark
BASE = {"name": "docs", "datasets": [{"path": "evalset.jsonl", "format": "evalset"}],
        "tiers": [{"name": "e2e", "metrics": ["rouge_l"]}]}
_FIELDS = re.compile(r"`(\w+)` is an? `(\w+)` \(((?:`\w+`(?:, )?)+)\)")


def _blocks() -> list[tuple[str, dict]]:
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in re.finditer(r"```ya?ml\n(.*?)```", text, re.S):
            where = f"{doc.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}"
            out.append((where, yaml.safe_load(m.group(1))))
    return out


@pytest.mark.parametrize("where,raw", _blocks(), ids=[w for w, _ in _blocks()])
def test_every_yaml_block_of_the_docs_is_a_valid_config(where, raw, tmp_path):
    from ragmeter.judges.config import configs_from_mapping
    from ragmeter.runner.config import parse_config

    assert isinstance(raw, dict), where
    if "base_url" in raw or "backend" in raw:      # a judge config file
        configs_from_mapping(raw, where)
        return
    try:
        parse_config({**BASE, **raw}, base_dir=tmp_path)
    except ConfigError as exc:
        assert "unknown key" not in str(exc), f"{where}: {exc}"
        raise


def _field_lists() -> list[tuple[str, str, list[str]]]:
    out = []
    for doc in DOCS:
        for m in _FIELDS.finditer(doc.read_text(encoding="utf-8")):
            out.append((f"{doc.name}: {m.group(0)[:60]}", m.group(2),
                        re.findall(r"`(\w+)`", m.group(3))))
    return out


def _class(name: str) -> type:
    found = getattr(ragmeter, name, None)
    for module in ("ragmeter.judges", "ragmeter.targets", "ragmeter.results",
                   "ragmeter.data", "ragmeter.judge_trust"):
        if found is None:
            found = getattr(importlib.import_module(module), name, None)
    assert isinstance(found, type), f"the docs name {name}, which ragmeter does not export"
    return found


def test_the_docs_name_only_fields_their_classes_have():
    lists = _field_lists()
    assert any(cls == "JudgeRequest" for _, cls, _ in lists)   # the one that said `kind`
    for where, cls, fields in lists:
        have = set(getattr(_class(cls), "__dataclass_fields__", {})) | set(dir(_class(cls)))
        missing = [f for f in fields if f not in have]
        assert not missing, f"{where}: {cls} has no {missing}"
