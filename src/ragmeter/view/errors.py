"""The viewer's errors, each said in the page's language: a 404 (nothing by that name), a 500
for one item that cannot be read, a 400 for a query parameter (:class:`~ragmeter.view.params.
BadQuery`). The English text is the exception's own message (logs, tests); a page shows
:meth:`ViewError.text` in its language."""

from __future__ import annotations

from typing import Any

from ragmeter.errors import RagmeterError
from ragmeter.reports.i18n import t


class ViewError(RagmeterError):
    """An error of one page, with its message as an i18n key and the fields it names."""

    def __init__(self, key: str, **fields: Any):
        self.key, self.fields = key, fields
        super().__init__(self.text("en"))

    def text(self, lang: str) -> str:
        return t(self.key, lang, **self.fields)


class NotFound(ViewError):
    """Nothing by that name (HTTP 404)."""


def message(exc: BaseException, lang: str) -> str:
    """An error's message in the page's language (others than the viewer's: as raised)."""
    return exc.text(lang) if isinstance(exc, ViewError) else str(exc)


__all__ = ["NotFound", "ViewError", "message"]
