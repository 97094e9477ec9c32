"""Links between the viewer's pages (relative to the site root; the static export rewrites
them to files)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode


def href(path: str, **params: Any) -> str:
    """``path?k=v`` with the non-empty parameters, URL-encoded (lists repeat the key)."""
    pairs: list[tuple[str, str]] = []
    for k, v in params.items():
        if v is None or v == "" or v == []:
            continue
        for item in (v if isinstance(v, (list, tuple)) else [v]):
            pairs.append((k, str(item)))
    return path + ("?" + urlencode(pairs) if pairs else "")


def run_href(run_id: str, lang: str) -> str:
    return href(f"/run/{quote(run_id, safe='')}", lang=lang)


def sample_href(run_id: str, sample_id: str, lang: str) -> str:
    return href(f"/run/{quote(run_id, safe='')}/sample/{quote(sample_id, safe='')}", lang=lang)


def tags_html(tags: Any) -> str:
    from html import escape

    return " ".join(f"<span class=qtype>{escape(str(x))}</span>" for x in tags)
