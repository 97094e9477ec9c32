"""Inputs that used to be accepted in silence, or to end in an internal error, or to be
refused although valid — each through a real ``ragmeter`` process over real files.

Silent accepts → exit 2 naming file, line and column/field: TREC qrels and runs with 5 or 7
columns, ``#`` comment lines, a run line cut short; a binary ``.txt`` in a corpus folder;
``--run-id ..`` or an absolute ``--run-id`` (which wrote the run folder outside the runner's
folder). An internal error → exit 2: a lone surrogate in a ``retrievers`` / ``generate`` corpus.
A tier's ``options.limit: -1`` (exit 0 with the tier ``not_run``) → a config error. Refused
although valid → accepted: a ``--doc-map`` file with a byte-order mark, samples in the
``{"samples": [...]}`` JSON form written on one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_extra

ROOT = Path(__file__).parents[1]
QRELS = "q1 0 d1 1\nq2 0 d3 1\n"
RUN = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d3 1 1.5 t\n"


def ragmeter(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("RAGMETER_STORE_URL", None)
    return subprocess.run([sys.executable, "-m", "ragmeter", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)


def _exit_2(out: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert out.returncode == 2, f"exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    assert "Traceback" not in out.stderr and "internal error" not in out.stderr, out.stderr
    for needle in needles:
        assert needle in out.stderr, f"{needle!r} not in:\n{out.stderr}"


TREC = [  # name, which file, its text, what the message must name
    ("qrels 5 columns", "qrels", "q1 0 d1 1 x\nq2 0 d3 1\n", "q.txt:1 field 'rel'"),
    ("qrels 7 columns", "qrels", "q1 0 d1 1\nq2 0 d3 1 a b c\n", "q.txt:2 field 'rel'"),
    ("qrels comment line", "qrels", "# judged twice\nq1 0 d1 1\nq2 0 d3 1\n",
     "q.txt:1: a '#' comment line"),
    ("run 5 columns", "run", "q1 Q0 d1 1 2.0\nq2 Q0 d3 1 1.5 t\n", "r.txt:1 field 'tag'"),
    ("run 7 columns", "run", "q1 Q0 d1 1 2.0 t x\nq2 Q0 d3 1 1.5 t\n", "r.txt:1 field 'tag'"),
    ("run comment line", "run", "q1 Q0 d1 1 2.0 t\n# q1 Q0 d2 2 1.0 t\nq2 Q0 d3 1 1.5 t\n",
     "r.txt:2: a '#' comment line"),
    ("run truncated line", "run", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1", "r.txt:2 field 'tag'"),
]


@pytest.mark.parametrize("name, which, text, needle", TREC, ids=[t[0] for t in TREC])
def test_trec_lines_of_other_shapes_are_exit_2_naming_line_and_column(
        tmp_path: Path, name: str, which: str, text: str, needle: str) -> None:
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text(text if which == "qrels" else QRELS, "utf-8")
    r.write_text(text if which == "run" else RUN, "utf-8")
    _exit_2(ragmeter("score", "retrieval", "--qrels", str(q), "--run", str(r), "-q", cwd=tmp_path),
            needle)


def _corpus_folder(tmp_path: Path) -> Path:
    corpus = tmp_path / "kb"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Плата за общежитие 950 рублей в месяц. " * 20, "utf-8")
    (corpus / "b.txt").write_bytes(bytes(range(128)) * 16)  # valid UTF-8, but NUL and controls
    return corpus


def _evalset(tmp_path: Path) -> Path:
    ev = tmp_path / "ev.jsonl"
    ev.write_text(json.dumps({"id": "q1", "question": "Сколько стоит общежитие?",
                              "gold_doc_ids": ["a"]}, ensure_ascii=False) + "\n", "utf-8")
    return ev


def test_a_binary_txt_in_a_corpus_folder_is_exit_2_naming_it(tmp_path: Path) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    corpus = _corpus_folder(tmp_path)
    out = ragmeter("score", "baselines", "--corpus", str(corpus), "--evalset",
                   str(_evalset(tmp_path)),
                   "--out", str(tmp_path / "cmp"), "-r", "bm25", "-k", "1", "--no-charts",
                   cwd=tmp_path)
    _exit_2(out, "b.txt:1", "binary content")
    assert not (tmp_path / "cmp").exists()
    # a stray control character in a long text document is still text
    (corpus / "b.txt").write_text("Сессия с 9 по 31 января. \x0b " * 200, "utf-8")
    out = ragmeter("score", "baselines", "--corpus", str(corpus), "--evalset",
                   str(_evalset(tmp_path)),
                   "--out", str(tmp_path / "cmp"), "-r", "bm25", "-k", "1", "--no-charts",
                   cwd=tmp_path)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("command", ["retrievers", "generate"])
def test_a_lone_surrogate_in_a_corpus_is_exit_2_naming_line_and_field(
        tmp_path: Path, command: str) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    corpus = tmp_path / "kb.jsonl"
    corpus.write_text('{"doc_id": "a", "text": "Плата 950 рублей."}\n'
                      '{"doc_id": "b", "text": "bad \\ud800 text"}\n', "utf-8")
    if command == "retrievers":
        argv = ["score", "baselines", "--corpus", str(corpus), "--evalset", str(_evalset(tmp_path)),
                "--out", str(tmp_path / "cmp"), "-r", "bm25", "-k", "1", "--no-charts"]
    else:
        argv = ["testset", "generate", "--corpus", str(corpus), "--out", str(tmp_path / "g.jsonl"),
                "--generator-backend", "mock", "--estimate"]
    _exit_2(ragmeter(*argv, cwd=tmp_path), "kb.jsonl:2 field 'text'", "lone surrogate")


def _bench(tmp_path: Path, options: str = "") -> Path:
    rows = [{"id": "q1", "question": "a", "retrieved_ids": ["d1", "d2"], "gold_doc_ids": ["d1"]},
            {"id": "q2", "question": "b", "retrieved_ids": ["d3"], "gold_doc_ids": ["d3"]}]
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", "utf-8")
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(f"name: t\nstore: {tmp_path / 'r.sqlite'}\nrun_dir: {tmp_path / 'runs'}\n"
                   f"datasets:\n  - path: {tmp_path / 's.jsonl'}\ntiers:\n"
                   f"  - name: retrieval\n{options}", "utf-8")
    return cfg


@pytest.mark.parametrize("run_id", ["..", "ABSOLUTE", "a/b", "../../escape", ""])
def test_run_id_must_be_a_safe_name(tmp_path: Path, run_id: str) -> None:
    cfg = _bench(tmp_path)
    outside = tmp_path / "elsewhere" / "run"
    rid = str(outside) if run_id == "ABSOLUTE" else run_id
    work = tmp_path / "work"
    work.mkdir()
    _exit_2(ragmeter("run", str(cfg), "-q", "--run-id", rid, cwd=work),
            "option '--run-id'", "not a safe run id")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("meta.json")) == []
    assert not outside.parent.exists()
    _exit_2(ragmeter("run", str(cfg), "-q", "--resume", rid or "..", cwd=work),
            "option '--resume'")
    ok = ragmeter("run", str(cfg), "-q", "--run-id", "nightly-2.1_a", cwd=work)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "runs" / "nightly-2.1_a" / "meta.json").is_file()


@pytest.mark.parametrize("value", ["-1", "0", "'5'", "[]"])
def test_options_limit_below_one_is_a_config_error(tmp_path: Path, value: str) -> None:
    cfg = _bench(tmp_path, f"    options: {{limit: {value}}}\n")
    _exit_2(ragmeter("run", str(cfg), "-q", cwd=tmp_path),
            "config key 'tiers[0].options.limit'", "integer >= 1")
    assert not (tmp_path / "r.sqlite").exists()


def _values(out: subprocess.CompletedProcess[str]) -> dict[str, float]:
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    return {k: v["aggregate"]["mean"] for k, v in doc["results"].items()}


def test_doc_map_with_a_bom_and_samples_under_a_key_are_read(tmp_path: Path) -> None:
    rows = [{"id": "q1", "question": "a", "retrieved_ids": ["c1", "c2"],
             "gold_doc_ids": ["d1"]},
            {"id": "q2", "question": "b", "retrieved_ids": ["c2", "c3"], "gold_doc_ids": ["d3"]}]
    lines = tmp_path / "s.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in rows) + "\n", "utf-8")
    wrapped = tmp_path / "w.json"
    wrapped.write_text(json.dumps({"samples": rows}), "utf-8")   # one line, as json.dumps writes
    doc_map = {"c1": "d1", "c2": "d2", "c3": "d3"}
    plain, bom = tmp_path / "map.json", tmp_path / "map-bom.json"
    plain.write_text(json.dumps(doc_map), "utf-8")
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc_map).encode())
    base = ["score", "retrieval", "--metrics", "mrr,recall@1", "--json"]
    want = _values(ragmeter(*base, "--samples", str(lines), "--doc-map", str(plain),
                            cwd=tmp_path))
    assert want == {"mrr": 0.75, "recall@1": 0.5}
    assert _values(ragmeter(*base, "--samples", str(lines), "--doc-map", str(bom),
                            cwd=tmp_path)) == want
    assert _values(ragmeter(*base, "--samples", str(wrapped), "--doc-map", str(plain),
                            cwd=tmp_path)) == want
