"""Lexical overlap metrics: ROUGE-1/2/L (vectorised, Unicode-aware) and BLEU (sacrebleu).

ROUGE between a response H and a reference R (Lin, 2004), over word tokens:

    ROUGE-N:  overlap = Σ_g min(count_H(g), count_R(g)) over n-grams g
              P = overlap / (|H| − n + 1),  R = overlap / (|R| − n + 1)
    ROUGE-L:  P = LCS(H, R) / |H|,  R = LCS(H, R) / |R|   (sentence-level LCS, like rouge-score's
              ``rougeL``)
    F = 2PR / (P + R)   (0 when P + R = 0)

Tokens: ``tokenizer=unicode`` (default) is ``\\w+`` over casefolded text, correct on Cyrillic;
``tokenizer=rouge_score`` reproduces rouge-score's default tokeniser (``[a-z0-9]+`` after
lowercasing — every Cyrillic word vanishes) for identity checks. ``stem`` = none | ru | en |
auto (Snowball through PyStemmer).

Speed: texts are tokenised once, tokens become integer ids (one shared vocabulary),
n-gram overlaps are counted for all pairs at once with ``np.unique`` / ``np.intersect1d``
on (pair, n-gram) keys, and LCS uses the bit-parallel algorithm of Hyyrö (2004) on Python
integers as bit vectors: O(|H|) word operations per pair instead of an
O(|H|·|R|) table. ``benchmarks/bench_lexical.py`` times it against ``rouge-score``.

Edge cases (documented, counted): a missing field → unscored ``missing_field:<name>``; a
reference with no tokens → unscored ``empty_input`` (nothing to compare with); a response with
no tokens against a non-empty reference → P = R = F = 0, counted in ``counts["empty_response"]``
(an empty answer is a bad answer, not a missing one).

BLEU: sacrebleu's sentence BLEU per sample (``effective_order=True``; 0–100 like sacrebleu),
its signature string recorded in ours. ``tokenize=intl`` is the default because ``13a`` does
not split Russian guillemets (``«Ёлки»`` stays one token); ``13a`` is available for comparison
with numbers reported elsewhere. Corpus BLEU (not a mean of sentence BLEUs) is computed by
:func:`corpus_bleu` and stored by ``evaluate_generation`` in ``EvalResult.meta["corpus"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.metrics.inputs import missing_field
from ragmeter.metrics.registry import Metric, MetricSpec, Param, register
from ragmeter.results.records import MetricResult, SampleScore
from ragmeter.text import STEMMERS, TOKENIZERS, make_tokenizer

ROUGE_KINDS = ("rouge1", "rouge2", "rougeL")
BLEU_TOKENIZERS = ("intl", "13a", "none", "char", "zh", "ja-mecab", "ko-mecab", "flores200")


@dataclass(frozen=True)
class PRF:
    """Per-pair precision, recall and F arrays (float64, aligned with the input pairs)."""

    precision: np.ndarray
    recall: np.ndarray
    fmeasure: np.ndarray


def _prf(overlap: np.ndarray, n_hyp: np.ndarray, n_ref: np.ndarray) -> PRF:
    overlap = overlap.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n_hyp > 0, overlap / np.maximum(n_hyp, 1), 0.0)
        r = np.where(n_ref > 0, overlap / np.maximum(n_ref, 1), 0.0)
        f = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1.0), 0.0)
    return PRF(p, r, f)


def _encode(token_lists: Sequence[list[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Integer ids for all tokens (one vocabulary) and the offsets of each text."""
    lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=len(token_lists))
    offsets = np.zeros(len(token_lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    vocab: dict[str, int] = {}
    setdefault = vocab.setdefault
    ids = np.fromiter((setdefault(tok, len(vocab)) for toks in token_lists for tok in toks),
                      dtype=np.int64, count=int(offsets[-1]))
    return ids, offsets


def _ngram_keys(ids: np.ndarray, offsets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense n-gram ids and the text index of each n-gram, for every text at once."""
    lengths = np.diff(offsets)
    counts = np.maximum(lengths - n + 1, 0)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    text_of = np.repeat(np.arange(lengths.size), counts)
    starts = np.repeat(offsets[:-1], counts)
    within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    pos = starts + within
    key = ids[pos]
    for j in range(1, n):
        vocab = int(ids.max()) + 1 if ids.size else 1
        key = key * vocab + ids[pos + j]
        _, key = np.unique(key, return_inverse=True)
        key = key.ravel().astype(np.int64)
    return key, text_of


def rouge_n_overlap(hyp_ids: tuple[np.ndarray, np.ndarray], ref_ids: tuple[np.ndarray, np.ndarray],
                    n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(overlap, #hyp n-grams, #ref n-grams) per pair. Hypotheses and references share ids."""
    h_ids, h_off = hyp_ids
    r_ids, r_off = ref_ids
    n_pairs = h_off.size - 1
    # one joint id space so that n-gram ids agree between both sides
    both = np.concatenate([h_ids, r_ids])
    both_off = np.concatenate([h_off, r_off[1:] + h_off[-1]])
    keys, text_of = _ngram_keys(both, both_off, n)
    is_ref = text_of >= n_pairs
    pair = np.where(is_ref, text_of - n_pairs, text_of)
    width = int(keys.max()) + 1 if keys.size else 1
    comb = pair * width + keys
    uh, ch = np.unique(comb[~is_ref], return_counts=True)
    ur, cr = np.unique(comb[is_ref], return_counts=True)
    _, ih, ir = np.intersect1d(uh, ur, assume_unique=True, return_indices=True)
    common = np.minimum(ch[ih], cr[ir])
    overlap = np.bincount(uh[ih] // width, weights=common, minlength=n_pairs)
    n_hyp = np.maximum(np.diff(h_off) - n + 1, 0)
    n_ref = np.maximum(np.diff(r_off) - n + 1, 0)
    return overlap, n_hyp, n_ref


def lcs_length(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the longest common subsequence, bit-parallel (Hyyrö 2004).

    V starts as m one-bits (m = |b|); for each symbol x of ``a``: U = V & M[x],
    V = (V + U) | (V − U), where M[x] has bit i set iff b[i] == x. LCS = m − popcount(V).
    """
    m = len(b)
    if m == 0 or not a:
        return 0
    masks: dict[Any, int] = {}
    for i, x in enumerate(b):
        masks[x] = masks.get(x, 0) | (1 << i)
    full = (1 << m) - 1
    v = full
    get = masks.get
    for x in a:
        u = v & get(x, 0)
        v = ((v + u) | (v - u)) & full
    return m - v.bit_count()


def rouge_batch(
    hyps: Sequence[str],
    refs: Sequence[str],
    kinds: Sequence[str] = ROUGE_KINDS,
    *,
    tokenizer: str = "unicode",
    stem: str = "none",
) -> dict[str, PRF]:
    """ROUGE for aligned (response, reference) pairs: ``{"rouge1": PRF, ...}``."""
    if len(hyps) != len(refs):
        raise ValueError(f"rouge_batch: {len(hyps)} responses for {len(refs)} references")
    tok = make_tokenizer(tokenizer, stem)
    h_tok = [tok(t) for t in hyps]
    r_tok = [tok(t) for t in refs]
    return rouge_from_tokens(h_tok, r_tok, kinds)


def rouge_from_tokens(h_tok: Sequence[list[str]], r_tok: Sequence[list[str]],
                      kinds: Sequence[str] = ROUGE_KINDS) -> dict[str, PRF]:
    """ROUGE from already tokenised pairs (see module docstring for the formulas)."""
    ids, off = _encode([*h_tok, *r_tok])
    n = len(h_tok)
    h_enc = (ids[: off[n]], off[: n + 1])
    r_enc = (ids[off[n]:], off[n:] - off[n])
    out: dict[str, PRF] = {}
    for kind in kinds:
        if kind == "rougeL":
            hl = np.diff(h_enc[1])
            rl = np.diff(r_enc[1])
            h_id, h_off = h_enc
            r_id, r_off = r_enc
            hl_list = h_id.tolist()
            rl_list = r_id.tolist()
            lcs = np.fromiter(
                (lcs_length(hl_list[h_off[i]:h_off[i + 1]], rl_list[r_off[i]:r_off[i + 1]])
                 for i in range(n)), dtype=np.float64, count=n)
            out[kind] = _prf(lcs, hl, rl)
        elif kind.startswith("rouge") and kind[5:].isdigit():
            ov, nh, nr = rouge_n_overlap(h_enc, r_enc, int(kind[5:]))
            out[kind] = _prf(ov, nh, nr)
        else:
            raise ValueError(f"unknown ROUGE kind {kind!r} (allowed: rouge1, rouge2, ..., rougeL)")
    return out


def _rouge_compute(kind: str) -> Callable[[Metric, Any], MetricResult]:
    def compute(metric: Metric, ctx: Any) -> MetricResult:
        tokenizer = str(metric.get("tokenizer"))
        stem = str(metric.get("stem"))
        measure = str(metric.get("measure"))
        key = f"rouge:{tokenizer}:{stem}"
        if key not in ctx.cache:
            tok = make_tokenizer(tokenizer, stem)
            ctx.cache[key] = ([tok(s.response or "") for s in ctx.samples],
                              [tok(s.reference or "") for s in ctx.samples])
        h_tok, r_tok = ctx.cache[key]
        res_key = f"{key}:{kind}"
        if res_key not in ctx.cache:
            ctx.cache[res_key] = rouge_from_tokens(h_tok, r_tok, (kind,))[kind]
        prf: PRF = ctx.cache[res_key]
        values = {"p": prf.precision, "r": prf.recall, "f": prf.fmeasure}[measure]
        scores, counts = _lexical_scores(ctx, values, h_tok, r_tok)
        sig = ctx.signature(str(metric), tok=tokenizer, stem=stem, measure=measure,
                            lcs="sentence" if kind == "rougeL" else None)
        return MetricResult.from_scores(str(metric), scores, sig, counts=counts, seed=ctx.seed)
    return compute


def _lexical_scores(ctx: Any, values: np.ndarray, h_tok: Sequence[list[str]],
                    r_tok: Sequence[list[str]]) -> tuple[list[SampleScore], dict[str, int]]:
    scores: list[SampleScore] = []
    counts = {"empty_response": 0}
    for i, s in enumerate(ctx.samples):
        reason = missing_field(s, ("response", "reference"))
        if reason == "empty_input" and s.reference is not None and s.reference.strip():
            reason = None  # blank response: scored 0 below
        if reason is None and not r_tok[i]:
            reason = "empty_input"
        if reason is not None:
            scores.append(SampleScore(s.id, None, reason))
            continue
        if not h_tok[i]:
            counts["empty_response"] += 1
        scores.append(SampleScore(s.id, float(values[i])))
    return scores, counts


_ROUGE_PARAMS = (
    Param("measure", str, "f", ("f", "p", "r"), "f = F1, p = precision, r = recall"),
    Param("stem", str, "none", STEMMERS, "Snowball stemming: none, ru, en, auto"),
    Param("tokenizer", str, "unicode", TOKENIZERS, "unicode (\\w+, casefold) or rouge_score"),
)

for _name, _kind, _doc in (
    ("rouge_1", "rouge1", "ROUGE-1: unigram overlap Σ min(c_H, c_R); P = o/|H|, R = o/|R|, "
     "F = 2PR/(P+R)"),
    ("rouge_2", "rouge2", "ROUGE-2: bigram overlap; P = o/(|H|-1), R = o/(|R|-1), F = 2PR/(P+R)"),
    ("rouge_l", "rougeL", "ROUGE-L: P = LCS/|H|, R = LCS/|R|, F = 2PR/(P+R) (sentence-level LCS)"),
):
    register(MetricSpec(
        name=_name, family="lexical", doc=_doc, params=_ROUGE_PARAMS,
        required_fields=("response", "reference"), compute=_rouge_compute(_kind),
    ))


# --------------------------------------------------------------------------------------- BLEU

def _bleu_obj(tokenize: str, effective_order: bool) -> Any:
    from sacrebleu.metrics import BLEU  # a core dependency, imported lazily

    return BLEU(tokenize=tokenize, effective_order=effective_order)


def sentence_bleu(hyps: Sequence[str], refs: Sequence[str], tokenize: str = "intl"
                  ) -> tuple[np.ndarray, str]:
    """sacrebleu sentence BLEU (0–100, effective order) per pair, and sacrebleu's signature."""
    bleu = _bleu_obj(tokenize, True)
    vals = np.fromiter((bleu.sentence_score(h, [r]).score
                        for h, r in zip(hyps, refs, strict=True)),
                       dtype=np.float64, count=len(hyps))
    return vals, str(bleu.get_signature())


def corpus_bleu(hyps: Sequence[str], refs: Sequence[str], tokenize: str = "intl"
                ) -> tuple[float, str]:
    """sacrebleu corpus BLEU (0–100) over all pairs, and sacrebleu's signature."""
    bleu = _bleu_obj(tokenize, False)
    res = bleu.corpus_score(list(hyps), [list(refs)])
    return float(res.score), str(bleu.get_signature())


def _bleu_compute(metric: Metric, ctx: Any) -> MetricResult:
    tokenize = str(metric.get("tokenize"))
    idx = []
    scores: list[SampleScore | None] = []
    counts = {"empty_response": 0}
    for i, s in enumerate(ctx.samples):
        reason = missing_field(s, ("response", "reference"))
        if reason == "empty_input" and s.reference is not None and s.reference.strip():
            reason = None
        if reason is not None:
            scores.append(SampleScore(s.id, None, reason))
        else:
            if not (s.response or "").strip():
                counts["empty_response"] += 1
            scores.append(None)
            idx.append(i)
    hyps = [ctx.samples[i].response or "" for i in idx]
    refs = [ctx.samples[i].reference or "" for i in idx]
    if not idx:  # no usable reference anywhere: every sample is unscored with its reason
        import sacrebleu

        vals = np.zeros(0)
        sb_sig = f"nrefs:0|tok:{tokenize}|smooth:exp|eff:yes|version:{sacrebleu.__version__}"
    else:
        vals, sb_sig = sentence_bleu(hyps, refs, tokenize)
    for j, i in enumerate(idx):
        scores[i] = SampleScore(ctx.samples[i].id, float(vals[j]))
    entry: dict[str, Any] = {"corpus_bleu": None, "sacrebleu": sb_sig, "n": len(idx)}
    if idx:
        entry["corpus_bleu"] = corpus_bleu(hyps, refs, tokenize)[0]
    else:
        entry["reason"] = "no sample has both a response and a reference"
    ctx.cache.setdefault("corpus", {})[str(metric)] = entry
    sig = ctx.signature(str(metric), sacrebleu=sb_sig.replace("|", ","), scale="0-100")
    return MetricResult.from_scores(str(metric), [s for s in scores if s is not None], sig,
                                    counts=counts, seed=ctx.seed)


register(MetricSpec(
    name="bleu", family="lexical",
    doc="sacrebleu sentence BLEU = BP·exp(Σ_n ¼ log p_n), BP = min(1, exp(1 − r/c)); 0–100, "
        "effective order; corpus BLEU in EvalResult.meta['corpus']",
    params=(Param("tokenize", str, "intl", BLEU_TOKENIZERS,
                  "sacrebleu tokenizer; intl splits Unicode punctuation (Russian «»)"),),
    required_fields=("response", "reference"), value_range=(0.0, 100.0), compute=_bleu_compute,
))
