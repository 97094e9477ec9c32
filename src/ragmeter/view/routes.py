"""The viewer's built-in pages, each one entry of the page table (:mod:`ragmeter.view.table`):
route, title, navigation entry and handler. The HTML comes from :mod:`ragmeter.view.pages`.
Order here is the navigation order."""

from __future__ import annotations

from ragmeter.errors import RagmeterError
from ragmeter.view import pages
from ragmeter.view.table import PageOut, PageRequest, page


@page("/", title="v_runs", name="runs", nav=True,
      doc="every run, newest first; filter by name, tag (`meta.tags` or `config.tags`), git "
          "commit prefix, date range; key metrics as columns (`?col=tier|system|metric` to "
          "choose); tick two runs to diff them")
def runs(req: PageRequest) -> PageOut:
    store = req.viewer.store
    rows = store.run_rows()
    params = {k: req.param(k) for k in ("name", "tag", "commit", "since", "until")}
    shown = pages.filter_runs(rows, **params)
    ids = [r.id for r in shown]
    summaries = store.metric_summaries(ids) if ids else []
    cols = list(req.query.getall("col", []))
    latest = [m for m in summaries if shown and m.run_id == shown[0].id]
    columns = cols or pages.default_columns(latest)
    return PageOut(pages.registry_page(shown, len(rows), summaries, columns,
                                       {**params, "col_list": cols}, req.lang))


@page("/history", title="v_history", nav=True,
      doc="any metric over runs, one line per system, each point with its CI and linked to "
          "its run")
def history(req: PageRequest) -> PageOut:
    store = req.viewer.store
    name = req.param("name")
    rows = pages.filter_runs(store.run_rows(), name=name)
    summaries = store.metric_summaries([r.id for r in rows]) if rows else []
    choices = pages.metric_choices(summaries)
    choice = req.query.get("metric") or (choices[0] if choices else "")
    if choice and "|" in choice and choice not in choices:
        raise RagmeterError(f"no metric '{choice.replace('|', ' · ')}' in this store")
    return PageOut(pages.history_page(rows, summaries, choices, choice, req.lang, name))


@page("/compare", title="v_compare", nav=True,
      doc="one tier across several runs as one decision table (runs × systems)")
def compare(req: PageRequest) -> PageOut:
    viewer = req.viewer
    rows = viewer.store.run_rows()
    chosen = list(req.query.getall("run", []))
    if not chosen and rows:  # the latest runs of the latest benchmark (same data)
        chosen = [r.id for r in rows if r.name == rows[0].name][:5]
    runs = [viewer.run(rid, samples=False) for rid in chosen]
    runs.sort(key=lambda r: (r.created_at, r.id))
    tiers: list[str] = []
    for run in runs:
        tiers += [x for x, rec in run.tiers.items() if rec.status == "ok" and rec.results
                  and x not in tiers]
    tier = req.query.get("tier") or ("retrieval" if "retrieval" in tiers
                                     else (tiers[0] if tiers else ""))
    return PageOut(pages.compare_page(runs, tiers, tier, rows, [r.id for r in runs], req.lang))


@page("/diff", title="v_diff", nav=True, shown_route="/diff?a=ID&b=ID",
      doc="per-sample regressions first (largest drop on top), then the paired test of every "
          "metric")
def diff(req: PageRequest) -> PageOut:
    from ragmeter.runner.comparing import compare_runs

    viewer, lang = req.viewer, req.lang
    rows = viewer.store.run_rows()
    picks = list(req.query.getall("pick", []))
    a_id = req.query.get("a") or (picks[0] if len(picks) >= 2 else None)
    b_id = req.query.get("b") or (picks[1] if len(picks) >= 2 else None)
    if not a_id and not b_id and len(rows) >= 2:
        a_id, b_id = rows[1].id, rows[0].id
    if not (a_id and b_id):
        return PageOut(pages.diff_page(None, None, [], [], rows, lang))
    a, b = viewer.run(a_id), viewer.run(b_id)
    if b.created_at < a.created_at and picks:  # ticked boxes: older one is A
        a, b = b, a
    cmp_rows = compare_runs(a.results(), b.results())
    regressions = pages.sample_regressions(a, b)
    return PageOut(pages.diff_page(a, b, cmp_rows, regressions, rows, lang))


@page("/judges", title="judges", nav=True, shown_route="/judges?stat=kappa",
      doc="the judge cards of the latest stored runs side by side, ranked per metric by any "
          "card statistic")
def judges(req: PageRequest) -> PageOut:
    from ragmeter.judge_trust.card import STATS
    from ragmeter.judge_trust.runs import TIER

    viewer = req.viewer
    stat = req.query.get("stat") or "kappa"
    if stat not in STATS:
        stat = "kappa"
    runs = [viewer.run(r.id, samples=False)
            for r in viewer.store.run_rows()[:pages.JUDGES_RUNS]]
    runs = [r for r in runs if TIER in r.tiers]
    return PageOut(pages.judges_page(runs, req.lang, stat))


@page("/run/{run_id}", title=("Run details", "Запуск"), name="run", section="runs",
      shown_route="/run/ID",
      doc="the report above, with a link from each explorer row to its sample")
def run_details(req: PageRequest) -> PageOut:
    run = req.viewer.run(req.match("run_id"))
    body, data = pages.run_page(run, req.lang)
    return PageOut(body, title=f"{run.name} · {run.id}", data=data)


@page("/run/{run_id}/sample/{sample_id:.+}", title="v_sample", name="sample",
      section="runs", shown_route="/run/ID/sample/SID",
      doc="one sample: question, reference, answer, contexts, every score with its reason "
          "and the judge's details")
def sample(req: PageRequest) -> PageOut:
    run = req.viewer.run(req.match("run_id"))
    sid = req.match("sample_id")
    body = pages.sample_page(run, sid, req.lang)
    status = 404 if "class=error" in body[:400] else 200
    return PageOut(body, title=f"{sid} · {run.id}", status=status)
