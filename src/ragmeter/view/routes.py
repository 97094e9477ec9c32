"""The viewer's built-in pages, each one entry of the page table (:mod:`ragmeter.view.table`):
route, title, navigation entry and handler. The HTML comes from :mod:`ragmeter.view.pages`.
Order here is the navigation order."""

from __future__ import annotations

from ragmeter.reports.i18n import t
from ragmeter.view import pages
from ragmeter.view.data import CorruptRun, Unreadable
from ragmeter.view.errors import NotFound
from ragmeter.view.live import LiveRun, find_live, live_page, live_rows
from ragmeter.view.params import (
    BadQuery,
    check_choice,
    check_column,
    check_date,
    check_int,
)
from ragmeter.view.table import PageOut, PageRequest, page


@page("/", title="v_runs", name="runs", nav=True, watches_runs=True,
      params=("name", "tag", "commit", "since", "until", "col", "page"),
      doc="every run, newest first; filter by name, tag (`meta.tags` or `config.tags`), git "
          "commit prefix, date range; key metrics of the filtered runs as columns "
          "(`?col=tier|system|metric` to choose); 50 runs a page (`?page=N`); tick two runs "
          "to diff them or see them side by side; running runs on top with their progress")
def runs(req: PageRequest) -> PageOut:
    data = req.viewer.data
    rows = data.rows()
    params = {k: req.param(k) for k in ("name", "tag", "commit", "since", "until")}
    for key in ("since", "until"):
        check_date(key, params[key])
    cols = [check_column(c) for c in req.query.getall("col", [])]
    shown = pages.filter_runs(rows, **params)
    n_pages = max(1, -(-len(shown) // pages.PAGE_SIZE))
    number = check_int("page", req.param("page"), 1, 1, n_pages)
    on_page = shown[(number - 1) * pages.PAGE_SIZE:number * pages.PAGE_SIZE]
    summaries = data.summaries(r.id for r in shown)  # columns from every filtered run
    columns = cols or pages.default_columns(summaries)
    live = live_rows(req.viewer.runs_dir, {r.id for r in rows}) if number == 1 else []
    return PageOut(pages.registry_page(on_page, len(rows), summaries, columns,
                                       {**params, "col_list": cols}, req.lang,
                                       paging=(number, n_pages, len(shown)), live=live,
                                       static=req.viewer.static))


@page("/history", title="v_history", nav=True, params=("bench", "name", "metric"),
      doc="one benchmark's metric over its runs (default: the latest run's benchmark and its "
          "headline metric), one line per system, each point with its CI and linked to its run")
def history(req: PageRequest) -> PageOut:
    data = req.viewer.data
    all_rows = data.rows()
    names = list(dict.fromkeys(r.name for r in all_rows))
    bench = check_choice("bench", req.param("bench"), names)
    name = req.param("name")
    if not bench and not name and names:
        bench = names[0]  # the latest run's benchmark
    rows = [r for r in pages.filter_runs(all_rows, name=name) if not bench or r.name == bench]
    summaries = data.summaries(r.id for r in rows)
    choices = pages.metric_choices(summaries)
    choice = check_choice("metric", req.param("metric"), choices) or pages.headline(choices)
    return PageOut(pages.history_page(rows, summaries, choices, choice, req.lang, name,
                                      bench=bench, benches=names))


@page("/compare", title="v_compare", nav=True, params=("tier", "run"),
      doc="one tier across several runs as one decision table (runs × systems), each row "
          "labelled with run name, date and tags")
def compare(req: PageRequest) -> PageOut:
    viewer = req.viewer
    rows = viewer.data.rows()
    known = {r.id for r in rows}
    chosen = list(req.query.getall("run", []))
    for rid in chosen:
        if rid not in known:
            raise BadQuery("run", "v_q_no_run", value=repr(rid[:80]))
    if not chosen and rows:  # the latest runs of the latest benchmark (same data)
        chosen = [r.id for r in rows if r.name == rows[0].name][:5]
    runs, broken = viewer.data.runs(chosen)
    runs.sort(key=lambda r: (r.created_at, r.id))
    tiers: list[str] = []
    for run in runs:
        tiers += [x for x, rec in run.tiers.items() if rec.status == "ok" and rec.results
                  and x not in tiers]
    tier = check_choice("tier", req.param("tier"), tiers) or (
        "retrieval" if "retrieval" in tiers else (tiers[0] if tiers else ""))
    body = pages.compare_page(runs, tiers, tier, rows, [r.id for r in runs], req.lang,
                              compare=viewer.data.compare())
    return PageOut(pages.broken_note(broken, req.lang) + body)


@page("/diff", title="v_diff", nav=True, shown_route="/diff?a=ID&b=ID", params=("a", "b", "pick"),
      doc="per-sample regressions (largest drop on top) and improvements, each with its "
          "metric's paired test and a link to the side-by-side view, then the paired test of "
          "every metric")
def diff(req: PageRequest) -> PageOut:
    from ragmeter.runner.comparing import compare_runs

    viewer, lang = req.viewer, req.lang
    rows = viewer.data.rows()
    picks = list(req.query.getall("pick", []))
    a_id = req.query.get("a") or (picks[0] if len(picks) >= 2 else None)
    b_id = req.query.get("b") or (picks[1] if len(picks) >= 2 else None)
    if not a_id and not b_id and len(rows) >= 2:
        a_id, b_id = rows[1].id, rows[0].id
    if not (a_id and b_id):
        return PageOut(pages.diff_page(None, None, [], ([], []), rows, lang))
    data = viewer.data
    a, b = data.run(a_id), data.run(b_id)
    if b.created_at < a.created_at and picks:  # ticked boxes: older one is A
        a, b = b, a
    cmp_rows = compare_runs(a.results(), b.results(), compare=data.compare())
    changes = pages.sample_changes(a, b)
    shown = [r["sample"] for part in changes for r in part]
    texts = {**data.sample_data(a.id, shown), **data.sample_data(b.id, shown)}
    return PageOut(pages.diff_page(a, b, cmp_rows, changes, rows, lang, texts))


@page("/side", title="v_side", nav=True, params=("run", "pick", "sample"),
      shown_route="/side?run=ID&run=ID&sample=SID",
      doc="one question in two or more runs next to each other: answers, contexts (gold "
          "marked) and scores with the judge's reasoning claim by claim (read per sample, "
          "without loading the runs)")
def side(req: PageRequest) -> PageOut:
    from ragmeter.view.side import SideColumn, columns_of, side_page

    data = req.viewer.data
    rows = data.rows()
    by_id = {r.id: r for r in rows}
    chosen = list(req.query.getall("run", [])) + list(req.query.getall("pick", []))
    for rid in chosen:
        if rid not in by_id:
            raise BadQuery("run", "v_q_no_run", value=repr(rid[:80]))
    if not chosen and rows:  # the two latest runs of the latest benchmark
        chosen = [r.id for r in rows if r.name == rows[0].name][:2][::-1]
    chosen = list(dict.fromkeys(chosen))
    choices = data.sample_ids(chosen[0], 500) if chosen else []
    sample_id = req.param("sample") or (choices[0] if choices else "")
    columns = []
    for rid in chosen:
        try:
            sample, scores = data.sample_of(rid, sample_id)
            columns += columns_of(by_id[rid], sample, scores)  # one per target of the run
        except CorruptRun as exc:
            columns.append(SideColumn(by_id[rid], {}, [], str(exc)))
    if req.param("sample") and columns and not any(c.sample or c.scores or c.error
                                                   for c in columns):
        raise NotFound("v_e_no_sample_runs", sample=sample_id[:200],
                       runs=", ".join(chosen)[:400])
    return PageOut(side_page(columns, sample_id, rows, choices, req.lang))


@page("/judges", title="judges", nav=True, shown_route="/judges?stat=kappa", params=("stat",),
      doc="the judge cards of the latest stored runs side by side, ranked per metric by any "
          "card statistic (read from the card rows alone)")
def judges(req: PageRequest) -> PageOut:
    from ragmeter.judge_trust.card import STATS

    stat = check_choice("stat", req.param("stat"), STATS) or "kappa"
    runs = req.viewer.data.judge_cards(pages.JUDGES_RUNS)
    return PageOut(pages.judges_page(runs, req.lang, stat))


@page("/live/{run_id}", title="v_live_run", name="live", section="runs", params=(),
      shown_route="/live/ID", cache=False,
      doc="a run still running (from the runner's folder, `view --runs DIR`): progress of each "
          "tier and the values of its finished batches, updated every few seconds")
def live(req: PageRequest) -> PageOut:
    run = _live_run(req)
    return PageOut(live_page(run, req.lang), title=f"{run.name} · {run.run_id}")


@page("/api/live/{run_id}", title="v_live_run", name="live_json", section="runs", params=(),
      shown_route="/api/live/ID", cache=False, json=True,
      doc="the live page's data as JSON (what it polls)")
def live_json(req: PageRequest) -> PageOut:
    return PageOut("", data=_live_run(req).to_dict())


@page("/api/live", title="v_live", name="live_list", section="runs", params=(), cache=False,
      json=True, doc="the runs still running, as JSON")
def live_list(req: PageRequest) -> PageOut:
    rows = live_rows(req.viewer.runs_dir, [r.id for r in req.viewer.data.rows()])
    return PageOut("", data={"runs": [x.to_dict() for x in rows]})


def _live_run(req: PageRequest) -> LiveRun:
    rid = req.match("run_id")
    run = find_live(req.viewer.runs_dir, rid, [r.id for r in req.viewer.data.rows()])
    if run is None:
        raise NotFound("v_e_no_live", run=rid[:200],
                       where="" if req.viewer.runs_dir else t("v_e_no_runs_dir", req.lang))
    if run.error:
        raise Unreadable("v_e_live_unreadable", run=rid[:200], error=run.error)
    return run


@page("/run/{run_id}", title=("Run details", "Запуск"), name="run", section="runs",
      shown_route="/run/ID", params=(),
      doc="the report above (read from the stored aggregates and per-sample values; the "
          "explorer's text for its 200 worst rows only), each explorer row linking to its "
          "sample's page for every score and the judge's reasons")
def run_details(req: PageRequest) -> PageOut:
    from ragmeter.view.data import RunSamples

    data = req.viewer.data
    run = data.run(req.match("run_id"))
    body, payload = pages.run_page(run, req.lang, source=RunSamples(data, run),
                                   compare=data.compare(), static=req.viewer.static)
    return PageOut(body, title=f"{run.name} · {run.id}", data=payload)


@page("/run/{run_id}/sample/{sample_id:.+}", title="v_sample", name="sample",
      section="runs", shown_route="/run/ID/sample/SID", params=(),
      doc="one sample, read alone: question, reference, each target's answer, contexts and "
          "latency (or the dataset's answer), every score with its reason and the judge's "
          "details; an unknown sample is a 404 page")
def sample(req: PageRequest) -> PageOut:
    data = req.viewer.data
    rid = req.match("run_id")
    rows = data.rows()
    row = next((r for r in rows if r.id == rid), None)
    if row is None:  # an unambiguous prefix of a run id, as elsewhere
        starts = [r for r in rows if r.id.startswith(rid)]
        if len(starts) != 1:
            raise NotFound("v_e_no_run", run=rid[:200])
        row, rid = starts[0], starts[0].id
    sid = req.match("sample_id")
    sample_data, scores = data.sample_of(rid, sid)
    if not sample_data and not scores:
        raise NotFound("v_e_no_sample", sample=sid[:200], run=rid)
    body = pages.sample_page(row, sid, sample_data, scores, req.lang)
    return PageOut(body, title=f"{sid} · {rid}")


@page("/label", title=("Blind labelling", "Слепая разметка"), name="label", params=("rater",),
      cache=False, shown_route="/label?rater=ID",
      doc="the labelling session of `ragmeter label`: one chosen sample at a time "
          "(question, contexts, answer; the judge's verdict hidden), graded with the keys "
          "1/0 (or 0/1/2), s skips, ← goes back; every answer saved to the labels file at once")
def label(req: PageRequest) -> PageOut:
    from ragmeter.view.label import label_page

    return label_page(req)


@page("/api/label", title=("Blind labelling", "Слепая разметка"), name="label_item",
      section="label", params=("rater", "i"), cache=False, json=True,
      shown_route="/api/label?rater=ID&i=N",
      doc="the labelling page's item N for a labeller (default: where they go on), as JSON")
def label_item(req: PageRequest) -> PageOut:
    from ragmeter.view.label import label_item as item

    return item(req)


@page("/api/label", title=("Blind labelling", "Слепая разметка"), name="label_answer",
      section="label", method="POST", params=(),
      doc="a labeller's answer (grade or skip) from the labelling page, saved before it is "
          "acknowledged; JSON from the viewer's own page only (same origin and its token)")
def label_answer(req: PageRequest) -> PageOut:
    from ragmeter.view.label import label_answer as answer

    return answer(req)
