"""``ragmeter view --export DIR``: the dashboard as static files that open offline from disk.

The pages are the viewer's own, fetched in-process (no port is opened) starting from the
navigation bar and every registry page, following the links between pages; each page becomes
one ``.html`` file and every link between exported pages is rewritten to a relative file path,
so the folder can be zipped, mailed or opened straight from disk. Links to pages not exported
(filters, the other language, sample pages past the limit) are left as plain text, and the
filter forms are turned off (they need the server).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections import deque
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from ragmeter.view.table import nav_entries

#: sample pages exported per run (the explorer links every sample; a big run has thousands)
DEFAULT_SAMPLES = 20
#: pages exported at most
MAX_PAGES = 3000
_HREF = re.compile(r'href="(/[^"]*)"')
_SKIP = ("/live/", "/api/")


@dataclass
class ExportSummary:
    folder: Path
    pages: int
    skipped_links: int


def _key(url: str, lang: str) -> str:
    """A page's identity: path plus its query without the export's own language."""
    parts = urlsplit(unescape(url))
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                   if not (k == "lang" and v == lang) and v != "")
    return parts.path + ("?" + urlencode(query) if query else "")


def file_for(key: str) -> str:
    """The file of a page, relative to the export folder (``/`` → ``index.html``)."""
    parts = urlsplit(key)
    path = parts.path.strip("/")
    segs = [quote(unquote(s), safe="-_.~").replace("%", "_") for s in path.split("/") if s]
    base = "/".join(segs) or "index"
    if parts.query:
        base += "--" + hashlib.sha256(parts.query.encode()).hexdigest()[:10]
    return base + ".html"


def _wanted(key: str, samples_per_run: dict[str, int], max_samples: int) -> bool:
    path = urlsplit(key).path
    if any(path.startswith(p) for p in _SKIP):
        return False
    if "/sample/" in path:
        run = path.split("/sample/", 1)[0]
        if samples_per_run.get(run, 0) >= max_samples:
            return False
        samples_per_run[run] = samples_per_run.get(run, 0) + 1
    return True


def _rewrite(html: str, here: str, files: dict[str, str], lang: str) -> tuple[str, int]:
    """Links to exported pages → relative file paths; others → plain text; forms off."""
    missing = 0
    folder = os.path.dirname(here)

    def sub(m: re.Match[str]) -> str:
        nonlocal missing
        target = files.get(_key(m.group(1), lang))
        if target is None:
            missing += 1
            return 'data-offline="not exported"'
        return f'href="{os.path.relpath(target, folder or ".")}"'
    html = _HREF.sub(sub, html)
    html = html.replace("<form class=filters",
                        '<form class=filters data-offline style="display:none"')
    html = html.replace("<form method=get action=\"/diff\" id=pick-form",
                        "<form onsubmit=\"return false\" id=pick-form")
    return html, missing


async def _crawl(app: object, lang: str, max_samples: int, max_pages: int
                 ) -> dict[str, str]:
    from aiohttp.test_utils import TestClient, TestServer

    pages: dict[str, str] = {}
    seen: set[str] = set()
    samples: dict[str, int] = {}
    queue: deque[str] = deque(["/", *[p.route for p in nav_entries() if "{" not in p.route]])
    async with TestClient(TestServer(app)) as client:  # type: ignore[arg-type]
        while queue and len(pages) < max_pages:
            key = _key(queue.popleft(), lang)
            if key in seen:
                continue
            seen.add(key)
            if not _wanted(key, samples, max_samples):
                continue
            parts = urlsplit(key)
            query = [*parse_qsl(parts.query, keep_blank_values=True), ("lang", lang)]
            resp = await client.get(parts.path, params=query)
            if resp.status != 200 or "text/html" not in resp.headers.get("Content-Type", ""):
                continue
            html = await resp.text()
            pages[key] = html
            for link in _HREF.findall(html):
                k = _key(link, lang)
                if k not in seen and "lang=" not in k:
                    queue.append(k)
    return pages


def export_site(store_url: str | None, folder: str | os.PathLike[str], *,
                lang: str | None = None, max_samples: int = DEFAULT_SAMPLES,
                max_pages: int = MAX_PAGES) -> ExportSummary:
    """Write the dashboard of ``store_url`` under ``folder`` (created; ``index.html`` first)."""
    from ragmeter.view.app import VIEWER, make_app

    app = make_app(store_url, lang, static=True)
    lang = lang or app[VIEWER].default_lang()
    pages = asyncio.run(_crawl(app, lang, max_samples, max_pages))
    files = {key: file_for(key) for key in pages}
    out = Path(folder)
    skipped = 0
    for key, html in pages.items():
        target = out / files[key]
        target.parent.mkdir(parents=True, exist_ok=True)
        text, missing = _rewrite(html, files[key], files, lang)
        skipped += missing
        target.write_text(text, encoding="utf-8")
    return ExportSummary(out, len(pages), skipped)
