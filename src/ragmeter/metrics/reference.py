"""The metric reference, generated from the registry: ``ragmeter metrics`` prints it and
``docs/metrics.md`` is written from it, so the list can never drift from the code.

Regenerate the committed file after adding or changing a metric::

    python -m ragmeter.metrics.reference            # writes docs/metrics.md
    python -m ragmeter.metrics.reference --check    # exit 1 when docs/metrics.md is stale
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ragmeter.metrics.registry import MetricSpec, Param, list_specs

FAMILY_TITLES: dict[str, str] = {
    "retrieval": "Retrieval (Tier 1)",
    "context_ids": "Context ids (Tiers 2–3, no judge)",
    "lexical": "Lexical overlap (Tiers 2–3)",
    "semantic": "Semantic similarity (Tiers 2–3)",
    "judged": "Judged answer metrics (Tiers 2–3, LLM judge)",
    "embedding": "Embedding quality (Tier 0)",
    "judge": "Judge quality",
    "classification": "Production judge (yes/no classification)",
    "ux": "User experience",
    "refusal": "Refusals (Tiers 2–3, clause cues + a small classifier, no judge)",
    "citations": "Citations (Tiers 2–3, parsed, no judge)",
}
_CUTOFF = {"required": "required (`name@k`)", "optional": "optional (`name@k` or the full "
           "ranking)", "none": "none"}


def _param(p: Param) -> dict[str, Any]:
    return {"name": p.name, "type": p.type.__name__, "default": p.default,
            "choices": list(p.choices) if p.choices is not None else None, "doc": p.doc}


def metric_entry(spec: MetricSpec) -> dict[str, Any]:
    """One metric as plain data: what ``ragmeter metrics --json`` prints per metric."""
    return {
        "name": spec.name,
        "family": spec.family,
        "cutoff": spec.k,
        "direction": "higher is better" if spec.higher_is_better else "lower is better",
        "range": list(spec.value_range) if spec.value_range is not None else None,
        "params": [_param(p) for p in spec.params],
        "required_fields": list(spec.required_fields),
        "aliases": {alias: dict(fixed) for alias, fixed in sorted(spec.aliases.items())},
        "formula": spec.doc,
    }


def metric_reference(family: str | None = None) -> list[dict[str, Any]]:
    """Every registered metric (optionally of one family), in reference order."""
    order = list(FAMILY_TITLES)
    specs = sorted(list_specs(family), key=lambda s: (
        order.index(s.family) if s.family in order else len(order), s.family, s.name))
    return [metric_entry(s) for s in specs]


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_markdown() -> str:
    """``docs/metrics.md``: one section per family, one entry per metric."""
    lines = ["# Metric reference", "",
             "Generated from the metric registry by `python -m ragmeter.metrics.reference`; "
             "do not edit by hand (a test fails when this file is stale). The same list is "
             "printed by `ragmeter metrics` (`--json` for machines).", "",
             "A metric is written `name[@k][(param=value,...)]`, e.g. `ndcg@10(gain=exp)`; "
             "parameters left at their default are omitted from the canonical name, and a "
             "cutoff list `hit_rate@1,5,10` expands to one metric per cutoff.", ""]
    entries = metric_reference()
    for family in dict.fromkeys(e["family"] for e in entries):
        lines += [f"## {FAMILY_TITLES.get(family, family)}", ""]
        for e in (x for x in entries if x["family"] == family):
            rng = e["range"]
            lines += [f"### `{e['name']}`", "", _cell(e["formula"]), "",
                      f"- direction: {e['direction']}"
                      + (f"; range [{_default(rng[0])}, {_default(rng[1])}]" if rng else ""),
                      f"- cutoff: {_CUTOFF[e['cutoff']]}"]
            if e["required_fields"]:
                lines.append("- needs: " + ", ".join(f"`{f}`" for f in e["required_fields"]))
            if e["aliases"]:
                lines.append("- aliases: " + ", ".join(
                    f"`{a}`" + (" = " + ",".join(f"{k}={_default(v)}" for k, v in fx.items())
                                if fx else "") for a, fx in e["aliases"].items()))
            if e["params"]:
                lines += ["", "| parameter | type | default | choices | meaning |",
                          "|---|---|---|---|---|"]
                for p in e["params"]:
                    choices = ", ".join(map(_default, p["choices"])) if p["choices"] else "any"
                    lines.append(f"| `{p['name']}` | {p['type']} | `{_default(p['default'])}` | "
                                 f"{_cell(choices)} | {_cell(p['doc'])} |")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def default_path() -> Path:
    """``docs/metrics.md`` of the source checkout this module belongs to."""
    return Path(__file__).resolve().parents[3] / "docs" / "metrics.md"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = default_path()
    text = render_markdown()
    if "--check" in args:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is stale: run python -m ragmeter.metrics.reference", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
