"""Control characters in samples never reach a terminal or an XML file raw.

A question holding ``ESC [ 31 m``, an OSC title sequence, NUL, DEL, a C1 CSI (U+009B) or a
right-to-left override is stored, then gated with ``ragmeter gate --junit`` in a real process:
the JUnit file parses with strict XML parsers (expat, and lxml when installed) and holds no
character XML 1.0 forbids; stdout and stderr hold none of those characters raw, only their
visible escapes. Error messages and ``-v`` logs naming a hostile id are escaped the same way.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from ragmeter.controls import escape_controls

ROOT = Path(__file__).parents[1]
HOSTILE_Q = "Where \x1b[31mRED\x1b[0m \x00nul \x1b]0;pwned\x07 is \x7f it?"
HOSTILE_A = "Paris \x9b31m is in France \u202eevil"
HOSTILE_ID = "q2\x1b[2J"
#: characters XML 1.0 forbids (besides the surrogates and U+FFFE / U+FFFF)
XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
RAW = ("\x1b", "\x00", "\x9b", "\u202e", "\x7f")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("RAGMETER_STORE_URL", None)
    return subprocess.run([sys.executable, "-m", "ragmeter", *args], capture_output=True,
                          timeout=300, cwd=cwd, env=env)


def _samples(tmp_path: Path) -> Path:
    rows = [{"id": "q1", "question": HOSTILE_Q, "answer": HOSTILE_A,
             "reference": "Paris is in France."},
            {"id": HOSTILE_ID, "question": "What?", "answer": "Nothing here",
             "reference": "Something else entirely"}]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n", "utf-8")
    return p


def _assert_no_raw(data: bytes, where: str) -> str:
    text = data.decode("utf-8")   # valid UTF-8: no lone surrogate was written
    for ch in RAW:
        assert ch not in text, f"{where} holds raw {ch!r}:\n{text[-1500:]}"
    return text


def test_check_junit_is_strict_xml_and_the_terminal_gets_escapes(tmp_path: Path) -> None:
    _samples(tmp_path)
    (tmp_path / "bench.yaml").write_text(
        "name: ctl\nstore: ctl.sqlite\ndatasets:\n  - path: s.jsonl\ntiers:\n"
        "  - name: generation\n    metrics: [rouge_1]\n", "utf-8")
    run = _cli("run", "bench.yaml", "-q", cwd=tmp_path)
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    xml_path = tmp_path / "ci" / "gate.xml"
    out = _cli("gate", "latest", "--store", f"sqlite:///{tmp_path / 'ctl.sqlite'}",
               "--min", "rouge_1=0.99", "--junit", str(xml_path), cwd=tmp_path)
    assert out.returncode == 1, out.stderr.decode(errors="replace")
    stdout = _assert_no_raw(out.stdout, "stdout")
    _assert_no_raw(out.stderr, "stderr")
    # the reader still sees what the sample holds, as escapes
    assert "\\x1b[31mRED" in stdout and "\\u202eevil" in stdout and "q2\\x1b[2J" in stdout

    raw = xml_path.read_bytes()
    text = raw.decode("utf-8")
    assert XML_FORBIDDEN.search(text) is None
    root = ET.fromstring(raw)  # expat: refuses any character XML 1.0 forbids
    body = root.find("testsuite/testcase/failure")
    assert body is not None and body.text is not None
    assert "\\x1b]0;pwned\\x07" in body.text and "\\x00nul" in body.text
    assert "\\x9b31m" in body.text and "q2\\x1b[2J" in body.text
    try:
        from lxml import etree
    except ImportError:
        return
    strict = etree.fromstring(raw, etree.XMLParser(recover=False, resolve_entities=False))
    assert strict.find("testsuite").get("failures") == "1"


def test_error_messages_and_logs_escape_a_hostile_id(tmp_path: Path) -> None:
    rows = [{"id": HOSTILE_ID, "question": "a", "answer": "x", "reference": "x"},
            {"id": HOSTILE_ID, "question": "b", "answer": "y", "reference": "y"}]
    p = tmp_path / "dup\x1b[2J.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n", "utf-8")
    out = _cli("-v", "score", "generation", "--samples", str(p), "--metrics", "rouge_1", cwd=tmp_path)
    assert out.returncode == 2
    err = _assert_no_raw(out.stderr, "stderr")
    _assert_no_raw(out.stdout, "stdout")
    assert "duplicate id 'q2\\x1b[2J'" in err and "dup\\x1b[2J.jsonl" in err


@pytest.mark.parametrize("text, want", [
    ("plain текст\twith tab\nand newline", "plain текст\twith tab\nand newline"),
    ("\x1b[2J", "\\x1b[2J"), ("a\rb", "a\\x0db"), ("\x00", "\\x00"),
    ("\x7f\x85\x9b", "\\x7f\\x85\\x9b"),
    ("\u202eevil\u2066", "\\u202eevil\\u2066"), ("\ud800", "\\ud800"), ("\uffff", "\\uffff"),
    ("😀 \u200d ok", "😀 \u200d ok"),
])
def test_escape_controls_keeps_text_and_escapes_controls(text: str, want: str) -> None:
    assert escape_controls(text) == want
    assert XML_FORBIDDEN.search(escape_controls(text)) is None
