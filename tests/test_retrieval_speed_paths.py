"""The fast paths keep their definitions: row sums stay sequential left to right (bit-equal to
trec_eval's loop), the grade check's fast path refuses what the slow one refuses, the run reader
splits on exactly what ``bytes.split`` splits on, and the file benchmark can patch trec_eval."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from ragmeter.data.trec import _SPACE
from ragmeter.errors import DataError
from ragmeter.metrics.retrieval import _row_sum
from ragmeter.tiers.ragged import check_grades

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
    assert {i for i in range(256) if _SPACE[i]} == split
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
    from ragmeter.data.trec import _parse_scores

    rng = np.random.default_rng(5)
    toks = [b"12.345", b"-0.5", b"7", b"1e5", b"inf", b"-inf", b".5", b"5.", b"-0", b"+5",
            b"123456789012345", b"1234567890123456", b"0.30000000000000004", b"-.25",
            b"00012.5000"]
    toks += [f"{x:.{p}f}".encode() for x, p in zip(
        (rng.random(3000) - 0.3) * 10.0 ** rng.integers(-3, 9, 3000),
        rng.integers(0, 12, 3000), strict=True)]
    toks += [repr(float(x)).encode() for x in rng.random(1000)]
    got = _parse_scores(np.array(toks))
    want = np.array([float(t) for t in toks])
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    for bad in (b".", b"-", b"1.2.3", b"abc", b"1-2"):
        with pytest.raises(ValueError):
            _parse_scores(np.array([bad]))


@pytest.mark.parametrize("text", [
    "q1 0 d1 1\nq1 0 d2 0\n# comment\n\nq2 0 d1 -1 extra\n", "ключ 0 док 2\n",
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
])
def test_fast_qrels_leave_bad_lines_to_the_named_errors(tmp_path: Path, text: str,
                                                       message: str) -> None:
    from ragmeter.data.trec import _fast_qrels, load_qrels

    assert _fast_qrels(text) is None
    path = tmp_path / "q.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        load_qrels(path)
