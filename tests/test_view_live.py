"""A running run in the viewer: a real `ragmeter run` subprocess (a plug-in tier that sleeps per
sample) shows on the registry and its live page with its progress and the values of its
finished batches while it runs, then as a stored run once it ends — without restarting the
viewer (nothing is cached past a store change)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from ragmeter.results.store import ResultStore

FIX = Path(__file__).parent / "fixtures" / "runner"


def start_slow_run(tmp_path: Path, sleep: float = 0.25, run_id: str = "live-run-1"
                   ) -> tuple[subprocess.Popen, str, Path]:
    """A real ``ragmeter run`` of 40 samples in batches of 4, ``sleep`` seconds a sample;
    returns the process, the store URL and the runs folder."""
    for name in ("slow_tier.py", "samples.jsonl"):
        shutil.copy(FIX / name, tmp_path / name)
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    cfg = {"name": "live-bench", "seed": 11, "batch_size": 4, "run_dir": "runs",
           "store": url, "tags": ["ab-test"],
           "datasets": [{"name": "main", "path": "samples.jsonl", "format": "samples"}],
           "plugins": {"toy": "slow_tier.py:run"}, "tiers": ["toy"]}
    (tmp_path / "bench.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    store = ResultStore(url)  # an empty store the viewer can open before the run ends
    store.engine.dispose()
    store._write_engine.dispose()
    env = {**os.environ, "RAGMETER_TEST_TIER_SLEEP": str(sleep),
           "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    env.pop("RAGMETER_STORE_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "ragmeter", "run", str(tmp_path / "bench.yaml"),
                             "--run-id", run_id, "--quiet", "--max-lost", "1"],
                            env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc, url, tmp_path / "runs"


def test_a_running_run_is_live_then_stored(tmp_path):
    from aiohttp.test_utils import TestClient, TestServer

    from ragmeter.view import make_app

    proc, url, runs = start_slow_run(tmp_path)
    app = make_app(url, lang="en", runs_dir=str(runs))

    async def watch():
        seen, pages = [], None
        async with TestClient(TestServer(app)) as client:
            deadline = time.time() + 90
            while time.time() < deadline:
                resp = await client.get("/api/live/live-run-1")
                if resp.status == 200:
                    data = await resp.json()
                    seen.append(data)
                    if data["state"] == "stored":
                        break
                    if data["state"] == "running" and data["done"] and pages is None:
                        pages = (await (await client.get("/")).text(),
                                 await (await client.get("/live/live-run-1")).text())
                await asyncio.sleep(0.2)
            registry_after = await (await client.get("/")).text()
            run_page = await client.get("/run/live-run-1")
            return seen, pages, registry_after, run_page.status
    seen, pages, registry_after, run_status = asyncio.run(watch())
    out = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode == 0, out
    running = [s for s in seen if s["state"] == "running" and s["done"]]
    assert running, [s["state"] for s in seen]
    mid = running[0]
    assert mid["total"] == 40 and 0 < mid["done"] < 40, mid
    tier = mid["tiers"][0]
    assert tier["tier"] == "toy" and tier["batches"] == mid["done"] // 4
    values = {v["metric"]: v for v in tier["values"]}
    assert values["toy_score"]["n"] + values["toy_score"]["n_unscored"] == mid["done"]
    assert 0.0 <= values["toy_score"]["mean"] <= 1.0
    dones = [s["done"] for s in seen]
    assert dones == sorted(dones) and len(set(dones)) > 2  # it advanced while we watched
    registry, page = pages
    assert 'class=live-row data-run="live-run-1"' in registry and "ab-test" in registry
    assert "<section class=live-tier data-tier=\"toy\">" in page
    assert 'data-src="/api/live/live-run-1?lang=en"' in page
    assert seen[-1]["state"] == "stored"
    assert "class=live-row" not in registry_after  # now a stored run...
    assert 'data-run="live-run-1"' in registry_after and run_status == 200  # ...no restart


def test_live_pages_refuse_unknown_runs_and_paths(tmp_path):
    from aiohttp.test_utils import TestClient, TestServer

    from ragmeter.view import make_app

    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    ResultStore(url).engine.dispose()
    (tmp_path / "runs" / "x").mkdir(parents=True)
    (tmp_path / "runs" / "x" / "meta.json").write_text(json.dumps(
        {"run_id": "x", "name": "n", "tiers": ["toy"]}))

    async def go():
        async with TestClient(TestServer(make_app(url, runs_dir=str(tmp_path / "runs")))) as c:
            return [(await c.get(p)).status for p in
                    ("/api/live/nope", "/live/.x", "/api/live/x", "/api/live")]
    assert asyncio.run(go()) == [404, 404, 200, 200]


def test_registry_shows_a_run_that_starts_after_it_was_cached(tmp_path):
    from aiohttp.test_utils import TestClient, TestServer

    from ragmeter.view import make_app

    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    ResultStore(url).engine.dispose()
    runs = tmp_path / "runs"
    runs.mkdir()

    async def go():
        async with TestClient(TestServer(make_app(url, runs_dir=str(runs)))) as c:
            before = await (await c.get("/")).text()
            folder = runs / "20260101-000000-abcdef"
            folder.mkdir()
            (folder / "meta.json").write_text(json.dumps(
                {"run_id": folder.name, "name": "late", "tiers": ["toy"]}))
            (folder / "progress.jsonl").write_text(json.dumps(
                {"type": "tier_start", "tier": "toy", "total": 8}) + "\n")
            return before, await (await c.get("/")).text()
    before, after = asyncio.run(go())
    assert "class=live-row" not in before
    assert 'class=live-row data-run="20260101-000000-abcdef"' in after and "0/8" in after
