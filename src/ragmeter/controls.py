"""Control characters made visible in what ragmeter prints and writes.

Sample texts, ids and model replies are untrusted: an ``ESC [ 2 J`` in a question would clear
the reader's terminal, ``ESC ] 0 ;`` retitle it, a right-to-left override (U+202E) reorder what
follows, and a NUL or ESC makes an XML file (JUnit) one that strict parsers refuse. Before such
text reaches a terminal or an XML file, :func:`escape_controls` writes each of these characters
as a visible escape (``\\x1b``, ``\\u202e``):

* C0 controls except tab and line feed (so ``\\r``, ``\\x00``, ``\\x1b`` too), DEL and the C1
  controls U+0080–U+009F (U+009B is a one-byte escape-sequence introducer on some terminals);
* the bidirectional embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069);
* lone surrogates (U+D800–U+DFFF: not text, and unencodable as UTF-8) and the non-characters
  U+FFFE / U+FFFF.

Every character XML 1.0 forbids is in this set, so the result is also valid XML character data.
"""

from __future__ import annotations

import re

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
                       "\ud800-\udfff\ufffe\uffff]")


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with control, bidi-override and surrogate characters written as escapes;
    tab and line feed kept. Text without them is returned as it is (the same object)."""
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub(_visible, text)


def has_controls(text: str) -> bool:
    """Whether :func:`escape_controls` would change ``text``."""
    return _CONTROLS.search(text) is not None


__all__ = ["escape_controls", "has_controls"]
