"""The viewer's page list in ``docs/reports.md``, generated from the page table::

    python -m ragmeter.view.reference            # rewrites the list between its markers
    python -m ragmeter.view.reference --check    # exit 1 when the list is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

from ragmeter.registry import replace_block, sync_generated
from ragmeter.view.table import page_list


def docs_path() -> Path:
    """``docs/reports.md`` of the source checkout this module belongs to."""
    return Path(__file__).resolve().parents[3] / "docs" / "reports.md"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = docs_path()
    text = replace_block(path.read_text(encoding="utf-8"), "pages", page_list())
    return sync_generated({path: text}, check="--check" in args,
                          command="python -m ragmeter.view.reference")


if __name__ == "__main__":
    raise SystemExit(main())
