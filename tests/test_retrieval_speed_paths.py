"""The fast paths keep their definitions: row sums stay sequential left to right (bit-equal to
trec_eval's loop), the grade check's fast path refuses what the slow one refuses, the run reader
splits on exactly what ``bytes.split`` splits on, and the file benchmark can patch trec_eval."""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from ragmeter.data.trec_columns import SPACE
from ragmeter.errors import DataError
from ragmeter.metrics.retrieval import _row_sum
from ragmeter.retrieval.ragged import check_grades

ROOT = Path(__file__).resolve().parents[1]


def test_row_sum_is_sequential_left_to_right() -> None:
    rng = np.random.default_rng(3)
    x = rng.random((400, 37)) * 10.0 ** rng.integers(-8, 8, size=(400, 37))
    got = _row_sum(x)
    for i in range(x.shape[0]):
        acc = 0.0
        for v in x[i].tolist():
            acc += v
        assert got[i] == acc  # bit-equal, not approximately
    assert _row_sum(np.zeros((3, 0))).tolist() == [0.0, 0.0, 0.0]
    # a row's value does not depend on the rows beside it
    assert _row_sum(x[5:6])[0] == got[5]


@pytest.mark.parametrize("bad", [True, 2.5, 2**31, -(2**31) - 1, "1", None])
def test_grade_check_fast_path_refuses_what_slow_path_refuses(bad: object) -> None:
    check_grades([{"a": 1, "b": 0}, {"c": -1}])
    with pytest.raises(DataError):
        check_grades([{"a": 1}, {"b": bad}])  # type: ignore[dict-item]


def test_run_reader_whitespace_is_bytes_split_whitespace() -> None:
    every = bytes(range(256))
    split = {b for b in range(256) if len((b"a" + bytes([b]) + b"a").split()) == 2}
    assert {i for i in range(256) if SPACE[i]} == split
    assert len(every) == 256


def test_file_benchmark_patches_trec_eval_lookup() -> None:
    src = Path(os.environ.get("TREC_EVAL_SRC", ROOT.parent / "shared" / "bench" / "trec_eval"))
    if not (src / "trec_eval.c").is_file():
        src = Path("/work/shared/bench/trec_eval")
    if not (src / "trec_eval.c").is_file():
        pytest.skip("no trec_eval source on this machine")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("bench_trec_files",
                                                      ROOT / "benchmarks" / "bench_trec_files.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    text = (src / "trec_eval.c").read_text()
    assert mod._LOOP in text and text.count(mod._OUTER) == 1


def test_run_reader_scores_equal_python_float() -> None:
    from ragmeter.data.trec_columns import parse_scores

    rng = np.random.default_rng(5)
    toks = [b"12.345", b"-0.5", b"7", b"1e5", b"inf", b"-inf", b".5", b"5.", b"-0", b"+5",
            b"123456789012345", b"1234567890123456", b"0.30000000000000004", b"-.25",
            b"00012.5000"]
    toks += [f"{x:.{p}f}".encode() for x, p in zip(
        (rng.random(3000) - 0.3) * 10.0 ** rng.integers(-3, 9, 3000),
        rng.integers(0, 12, 3000), strict=True)]
    toks += [repr(float(x)).encode() for x in rng.random(1000)]
    got = parse_scores(np.array(toks))
    want = np.array([float(t) for t in toks])
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    for bad in (b".", b"-", b"1.2.3", b"abc", b"1-2"):
        with pytest.raises(ValueError):
            parse_scores(np.array([bad]))


@pytest.mark.parametrize("text", [
    "q1 0 d1 1\nq1 0 d2 0\n\nq2 0 d1 -1\n", "ключ 0 док 2\n",
    "q\t0\td\t3\r\n", "q 0 d 01\n", "",
])
def test_fast_qrels_equal_line_by_line_parser(text: str) -> None:
    from ragmeter.data.trec import _fast_qrels, _parse_trec

    fast = _fast_qrels(text)
    assert fast is not None
    slow = _parse_trec(text, "x", "qrels")
    assert fast == slow and list(fast) == list(slow)


@pytest.mark.parametrize("text, message", [
    ("q1 0 d1 1\nq1 0 d1 2\n", "repeated"), ("q 0 d +x\n", "integer"),
    ("q 0 d 99999999999\n", "out of range"), ("q 0 d\n", "columns"),
    ("q 0 d 1 extra\n", "got 5"), ("# note\nq 0 d 1\n", "comment line"),
])
def test_fast_qrels_leave_bad_lines_to_the_named_errors(tmp_path: Path, text: str,
                                                       message: str) -> None:
    from ragmeter.data.trec import _fast_qrels, load_qrels

    assert _fast_qrels(text) is None
    path = tmp_path / "q.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        load_qrels(path)


@pytest.mark.parametrize("n", [7, 5000, 60_000])
def test_each_metric_gets_the_interval_of_its_own_values(n: int) -> None:
    """Aggregates of many metrics: each its own interval (no resampling shared or not), the
    one of :func:`ragmeter.stats.mean_interval` for its scored values, by their kind."""
    from ragmeter.results.records import EvalResult, MetricResult, Signature
    from ragmeter.stats import mean_interval

    rng = np.random.default_rng(n)
    res = EvalResult("run")
    arrays = {"a": rng.random(n), "b": (rng.random(n) > 0.7).astype(float),
              "c": np.full(n, 0.25), "d": rng.random(n) ** 3, "f": rng.normal(3, 2, n)}
    for name, x in arrays.items():
        res.add(MetricResult(name, [f"q{i}" for i in range(n)], x.copy(), Signature.make(),
                             seed=11, n_boot=300))
    vals = rng.random(n)
    vals[::3] = np.nan
    res.add(MetricResult("e", [f"q{i}" for i in range(n)], vals, Signature.make(),
                         reasons={i: "x" for i in range(0, n, 3)}, seed=11, n_boot=300))
    methods = {"a": "cp-eff", "b": "cp", "c": "cp-eff", "d": "cp-eff", "e": "cp-eff", "f": "t"}
    for name, x in {**arrays, "e": vals[~np.isnan(vals)]}.items():
        agg = res[name].aggregate
        ci = mean_interval(x)
        assert (agg.ci_low, agg.ci_high, agg.ci_method) == (ci.low, ci.high, ci.method)
        assert agg.ci_method == methods[name] and agg.ci_low < agg.ci_high
        assert agg.mean == float(x.mean())


@pytest.mark.parametrize("text, uniform", [
    (b"q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag\nq2 Q0 d1 1 0.5 tag\n", True),
    (b"q1 Q0 d1 1 2.5\nq1 Q0 d2 2 1.5\n", False),                 # 5 columns: no tag
    (b"q1 Q0 d1 1 2.5 t x\nq1 Q0 d2 2 1.5 t x\n", False),         # 7 columns
    (b"q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5\n", False),           # ragged lines
    (b"q1 Q0 d1 1 2.5 tag\nq1  Q0 d2 2 1.5 t\n", False),        # two spaces
    (b"q1\tQ0 d1 1 2.5 tag\n", False),                          # tab
    (b"q1 Q0 d1 1 2.5 tag\r\n", False),                         # CR
    (b"q1 Q0 d1 1 2.5 tag\n\nq2 Q0 d1 1 2.5 tag\n", False),     # blank line
    (b" q1 Q0 d1 1 2.5 tag\n", False),                          # leading space
    (b"q1 Q0 d1 1 2.5 tag \n", False),                          # trailing space
    (b"#c Q0 d1 1 2.5 tag\nq1 Q0 d1 1 2.5 tag\n", False),       # comment line
    (b"q1 Q0 d\x01x 1 2.5 tag\n", False),                       # another control byte
    (b"q1 Q0 d1 1 2.5 tag", False),                             # no final newline
    ("q1 Q0 док 1 2.5 tag\n".encode(), True),
])
def test_uniform_line_split_equals_general_split(text: bytes, uniform: bool) -> None:
    from ragmeter.data.trec_columns import line_tokens, split_tokens, uniform_tokens

    raw = np.frombuffer(text, dtype=np.uint8)
    assert (uniform_tokens(raw, 6) is not None) == uniform
    padded = np.frombuffer(text + bytes(64), dtype=np.uint8)
    fast, general = line_tokens(text, 6), split_tokens(padded, raw, 6)
    assert (fast is None) == (general is None)
    if fast is not None and general is not None:
        for a, b in zip(fast, general, strict=True):
            assert np.array_equal(a, b)
    if general is not None:  # the tokens are bytes.split()'s
        padded, ts, te, first, data = general
        lines = text.split(b"\n")
        for f, li in zip(first.tolist(), data.tolist(), strict=True):
            parts = lines[li].split()
            got = [bytes(padded[ts[f + j]:te[f + j]]) for j in range(len(parts))]
            assert got == parts


def test_rank_blocks_of_one_depth_equal_the_per_query_walk() -> None:
    from ragmeter.retrieval.relevance import _query_blocks, rank_hits

    rng = np.random.default_rng(4)
    for width, nq, budget in [(100, 1000, 4000), (7, 50, 3), (0, 5, 10), (30, 9, 64)]:
        lens = np.full(nq, width, dtype=np.int64)
        blocks = list(_query_blocks(lens, lens.tolist(), budget))
        assert blocks[0][0] == 0 and blocks[-1][1] == nq
        assert all(b[1] == c[0] for b, c in itertools.pairwise(blocks))
        assert all((e - q) * w <= max(budget, w) for q, e, w in blocks)
        if not width:
            continue
        flat = rng.integers(0, 5, nq * width).astype(np.float64)
        hq = np.sort(rng.integers(0, nq, 40))
        hs = flat[hq * width + rng.integers(0, width, 40)]
        want = [int(np.count_nonzero(flat[q * width:(q + 1) * width] > s))
                for q, s in zip(hq.tolist(), hs.tolist(), strict=True)]
        got = rank_hits(flat, lens, hq, hs, lambda j, q, tied: 0, budget=budget)
        assert got.tolist() == want


def _naive_ranks(qrels: dict, run: dict, ties: str) -> list[tuple[str, int, int]]:
    """``(query, 0-based rank, grade)`` of every relevant retrieved doc, by sorting each query
    (the definition)."""
    out = []
    for q, gold in qrels.items():
        docs = run.get(q) or {}
        if ties == "trec":
            order = [d for _, d in sorted(((float(np.float32(s)), d) for d, s in docs.items()),
                                          reverse=True)]
        else:
            order = sorted(docs, key=docs.__getitem__, reverse=True)
        out += [(q, i, gold[d]) for i, d in enumerate(order) if gold.get(d, 0) > 0]
    return sorted(out)


@pytest.mark.parametrize("ties", ["trec", "stable"])
@pytest.mark.parametrize("chunk", [1, 7, 64, 200, 1_000, 10_000])
def test_run_read_in_slices_ranks_like_sorting_each_query(ties: str, chunk: int) -> None:
    from types import MappingProxyType

    from ragmeter.retrieval.relevance import positive_judgments, rows_from_run

    rng = np.random.default_rng(11)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, object] = {}
    for i in range(300):
        q = f"q{i}"
        depth = int(rng.choice([0, 1, 3, 20, 150]))
        scores = rng.integers(0, 6, depth) / 4.0 if i % 3 == 0 else rng.random(depth)
        picked = rng.permutation(400)[:depth].tolist()
        row = {f"d{j}": float(s) for j, s in zip(picked, scores.tolist(), strict=True)}
        pool = [*row, f"x{i}"]
        qrels[q] = {pool[j]: int(rng.integers(0, 3))
                    for j in rng.permutation(len(pool))[:4].tolist()}
        if i % 17 != 5:  # some queries are absent from the run
            run[q] = MappingProxyType(row) if i % 11 == 0 else row  # other Mappings too
    qrels["no_relevant"] = {"d1": 0}
    judged = positive_judgments(qrels)
    rows = rows_from_run(judged, run, ties, chunk=chunk)  # type: ignore[arg-type]
    qids = judged.qids
    got = sorted(zip([qids[q] for q in rows.q.tolist()], rows.pos.tolist(),
                     rows.grade.tolist(), strict=True))
    assert got == _naive_ranks(qrels, run, ties)
    assert rows.n_ret.tolist() == [len(run.get(q) or {}) for q in qids]  # type: ignore[arg-type]


def test_run_read_in_slices_names_nan_scores() -> None:
    from ragmeter.retrieval.relevance import positive_judgments, rows_from_run

    qrels = {f"q{i}": {"a": 1} for i in range(50)}
    run = {f"q{i}": {"a": 0.5, "b": float("nan") if i in (3, 40) else 0.1} for i in range(50)}
    with pytest.raises(DataError) as err:
        rows_from_run(positive_judgments(qrels), run, "trec", chunk=4)
    assert [p.field for p in err.value.problems] == ["q3", "q40"]


@pytest.mark.parametrize("cap", [None, 1, 3, 10])
def test_dense_chunks_shortcuts_equal_the_arrays_definitions(cap: int | None) -> None:
    """``dense`` takes the ideal grades from one matrix sorted once and the first relevant rank
    from every cell (also past ``cap``): the grades equal those sorted per chunk, the rank
    equals the first non-zero column wherever that lies within the columns kept."""
    from ragmeter.metrics.retrieval import NO_RELEVANT, RankArrays
    from ragmeter.retrieval.ragged import RelRows

    rng = np.random.default_rng(5)
    nq = 400
    n_ret = rng.integers(0, 40, nq)
    cells = [(q, p) for q in range(nq) for p in rng.permutation(int(n_ret[q]))[:4].tolist()]
    q = np.array([c[0] for c in cells], dtype=np.int64)
    pos = np.array([c[1] for c in cells], dtype=np.int64)
    grade = rng.integers(1, 4, q.size)
    gold_q = rng.permutation(np.repeat(np.arange(nq), rng.integers(0, 7, nq)))  # any order
    gold_grade = rng.integers(1, 5, gold_q.size)
    rows = RelRows(n_ret, q, pos, grade, gold_q, gold_grade)
    idx = np.sort(rng.permutation(nq)[:150])
    got = rows.dense(idx, cap)
    local = np.full(nq, -1)
    local[idx] = np.arange(idx.size)
    assert np.array_equal(got.ideal, rows._chunk_ideal(local, rows.n_rel[idx], got.ideal.shape[1]))
    plain = RankArrays(got.rel, got.n_rel, got.ideal, got.n_ret).first_relevant()
    first = got.first_relevant()
    inside = first < got.depth  # where the first relevant rank lies within the columns kept
    assert np.array_equal(first[inside], plain[inside])
    assert (plain[~inside] == NO_RELEVANT).all()
    for i, qi in enumerate(idx.tolist()):  # the first rank from every cell, past ``cap`` too
        ranks = pos[(q == qi) & (grade > 0)]
        assert first[i] == (int(ranks.min()) if ranks.size else NO_RELEVANT)
    for i, qi in enumerate(idx.tolist()):  # the ideal row: that query's grades, descending
        want = sorted(gold_grade[gold_q == qi].tolist(), reverse=True)[:got.ideal.shape[1]]
        assert got.ideal[i].tolist() == want + [0] * (got.ideal.shape[1] - len(want))


def test_mrr_beside_cutoff_metrics_reads_ranks_past_the_cutoff() -> None:
    """MRR over the full ranking needs only the first relevant rank: computed beside @3 metrics
    (arrays cut at 3 columns) it equals MRR alone and the reciprocal rank by definition."""
    from ragmeter.retrieval.evaluate import evaluate_retrieval

    rng = np.random.default_rng(8)
    qrels, run = {}, {}
    for i in range(200):
        docs = [f"d{j}" for j in range(60)]
        run[f"q{i}"] = dict(zip(docs, rng.random(60).tolist(), strict=True))
        qrels[f"q{i}"] = {docs[int(j)]: 1 for j in rng.integers(0, 60, 2)} | {"absent": 1}
    want = {}
    for q, gold in qrels.items():
        order = sorted(run[q], key=run[q].__getitem__, reverse=True)
        want[q] = next((1.0 / (r + 1) for r, d in enumerate(order) if d in gold), 0.0)
    assert max(1 / v for v in want.values()) > 3  # first relevant ranks past the cutoff exist
    for metrics in (["mrr"], ["mrr", "ndcg@3", "recall@3"], ["mrr", "ndcg"]):
        res = evaluate_retrieval(qrels=qrels, run=run, metrics=metrics, ties="stable")
        got = dict(zip(res["mrr"].sample_ids, res["mrr"].values.tolist(), strict=True))
        assert got == want, metrics


@pytest.mark.parametrize("extra", [{}, {"z": {"d": 0}}, {"z": {}}])
def test_positive_judgments_leave_out_exactly_the_non_positive(extra: dict) -> None:
    from ragmeter.retrieval.relevance import positive_judgments

    qrels = {"a": {"d1": 1, "d2": 2}, "b": {"d3": 1}} | extra
    judged = positive_judgments(qrels)
    assert judged.qids == ["a", "b"]
    assert judged.docs == ["d1", "d2", "d3"]
    assert judged.q.tolist() == [0, 0, 1] and judged.grades.tolist() == [1, 2, 1]
    assert judged.n_no_relevant == len(extra)


def test_in_memory_benchmark_gives_pytrec_eval_values_bit_for_bit() -> None:
    """The speed benchmark of the in-memory path runs end to end on a small input and finds
    every per-query value identical to pytrec_eval's (the speed itself is the script's figure,
    not a test's)."""
    pytest.importorskip("pytrec_eval")
    import subprocess

    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_retrieval.py"), "--queries", "400",
         "--repeat", "1", "--tools", "ragmeter,pytrec_eval"],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    verdict = [line for line in proc.stdout.splitlines() if line.startswith("vs pytrec_eval")]
    assert len(verdict) == 1 and "(identical)" in verdict[0], proc.stdout
