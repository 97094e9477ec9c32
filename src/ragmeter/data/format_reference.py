"""The sample-format reference, generated from the format table: ``docs/formats.md`` and the
layout table of the README are written from :data:`ragmeter.data.formats.FORMATS`, so the
list can never drift from the code.

Regenerate after declaring or changing a format::

    python -m ragmeter.data.format_reference            # writes docs/formats.md and README.md
    python -m ragmeter.data.format_reference --check    # exit 1 when either is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

from ragmeter.data.formats import FALLBACK, FORMATS, Format
from ragmeter.data.records import ALIASES
from ragmeter.registry import replace_block, sync_generated

BLOCK = "formats"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def recognised_by(fmt: Format) -> str:
    """How ``--format auto`` recognises the layout, in words."""
    if fmt.name == "auto":
        return "the default"
    if fmt.name == FALLBACK:
        return "records no other layout claims"
    if fmt.detect is not None:
        return "its own test of the columns"
    parts = []
    if fmt.requires:
        parts.append(" and ".join(f"`{k}`" for k in fmt.requires))
    if fmt.requires_any:
        parts.append("one of " + _code(fmt.requires_any))
    return "has " + " and ".join(parts) if parts else "`--format` only"


def mapping(fmt: Format) -> str:
    """``input → user_input, …`` or the columns read under their own names."""
    if fmt.fields:
        return ", ".join(f"`{src}` → `{dst}`" for src, dst in fmt.fields.items())
    return _code(fmt.shown_columns())


def readme_table() -> str:
    """The README's layout table (one row per format but ``auto``)."""
    lines = ["| `--format` | layout | columns, notes |", "|---|---|---|"]
    for name, fmt in FORMATS.items():
        if name != "auto":
            cols = "; ".join(x for x in (_code(fmt.shown_columns()), fmt.note) if x)
            lines.append(f"| `{name}` | {_cell(fmt.doc)} | {_cell(cols)} |")
    return "\n".join(lines)


def render_markdown() -> str:
    """``docs/formats.md``."""
    lines = [
        "# Sample formats",
        "",
        "Generated from the format table (`ragmeter.data.formats.FORMATS`) by "
        "`python -m ragmeter.data.format_reference`; do not edit by hand (a test fails when "
        "this file is stale).",
        "",
        "Samples load from JSON Lines, JSON, CSV, TSV or Parquet — the container is detected by "
        "content, never by the file name — in the layouts below. `--format NAME` (a benchmark "
        "dataset's `format:`, `load_samples(path, format=NAME)`) forces one; `--map "
        "TARGET=SOURCE` renames a column first. Files are UTF-8 with or without a byte-order "
        "mark; lines may end in `\\n`, `\\r\\n` or `\\r`.",
        "",
        "| format | layout | columns → ragmeter fields | recognised by |",
        "|---|---|---|---|",
    ]
    for name, fmt in FORMATS.items():
        lines.append(f"| `{name}` | {_cell(fmt.doc)} | {_cell(mapping(fmt))} | "
                     f"{_cell(recognised_by(fmt))} |")
    lines += ["", "## Notes", ""]
    lines += [f"- `{name}`: {_cell(fmt.note)}" for name, fmt in FORMATS.items() if fmt.note]
    lines += [
        "",
        "Layouts are tried in their declared order of priority; an explicit `--format` is "
        "refused (with the likely format named) on records of another layout that renames "
        "columns, so DeepEval's gold `context` is never read as retrieved contexts.",
        "",
        "## Field aliases of the generic reader",
        "",
        ", ".join(f"`{a}` → `{f}`" for a, f in ALIASES.items()) + ".",
        "",
        "## Adding a layout",
        "",
        "One declaration in `ragmeter/data/formats.py` (or in your own module, before loading):",
        "",
        "```python",
        "from ragmeter.data.formats import Format, declare_format",
        "",
        'declare_format(Format(',
        '    "helpdesk", "a help-desk export",',
        '    fields={"ticket_text": "user_input", "agent_reply": "reference",',
        '            "kb_article": "gold_doc_ids"},',
        '    requires=("ticket_text",)))',
        "```",
        "",
        "Detection, the `--format` choices and their errors, `load_samples(format=...)` and this "
        "page then know it; run `python -m ragmeter.data.format_reference` to refresh the page.",
    ]
    return "\n".join(lines) + "\n"


def root() -> Path:
    """The source checkout this module belongs to."""
    return Path(__file__).resolve().parents[3]


def outputs() -> dict[Path, str]:
    """Each generated file and its expected text."""
    readme = root() / "README.md"
    current = readme.read_text(encoding="utf-8") if readme.exists() else ""
    return {root() / "docs" / "formats.md": render_markdown(),
            readme: replace_block(current, BLOCK, readme_table())}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    return sync_generated(outputs(), check="--check" in args,
                          command="python -m ragmeter.data.format_reference")


if __name__ == "__main__":
    raise SystemExit(main())
