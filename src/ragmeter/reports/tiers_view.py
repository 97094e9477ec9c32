"""Tier names and titles as the reports and the viewer see them: the ONE place to re-point.

Uses the tier registry (``ragmeter.tiers.registry``) when it exists; until then a local table
of the canonical tiers in their canonical order. Titles are given in English and Russian.
"""

from __future__ import annotations

import importlib
from typing import Any


def _registry() -> Any:
    return importlib.import_module("ragmeter.tiers.registry")

_ORDER = ("tier0", "retrieval", "generation", "e2e", "judge_quality", "judge_pipeline", "ux",
          "real_users")
_TITLES = {
    "tier0": ("Embeddings (tier 0)", "Эмбеддинги (уровень 0)"),
    "retrieval": ("Retrieval", "Поиск"),
    "generation": ("Answer generation", "Генерация ответа"),
    "e2e": ("End to end", "Сквозная оценка"),
    "judge_quality": ("Judge quality", "Качество судьи"),
    "judge_pipeline": ("Production judge", "Продуктовый судья"),
    "ux": ("User experience", "Пользовательский опыт"),
    "real_users": ("Real users", "Реальные пользователи"),
}


def tier_names() -> list[str]:
    """Canonical tier names in canonical order."""
    try:
        return [str(t.name) for t in _registry().all_tiers()]
    except Exception:
        return list(_ORDER)


def tier_title(name: str, lang: str = "en") -> str:
    """A tier's human title (the name itself for a plug-in tier)."""
    if lang == "en":
        try:
            return str(_registry().get_tier(name).title)
        except Exception:
            pass
    pair = _TITLES.get(name)
    if pair is None:
        return name
    return pair[1] if lang == "ru" else pair[0]


def tier_position(name: str) -> int:
    names = tier_names()
    return names.index(name) if name in names else len(names)
