"""Metric registry: canonical strings round-trip, aliases resolve, errors are actionable."""

from __future__ import annotations

import pytest

from ragmeter.errors import MetricSpecError
from ragmeter.metrics.registry import MetricSpec, Param, make_metric, parse_metric, register

register(MetricSpec(
    name="toy_at_k", family="test", doc="toy", k="optional",
    params=(Param("level", str, "chunk", ("chunk", "doc")), Param("gain", str, "linear", ("linear", "exp")),
            Param("alpha", float, 0.5), Param("strict", bool, False)),
    aliases={"toy_doc": {"level": "doc"}},
))


@pytest.mark.parametrize("text,canonical", [
    ("toy_at_k", "toy_at_k"),
    ("toy_at_k@10", "toy_at_k@10"),
    ("toy_at_k@10(level=chunk)", "toy_at_k@10"),
    ("toy_at_k@10(level=doc)", "toy_at_k@10(level=doc)"),
    ("toy_at_k@5( gain = exp , level=doc )", "toy_at_k@5(gain=exp,level=doc)"),
    ("toy_doc@3", "toy_at_k@3(level=doc)"),
    ("toy_at_k(alpha=0.25,strict=true)", "toy_at_k(alpha=0.25,strict=true)"),
])
def test_round_trip(text: str, canonical: str) -> None:
    m = parse_metric(text)
    assert str(m) == canonical
    assert parse_metric(str(m)) == m


@pytest.mark.parametrize("text,fragment", [
    ("nope@5", "unknown metric"),
    ("toy_at_k@x", "cutoff"),
    ("toy_at_k@0", "positive"),
    ("toy_at_k(level=page)", "one of chunk, doc"),
    ("toy_at_k(alpha=big)", "must be float"),
    ("toy_at_k(bogus=1)", "no parameter 'bogus'"),
    ("toy_at_k(level)", "key=value"),
    ("toy_doc(level=chunk)", "alias fixes"),
])
def test_errors(text: str, fragment: str) -> None:
    with pytest.raises(MetricSpecError, match=fragment):
        parse_metric(text)


def test_equal_metrics_hash_equal() -> None:
    assert make_metric("toy_at_k", k=5, level="doc") == parse_metric("toy_doc@5")
    assert len({parse_metric("toy_at_k@5"), parse_metric("toy_at_k@5(level=chunk)")}) == 1
