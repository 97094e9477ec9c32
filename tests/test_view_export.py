"""``ragmeter view --export DIR``: static files that open offline — every link between pages is
relative and lands on a written file; nothing refers to the server."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from ragmeter.results.store import ResultStore

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]


def make_store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    store = ResultStore(url)
    for i, rid in enumerate(("run-a", "run-b")):
        run = builders.make_run(rid, n=6, shift=0.1 * i)
        run.created_at = f"2026-04-0{i + 1}T00:00:00+00:00"
        store.save_run(run)
    store.engine.dispose()
    store._write_engine.dispose()
    return url


def test_export_writes_linked_static_pages(tmp_path):
    url = make_store(tmp_path)
    out = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "ragmeter", "view", "--store", url, "--export",
                           str(out), "--export-samples", "2", "--lang", "en"],
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(Path(__file__).parents[1] / "src"),
                               "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "pages to" in done.stdout
    files = {p.relative_to(out).as_posix() for p in out.rglob("*.html")}
    for must in ("index.html", "history.html", "compare.html", "judges.html", "side.html",
                 "run/run-a.html", "run/run-b.html"):
        assert must in files, sorted(files)
    assert sum("/sample/" in f for f in files) == 4  # 2 a run
    for f in files:
        html = (out / f).read_text(encoding="utf-8")
        for link in re.findall(r'href="([^"#]*)"', html):
            assert not link.startswith(("/", "http:", "https:")), (f, link)
            assert (out / f).parent.joinpath(link).resolve().is_file(), (f, link)
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'href="run/run-b.html"' in index and "data-offline style=\"display:none\"" in index
    sample = next(f for f in files if "/sample/" in f)
    assert 'href="../../run-a.html' in (out / sample).read_text() or "../../run-b.html" in (
        out / sample).read_text()
