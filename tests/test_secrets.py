"""One masking function for everything that leaves the process: linear time, and no URL
password or API key in any output of a succeeding or a failing CLI run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ragmeter
from ragmeter.secrets import MASK, mask, mask_secrets, register_secret

FIX = Path(__file__).parent / "fixtures" / "runner"
SRC = str(Path(ragmeter.__file__).resolve().parents[1])  # the subprocesses run this checkout
PASSWORD = "pw-Leak7Qz"
API_KEY = "k3y-Leak9Xw-0123456789"
KEY_ENV = "RAGMETER_LEAKTEST_CRED"  # a name that does not look secret: masked by registration


@pytest.mark.parametrize(("text", "expected"), [
    ("http://user:pass@host/x", f"http://user:{MASK}@host/x"),
    ("postgresql+psycopg://u:p@ss@h:5432/db ok", f"postgresql+psycopg://u:{MASK}@h:5432/db ok"),
    ("see https://:tok@h", f"see https://:{MASK}@h"),
    ("http://host:8080/x and a@b", "http://host:8080/x and a@b"),
    ("x http://u:p@h and ftp://a:b@c/d@e", f"x http://u:{MASK}@h and ftp://a:{MASK}@c/d@e"),
    ("header Bearer abc.def-123", f"header Bearer {MASK}"),
    ("key sk-abcdefghijkl end", f"key {MASK} end"),
    ("no secrets here", "no secrets here"),
])
def test_mask_cases(text: str, expected: str) -> None:
    assert mask(text) == expected


def test_registered_and_env_named_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    register_secret("zz-registered-value")
    assert mask("a zz-registered-value b") == f"a {MASK} b"
    monkeypatch.setenv("SOME_SERVICE_API_KEY", "value-from-env-42")
    assert "value-from-env-42" not in mask("got value-from-env-42")
    monkeypatch.setenv("RAGMETER_T_NAMED", "named-by-env-key-77")
    masked = mask_secrets({"judge": {"api_key_env": "RAGMETER_T_NAMED", "token": "t0k"}})
    assert masked == {"judge": {"api_key_env": "RAGMETER_T_NAMED", "token": MASK}}
    assert mask("named-by-env-key-77 leaked?") == f"{MASK} leaked?"


@pytest.mark.timeout(10)
@pytest.mark.parametrize("hostile", [
    "a" * 5_000_000,
    "a://" * 1_250_000,
    "a://x:" * 800_000,
    "http://u:" + "x" * 5_000_000,
    "a://b:" + "c@" * 2_000_000,
    "Bearer " + " " * 5_000_000,
    "sk-" * 1_600_000,
])
def test_mask_is_linear_on_hostile_input(hostile: str) -> None:
    # the previous regex needed minutes to hours on 5 MB of these; linear code takes ~50 ms
    out = mask(hostile)
    assert len(out) <= len(hostile)


def _cli(*args: str, cwd: Path, key: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "RAGMETER_CACHE_DIR": str(cwd / "cache"),
           KEY_ENV: API_KEY, "PYTHONPATH": SRC}
    env.pop("RAGMETER_STORE_URL", None)
    if not key:
        env.pop(KEY_ENV)
    return subprocess.run([sys.executable, "-m", "ragmeter", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)


def _bench(tmp: Path, base_url: str) -> Path:
    shutil.copy(FIX / "samples.jsonl", tmp / "samples.jsonl")
    path = tmp / "bench.yaml"
    path.write_text(f"""name: leak-check
run_dir: runs
datasets:
  - {{name: answers, path: samples.jsonl, format: samples}}
judges:
  - name: main
    backend: openai
    base_url: "{base_url}"
    model: mock-judge
    api_key_env: {KEY_ENV}
    retry: {{max_retries: 1, initial: 0.01, max: 0.01}}
tiers:
  - name: generation
    dataset: answers
    judge: main
    metrics: [faithfulness, answer_relevance]
""", encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("alive", "creds", "key"),
                         [(True, True, False), (True, False, True), (False, True, False),
                          (False, False, True), (True, True, True)],
                         ids=["succeeding-url-credentials", "succeeding-key",
                              "failing-url-credentials", "failing-key", "credentials-and-key"])
def test_no_password_or_key_in_any_output(tmp_path: Path, alive: bool, creds: bool,
                                          key: bool) -> None:
    from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

    with MockJudgeServer(MockConfig()) as srv:
        port = srv.port if alive else 9  # port 9 (discard) is closed: every call fails
        auth = f"leakuser:{PASSWORD}@" if creds else ""
        url = f"http://{auth}127.0.0.1:{port}/v1"
        bench = _bench(tmp_path, url)
        store = f"sqlite:///{tmp_path / 'store.sqlite'}"
        outputs = [_cli("run", str(bench), "--store", store, "--run-id", "r1", cwd=tmp_path,
                        key=key)]
    if creds and key:  # never combined: a clear error naming both, and nothing leaks
        assert outputs[0].returncode != 0
        assert "credentials in the URL" in outputs[0].stderr, outputs[0].stderr
        alive = False
    elif alive:
        assert outputs[0].returncode == 0, outputs[0].stdout + outputs[0].stderr
    outputs += [
        _cli("report", "r1", "--store", store, "--out", "r1.html", cwd=tmp_path),
        _cli("report", "r1", "--store", store, "--format", "md", "--out", "-", cwd=tmp_path),
        _cli("runs", "export", "r1", "--format", "csv", "--store", store, "--out", "r1.csv",
             cwd=tmp_path),
        _cli("runs", "export", "r1", "--format", "json", "--store", store, "--out", "r1.json",
             cwd=tmp_path),
        _cli("runs", "show", "r1", "--store", store, cwd=tmp_path),
    ]
    assert (tmp_path / "r1.html").exists() and (tmp_path / "r1.csv").exists()
    files = [p for p in tmp_path.rglob("*")
             if p.is_file() and p.name not in ("bench.yaml", "samples.jsonl")
]
    assert any(p.name == "progress.jsonl" for p in files)
    progress = next(p for p in files if p.name == "progress.jsonl").read_bytes()
    if alive:  # the credentials went to the Authorization header
        assert b"_error" not in progress
    elif not (creds and key):  # the error path ran: connection errors were recorded (masked)
        assert any(b"connection_error" in p.read_bytes() for p in files), files
    hits = [str(p) for p in files
            if PASSWORD.encode() in p.read_bytes() or API_KEY.encode() in p.read_bytes()]
    hits += [f"stdout/stderr of command {i}" for i, o in enumerate(outputs)
             if PASSWORD in o.stdout + o.stderr or API_KEY in o.stdout + o.stderr]
    assert hits == []


def test_log_records_are_masked(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    caplog.set_level(logging.INFO)
    logging.getLogger("ragmeter.judges").info("calling %s", "http://u:hunter2-pw@h/v1")
    assert "hunter2-pw" not in caplog.text and f"u:{MASK}@h" in caplog.text


def test_url_credentials_become_a_header_and_a_registered_secret() -> None:
    from ragmeter.secrets import split_url_credentials

    url, auth = split_url_credentials("http://alice:s3cr%40t-pw@127.0.0.1:8000/v1")
    assert url == "http://127.0.0.1:8000/v1"
    assert auth is not None and auth.startswith("Basic ")
    assert mask(f"token {auth[6:]} and s3cr@t-pw") == f"token {MASK} and {MASK}"
    assert split_url_credentials("http://127.0.0.1:8000/v1") == ("http://127.0.0.1:8000/v1", None)
