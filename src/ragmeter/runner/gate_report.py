"""What a failed quality gate shows: the worst samples of each failed metric (question, answer,
reason), as text for ``assert_metrics`` and pytest, and as JUnit XML for CI
(``ragmeter gate --junit FILE``).

Sample texts are untrusted: in both forms their control characters are written as visible
escapes (:func:`~ragmeter.controls.escape_controls`), so the text cannot drive a terminal and
the XML holds no character XML 1.0 forbids (strict parsers accept it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from xml.etree import ElementTree as ET

from ragmeter.controls import escape_controls
from ragmeter.results.frames import worst_samples
from ragmeter.results.records import EvalResult
from ragmeter.runner.gating import GateRow, format_rows

#: worst samples listed per failed metric
WORST = 3


def failing_samples(results: Mapping[str, EvalResult] | EvalResult, rows: Sequence[GateRow],
                    samples: Mapping[str, Any] | None = None, n: int = WORST
                    ) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """For each failed row whose metric is in the results: its ``n`` worst samples."""
    if isinstance(results, EvalResult):
        results = {results.name: results}
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        res = results.get(row.target)
        if row.passed or res is None or row.metric not in res.results:
            continue
        view = EvalResult(res.name, res.results, res.meta, {**(samples or {}), **res.samples})
        out[(row.target, row.metric)] = worst_samples(view, row.metric, n)
    return out


def _short(x: Any, n: int = 160) -> str:
    text = escape_controls(" ".join(str(x).split())) if x is not None else "–"
    return text if len(text) <= n else text[:n - 1] + "…"


def format_failures(failures: Mapping[tuple[str, str], Sequence[Mapping[str, Any]]]) -> str:
    """Plain text: per failed metric its worst samples with question, answer and reason."""
    lines = []
    for (target, metric), worst in failures.items():
        if not worst:
            continue
        lines.append(f"worst samples of {target}:{metric}:")
        for w in worst:
            value = "unscored" if w["value"] is None else f"{w['value']:.4f}"
            lines.append(f"  - {escape_controls(str(w['sample_id']))} ({value})")
            lines.append(f"      question: {_short(w.get('question'))}")
            lines += _shown_answer(w)
            lines.append(f"      reason:   {_short(w.get('reason'))}")
    return "\n".join(lines)


def _shown_answer(w: Mapping[str, Any]) -> list[str]:
    """What a worst sample was scored on: a target's answer, contexts and latency under the
    target's name; a retrieval sample's first retrieved ids and its gold; else the answer."""
    lines = []
    if w.get("target"):
        latency = w.get("latency_s")
        timing = f" (latency {latency:.3f} s)" if isinstance(latency, float) else ""
        lines.append(f"      target:   {_short(w['target'])}{timing}")
        if w.get("target_error"):
            lines.append(f"      error:    {_short(w['target_error'])}")
    if w.get("answer") is None and w.get("retrieved") is not None:
        lines.append(f"      retrieved: {_short(', '.join(w['retrieved']) or '(nothing)')}")
        lines.append(f"      gold:     {_short(', '.join(w.get('gold') or []) or '–')}")
        return lines
    lines.append(f"      answer:   {_short(w.get('answer'))}")
    if w.get("target") and w.get("contexts"):
        lines.append(f"      contexts: {_short(' | '.join(w['contexts']), 240)}")
    return lines


def gate_message(rows: Sequence[GateRow], failures: Mapping[tuple[str, str], Any]) -> str:
    failed = sum(not r.passed for r in rows)
    text = f"{failed} of {len(rows)} metric check(s) failed:\n{format_rows(list(rows))}"
    extra = format_failures(failures)
    return text + ("\n\n" + extra if extra else "")


def junit_xml(rows: Sequence[GateRow], failures: Mapping[tuple[str, str], Any],
              suite: str) -> str:
    """One ``<testcase>`` per checked metric, named after the metric (its threshold in a
    ``threshold`` property); a failed one carries the gate's message and its worst
    samples."""
    root = ET.Element("testsuites")
    unenforced = [r for r in rows if r.backing == "advisory" and r.would_pass is False]
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(rows)),
                       failures=str(sum(not r.passed for r in rows)), errors="0",
                       skipped=str(len(unenforced)))
    for r in rows:
        # the name stays the metric's whatever its threshold (CI keeps its history); the
        # threshold is a property of the test case
        case = ET.SubElement(ts, "testcase", classname=f"ragmeter.{r.target}", name=r.metric)
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="threshold", value=str(r.threshold))
        if r.backing:  # a judged metric: backed by a judge card, or advisory, and why
            ET.SubElement(props, "property", name="judge_card",
                          value=f"{r.backing}: {r.card}")
        if r in unenforced:  # a failing judged gate without a card: not enforced
            ET.SubElement(case, "skipped", message=r.message)
        if not r.passed:
            fail = ET.SubElement(case, "failure", message=r.message, type="threshold")
            fail.text = "\n".join(x for x in (
                f"{r.target}:{r.metric} {r.threshold}: {r.message}",
                format_failures({(r.target, r.metric): failures.get((r.target, r.metric))
                                 or []})) if x)
    _escape_tree(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


def _escape_tree(root: ET.Element) -> None:
    """Every text, tail and attribute value of ``root`` with its control characters escaped
    (names of samples, systems and metrics included, wherever they were put)."""
    for el in root.iter():
        if el.text:
            el.text = escape_controls(el.text)
        if el.tail:
            el.tail = escape_controls(el.tail)
        for k, v in el.attrib.items():
            el.attrib[k] = escape_controls(v)
