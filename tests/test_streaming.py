"""Streaming and bounded memory: ragged chunked metrics, the streamed TREC run, streamed samples."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ragmeter.data.loaders import iter_samples, load_samples
from ragmeter.data.sample import Sample
from ragmeter.data.trec import RunNotGrouped, iter_run_blocks, load_qrels, load_run
from ragmeter.errors import DataError
from ragmeter.retrieval import ragged
from ragmeter.retrieval.evaluate import evaluate_retrieval
from ragmeter.retrieval.relevance import rows_from_lists

ROOT = Path(__file__).resolve().parents[1]
METRICS = ["ndcg@10", "ndcg", "mrr", "mrr@3", "map", "map@5", "recall@10", "precision@5",
           "hit_rate@1", "f1@5"]


def _values(result):
    return {m: (r.sample_ids, [None if v != v else v for v in r.values.tolist()], r.reasons)
            for m, r in result.results.items()}


def _random_lists(rng, n, depth_max, giant=None):
    rankings, golds = [], []
    for q in range(n):
        depth = giant if (giant and q == n // 2) else int(rng.integers(0, depth_max))
        ids = [f"d{int(x)}" for x in rng.choice(depth * 3 + 5, size=depth, replace=False)]
        gold = {f"d{int(x)}": int(rng.integers(0, 4)) for x in rng.integers(0, depth * 3 + 5, 4)}
        gold[f"d{int(rng.integers(0, depth * 3 + 5))}"] = 1
        rankings.append(ids or None)
        golds.append(gold)
    return rankings, golds


@pytest.mark.timeout(60)
def test_chunks_give_the_values_of_one_dense_matrix():
    rng = np.random.default_rng(3)
    rankings, golds = _random_lists(rng, 400, 40, giant=3000)
    rows = rows_from_lists(rankings, golds)
    dense = rows.dense()
    from ragmeter.metrics.registry import parse_metric

    for name in METRICS:
        m = parse_metric(name)
        want = m.spec.compute(dense, m)
        got = np.zeros(rows.n_queries)
        caps = [None, m.k] if m.k is not None else [None]
        for cap in caps:
            for budget in (50, 3001, 10**6):
                got[:] = np.nan
                for idx, arrays in rows.chunks(cap=cap, budget=budget):
                    got[idx] = m.spec.compute(arrays, m)
                # equal up to float summation order (a dot product over a narrower matrix)
                np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15,
                                           err_msg=f"{name} cap={cap} b={budget}")


@pytest.mark.timeout(120)
def test_one_huge_ranking_among_many_is_not_padded(tmp_path):
    # 20,000 queries of 10 ids and one of 100,000: padding would need a 20,001 x 100,000 matrix
    code = textwrap.dedent("""
        import sys
        from ragmeter.data.sample import Sample
        from ragmeter.retrieval.evaluate import evaluate_retrieval
        samples = [Sample(id=f"q{i}", retrieved_ids=[f"d{j}" for j in range(10)],
                          gold_chunk_ids=[f"d{i % 12}"]) for i in range(20000)]
        samples.append(Sample(id="big", retrieved_ids=[f"x{j}" for j in range(100000)],
                              gold_chunk_ids=["x99998"]))
        r = evaluate_retrieval(samples, metrics=["ndcg", "mrr", "map", "recall@10"])
        assert abs(r["mrr"].values[-1] - 1 / 99999) < 1e-12
        # VmHWM: this process image's peak (ru_maxrss would keep the forking parent's peak)
        print(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
                         check=True)
    peak_mib = int(out.stdout.split()[-1]) / 1024
    assert peak_mib < 600, f"peak RSS {peak_mib:.0f} MiB"  # padded: > 7 GB


RUN = """\ufeff
q1 Q0 a 1 0.9 tag
q1\tQ0  b 2 0.8 tag
q1 Q0 c 3 0.8 tag

q2 Q0 a 1 0.5 t
q2 Q0 d 2 0.7 t
q3 Q0 z 1 1.0 t

q4 Q0 a 1 0.25 t
q4 Q0 b 2 0.25 t
q4 Q0 c 3 0.25 t
"""
# the same run without byte-order mark, blank lines and odd separators
RUN_CLEAN = "".join(" ".join(line.split()) + "\n" for line in RUN.lstrip("\ufeff")
                    .splitlines() if line.strip())
QRELS = "q1 0 b 1\nq1 0 c 2\nq2 0 d 3\nq2 0 x 1\nq4 0 c 1\nq4 0 a 2\nq5 0 a 1\nq6 0 a 0\n"


@pytest.mark.parametrize("ties", ["stable", "trec"])
@pytest.mark.parametrize("block", [1, 7, 64, 1 << 20])
def test_streamed_run_equals_loaded_run(tmp_path, ties, block, monkeypatch):
    run, clean, qrels = tmp_path / "run.txt", tmp_path / "clean.txt", tmp_path / "qrels.txt"
    run.write_text(RUN, encoding="utf-8")
    clean.write_text(RUN_CLEAN)
    qrels.write_text(QRELS)
    monkeypatch.setattr("ragmeter.data.trec.RUN_BLOCK_BYTES", block)
    q = load_qrels(qrels)
    metrics = [*METRICS, "ndcg@2(level=doc)"]
    streamed = evaluate_retrieval(qrels=q, run=run, ties=ties, metrics=metrics)
    loaded = evaluate_retrieval(qrels=q, run=load_run(clean), ties=ties, metrics=metrics)
    assert _values(streamed) == _values(loaded)
    assert streamed["mrr"].counts == loaded["mrr"].counts
    assert streamed["mrr"].counts["not_in_qrels"] == 1  # q3
    assert streamed["mrr"].counts["missing_from_run"] == 1  # q5


def test_run_blocks_keep_groups_whole_and_line_numbers(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text(RUN, encoding="utf-8")
    for size in (1, 5, 30, 1 << 20):
        groups = {}
        for b in iter_run_blocks(run, block_bytes=size):
            for g, q in enumerate(b.qids):
                a, e = int(b.starts[g]), int(b.starts[g + 1])
                assert q not in groups
                groups[q] = ([bytes(d) for d in b.docs[a:e].tolist()], b.lines[a:e].tolist(),
                             b.scores[a:e].tolist())
        assert groups[b"q1"] == ([b"a", b"b", b"c"], [2, 3, 4], [0.9, 0.8, 0.8])
        assert groups[b"q4"][1] == [10, 11, 12]
        assert list(groups) == [b"q1", b"q2", b"q3", b"q4"]


def test_ungrouped_run_falls_back_to_a_whole_load(tmp_path):
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 a 1 0.9 t\nq2 Q0 d 1 0.7 t\nq1 Q0 c 2 0.8 t\n")
    qrels.write_text(QRELS)
    with pytest.raises(RunNotGrouped):
        list(iter_run_blocks(run))
    q = load_qrels(qrels)
    assert _values(evaluate_retrieval(qrels=q, run=run, metrics=METRICS)) == \
        _values(evaluate_retrieval(qrels=q, run=load_run(run), metrics=METRICS))


def test_streamed_run_reports_bad_lines_with_their_numbers(tmp_path):
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 a 1 0.9 t\nq1 Q0 b 2 nan t\nq1 Q0 a 3 0.1 t\nq2 Q0 a 1\n"
                   "q2 Q0 b 1 x t\n")
    qrels.write_text(QRELS)
    with pytest.raises(DataError) as err:
        evaluate_retrieval(qrels=load_qrels(qrels), run=run, metrics=["mrr"])
    text = str(err.value)
    assert f"{run}:2 field 'score'" in text
    assert f"{run}:3 field 'docid': doc id 'a' repeated for query 'q1' (first on line 1)" in text
    assert f"{run}:4 field 'score': missing: expected 6 columns" in text
    assert f"{run}:5 field 'score'" in text


#: what a run file must not hold: comments, a missing tag (a truncated line), a seventh column
HOSTILE_RUN = ("# a comment line\nq1 Q0 a 1 0.9 tag\nq1 Q0 b 2 0.8 tag extra\nq1 Q0 c 3 0.8 tag\n"
               "q2 Q0 a 1 0.5\nq2 Q0 d 2 0.7 t\n# another comment\nq4 Q0 a 1 0.25 t\n"
               "q4 Q0 b 2 0.2")


@pytest.mark.parametrize("block", [1, 5, 30, 1 << 20])
def test_streamed_run_names_each_bad_line_once_at_any_block_size(tmp_path, block):
    run = tmp_path / "run.txt"
    run.write_text(HOSTILE_RUN, encoding="utf-8")
    with pytest.raises(DataError) as loaded:
        load_run(run)
    want = [(1, None), (3, "tag"), (5, "tag"), (7, None), (9, "tag")]
    assert [(p.line, p.field) for p in loaded.value.problems] == want
    problems: list = []
    groups = [q for b in iter_run_blocks(run, block_bytes=block, problems=problems)
              for q in b.qids]
    assert sorted((p.line, p.field or "") for p in problems) == \
        sorted((line, f or "") for line, f in want)
    assert groups == [b"q1", b"q2", b"q4"]


def test_streamed_samples_equal_loaded_samples(tmp_path):
    path = tmp_path / "s.jsonl"
    recs = [{"id": f"q{i}", "question": "?", "gold_doc_ids": [f"d{i % 3}"],
             "retrieved_ids": [f"d{j}#0" for j in range(i % 5)], "type": "fact"}
            for i in range(50)]
    recs.append({"id": "neg", "question": "?", "type": "negative", "gold_doc_ids": [],
                 "retrieved_ids": ["d1#0"], "retrieved_scores": [0.3]})
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(json.dumps(r) for r in recs).encode() + b"\n\n")
    stream = iter_samples(path)
    got = [s.to_dict() for s in stream]
    assert got == [s.to_dict() for s in load_samples(path).samples]
    assert stream.result.n_records == len(recs) and not stream.result.skipped
    a = evaluate_retrieval(iter_samples(path), metrics=[*METRICS, "ndcg@3(level=doc)"])
    b = evaluate_retrieval(load_samples(path).samples, metrics=[*METRICS, "ndcg@3(level=doc)"])
    assert _values(a) == _values(b) and a.meta == b.meta


@pytest.mark.timeout(60)
def test_record_size_limits_name_file_line_and_field(tmp_path, monkeypatch):
    path = tmp_path / "s.jsonl"
    big_list = json.dumps({"id": "b", "question": "?", "retrieved_ids": ["x"] * 1_000_000})
    huge_line = json.dumps({"id": "h", "question": "x" * (40 * 1024 * 1024)})
    path.write_text("\n".join([json.dumps({"id": "a", "question": "?"}), big_list, huge_line,
                               json.dumps({"id": "c", "question": "?"})]) + "\n")
    with pytest.raises(DataError) as err:
        list(iter_samples(path))
    text = str(err.value)
    assert f"{path}:2 field 'retrieved_ids': has 1,000,000 items, more than the limit" in text
    assert f"{path}:3: record of 41,943,0" in text and "RAGMETER_MAX_RECORD_BYTES" in text
    stream = iter_samples(path, skip_invalid=True)
    assert [s.id for s in stream] == ["a", "c"] and stream.result.n_skipped == 2
    monkeypatch.setenv("RAGMETER_MAX_LIST_ITEMS", "2000000")
    monkeypatch.setenv("RAGMETER_MAX_RECORD_BYTES", str(64 * 1024 * 1024))
    assert [s.id for s in iter_samples(path)] == ["a", "b", "h", "c"]


@pytest.mark.timeout(300)
def test_evalset_cli_memory_is_bounded(tmp_path):
    path = tmp_path / "evalset.jsonl"
    with path.open("w") as fh:
        for i in range(60_000):
            fh.write(json.dumps({
                "id": f"q{i}", "question": f"question number {i} " * 5,
                "gold_doc_ids": [f"doc{i % 977}"], "type": "fact",
                "retrieved_ids": [f"doc{(i + j) % 977}#{j}" for j in range(10)],
                "notes": "n" * 200}) + "\n")
    code = ("import sys; from ragmeter.cli.app import main; sys.argv = ['ragmeter', "
            f"'retrieval', '--evalset', {str(path)!r}, '--metrics', 'mrr,ndcg@10', '--level', 'doc'];\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print('PEAK', open('/proc/self/status').read().split('VmHWM:')[1].split()[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin",
                              "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr[-2000:]
    peak_mib = int(out.stdout.rsplit("PEAK", 1)[1]) / 1024
    assert peak_mib < 450, f"peak RSS {peak_mib:.0f} MiB"  # loading whole: ~15 MB per 1,000


def test_ragged_builder_refuses_grades_beyond_int32():
    with pytest.raises(DataError, match="query 'q9', doc 'd1'"):
        rows_from_lists([["d1"]], [{"d1": 2**31}], qids=["q9"])
    with pytest.raises(DataError, match="out of range"):
        evaluate_retrieval([Sample(id="s", retrieved_ids=["d"], gold_chunk_ids=["d"],
                                   gold_grades={"d": 2**63})], metrics=["ndcg"])
    assert ragged.CHUNK_CELLS > 0
