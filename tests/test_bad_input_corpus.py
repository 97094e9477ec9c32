"""A generated corpus of malformed inputs across every loader, config and command.

Each case is a command line over files written for it (truncations, wrong types, encodings,
duplicate ids and keys, huge values, deep nesting, hostile names, bad option values). The
contract checked for every case: no traceback, no internal error (exit 4), no hang (per-case
alarm), and a non-zero exit carries a message. Cases marked ``reject`` must exit 2 (or 3) with
an ``error:`` message naming the file or the option. Most cases run the CLI in-process
(:func:`ragmeter.cli.app.run`); a sample runs as a real subprocess. The table of results is
written to ``test-output/bad_input_corpus.md``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragmeter.cli import app as cli

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "bad_input"))

from shape_edges import add_shape_and_path_edges  # noqa: E402

CASE_TIMEOUT_S = 30
SUBPROCESS_EVERY = 90


@dataclass
class Case:
    group: str
    name: str
    argv: list[str]
    reject: bool
    needle: str | None = None  # text the error must contain (file name or option)


class CaseTimeout(BaseException):
    """Raised by the per-case alarm (a BaseException: the CLI must not swallow it)."""


# ------------------------------------------------------------------------- base documents
SAMPLES = [
    {"id": "q1", "question": "Сколько стоит общежитие?", "answer": "950 рублей.",
     "reference": "950 рублей в месяц.", "retrieved_contexts": ["Плата 950 рублей."],
     "retrieved_ids": ["d1#0", "d2#0"], "gold_doc_ids": ["d1"], "gold_chunk_ids": ["d1#0"],
     "type": "fact"},
    {"id": "q2", "question": "Когда сессия?", "answer": "В январе.",
     "reference": "С 9 по 31 января.", "retrieved_contexts": ["Сессия 9–31 января."],
     "retrieved_ids": ["d3#0"], "gold_doc_ids": ["d3"], "gold_chunk_ids": ["d3#0"],
     "type": "fact"},
]
PIPE = [{"id": f"j{i}", "question": "q", "answer": "a", "context": "c",
         "ground_truth_show": bool(i % 2), "predicted_show": bool(i % 3)} for i in range(4)]
QRELS = "q1 0 d1#0 1\nq2 0 d3#0 1\n"
RUN = "q1 Q0 d1#0 1 2.0 t\nq1 Q0 d2#0 2 1.0 t\nq2 Q0 d3#0 1 1.5 t\n"
CONFIG = ("name: t\nstore: results.sqlite\ntiers:\n  - name: judge_pipeline\n"
          "    options: {items: items.jsonl}\n")
JUDGE_CFG = "judges:\n  - name: j\n    backend: openai\n    base_url: http://127.0.0.1:9/v1\n" \
            "    model: m\n"
FIELDS = ["id", "question", "answer", "reference", "retrieved_contexts", "retrieved_ids",
          "gold_doc_ids", "gold_chunk_ids", "type", "retrieved_scores", "gold_grades",
          "metadata"]
WRONG_VALUES: list[object] = [123, True, None, {}, [], {"a": 1}, [1, 2], [None], [[["x"]]],
                              "", -1, 1.5, ["ok", 3]]


def jsonl(rows: list[dict]) -> str:
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n"


class Builder:
    """Writes case files into a folder and collects cases."""

    def __init__(self, root: Path):
        self.root = root
        self.cases: list[Case] = []
        self.n = 0

    def file(self, suffix: str, data: str | bytes) -> Path:
        self.n += 1
        d = self.root / f"c{self.n:05d}"
        d.mkdir(parents=True)
        p = d / f"input{suffix}"
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        p.write_bytes(data)
        return p

    def add(self, group: str, name: str, argv: list[str], reject: bool,
            needle: str | None = None) -> None:
        self.cases.append(Case(group, name, argv, reject, needle))


def _variants_text(base: str) -> Iterator[tuple[str, bytes, bool]]:
    """(name, bytes, must_reject) mutations of a text document."""
    raw = base.encode()
    n = len(raw)
    for frac in (0.03, 0.1, 0.17, 0.25, 0.33, 0.41, 0.5, 0.58, 0.66, 0.75, 0.83, 0.91, 0.97):
        cut = max(1, int(n * frac))
        yield f"truncated@{frac}", raw[:cut], False
    yield "empty", b"", True
    yield "whitespace", b"  \n\n\t\n", True
    yield "cp1251", ("й" + base).encode("cp1251", "replace"), True
    yield "utf16", base.encode("utf-16"), True
    yield "utf32", base.encode("utf-32"), True
    yield "bom", b"\xef\xbb\xbf" + raw, False
    yield "nul-bytes", raw[: n // 2] + b"\x00\x00" + raw[n // 2:], True
    yield "invalid-byte", raw[: n // 3] + b"\xff\xfe" + raw[n // 3:], True
    yield "cr-only", base.replace("\n", "\r").encode(), False
    yield "binary", bytes(range(256)) * 4, True
    yield "scalar-json", b'"just a string"', True
    yield "number-json", b"42", True
    yield "null-json", b"null", True


def build_cases(root: Path) -> list[Case]:
    b = Builder(root)
    qrels = b.file(".txt", QRELS)
    run_file = b.file(".txt", RUN)

    # ---- samples loader through two commands (retrieval needs a ranking: the records have it)
    def samples_cmds(p: Path) -> list[list[str]]:
        return [["score", "retrieval", "--samples", str(p), "-q"],
                ["score", "generation", "--samples", str(p), "--metrics", "rouge_1", "-q"]]

    for name, data, reject in _variants_text(jsonl(SAMPLES)):
        p = b.file(".jsonl", data)
        for argv in samples_cmds(p):
            b.add("samples:bytes", name, argv, reject, p.name if reject else None)
    for name, data, reject in _variants_text(json.dumps(SAMPLES, ensure_ascii=False)):
        p = b.file(".json", data)
        b.add("samples-json:bytes", name, samples_cmds(p)[0], reject, p.name if reject else None)
    csv_base = ("id,question,answer,reference,retrieved_ids,gold_doc_ids\n"
                "q1,\"Q, one\",a,r,\"['d1#0', 'd2#0']\",d1\nq2,Q2,a,r,d3#0|d4#0,d3\n")
    for name, data, reject in _variants_text(csv_base):
        p = b.file(".csv", data)
        b.add("samples-csv:bytes", name, samples_cmds(p)[0], reject, p.name if reject else None)

    # wrong types, field by field
    for fld in FIELDS:
        for value in WRONG_VALUES:
            rows = json.loads(json.dumps(SAMPLES))
            rows[1][fld] = value
            p = b.file(".jsonl", jsonl(rows))
            for argv in samples_cmds(p):
                b.add("samples:types", f"{fld}={json.dumps(value)}", argv, False)
    # CSV cells that look like lists but are not (RAGAS/pandas reprs included)
    for col in ("retrieved_ids", "retrieved_contexts", "gold_doc_ids", "retrieved_scores",
                "gold_grades", "metadata"):
        for cell in ("[", "['a'", "[1, 2]", "{", "[[[[", "None", "['a', 3]", '"', "a|b|",
                     "[__import__('os').getcwd()]", "{'a': [1]}", "[" * 500 + "]" * 500):
            text = f"id,question,answer,{col}\nq1,q,a,\"{cell.replace(chr(34), chr(34) * 2)}\"\n"
            p = b.file(".csv", text)
            b.add("samples-csv:cells", f"{col}={cell[:20]}", samples_cmds(p)[1], False)
    # DeepEval and RAGAS layouts with wrong types
    deepeval = {"input": "q", "actual_output": "a", "expected_output": "r",
                "retrieval_context": ["c"], "context": ["g"]}
    for fld in deepeval:
        for value in WRONG_VALUES:
            rec = {**deepeval, fld: value}
            p = b.file(".json", json.dumps([rec, deepeval]))
            b.add("deepeval:types", f"{fld}={json.dumps(value)}", samples_cmds(p)[1], False)
    # Parquet magic with garbage, a BEIR corpus given as samples
    p = b.file(".parquet", b"PAR1" + b"\x00garbage" * 10)
    # without the parquet extra the error names the extra to install instead of the file
    b.add("samples:parquet", "corrupt parquet", samples_cmds(p)[1], True,
          p.name if importlib.util.find_spec("pyarrow") else "pip install 'ragmeter[parquet]'")
    p = b.file(".jsonl", '{"_id": "d1", "title": "t", "text": "x"}\n')
    b.add("samples:other-kind", "BEIR corpus as samples", samples_cmds(p)[1], True, "BEIR")
    # duplicate ids / keys / columns, unknown-field typos
    dup = b.file(".jsonl", jsonl([SAMPLES[0], SAMPLES[0]]))
    for argv in samples_cmds(dup):
        b.add("samples:duplicates", "duplicate id", argv, True, "duplicate id")
    dk = b.file(".jsonl", '{"id": "a", "id": "b", "question": "q", "answer": "x"}\n')
    for argv in samples_cmds(dk):
        b.add("samples:duplicates", "duplicate key", argv, True, "repeated")
    dc = b.file(".csv", "id,question,question\nq1,a,b\n")
    b.add("samples:duplicates", "duplicate csv column", samples_cmds(dc)[1], True, "repeated")
    for typo in ("questoin", "retrieved_contxts", "gold_doc_id", "refrence", "respons"):
        p = b.file(".jsonl", jsonl([{"id": "a", typo: "x", "answer": "y"}]))
        b.add("samples:typos", typo, samples_cmds(p)[1], True, "did you mean")
    # huge values
    huge = [("long-string", {"id": "a", "question": "q" * 2_000_000, "answer": "x"}),
            ("long-id", {"id": "i" * 100_000, "question": "q", "answer": "x"}),
            ("big-int-id", {"id": 10**30, "question": "q", "answer": "x"}),
            ("inf-score", {"id": "a", "question": "q", "retrieved_ids": ["d"],
                           "retrieved_scores": [1e400]}),
            ("many-contexts", {"id": "a", "question": "q", "answer": "x",
                               "retrieved_contexts": ["c"] * 20000}),
            ("big-grade", {"id": "a", "question": "q", "retrieved_ids": ["d"],
                           "gold_doc_ids": ["d"], "gold_grades": {"d": 2**70}})]
    for name, rec in huge:
        p = b.file(".jsonl", json.dumps(rec) + "\n")
        b.add("samples:huge", name, samples_cmds(p)[1], False)
    # deep nesting
    for depth in (100, 1000, 10_000, 100_000):
        nested = "[" * depth + "]" * depth
        p = b.file(".json", nested)
        b.add("samples:nesting", f"array depth {depth}", samples_cmds(p)[1], True, p.name)
        obj = '{"id": "a", "question": "q", "metadata": ' + '{"a":' * depth + "1" + "}" * depth \
            + "}\n"
        p = b.file(".jsonl", obj)
        b.add("samples:nesting", f"metadata depth {depth}", samples_cmds(p)[1], depth >= 10_000,
              None)
    # hostile names and values
    hostile = ["../../etc/passwd", "<script>alert(1)</script>", "\u202eevil", " ", "\x00nul",
               "a\nb", "$(rm -rf /)", "%s%s%n", "\\ud800", "😀" * 50, "NaN", "null",
               "'; DROP TABLE rm_runs; --", "{{7*7}}", "\x1b[31mred"]
    for h in hostile:
        rows = json.loads(json.dumps(SAMPLES))
        rows[0]["id"] = h
        rows[0]["question"] = h
        p = b.file(".jsonl", jsonl(rows))
        b.add("samples:hostile", repr(h)[:30], samples_cmds(p)[1], False)
    sur = b.file(".jsonl", '{"id": "a", "question": "\\udc80 bad", "answer": "x"}\n')
    b.add("samples:hostile", "lone surrogate", samples_cmds(sur)[1], True, "surrogate")
    # hostile file names
    for fname in ("data with spaces.jsonl", "данные.jsonl", "-starts-with-dash.jsonl",
                  "semi;colon.jsonl", "a'quote.jsonl"):
        d = root / f"name{len(b.cases)}"
        d.mkdir(parents=True)
        p = d / fname
        p.write_text(jsonl(SAMPLES), "utf-8")
        b.add("samples:file-names", fname, samples_cmds(p)[1], False)
    for missing in ("nope.jsonl", str(root), "/dev/null"):
        b.add("samples:paths", missing, samples_cmds(Path(missing))[1], True)

    # ---- evalset (strict rules)
    ev = [{k: v for k, v in r.items() if k in ("id", "question", "gold_doc_ids",
                                               "gold_chunk_ids", "type")} for r in SAMPLES]
    for name, data, reject in _variants_text(jsonl(ev)):
        p = b.file(".jsonl", data)
        b.add("evalset:bytes", name, ["score", "retrieval", "--evalset", str(p), "--run",
                                      str(run_file), "-q"], reject, p.name if reject else None)
    for fld in ("id", "question", "gold_doc_ids", "gold_chunk_ids", "type"):
        for value in WRONG_VALUES:
            rows = json.loads(json.dumps(ev))
            rows[0][fld] = value
            p = b.file(".jsonl", jsonl(rows))
            b.add("evalset:types", f"{fld}={json.dumps(value)}",
                  ["score", "retrieval", "--evalset", str(p), "--run", str(run_file), "-q"], False)
    neg = b.file(".jsonl", jsonl([{"id": "n", "question": "q", "type": "negative",
                                   "gold_doc_ids": ["d"]}]))
    b.add("evalset:rules", "negative with gold", ["score", "retrieval", "--evalset", str(neg),
                                                  "--run", str(run_file)], True, "negative")

    # ---- qrels / run (TREC and JSON)
    def rr(q: Path, r: Path) -> list[str]:
        return ["score", "retrieval", "--qrels", str(q), "--run", str(r), "-q"]

    for name, data, reject in _variants_text(QRELS):
        p = b.file(".txt", data)
        b.add("qrels:bytes", name, rr(p, run_file), reject and name not in ("empty", "whitespace"),
              None)
    for name, data, reject in _variants_text(RUN):
        p = b.file(".txt", data)
        b.add("run:bytes", name, rr(qrels, p), reject and name not in ("empty", "whitespace"),
              None)
    bad_trec = [("three cols", "q1 0 d1\n"), ("grade text", "q1 0 d1 high\n"),
                ("grade float", "q1 0 d1 1.5\n"), ("grade huge", f"q1 0 d1 {2**70}\n"),
                ("dup doc", "q1 0 d1 1\nq1 0 d1 0\n"), ("only comments", "# a\n# b\n"),
                ("tabs", "q1\t0\td1\t1\n"), ("beir header only", "query-id\tcorpus-id\tscore\n"),
                ("beir bad score", "query-id\tcorpus-id\tscore\nq1\td1\tx\n")]
    for name, text in bad_trec:
        p = b.file(".txt", text)
        b.add("qrels:content", name, rr(p, run_file), False)
    bad_run = [("score nan", "q1 Q0 d1 1 nan t\n"), ("score text", "q1 Q0 d1 1 high t\n"),
               ("four cols", "q1 Q0 d1 1\n"), ("dup doc", "q1 Q0 d1 1 1 t\nq1 Q0 d1 2 0 t\n"),
               ("score inf", "q1 Q0 d1 1 inf t\n"), ("huge rank", f"q1 Q0 d1 {10**30} 1 t\n")]
    for name, text in bad_run:
        p = b.file(".txt", text)
        b.add("run:content", name, rr(qrels, p), False)
    json_bad = [("not object", "[1, 2]"), ("inner list", '{"q1": [1]}'),
                ("grade string", '{"q1": {"d1": "1"}}'), ("grade bool", '{"q1": {"d1": true}}'),
                ("dup key", '{"q1": {"d1": 1, "d1": 0}}'), ("deep", "{" * 5000),
                ("nan", '{"q1": {"d1": NaN}}'), ("bom", '\ufeff{"q1": {"d1": 1}}')]
    for name, text in json_bad:
        p = b.file(".json", text)
        b.add("qrels-json:content", name, rr(p, run_file), name != "bom")
        p2 = b.file(".json", text.replace('"d1": 1', '"d1": 0.5'))
        b.add("run-json:content", name, rr(qrels, p2), name not in ("bom", "grade string")
              and name != "grade bool" and name != "nan")

    # ---- judge-pipeline items
    for name, data, reject in _variants_text(jsonl(PIPE)):
        p = b.file(".jsonl", data)
        b.add("pipeline:bytes", name, ["judge", "pipeline", str(p), "-q"], reject,
              p.name if reject else None)
    for name, data, reject in _variants_text(json.dumps(PIPE, separators=(",", ":"))):
        p = b.file(".json", data)
        b.add("pipeline-json:bytes", name, ["judge", "pipeline", str(p), "-q"], reject,
              p.name if reject else None)
    for fld in ("ground_truth_show", "predicted_show", "predicted_score", "id", "context",
                "question"):
        for value in WRONG_VALUES:
            rows = json.loads(json.dumps(PIPE))
            rows[0][fld] = value
            p = b.file(".jsonl", jsonl(rows))
            b.add("pipeline:types", f"{fld}={json.dumps(value)}", ["judge", "pipeline", str(p),
                                                                  "-q"], False)

    # ---- benchmark configs (YAML)
    items = jsonl(PIPE)
    cfg_mutations: list[tuple[str, str | bytes, bool]] = []
    for name, data, reject in _variants_text(CONFIG):
        cfg_mutations.append((f"bytes:{name}", data, reject))
    yaml_bad = [
        ("unknown key", CONFIG + "bogus: 1\n", True), ("no name", CONFIG.replace("name: t\n", ""),
                                                      True),
        ("name list", CONFIG.replace("name: t", "name: [1, 2]"), True),
        ("tiers string", "name: t\ntiers: judge_pipeline\n", True),
        ("unknown tier", "name: t\ntiers: [nope]\n", True),
        ("empty tiers", "name: t\ntiers: []\n", True),
        ("seed text", CONFIG + "seed: abc\n", True), ("k zero", CONFIG + "k: [0]\n", True),
        ("k text", CONFIG + "k: [a]\n", True), ("limit negative", CONFIG + "limit: -5\n", True),
        ("batch zero", CONFIG + "batch_size: 0\n", True),
        ("dataset missing", CONFIG + "datasets:\n  - path: nope.jsonl\n", True),
        ("dataset bad format", CONFIG + "datasets:\n  - path: items.jsonl\n    format: x\n",
         True),
        ("alias bomb", "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                       "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nname: t\ntiers: [nope]\n", True),
        ("tabs", CONFIG.replace("  ", "\t"), True), ("yaml list", "- a\n- b\n", True),
        ("yaml scalar", "hello\n", True), ("python tag", "!!python/object:os.system x\n", True),
        ("store password", CONFIG.replace("results.sqlite",
                                          "postgresql://u:secret@h/db"), True),
        ("dup keys", CONFIG + "name: u\n", True),
        ("huge", "name: " + "x" * 1_000_000 + "\ntiers: [nope]\n", True),
        ("deep", "name: t\nx: " + "[" * 2000 + "]" * 2000 + "\ntiers: [nope]\n", True),
    ]
    cfg_mutations.extend(yaml_bad)
    for name, text, reject in cfg_mutations:
        p = b.file(".yaml", text)
        (p.parent / "items.jsonl").write_text(items, "utf-8")
        b.add("config", name, ["run", str(p), "-q"], reject)

    # ---- judge configs
    judge_bad = [("no backend value", "judges:\n  - name: j\n    backend: nope\n"),
                 ("no model", "judges:\n  - name: j\n    backend: openai\n    base_url: http://x\n"),
                 ("temperature text", JUDGE_CFG + "    temperature: hot\n"),
                 ("concurrency zero", JUDGE_CFG + "    max_concurrency: 0\n"),
                 ("timeout negative", JUDGE_CFG + "    timeout_s: -1\n"),
                 ("judges scalar", "judges: 3\n"), ("empty", ""), ("list", "- 1\n"),
                 ("unknown key", JUDGE_CFG + "    colour: red\n"), ("truncated", JUDGE_CFG[:40])]
    prompt = b.file(".txt", "Q {question} A {answer} C {context}")
    items_f = b.file(".jsonl", items)
    for name, text in judge_bad:
        p = b.file(".yaml", text)
        b.add("judge-config", name, ["judge", "pipeline", str(items_f), "--prompt", str(prompt),
                                     "--judge-config", str(p), "-q"], True)
    bad_prompt = b.file(".txt", "no placeholders here")
    b.add("judge-config", "prompt without placeholders",
          ["judge", "pipeline", str(items_f), "--prompt", str(bad_prompt), "--judge-url",
           "http://127.0.0.1:9/v1", "--judge-model", "m"], True, "placeholder")

    # ---- bad option values, per command
    samples_ok = b.file(".jsonl", jsonl(SAMPLES))
    opt_values = {
        "-k": ["0", "-1", "a", "1,,x", "", "1.5"],
        "--seed": ["abc", "1.5", "", "-" * 3, "1e9999"],
        "--level": ["page", "", "DOC"], "--ties": ["random", ""], "--match": ["fuzzy", ""],
        "--metrics": ["", "nope", "ndcg@", "ndcg@x", "ndcg@5(", "ndcg@5(gain=)", "mrr(foo=1)",
                      "recall@-1", "((", ",,,"],
        "--max-unscored": ["-0.1", "1.5", "x", "nan"],
        "--format": ["xml", "", "RAGAS"], "--map": ["x", "=y", "user_input=", "nope=a",
                                                     "user_input=missing"],
        "--score-threshold": ["x", "nan"],
    }
    for opt, values in opt_values.items():
        for v in values:
            argv = ["score", "retrieval", "--samples", str(samples_ok), opt, v, "-q"]
            b.add("options:retrieval", f"{opt} {v!r}", argv, opt != "--score-threshold" or v == "x")
    gen_opts = {"--metrics": ["", "nope", "rouge_l(stem=xx)", "bleu(tokenize=zz)", "((("],
                "--max-unscored": ["2", "-1", "x"], "--judge-concurrency": ["0", "-3", "x"],
                "--judge-timeout": ["0", "-1", "x"], "--judge-backend": ["nope"],
                "--language": ["fr"], "--format": ["yaml"], "--map": ["a=b"],
                "--judge-model": ["m"]}
    for opt, values in gen_opts.items():
        for v in values:
            argv = ["score", "generation", "--samples", str(samples_ok), opt, v, "-q"]
            b.add("options:generation", f"{opt} {v!r}", argv, opt != "--language")
    run_opts = {"--limit": ["0", "-1", "x"], "--tier": ["nope"], "--resume": ["no-such-run"],
                "--max-unscored": ["5"], "--store": ["mysql+nope://x/y", "sqlite:////no/dir/x"]}
    good_cfg = b.file(".yaml", CONFIG)
    (good_cfg.parent / "items.jsonl").write_text(items, "utf-8")
    for opt, values in run_opts.items():
        for v in values:
            b.add("options:run", f"{opt} {v!r}", ["run", str(good_cfg), opt, v, "-q"], True)
    for argv in (["gate", "nope-run", "--min", "x"], ["gate", str(samples_ok), "--min", "a=b"],
                 ["compare", "a", "b", "--method", "magic"],
                 ["compare", "a", "b", "--n-resamples", "5"],
                 ["report", "nope", "--format", "pdf"], ["runs", "show", "nope-run-id"],
                 ["judge", "pipeline", str(items_f), "--prompt", "missing.txt"],
                 ["judge", "pipeline", str(items_f), "--judge-url", "http://x"],
                 ["judge", "pipeline", str(items_f), "--strict-reply", "--max-unscored", "3"],
                 ["judge", "pipeline"], ["score", "retrieval"], ["score", "generation"], ["run"],
                 ["--bogus"], ["score", "retrieval", "--qrels", str(qrels)],
                 ["score", "retrieval", "--evalset", str(samples_ok), "--samples", str(samples_ok)],
                 ["score", "retrieval", "--samples", str(samples_ok), "--doc-map", str(samples_ok)],
                 ["score", "retrieval", "--samples", str(samples_ok), "--doc-map", "missing.json"]):
        b.add("options:misc", " ".join(argv)[:60], list(argv), True)
    build_edge_cases(b)
    return b.cases


def build_edge_cases(b: Builder) -> None:
    """Inputs that used to be accepted in silence (exit 0 with nothing scored) or crash:
    each must be an exit-2 error whose message names the file (or option) and the field."""
    run_file = b.file(".txt", RUN)
    e = "edges"

    def add(name: str, argv: list[str], needle: str) -> None:
        b.add(e, name, argv, True, needle)

    bad_all = b.file(".jsonl", jsonl([{**SAMPLES[0], "question": ["x"]},
                                      {**SAMPLES[1], "question": 3}]))
    for cmd in (["score", "generation", "--metrics", "rouge_1"], ["score", "retrieval"]):
        add(f"{cmd[1]} --skip-invalid, every record invalid",
            [*cmd[:2], "--samples", str(bad_all), *cmd[2:], "--skip-invalid", "-q"],
            "leaves no sample")
    for name, text in (("empty", ""), ("{}", "{}"), ("only empty queries", '{"q1": {}}')):
        p = b.file(".json" if text else ".txt", text)
        add(f"qrels {name}", ["score", "retrieval", "--qrels", str(p), "--run", str(run_file),
                              "-q"], p.name if text else "")
    header = b.file(".csv", "id,question,retrieved_ids,gold_doc_ids\n")
    add("header-only CSV", ["score", "retrieval", "--samples", str(header), "-q"], "no records")
    ws = b.file(".jsonl", jsonl([{**SAMPLES[0], "question": "  \t "}, SAMPLES[1]]))
    add("whitespace-only question", ["score", "generation", "--samples", str(ws), "--metrics",
                                     "rouge_1",
                                     "-q"], "field 'user_input'")
    items = jsonl(PIPE)
    for name, rows in (("id as list", [{**PIPE[0], "id": ["a"]}, *PIPE[1:]]),
                       ("id as object", [{**PIPE[0], "id": {"a": 1}}, *PIPE[1:]])):
        p = b.file(".jsonl", jsonl(rows))
        add(f"judge-pipeline {name}", ["judge", "pipeline", str(p), "-q"], "field 'id'")
    nan_score = b.file(".jsonl", items.replace('"predicted_show": false', '"predicted_score": '
                                               'NaN, "predicted_show": false', 1))
    add("judge-pipeline NaN score", ["judge", "pipeline", str(nan_score), "-q"],
        "field 'predicted_score'")
    cache = b.file(".jsonl", jsonl([{"id": "a", "question": "q1", "answer": "x"},
                                    {"id": "a", "question": "q2", "answer": "y"}]))
    queries = b.file(".jsonl", jsonl([{"id": "z", "question": "q1"}, {"id": "z",
                                                                      "question": "q3"}]))
    add("ux duplicate cache ids", ["score", "ux", "--cache", str(cache), "--queries", str(queries)],
        "duplicate id 'a'")
    ok_cache = b.file(".jsonl", jsonl([{"id": "a", "question": "q1", "answer": "x"}]))
    add("ux duplicate query ids", ["score", "ux", "--cache", str(ok_cache), "--queries",
                                   str(queries)],
        "duplicate id 'z'")
    for name, turn in (("NaN", "NaN"), ("Infinity", "Infinity"), ("true", "true")):
        p = b.file(".jsonl", f'{{"session_id": "s", "question": "q1", "answer": "a", '
                             f'"turn": {turn}}}\n'
                             '{"session_id": "s", "question": "q2", "answer": "b", "turn": 2}\n')
        add(f"ux turn {name}", ["score", "ux", "--sessions", str(p)], "field 'turn'")
    dup_sessions = b.file(".jsonl", jsonl([{"session_id": "s", "turns": [{"question": "a"}]},
                                           {"session_id": "s", "turns": [{"question": "b"}]}]))
    add("ux duplicate nested session", ["score", "ux", "--sessions", str(dup_sessions)],
        "duplicate")
    corpus = b.root / "binary-corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Плата 950 рублей в месяц. " * 20, "utf-8")
    (corpus / "b.txt").write_bytes(bytes(range(256)) * 8)
    add("binary .txt in a corpus", ["testset", "generate", "--corpus", str(corpus), "--out",
                                    str(b.root / "g.jsonl"), "--generator-backend", "mock",
                                    "--estimate"], "b.txt")
    add("generate --chunk-size 0", ["testset", "generate", "--corpus", str(corpus), "--out",
                                    str(b.root / "g.jsonl"), "--generator-backend", "mock",
                                    "--estimate", "--chunk-size", "0"], "--chunk-size")
    add_shape_and_path_edges(b, add, qrels=QRELS, run=RUN, config=CONFIG, items=jsonl(PIPE))


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    timed_out: bool = False


def _alarm(signum: int, frame: object) -> None:
    raise CaseTimeout()


def run_in_process(argv: list[str]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_TIMEOUT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.run(argv)
        return Outcome(code, out.getvalue(), err.getvalue())
    except CaseTimeout:
        return Outcome(-1, out.getvalue(), err.getvalue(), timed_out=True)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_subprocess(argv: list[str], cwd: Path) -> Outcome:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    try:
        proc = subprocess.run([sys.executable, "-m", "ragmeter", *argv], capture_output=True,
                              text=True, timeout=CASE_TIMEOUT_S * 2, cwd=cwd, env=env,
                              errors="replace")
    except subprocess.TimeoutExpired:
        return Outcome(-1, "", "", timed_out=True)
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def check(case: Case, o: Outcome) -> list[str]:
    bad = []
    text = o.out + o.err
    if o.timed_out:
        return ["hang (timeout)"]
    if "Traceback" in text:
        bad.append("traceback")
    if o.code == 4:
        bad.append("internal error")
    if o.code not in (0, 1, 2, 3, 4):
        bad.append(f"unexpected exit {o.code}")
    if o.code != 0 and not o.err.strip():
        bad.append("non-zero exit without a message")
    if case.reject:
        if o.code not in (2, 3):
            bad.append(f"must be rejected, exit {o.code}")
        elif case.needle and case.needle not in o.err:
            bad.append(f"message lacks {case.needle!r}")
    return bad


def test_silent_accepts_are_exit_2_naming_file_and_field(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """The edge cases alone (fast): each exits 2 with a message naming file/option and field."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_STORE_URL", f"sqlite:///{tmp_path}/store.sqlite")
    b = Builder(tmp_path / "cases")
    build_edge_cases(b)
    failures = []
    for case in b.cases:
        o = run_in_process(case.argv)
        problems = check(case, o)
        if o.code != 2:
            problems.append(f"exit {o.code}, not 2")
        if problems:
            failures.append(f"{case.name}: {', '.join(problems)} :: {o.err.strip()[-300:]}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_bad_input_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_STORE_URL", f"sqlite:///{tmp_path}/store.sqlite")
    cases = build_cases(tmp_path / "cases")
    assert len(cases) >= 1000, len(cases)
    failures: list[str] = []
    stats: dict[str, Counter[str]] = defaultdict(Counter)
    for i, case in enumerate(cases):
        sub = i % SUBPROCESS_EVERY == 0
        o = run_subprocess(case.argv, tmp_path) if sub else run_in_process(case.argv)
        problems = check(case, o)
        st = stats[case.group]
        st["cases"] += 1
        st["subprocess"] += sub
        st["reject expected"] += case.reject
        st[f"exit {o.code}" if not o.timed_out else "hang"] += 1
        st["tracebacks"] += "Traceback" in o.out + o.err
        if problems:
            st["failed"] += 1
            failures.append(f"[{case.group}] {case.name}: {', '.join(problems)} :: "
                            f"{' '.join(case.argv)[:160]} :: {o.err.strip()[-300:]}")
    _write_table(stats, len(cases))
    assert not failures, f"{len(failures)} of {len(cases)} cases failed:\n" + "\n".join(
        failures[:60])


def _write_table(stats: dict[str, Counter[str]], total: int) -> None:
    cols = ["cases", "subprocess", "reject expected", "exit 0", "exit 1", "exit 2", "exit 3",
            "exit 4", "hang", "tracebacks", "failed"]
    lines = [f"# bad-input corpus: {total} cases", "",
             "| group | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
    tot: Counter[str] = Counter()
    for group in sorted(stats):
        tot.update(stats[group])
        lines.append(f"| {group} | " + " | ".join(str(stats[group][c]) for c in cols) + " |")
    lines.append("| **total** | " + " | ".join(str(tot[c]) for c in cols) + " |")
    out = ROOT / "test-output"
    out.mkdir(exist_ok=True)
    (out / "bad_input_corpus.md").write_text("\n".join(lines) + "\n", "utf-8")
