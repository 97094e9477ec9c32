"""The viewer's page table: one :class:`Page` per page — route, title, navigation entry and
handler. The app's routes, the navigation bar and the page list in ``docs/reports.md`` are all
generated from :data:`PAGES`, so a new page is one entry::

    @page("/notes", title=("Notes", "Заметки"), nav=True, doc="free notes of every run")
    def notes(req: PageRequest) -> PageOut:
        rows = req.viewer.store.run_rows()
        return PageOut("<h1>…</h1>")

The built-in pages are declared in :mod:`ragmeter.view.routes` (loaded on first lookup);
``python -m ragmeter.view.reference`` refreshes the page list in ``docs/reports.md``.
A handler runs in a worker thread; a :class:`~ragmeter.view.params.BadQuery` it raises becomes
a 400 page, a run that cannot be read a 500 page for that run alone, and any other
:class:`~ragmeter.errors.RagmeterError` a 404 page, each with the message.

The pages only read, with one kind of exception: an entry declared ``method="POST"`` (the
labelling page's answers) takes a JSON body (:attr:`PageRequest.body`) and answers JSON; the
app accepts it only from the viewer's own pages (same origin, and the viewer's token in the
``X-Ragmeter-Token`` header), never caches it, and it writes nothing to the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmeter.registry import Registry
from ragmeter.reports.i18n import t

if TYPE_CHECKING:
    from ragmeter.view.app import Viewer


@dataclass
class PageRequest:
    """What a handler gets: the viewer (store, run cache), the aiohttp request and the
    language the page is shown in."""

    viewer: Viewer
    request: Any
    lang: str
    #: the JSON body of a POST entry (``None`` for a page that is read)
    body: Any = None

    @property
    def query(self) -> Any:
        return self.request.query

    def param(self, name: str) -> str:
        """A query parameter, stripped (``""`` when absent)."""
        return str(self.request.query.get(name, "")).strip()

    def match(self, name: str) -> str:
        """A part of the route (``{run_id}``)."""
        return str(self.request.match_info[name])


@dataclass
class PageOut:
    """A handler's answer: the body HTML, and optionally a title other than the page's, a
    status and the data for the page script."""

    body: str
    title: str | None = None
    status: int = 200
    data: dict[str, Any] | None = None


Handler = Callable[[PageRequest], PageOut]


@dataclass(frozen=True)
class Page:
    """One page of the viewer.

    ``title``: a key of :data:`ragmeter.reports.i18n.TEXT` or an ``(en, ru)`` pair. ``nav``:
    shown in the navigation bar (in table order). ``section``: the navigation entry highlighted
    on this page (default: the page itself). ``doc``: one line for the docs' page list, where
    the route is shown as ``shown_route`` (default ``route``).
    """

    name: str
    route: str
    title: str | tuple[str, str]
    handler: Handler = field(compare=False)
    nav: bool = False
    section: str | None = None
    doc: str = ""
    shown_route: str | None = None
    #: the query parameters the page reads (any other is a 400); ``None``: not checked
    params: tuple[str, ...] | None = None
    #: rendered pages are cached per store version; a page over data outside the store
    #: (a running run's progress) sets this off
    cache: bool = True
    #: the handler's ``PageOut.data`` is the answer, as JSON (a small endpoint pages poll)
    json: bool = False
    #: the page also shows the runs still running: its cache follows the runner's folder too
    watches_runs: bool = False
    #: ``GET`` (a page or a JSON read) or ``POST`` (an answer of the labelling page: JSON in,
    #: JSON out, only from the viewer's own pages)
    method: str = "GET"

    def title_in(self, lang: str) -> str:
        if isinstance(self.title, tuple):
            en, ru = self.title
            return ru if lang == "ru" and ru else en
        return t(self.title, lang)

    @property
    def active(self) -> str:
        return self.section or self.name


#: Every page by name, in navigation order.
PAGES: Registry[Page] = Registry("viewer page", key="page", modules=("ragmeter.view.routes",))


def page(route: str, *, title: str | tuple[str, str], name: str | None = None,
         nav: bool = False, section: str | None = None, doc: str = "",
         shown_route: str | None = None, params: tuple[str, ...] | None = None,
         cache: bool = True, json: bool = False,
         watches_runs: bool = False, method: str = "GET") -> Callable[[Handler], Handler]:
    """Declare the decorated function as the handler of a page (its name: the function's)."""
    if method not in ("GET", "POST"):
        raise ValueError(f"a viewer page is GET or POST, got {method!r}")

    def deco(fn: Handler) -> Handler:
        key = name or fn.__name__
        post = method == "POST"
        PAGES.register(key, Page(key, route, title, fn, nav=nav, section=section, doc=doc,
                                 shown_route=shown_route, params=params,
                                 cache=cache and not post, json=json or post,
                                 watches_runs=watches_runs, method=method))
        return fn
    return deco


def nav_entries() -> list[Page]:
    """The pages of the navigation bar, in order."""
    return [p for p in PAGES if p.nav]


def page_list(lang: str = "en") -> str:
    """The docs' page list (Markdown table)."""
    rows = ["| page | what it shows |", "|---|---|"]
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    for p in PAGES:
        verb = "POST " if p.method == "POST" else ""
        rows.append(f"| {cell(p.title_in(lang))} (`{verb}{cell(p.shown_route or p.route)}`) | "
                    f"{cell(p.doc)} |")
    return "\n".join(rows)

