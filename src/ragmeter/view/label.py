"""The labelling page of ``ragmeter label``: one item at a time, the judge's verdict
hidden, keyboard-driven; answers saved through the session's POST entry.

The page carries the viewer's token (:attr:`~ragmeter.view.app.Viewer.token`) for its POSTs;
the session (:class:`~ragmeter.judge_trust.labelling.LabelSession`) decides what is shown and
writes every answer to the labels file before it is acknowledged. Text of the samples is put
on the page by ``textContent`` in the page script, never as HTML.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ragmeter.errors import UsageError
from ragmeter.reports.html import _asset
from ragmeter.reports.i18n import TEXT, t
from ragmeter.view.errors import NotFound
from ragmeter.view.table import PageOut, PageRequest

#: the page's own words, sent to its script in the page's language
WORDS = ("lb_question", "lb_contexts", "lb_answer", "lb_reference", "lb_none", "lb_yes",
         "lb_no", "lb_g0", "lb_g1", "lb_g2", "lb_skip", "lb_back", "lb_forward", "lb_progress",
         "lb_skipped_note", "lb_your_label", "lb_saved", "lb_saving", "lb_finished",
         "lb_error")

_STYLE = """
#label .item section { margin: 10px 0 14px; }
#label .item h3 { margin: 0 0 4px; font-size: 13px; text-transform: uppercase;
                  letter-spacing: .04em; color: var(--muted); }
#label .text { white-space: pre-wrap; font-size: 15px; line-height: 1.5; max-width: 900px; }
#label ol.ctx { padding-left: 22px; } #label ol.ctx li { margin: 0 0 8px; }
#label .keys { display: flex; gap: 8px; flex-wrap: wrap; margin: 16px 0 6px; }
#label .keys button { font-size: 15px; padding: 6px 14px; border-radius: 6px;
                      border: 1px solid var(--line); background: transparent; color: inherit;
                      cursor: pointer; }
#label .keys button.chosen { outline: 3px solid var(--ok); }
#label .keys kbd { font-weight: 700; margin-right: 6px; }
#label .bar { display: flex; gap: 16px; align-items: center; flex-wrap: wrap; }
#label .ask { font-size: 16px; font-weight: 600; margin: 12px 0 4px; }
#label #lb-status.bad { color: var(--bad); }
"""


def _session(req: PageRequest) -> Any:
    session = req.viewer.labelling
    if session is None:
        raise NotFound("lb_no_session")
    return session


def _ask(metric: str, grades: tuple[int, ...], lang: str) -> str:
    """The question the labeller answers for ``metric``."""
    key = f"lb_q_{metric.split('(')[0]}"
    if key in TEXT:
        return t(key, lang)
    return t("lb_q_other", lang, metric=metric, grades="/".join(map(str, grades)))


def label_page(req: PageRequest) -> PageOut:
    """The page: the frame the script fills with the current item."""
    lang = req.lang
    session = req.viewer.labelling
    if session is None:
        return PageOut(f"<h1>{escape(t('lb_title', lang))}</h1>"
                       f"<p>{escape(t('lb_no_session', lang))}</p>", status=404)
    task = session.task
    rater = req.param("rater") or session.default_rater
    grades = task.grades
    names = ({1: t("lb_yes", lang), 0: t("lb_no", lang)} if task.scale == "binary" else
             {g: t(f"lb_g{g}", lang) for g in grades})
    order = (1, 0) if task.scale == "binary" else grades
    buttons = "".join(f'<button type=button data-key="{g}"><kbd>{g}</kbd>'
                      f"{escape(names[g])}</button>" for g in order)
    buttons += (f'<button type=button data-key="s"><kbd>s</kbd>{escape(t("lb_skip", lang))}'
                f'</button><button type=button data-key="b"><kbd>←</kbd>'
                f'{escape(t("lb_back", lang))}</button><button type=button data-key="f">'
                f'<kbd>→</kbd>{escape(t("lb_forward", lang))}</button>')
    body = (
        f"<style>{_STYLE}</style><main id=label data-state=loading>"
        f"<h1>{escape(t('lb_title', lang))}</h1>"
        f"<p class=meta>{escape(t('lb_intro', lang))}</p>"
        f"<div class=bar><span>{escape(t('lb_metric', lang))}: <b>{escape(task.metric)}</b>"
        f"</span><label>{escape(t('lb_rater', lang))}: <input id=lb-rater "
        f'value="{escape(rater)}" maxlength=64 size=16 '
        f'title="{escape(t("lb_rater_hint", lang))}"></label>'
        f"<span id=lb-progress class=muted></span></div>"
        f"<p class=ask>{escape(_ask(task.metric, grades, lang))}</p>"
        f"<div class=item id=lb-item></div>"
        f'<div class=keys id=lb-keys role=group>{buttons}</div>'
        f"<p class=muted>{escape(t('lb_keys', lang, grades='/'.join(map(str, order))))}</p>"
        f"<p id=lb-status aria-live=polite></p></main>"
        f"<script>{_asset('label.js')}</script>")
    data = {"kind": "label", "token": req.viewer.token, "rater": rater,
            "metric": task.metric, "scale": task.scale, "grades": list(grades),
            "names": {str(k): v for k, v in names.items()},
            "fields": list(task.fields), "api": "/api/label",
            "words": {w: t(w, lang) for w in WORDS}}
    return PageOut(body, title=f"{t('lb_title', lang)} · {task.metric}", data=data)


def _index(value: str) -> int | None:
    if value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise UsageError("i", f"must be an item number, got {value[:40]!r}") from None


def label_item(req: PageRequest) -> PageOut:
    """``GET /api/label?rater=R&i=N``: item ``N`` (default: where ``R`` goes on)."""
    session = _session(req)
    try:
        return PageOut("", data=session.view(req.param("rater") or session.default_rater,
                                             _index(req.param("i"))))
    except UsageError as exc:
        return PageOut("", status=400, data={"error": str(exc), "status": 400})


def label_answer(req: PageRequest) -> PageOut:
    """``POST /api/label`` ``{rater, index, sample_id, action: label|skip, label}``: saved
    (fsynced) before the answer, which is the next item to show."""
    session = _session(req)
    b = req.body if isinstance(req.body, dict) else {}
    try:
        rater, index, sid = b.get("rater"), b.get("index"), b.get("sample_id")
        if not isinstance(index, int) or isinstance(index, bool) or not isinstance(sid, str):
            raise UsageError("index", "the answer needs the item's index and sample_id")
        action = b.get("action")
        if action == "label":
            out = session.label(str(rater), index, sid, b.get("label"))
        elif action == "skip":
            out = session.skip(str(rater), index, sid)
        else:
            raise UsageError("action", f"label or skip, got {str(action)[:40]!r}")
    except UsageError as exc:
        return PageOut("", status=400, data={"error": str(exc), "status": 400})
    return PageOut("", data=out)


__all__ = ["label_answer", "label_item", "label_page"]
