"""One home per concept: metric names are split by the metric registry only, dataset formats
live in data/formats.py, masking in secrets.py, and the data layer names keys while the CLI
names options."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli, write_jsonl
from ragmeter.errors import EXIT_USAGE

run = run_cli
_jsonl = write_jsonl


SRC = Path(__file__).parents[1] / "src" / "ragmeter"


def test_metric_names_are_split_by_the_registry_only() -> None:
    from ragmeter.cli.commands.retrieval import build_metrics
    from ragmeter.metrics.registry import metric_base, with_cutoffs
    from ragmeter.reports.decision import base_name, rank_metrics

    assert metric_base("hit_rate@1(level=doc)") == base_name("hit_rate@1(level=doc)") == "hit_rate@1"
    assert with_cutoffs("recall(level=doc)", [5, 10]) == "recall@5,10(level=doc)"
    assert [str(m) for m in build_metrics("recall(level=doc)", [5], "chunk")] == \
        ["recall@5(level=doc)"]
    assert rank_metrics(["rouge_1", "hit_rate@1(level=doc)", "mrr"])[0] == "mrr"
    decision = (SRC / "reports" / "decision.py").read_text(encoding="utf-8")
    assert "re.compile" not in decision and 'split("@")' not in decision
    assert 'partition("(")' not in (SRC / "cli" / "commands" / "retrieval.py").read_text(
        encoding="utf-8")


def test_dataset_formats_have_one_home() -> None:
    from ragmeter.cli import common
    from ragmeter.data.formats import FORMATS
    from ragmeter.runner.config import DATASET_FORMATS

    assert DATASET_FORMATS is FORMATS
    assert common._check_format("deepeval") == "deepeval"
    with pytest.raises(Exception, match="--format"):
        common._check_format("xml")


def test_masking_has_one_home() -> None:
    import ragmeter.judges.openai_http as http

    assert not hasattr(http, "redact") and not hasattr(__import__("ragmeter.cli.common",
                                                                  fromlist=["x"]), "_mask")


def test_data_layer_names_keys_and_the_cli_names_options(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from ragmeter.data.loaders import from_records, load_samples
    from ragmeter.errors import ConfigError

    f = _jsonl(tmp_path / "s.jsonl", [{"user_input": "q", "response": "a", "reference": "a"}])
    with pytest.raises(ConfigError) as e:
        load_samples(f, format="xml")
    assert e.value.key == "format" and "--format" not in str(e.value)
    with pytest.raises(ConfigError) as e:
        from_records([{"q": 1}], column_map={"user_input": "missing"})
    assert e.value.key == "column_map" and "--map" not in str(e.value)
    code, _, err = run(capsys, "score", "generation", "--samples", str(f), "--format", "xml")
    assert code == EXIT_USAGE and "option '--format'" in err
    code, _, err = run(capsys, "score", "generation", "--samples", str(f), "--map", "user_input=zz",
                       "--metrics", "rouge_1")
    assert code == EXIT_USAGE and "option '--map'" in err and "'zz'" in err
