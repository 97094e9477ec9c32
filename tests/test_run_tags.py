"""Run tags: a config's ``tags:`` and ``ragmeter run --tag`` are stored in the run's meta
with its git commit, and the ``ragmeter view`` registry filters by them (real HTTP)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from ragmeter.cli import app as cli
from ragmeter.errors import EXIT_USAGE, ConfigError
from ragmeter.results.store import ResultStore
from ragmeter.runner.config import parse_config

DEMO = Path(__file__).parents[1] / "src" / "ragmeter" / "demo" / "data"


def _config(tmp_path: Path, tags: str = "[baseline, prompt-v2]") -> Path:
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(f"name: tagged\nstore: r.sqlite\ntags: {tags}\ntiers:\n"
                   "  - name: judge_pipeline\n"
                   f"    options: {{items: {DEMO / 'judge_pipeline.jsonl'}}}\n", encoding="utf-8")
    return cfg


def _git_init(folder: Path) -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True,
                              text=True).stdout.strip()

    git("init", "-q")
    git("-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-q",
        "--allow-empty", "-m", "x")
    return git("rev-parse", "HEAD")


def test_config_tags_validated() -> None:
    assert parse_config({"name": "x", "tags": ["a", "b", "a"], "tiers": ["ux"]}).tags == ("a", "b")
    assert parse_config({"name": "x", "tags": "one", "tiers": ["ux"]}).tags == ("one",)
    for bad, where in (([1], "tags[0]"), (["a,b"], "tags[0]"), ({"a": 1}, "tags"),
                       (["x" * 65], "tags[0]")):
        with pytest.raises(ConfigError) as exc:
            parse_config({"name": "x", "tags": bad, "tiers": ["ux"]})
        assert exc.value.key == where, exc.value


def test_tags_change_does_not_block_resume() -> None:
    a = parse_config({"name": "x", "tags": ["a"], "tiers": ["ux"]})
    b = parse_config({"name": "x", "tags": ["b"], "tiers": ["ux"]})
    assert a.fingerprint() == b.fingerprint()


def test_run_stores_tags_and_commit_and_view_filters(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    commit = _git_init(tmp_path)
    cfg = _config(tmp_path)
    assert cli.run(["run", str(cfg), "--tag", "nightly", "--tag", "baseline", "-q",
                    "--run-id", "tagged-1"]) == 0
    assert cli.run(["run", str(cfg), "-q", "--run-id", "plain-2"]) == 0
    assert cli.run(["run", str(cfg), "-q", "--tag", "bad,tag"]) == EXIT_USAGE
    capsys.readouterr()
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    store = ResultStore(url)
    run = store.load_run("tagged-1")
    assert run.meta["tags"] == ["baseline", "prompt-v2", "nightly"]
    assert run.git_commit == commit
    rows = {r.id: r for r in store.run_rows()}
    assert rows["tagged-1"].tags == ("baseline", "prompt-v2", "nightly")
    assert "nightly" not in rows["plain-2"].tags

    from aiohttp.test_utils import TestClient, TestServer

    from ragmeter.view import make_app

    async def fetch() -> dict[str, str]:
        out = {}
        async with TestClient(TestServer(make_app(url, lang="en"))) as client:
            for path in ("/?tag=nightly", "/?tag=prompt-v2", f"/?commit={commit[:8]}"):
                resp = await client.get(path)
                assert resp.status == 200
                out[path] = await resp.text()
        return out

    pages = asyncio.run(fetch())
    nightly = pages["/?tag=nightly"]
    assert "tagged-1" in nightly and "plain-2" not in nightly
    assert "tagged-1" in pages["/?tag=prompt-v2"] and "plain-2" in pages["/?tag=prompt-v2"]
    assert "tagged-1" in pages[f"/?commit={commit[:8]}"]
    assert commit[:10] in nightly
