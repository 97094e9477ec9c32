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


def test_metric_list_grammar_lives_in_the_registry() -> None:
    from ragmeter.metrics.registry import (
        expand_cutoffs,
        needs_cutoff,
        parse_metrics,
        split_metric_key,
        split_metric_list,
    )

    assert split_metric_list("hit_rate@1,5,10,mrr,ndcg@3(gain=exp,level=doc)") == [
        "hit_rate@1,5,10", "mrr", "ndcg@3(gain=exp,level=doc)"]
    assert expand_cutoffs("hit_rate@1,5(level=doc)") == [
        "hit_rate@1(level=doc)", "hit_rate@5(level=doc)"]
    assert [str(m) for m in parse_metrics("hit_rate@1,5,mrr,hit_rate@5")] == [
        "hit_rate@1", "hit_rate@5", "mrr"]
    assert needs_cutoff("recall") and not needs_cutoff("mrr") and not needs_cutoff("nope")
    assert split_metric_key("ndcg@10(gain=exp)") == ("ndcg", 10, "gain=exp")
    assert split_metric_key("accuracy") == ("accuracy", None, "")


def test_config_expands_cutoff_lists(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ragmeter.runner.config import parse_config

    cfg = parse_config({"name": "x", "datasets": [{"name": "d", "path": "d.jsonl"}],
                        "tiers": [{"name": "retrieval", "metrics": ["hit_rate@1,5", "mrr"]}]},
                       tmp_path)
    assert list(cfg.tiers[0].metrics) == ["hit_rate@1", "hit_rate@5", "mrr"]


def test_metric_names_live_in_the_generic_registry_and_scopes_undo() -> None:
    from ragmeter.metrics import registry as reg
    from ragmeter.registry import Registry

    assert isinstance(reg.SPECS, Registry) and "ndcg" in reg.SPECS and "toy_at_k" in reg.SPECS
    spec = MetricSpec(name="toy_scoped", family="test", doc="toy", aliases={"toy_s": {}})
    with reg.scoped():
        register(spec)
        register(spec)  # the same spec again (a module imported twice) is fine
        assert str(parse_metric("toy_s")) == "toy_scoped"
        with pytest.raises(MetricSpecError, match="registered twice"):
            register(MetricSpec(name="toy_scoped", family="test", doc="other"))
    assert "toy_scoped" not in reg.SPECS and "toy_s" not in reg._ALIASES
    with pytest.raises(MetricSpecError, match=r"unknown metric 'toy_scoped'.*ndcg"):
        parse_metric("toy_scoped")
