"""The details people meet in the dashboard and the command line, each as they saw it: a judge
card without the asked statistic, run ids on the judges page, error texts and plurals in
Russian, stable JUnit test names, tags in ``runs list``, a fast Tab, the summary's status words,
exported pages without server controls or local paths, chart labels that do not collide, the
real-users headline, and progress while a slow judge works."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from ragmeter.results.store import ResultStore

ROOT = Path(__file__).parents[1]
_spec = importlib.util.spec_from_file_location(
    "runner_builders", ROOT / "tests" / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]


def _store(tmp_path: Path, *runs) -> str:
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    store = ResultStore(url)
    for run in runs:
        store.save_run(run)
    store.close()
    return url


def _run(rid: str, day: int, tags=(), config=None):
    run = builders.make_run(rid, n=8)
    run.created_at = f"2026-06-{day:02d}T00:00:00+00:00"
    run.meta["tags"] = list(tags)
    if config is not None:
        run.config = config
    return run


def _get(url: str, paths: list[str], **kw) -> dict[str, tuple[int, str]]:
    from aiohttp.test_utils import TestClient, TestServer

    from ragmeter.view import make_app

    async def go():
        out = {}
        async with TestClient(TestServer(make_app(url, **kw))) as client:
            for p in paths:
                r = await client.get(p)
                out[p] = (r.status, await r.text())
        return out
    return asyncio.run(go())


def test_a_card_without_the_statistic_says_na_and_run_ids_are_links(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_view

    from ragmeter.judge_trust.runs import TIER
    from ragmeter.results.store import TierRecord

    run = _run("carded", 3)
    card = builders.EvalResult("judge_card:j1", meta={"tier": TIER,
                                                      "judge_card": bench_view._card("j1", 0.7)})
    card.add(builders.metric("human_label(metric=faithfulness)", [1.0, 0.0, 1.0]))
    run.tiers[TIER] = TierRecord(TIER, "ok", None, [card])
    url = _store(tmp_path, run)
    got = _get(url, ["/judges?stat=tpr", "/judges?stat=kappa"], lang="en")
    status, html = got["/judges?stat=tpr"]      # the card has kappa and accuracy only
    assert status == 200, html[-1500:]
    table = html.split("<table class=judges>", 1)[1].split("</table>", 1)[0]
    assert "n/a" in table and 'href="/run/carded?lang=en"' in table
    assert "n/a" not in got["/judges?stat=kappa"][1].split("<table class=judges>", 1)[1] \
        .split("</table>", 1)[0]


def test_error_pages_speak_the_pages_language(tmp_path):
    url = _store(tmp_path, _run("r1", 1))
    got = _get(url, ["/run/nope?lang=ru", "/?page=abc&lang=ru", "/run/r1/sample/zz?lang=ru",
                     "/?page=abc&lang=en"])
    status, html = got["/run/nope?lang=ru"]
    assert status == 404 and "в этом хранилище нет запуска «nope»" in html
    status, html = got["/?page=abc&lang=ru"]
    assert status == 400 and "параметр запроса «page»: &#x27;abc&#x27; — не целое число" in html
    assert got["/run/r1/sample/zz?lang=ru"][0] == 404
    assert "в запуске r1 нет примера «zz»" in got["/run/r1/sample/zz?lang=ru"][1]
    assert "query parameter &#x27;page&#x27;: &#x27;abc&#x27; is not a whole number" in \
        got["/?page=abc&lang=en"][1]


@pytest.mark.parametrize("n,word", [(1, "пакет"), (2, "пакета"), (5, "пакетов"), (11, "пакетов"),
                                    (21, "пакет"), (104, "пакета"), (112, "пакетов")])
def test_russian_counts_take_the_right_form(n, word):
    from ragmeter.reports.i18n import plural_form, t
    from ragmeter.view.live import LiveRun, TierProgress, live_page

    assert plural_form(n, t("batches", "ru").split("|"), "ru") == word
    tier = TierProgress("toy", total=n, done=n, batches=n)
    page = live_page(LiveRun("r", "bench", "", (), [tier], 0.0, "running"), "ru")
    assert f"{n} {word}" in page
    assert "1 batch<" in live_page(LiveRun("r", "b", "", (), [TierProgress(
        "toy", batches=1)], 0.0, "running"), "en")
    assert t("shown", "ru", n=3, total=n).endswith(
        {"пакет": "пример", "пакета": "примера", "пакетов": "примеров"}[word])


def test_junit_test_names_stay_when_the_threshold_changes():
    from ragmeter.runner.gate_report import junit_xml
    from ragmeter.runner.gating import Threshold, check_thresholds

    res = builders.retrieval_result("bm25", 0.0, 8)
    names = []
    for bound in (0.9, 0.95):
        rows = check_thresholds(res, [Threshold("mrr", bound, None)])
        case = ET.fromstring(junit_xml(rows, {}, "gate").split("\n", 1)[1]).find(
            "testsuite/testcase")
        assert case is not None
        names.append(case.get("name"))
        prop = case.find("properties/property")
        assert prop is not None and prop.get("name") == "threshold"
        assert str(bound) in (prop.get("value") or "")
    assert names == ["mrr", "mrr"]


def test_runs_list_shows_tags_and_says_when_no_run_has_the_tag(tmp_path):
    url = _store(tmp_path, _run("run-a", 1, ["nightly"]), _run("run-b", 2, []))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("RAGMETER_STORE_URL", None)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ragmeter", *args], capture_output=True,
                              text=True, timeout=300, env=env, cwd=tmp_path)
    out = cli("runs", "list", "--store", url)
    assert out.returncode == 0 and "tags" in out.stdout and "nightly" in out.stdout
    none = cli("runs", "list", "--store", url, "--tag", "nosuch")
    assert "no runs with tag 'nosuch'" in none.stdout and "no runs yet" not in none.stdout


def test_a_tab_is_answered_from_the_table_in_a_fraction_of_a_second(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RAGMETER_CACHE_DIR": str(tmp_path),
           "_RAGMETER_COMPLETE": "complete_bash"}

    def tab(words: str) -> tuple[list[str], float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        cword = len(words.split()) - (0 if words.endswith(" ") else 1)
        out = subprocess.run([sys.executable, "-m", "ragmeter"], capture_output=True,
                             text=True, timeout=120, cwd=tmp_path,
                             env={**env, "COMP_WORDS": words, "COMP_CWORD": str(cword)})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert out.returncode == 0, out.stderr
        return out.stdout.split(), (after.ru_utime - before.ru_utime
                                    + after.ru_stime - before.ru_stime)
    first, _ = tab("ragmeter ru")                  # writes the table
    assert {"run", "runs"} <= set(first)
    cpu = []
    for words, want in (("ragmeter ru", "runs"), ("ragmeter runs li", "list"),
                        ("ragmeter runs list --t", "--tag"), ("ragmeter view --ex", "--export")):
        got, seconds = tab(words)
        assert want in got, (words, got)
        cpu.append(seconds)
    assert max(cpu) <= 0.15, cpu                  # CPU seconds of one Tab (load-independent)
    assert tab("ragmeter runs list --store ")[0] == []   # a value: the shell's own completion


def test_the_summary_says_the_status_in_words():
    from ragmeter.reports.markdown import run_markdown

    run = _run("r1", 1)
    assert "статус: завершён" in run_markdown(run, lang="ru")
    assert "статус complete" not in run_markdown(run, lang="ru")
    assert "status: complete" in run_markdown(run, lang="en")


def test_exported_pages_have_no_server_controls_and_no_local_path(tmp_path):
    from ragmeter.view.export import export_site

    data = tmp_path / "private" / "project" / "evalset.jsonl"
    config = {"name": "bench", "datasets": [{"path": str(data)}],
              "store": f"sqlite:///{tmp_path / 's.sqlite'}"}
    url = _store(tmp_path, _run("run-a", 1, config=config), _run("run-b", 2, config=config))
    summary = export_site(url, tmp_path / "site", lang="en", max_samples=1)
    assert summary.pages > 5
    for f in (tmp_path / "site").rglob("*.html"):
        html = f.read_text(encoding="utf-8")
        assert str(tmp_path) not in html and "private/project" not in html, f
        assert "diff-btn" not in html and "side-btn" not in html, f
        assert "name=pick" not in html, f
    run_page = (tmp_path / "site" / "run" / "run-a.html").read_text(encoding="utf-8")
    assert "…/project/evalset.jsonl" in run_page          # the config, without its place
    live = _get(url, ["/"], lang="en")["/"][1]             # the server's own pages keep them
    assert "diff-btn" in live and str(tmp_path) in live


def _tick_xs(svg: str, cls: str) -> list[float]:
    return [float(x) for x in re.findall(rf'<text class="{cls}" x="([0-9.]+)"', svg)]


def test_chart_labels_do_not_collide():
    from ragmeter.reports import svg

    xs = list(range(1, 151))                       # a history of 150 runs
    labels = [f"2026-{m:02d}-{d:02d} 07:00" for m in range(1, 7) for d in range(1, 26)]
    chart = svg.line_chart(xs, {"bm25": [svg.Point(0.5 + i / 1000) for i in xs]}, "history",
                           xlabels=labels, kind="history")
    ticks = _tick_xs(chart, "rm-tick")
    assert 5 < len(ticks) < 150
    assert min(b - a for a, b in itertools.pairwise(ticks)) >= svg.ROTATED_ROOM - 0.1
    rows = [(f"retrieval/bm25: metric {i}", svg.Point(-0.0123 + i * 0.001, -0.02, 0.013))
            for i in range(3)]
    diff = svg.diff_chart(rows, "B − A")           # a narrow range: long tick labels
    axis = re.findall(r'<text class="rm-axis" x="([0-9.]+)"[^>]*>([^<]+)</text>', diff)
    assert len(axis) >= 2
    for (xa, la), (xb, lb) in itertools.pairwise(axis):
        room = float(xb) - float(xa)
        assert room >= (svg.text_width(la) + svg.text_width(lb)) / 2, (la, lb, room)


def test_real_users_headline_is_where_the_user_was_sent():
    from ragmeter.reports.decision import decide
    from ragmeter.results.records import EvalResult, MetricResult, Signature

    ids = [f"q{i}" for i in range(20)]

    def res(name, metrics, **meta):
        r = EvalResult(name, meta=meta)
        for m in metrics:
            r.add(MetricResult(m, ids, [0.5 + (i % 3) / 10 for i in range(20)],
                               Signature.make(metric=m)))
        return r
    systems = [res("real_users:bot", ["hit_rate@1(level=doc)", "hit_rate@5(level=doc)",
                                      "mrr(level=doc)"]),
               res("bot:vs_logged", ["rouge_l"]),
               res("bot:latency", ["latency_p50", "latency_p95", "throughput"],
                   block="latency")]
    dec = decide("real_users", [(r.name, r) for r in systems])
    assert dec.primary == "mrr(level=doc)"
    assert {"hit_rate@1(level=doc)", "hit_rate@5(level=doc)"} <= set(dec.metrics)
    assert not any(m.startswith(("latency", "throughput")) for m in dec.metrics)
    assert dec.latency is not None and dec.latency.systems == ["bot"]


def test_progress_says_it_is_still_working_while_a_slow_judge_works():
    from rich.console import Console

    from ragmeter.cli.common import PlainProgress

    buf = io.StringIO()
    prog = PlainProgress(Console(file=buf, width=200), interval_s=0.2)
    prog.hook("e2e", "start", {"total": 6, "done": 0})
    time.sleep(1.0)                               # no batch finishes
    prog.hook("e2e", "end", {"status": "ok"})
    time.sleep(0.5)
    prog.close()
    lines = buf.getvalue().splitlines()
    beats = [x for x in lines if "still working" in x]
    assert len(beats) >= 2 and all(x.startswith("progress: e2e 0/6") for x in beats), lines
    assert PlainProgress.HEARTBEAT_MAX_S <= 30
    done = len(lines)
    time.sleep(0.5)                               # the tier ended: silent again
    assert len(buf.getvalue().splitlines()) == done
    assert json.dumps(lines)  # plain text lines
