"""A jury's vote where the judgement is made: every member's reply to one call is read into
its own :class:`~ragmeter.metrics.judged.state.SampleJudgement`, then the parsed answers are
combined item by item — a claim's verdict, a context's relevance or usefulness, a grade —
before any metric is scored, so every claim-based metric gets the vote.

Claims are the ground the vote stands on: when members split a text into different claims,
the first member that scored gives the claims and the disagreement is flagged. Yes/no ties
count as *no* and are flagged; splits (non-unanimous votes) are flagged. The flags are kept in
``SampleJudgement.jury`` and shown in the per-sample details under ``jury``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragmeter.metrics.judged.state import SampleJudgement

if TYPE_CHECKING:
    from ragmeter.judges.base import JudgeReply, JudgeRequest
    from ragmeter.judges.multi import Combine
    from ragmeter.metrics.judged.calls import Call


def vote_items(lists: Any) -> tuple[list[int], list[int], list[int]]:
    """:func:`ragmeter.judges.multi.vote_items` (the judge package loaded on first vote, so
    the metric registry stays free of it)."""
    from ragmeter.judges import multi

    return multi.vote_items(lists)


def combine_grades(values: Any, method: Combine = "majority", *args: Any,
                   **kw: Any) -> tuple[float, bool]:
    """:func:`ragmeter.judges.multi.combine_grades`, loaded on first use."""
    from ragmeter.judges import multi

    return multi.combine_grades(values, method, *args, **kw)


def vote_labels(lists: list[list[str]], supported: list[int]) -> list[str]:
    """Three-way labels per claim, consistent with the yes/no vote ``supported``: a claim the
    vote supports is ``supported``; any other takes the more frequent of the members' other
    labels (contradicted / neutral; a tie, or none given, is ``neutral``)."""
    out: list[str] = []
    for i, sup in enumerate(supported):
        if sup:
            out.append("supported")
            continue
        given = [x[i] for x in lists if i < len(x) and x[i] != "supported"]
        c, n = given.count("contradicted"), given.count("neutral")
        out.append("contradicted" if c > n else "neutral")
    return out


def is_jury_reply(rep: JudgeReply) -> bool:
    """A combined reply of a jury (it carries every member's reply)."""
    return bool(rep.extra) and isinstance(rep.extra.get("per_judge"), dict)


def _member(j: SampleJudgement, name: str) -> SampleJudgement:
    """``name``'s own judgement of the sample, standing on the jury's claims so far."""
    m = j.members.get(name)
    if m is None:
        m = j.members[name] = SampleJudgement(j.sample_id, needs=set(j.needs),
                                              claims_source=j.claims_source)
    m.answer_claims, m.reference_claims = j.answer_claims, j.reference_claims
    return m


def member_judgements(j: SampleJudgement) -> dict[str, SampleJudgement]:
    """Each jury member's own judgement (empty for a single judge)."""
    return dict(j.members)


def read_jury(call: Call, j: SampleJudgement, req: JudgeRequest, rep: JudgeReply) -> str | None:
    """Read every member's reply to ``call`` and store the vote in ``j``; ``None``, or why no
    member's reply could be read."""
    per: dict[str, JudgeReply] = rep.extra["per_judge"]
    j.jury.setdefault("members", list(per))
    j.jury.setdefault("ties", {})
    j.jury.setdefault("splits", {})
    members: dict[str, SampleJudgement] = {}
    unread: dict[str, str] = {}
    for name, r in per.items():
        m = _member(j, name)
        if not r.ok:
            unread[name] = r.reason or "backend_error"
            m.failed[call.kind] = (unread[name], r.detail)
            continue
        problem = ("reply is not a JSON object" if not isinstance(r.data, dict)
                   else call.read(m, req, r.data))
        if problem is not None:
            unread[name] = f"schema_error: {problem}"
            m.failed[call.kind] = ("schema_error", problem)
            continue
        members[name] = m
    if unread:
        j.jury.setdefault("unscored", {})[call.kind] = unread
    need = int(rep.extra.get("min_judges", 1))
    if len(members) < max(1, need):
        return (f"{len(members)} of {len(per)} jury members' replies could be read "
                f"({'; '.join(f'{n}: {why}' for n, why in unread.items())})")
    _Merge(j, members, rep.extra).run()
    return None


class _Merge:
    """Combines the members' parsed answers of one call into ``j``."""

    def __init__(self, j: SampleJudgement, members: dict[str, SampleJudgement],
                 extra: dict[str, Any]) -> None:
        self.j, self.members = j, members
        self.before = {a: getattr(j, a) for a in ("answer_claims", "reference_claims")}
        self.method: Combine = extra.get("combine", "majority")
        weights = extra.get("weights") or {}
        self.weights = [float(weights.get(n, 1.0)) for n in members]
        self.trim = float(extra.get("trim", 0.2))
        self.ms = list(members.values())

    def _flag(self, kind: str, key: str, idx: list[int]) -> None:
        if idx:
            self.j.jury.setdefault(kind, {})[key] = idx

    def run(self) -> None:
        j, ms = self.j, self.ms
        self._claims()
        for key in dict.fromkeys(k for m in ms for k in m.verdicts):
            lists = [m.verdicts[key] for m in ms if key in m.verdicts]
            j.verdicts[key], ties, splits = vote_items(lists)
            self._flag("ties", key, ties)
            self._flag("splits", key, splits)
        for key in dict.fromkeys(k for m in ms for k in m.verdict_labels):
            labels = [m.verdict_labels[key] for m in ms if key in m.verdict_labels]
            j.verdict_labels[key] = vote_labels(labels, j.verdicts.get(key, []))
        for side in dict.fromkeys(k for m in ms for k in m.verdict_reasons):
            j.verdict_reasons[side] = next(m.verdict_reasons[side] for m in ms
                                           if side in m.verdict_reasons)
        if any(m.ctx_useful is not None for m in ms):
            lists = [m.ctx_useful for m in ms if m.ctx_useful is not None]
            j.ctx_useful, ties, splits = vote_items(lists)
            self._flag("ties", "ctx_useful", ties)
            self._flag("splits", "ctx_useful", splits)
        if any(m.ctx_relevance is not None for m in ms):
            j.ctx_relevance = self._grade_lists(
                "ctx_relevance", [m.ctx_relevance for m in ms])  # type: ignore[assignment]
        for attr in ("answer_relevance", "e2e"):
            vals = [getattr(m, attr) for m in ms]
            if any(v is not None for v in vals):
                setattr(j, attr, self._grade(attr, vals, None))
        for key in dict.fromkeys(k for m in ms for k in m.answers):
            j.answers[key] = self._answer(key, [m.answers.get(key) for m in ms])
        for m in ms:
            j.positional.extend(p for p in m.positional if p not in j.positional)

    def _claims(self) -> None:
        j = self.j
        for attr in ("answer_claims", "reference_claims"):
            lists = [(n, getattr(m, attr)) for n, m in self.members.items()]
            given = [(n, c) for n, c in lists if c is not None and c != self.before[attr]]
            if not given:
                continue
            setattr(j, attr, given[0][1])
            differ = [n for n, c in given if c != given[0][1]]
            if differ:
                j.jury.setdefault("claims_from", {})[attr] = given[0][0]
                j.jury.setdefault("claims_differ", {})[attr] = differ

    def _grade(self, key: str, vals: list[Any], idx: int | None) -> float | int | None:
        pairs = [(v, w) for v, w in zip(vals, self.weights, strict=True) if v is not None]
        if not pairs:
            return None
        value, tied = combine_grades([float(v) for v, _ in pairs], self.method,
                                     [w for _, w in pairs], self.trim)
        if len({v for v, _ in pairs}) > 1:
            self.j.jury.setdefault("splits", {}).setdefault(key, []).append(
                0 if idx is None else idx)
        if tied:
            self.j.jury.setdefault("ties", {}).setdefault(key, []).append(
                0 if idx is None else idx)
        return int(value) if float(value).is_integer() else value

    def _grade_lists(self, key: str, lists: list[list[int] | None]) -> list[float | int | None]:
        given = [x for x in lists if x is not None]
        n = len(given[0])
        rows = [x if x is not None and len(x) == n else None for x in lists]
        return [self._grade(key, [r[i] if r is not None else None for r in rows], i)
                for i in range(n)]

    def _answer(self, key: str, vals: list[Any]) -> Any:
        given = [v for v in vals if v is not None]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in given):
            return self._grade(key, vals, None)
        if all(isinstance(v, list) and len(v) == len(given[0])
               and all(isinstance(x, int) and x in (0, 1) for x in v) for v in given):
            votes, ties, splits = vote_items(given)
            self._flag("ties", key, ties)
            self._flag("splits", key, splits)
            return votes
        self.j.jury.setdefault("first_member", []).append(key)
        return given[0]
