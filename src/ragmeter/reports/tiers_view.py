"""Tier names and titles as the reports and the viewer see them, read from the tier
registry (:mod:`ragmeter.tiers.registry`); a plug-in tier shows its own name."""

from __future__ import annotations

from ragmeter.tiers.registry import all_tiers, get_tier


def tier_names() -> list[str]:
    """Canonical tier names in canonical order."""
    return [t.name for t in all_tiers()]


def tier_title(name: str, lang: str = "en") -> str:
    """A tier's human title (the name itself for a tier the registry does not know)."""
    try:
        return get_tier(name).display_title(lang)
    except Exception:
        if name == "judge_trust":  # judge cards, attached to a run after it (not run as a tier)
            from ragmeter.reports.i18n import t

            return t("jc_title", lang)
        return name


def tier_position(name: str) -> int:
    names = tier_names()
    return names.index(name) if name in names else len(names)
