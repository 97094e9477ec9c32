"""Judge bias probes: does the judge's verdict move when nothing that matters changed?

Each probe builds paired variants of the bundled judge benchmark's items, asks the judge
about both through the judged metric's own calls, and reports the effect — the mean change of
the judge's value (0–1) from the original to the variant — with the 95 % CI of a paired
difference (:func:`ragmeter.stats.paired_interval`: exact for yes/no verdicts) and a paired
randomization p-value over the items both variants scored. An unbiased judge's CI covers 0;
a CI that excludes 0 with p < 0.05 is a measured bias.

* ``verbosity`` — the same answer padded with true but irrelevant sentences (for
  faithfulness: sentences of the item's own context the answer does not use, so the padded
  answer stays supported; for answer relevance: general facts). A positive effect: the judge
  rewards length.
* ``context_order`` — the item's supporting passage among three distractor passages (other
  items' contexts), in two different seeded orders; per item the order where the supporting
  passage comes later is compared with the one where it comes earlier (a tie in position:
  the seeded order stands). The effect is the paired mean change later − earlier, tested
  like the other probes: a judge that favours what it reads first (or last) moves it below
  (above) 0; a judge that ignores the order — however noisy its verdicts — does not, so its
  random flips are no longer a bias. The share of items whose verdict changed at all is kept
  in the note (it includes the judge's own call-to-call randomness: compare with the flip
  rate of ``--repeats``).
* ``position_middle`` / ``position_last`` — the supporting passage moved from first to the
  middle / the end of four distractors.
* ``language`` — per translated pair (a Russian item and its English translation, same
  label), the judge's correctness in English minus in Russian; unpaired (different items,
  labelled so) only when no pair is available. See :mod:`ragmeter.judge_trust.language`.

:func:`family_warning` says when the judge and the generator come from one model family
(their names share a family prefix), a known source of self-preference.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ragmeter.data.sample import Sample
from ragmeter.judge_trust.bench import MAX_TOKENS, BenchItem, BenchRun, _task_metric
from ragmeter.judge_trust.language import Pair, language_gap, language_pairs, paired_language
from ragmeter.judge_trust.probe_result import ProbeResult
from ragmeter.metrics.judged import Asking, questions_of, score_sample
from ragmeter.metrics.judged.plan import ask
from ragmeter.stats import DEFAULT_SEED, paired_test
from ragmeter.text import split_sentences

PROBES = ("verbosity", "context_order", "position", "language")
N_DISTRACTORS = 4
PAD = {
    "ru": ["Неделя состоит из семи дней.", "В году двенадцать месяцев."],
    "en": ["A week has seven days.", "A year has twelve months."],
}


@dataclass
class ProbeReport:
    judge: str
    model: str
    results: list[ProbeResult]
    warnings: list[str] = field(default_factory=list)
    seed: int = DEFAULT_SEED

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "model": self.model, "seed": self.seed,
                "warnings": list(self.warnings),
                "results": [r.to_dict() for r in self.results]}


# ------------------------------------------------------------------------------ model family
_FAMILIES = ("gpt", "o1", "o3", "o4", "claude", "gemini", "gemma", "llama", "qwen", "mistral",
             "mixtral", "deepseek", "phi", "yandexgpt", "gigachat", "command", "grok", "t-pro",
             "t-lite", "vikhr", "saiga")


def model_family(model: str) -> str:
    """The family of a model name: a known family prefix, else its first name token."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    for fam in _FAMILIES:
        if name.startswith(fam):
            return fam
    return re.split(r"[-_:.\s\d]", name, maxsplit=1)[0] or name


def family_warning(judge_model: str | None, generator_model: str | None) -> str | None:
    """A warning when the judge and the generator come from one model family."""
    if not judge_model or not generator_model:
        return None
    fj, fg = model_family(judge_model), model_family(generator_model)
    if fj != fg:
        return None
    return (f"the judge ({judge_model}) and the generator ({generator_model}) are both of the "
            f"'{fj}' family: judges tend to prefer their own family's answers; use a judge "
            "from another family or a jury")


# -------------------------------------------------------------------------------- variants
@dataclass(frozen=True)
class _Case:
    task: str
    lang: str
    samples: tuple[Sample, ...]   # original first, then the variants


def _pad_faithful(it: BenchItem) -> str | None:
    unused = [s for s in split_sentences(it.context or "") if s not in (it.answer or "")]
    return " ".join([it.answer or "", *unused]) if unused else None


def verbosity_cases(items: Sequence[BenchItem]) -> list[_Case]:
    out = []
    for it in items:
        if not it.answer:
            continue
        if it.task == "faithfulness" and it.context:
            padded = _pad_faithful(it)
        elif it.task == "answer_relevance":
            padded = " ".join([it.answer, *PAD.get(it.lang, PAD["en"])])
        else:
            continue
        if padded:
            s = it.sample()
            out.append(_Case(it.task, it.lang, (s, replace(s, id=s.id + "~long",
                                                           response=padded))))
    return out


def _distractors(it: BenchItem, pool: Sequence[BenchItem], rng: np.random.Generator
                 ) -> list[str]:
    others = [p.context for p in pool if p.id != it.id and p.context and p.lang == it.lang
              and p.context != it.context]
    pick = rng.choice(len(others), size=min(N_DISTRACTORS, len(others)), replace=False)
    return [str(others[i]) for i in pick]


def context_cases(items: Sequence[BenchItem], seed: int, kind: str) -> list[_Case]:
    """Faithfulness items with distractor passages: two seeded orders (``order``), or the
    supporting passage first / middle / last (``position``)."""
    rng = np.random.default_rng([seed, 7])
    pool = [i for i in items if i.task == "faithfulness" and i.context and i.answer]
    out = []
    for it in pool:
        dis = _distractors(it, pool, rng)
        if len(dis) < N_DISTRACTORS:
            continue
        s = it.sample()
        ctx = str(it.context)
        if kind == "order":
            a = [ctx, *dis[:3]]
            orders = [[str(x) for x in rng.permutation(a)] for _ in range(2)]
            if orders[1].index(ctx) < orders[0].index(ctx):  # earlier first, later second
                orders.reverse()
            variants = [replace(s, id=f"{s.id}~o{k}", retrieved_contexts=o)
                        for k, o in enumerate(orders)]
        else:
            mid = N_DISTRACTORS // 2
            variants = [replace(s, id=f"{s.id}~{name}", retrieved_contexts=c) for name, c in (
                ("first", [ctx, *dis]), ("middle", [*dis[:mid], ctx, *dis[mid:]]),
                ("last", [*dis, ctx]))]
        out.append(_Case(it.task, it.lang, tuple(variants)))
    return out


# ------------------------------------------------------------------------------- asking
def _values(judge: Any, cases: Sequence[_Case], binary: bool) -> list[list[float | None]]:
    """The judge's value of every sample of every case, through the metrics' own calls."""
    def send(req: Any) -> Any:
        return replace(req, max_tokens=MAX_TOKENS)

    asking = Asking(binary=binary, claims="whole", send=send)
    plan = []
    for c in cases:
        row, metric = _task_metric(c.task)
        needs = questions_of(row, metric)
        plan.append([(row, metric, s, asking.add(s, needs, c.lang if c.lang in ("ru", "en")
                                                 else "en")) for s in c.samples])
    ask(judge, asking.requests())
    asking.finish()
    return [[score_sample(row, metric, s, j, keep_prompts=False).value
             for row, metric, s, j in case] for case in plan]


def _effect(name: str, vals: Sequence[Sequence[float | None]], a: int, b: int,
            tasks: Sequence[str], seed: int, n_resamples: int, note: str = "") -> ProbeResult:
    pairs = [(v[a], v[b]) for v in vals if v[a] is not None and v[b] is not None]
    unscored = len(vals) - len(pairs)
    if not pairs:
        return ProbeResult(name, None, None, None, 0, unscored, None, True,
                           tuple(sorted(set(tasks))), note or "no pair scored")
    x = np.asarray([p[0] for p in pairs], dtype=float)
    y = np.asarray([p[1] for p in pairs], dtype=float)
    if name == "context_order":
        changed = float(np.mean(x != y))
        note = note or (f"supporting passage later minus earlier; the verdict changed on "
                        f"{changed:.0%} of items, either way")
    pc = paired_test(x, y, metric=name, seed=seed, n_resamples=n_resamples)
    return ProbeResult(name, pc.diff, pc.ci_low, pc.ci_high, pc.n, unscored, pc.p_value,
                       True, tuple(sorted(set(tasks))), note)


def run_probes(judge: Any, items: Sequence[BenchItem], *, probes: Sequence[str] = PROBES,
               run: BenchRun | None = None, generator_model: str | None = None,
               limit: int = 40, seed: int = DEFAULT_SEED, n_resamples: int = 10000,
               binary: bool | None = None, pairs: Sequence[Pair] | None = None
               ) -> ProbeReport:
    """Every probe asked of ``judge`` on at most ``limit`` items (or translated pairs) each,
    a seeded choice. ``run``: the judge's benchmark run (its values are reused by the language
    probe; the unpaired language gap is read from it). ``pairs``: the language probe's
    (Russian, English) translated pairs; by default those within ``items``."""
    unknown = [p for p in probes if p not in PROBES]
    if unknown:
        from ragmeter.errors import ConfigError

        raise ConfigError("probes", f"unknown probe(s) {', '.join(unknown)}", list(PROBES))
    use_binary = bool(getattr(judge, "demo", False)) if binary is None else binary
    rng = np.random.default_rng([seed, 11])

    def few(cases: list[_Case]) -> list[_Case]:
        if len(cases) <= limit:
            return cases
        return [cases[i] for i in sorted(rng.choice(len(cases), limit, replace=False))]

    builders: dict[str, Callable[[], list[_Case]]] = {
        "verbosity": lambda: verbosity_cases(items),
        "context_order": lambda: context_cases(items, seed, "order"),
        "position": lambda: context_cases(items, seed, "position")}
    chosen = {p: few(builders[p]()) for p in probes if p in builders}
    flat = [c for cs in chosen.values() for c in cs]
    vals = _values(judge, flat, use_binary) if flat else []
    results: list[ProbeResult] = []
    at = 0
    for p, cases in chosen.items():
        v, at = vals[at:at + len(cases)], at + len(cases)
        tasks = [c.task for c in cases]
        if p == "position":
            results.append(_effect("position_middle", v, 0, 1, tasks, seed, n_resamples))
            results.append(_effect("position_last", v, 0, 2, tasks, seed, n_resamples))
        else:
            results.append(_effect(p, v, 0, 1, tasks, seed, n_resamples))
    if "language" in probes:
        found = list(pairs) if pairs is not None else language_pairs(items)
        if len(found) > limit:
            pick = np.random.default_rng([seed, 13]).choice(len(found), limit, replace=False)
            found = [found[i] for i in sorted(pick)]
        if found:
            results.append(paired_language(judge, found, run=run, binary=use_binary,
                                           seed=seed, n_resamples=n_resamples))
        elif run is not None:
            results.append(language_gap(run, seed))
    report = ProbeReport(str(getattr(judge, "name", "judge")),
                         str(getattr(judge, "model", "")), results, seed=seed)
    warn = family_warning(report.model, generator_model)
    if warn:
        report.warnings.append(warn)
    return report


__all__ = ["PROBES", "ProbeReport", "ProbeResult", "context_cases", "family_warning",
           "language_gap", "language_pairs", "model_family", "paired_language", "run_probes",
           "verbosity_cases"]
