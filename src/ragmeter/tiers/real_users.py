"""Real-users benchmark: retrieval against the URL production showed the user.

Logged questions come from SQL (:mod:`ragmeter.data.sql`); the logged URL is mapped to a
corpus document through the corpus ``url`` field after :func:`normalize_url`, and becomes the
single gold document of the question (doc level). Then the retriever under test is run and
evaluated with :func:`ragmeter.retrieval.evaluate.evaluate_retrieval` (``level=doc``).

Exclusions are explicit and counted in ``meta["counts"]``: rows with a NULL/empty URL
(``null_url``) or question (``null_question``), and URLs that match no corpus document
(``url_not_in_corpus``, with examples in ``meta["unmatched_urls"]``).

URL normalisation: scheme ``http``→``https`` and lower case, host lower case, default port
and ``www.``-less host kept as written (only case changes), fragment dropped, tracking query
parameters (``utm_*``, ``gclid``, ``fbclid``, ``yclid``, ``_ga``, ``_gl``, ``mc_cid``,
``mc_eid``, ``ref``, ``ref_src``) dropped, remaining parameters sorted, percent-escapes
decoded where safe, trailing slash of the path dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from ragmeter.data.sample import Sample
from ragmeter.data.sql import LoggedQuestion, LoggedQuestions, LogQuery, fetch_logged_questions
from ragmeter.errors import DataError, RecordProblem
from ragmeter.results.records import EvalResult
from ragmeter.tiers.context import TierContext, TierNotRunnable
from ragmeter.tiers.registry import Tier, TierOptions, register_tier

DEFAULT_METRICS = ("hit_rate@1(level=doc)", "hit_rate@5(level=doc)", "hit_rate@10(level=doc)",
                   "mrr(level=doc)", "recall@10(level=doc)", "precision@5(level=doc)",
                   "ndcg@10(level=doc)")
_TRACKING = re.compile(r"^(utm_.*|gclid|fbclid|yclid|_ga|_gl|mc_cid|mc_eid|ref|ref_src)$",
                       re.IGNORECASE)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str | None) -> str | None:
    """Canonical form of a URL for matching (see module docstring); ``None`` for empty input."""
    if url is None:
        return None
    s = str(url).strip()
    if not s:
        return None
    if "://" not in s and not s.startswith("/"):
        s = "https://" + s
    parts = urlsplit(s)
    scheme = (parts.scheme or "https").lower()
    if scheme == "http":
        scheme = "https"
    host = (parts.hostname or "").lower()
    port = parts.port
    netloc = host
    if port is not None and port not in _DEFAULT_PORTS.values():
        netloc = f"{host}:{port}"
    path = quote(unquote(parts.path), safe="/:@!$&'()*+,;=-._~")
    path = re.sub(r"/{2,}", "/", path).rstrip("/")
    params = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
              if not _TRACKING.match(k)]
    query = urlencode(sorted(params))
    return urlunsplit((scheme, netloc, path, query, ""))


def corpus_url_index(docs: Sequence[Any]) -> tuple[dict[str, str], list[str]]:
    """``normalised url → doc_id`` over documents with a ``url``; second value: urls that
    several documents share (the first document wins, the clash is reported)."""
    index: dict[str, str] = {}
    clashes: list[str] = []
    for d in docs:
        nu = normalize_url(getattr(d, "url", None))
        if nu is None:
            continue
        if nu in index and index[nu] != d.doc_id:
            clashes.append(nu)
            continue
        index.setdefault(nu, d.doc_id)
    return index, clashes


def logged_to_samples(rows: Sequence[LoggedQuestion], url_index: dict[str, str]
                      ) -> tuple[list[Sample], Counter[str], list[str]]:
    """Samples with ``gold_doc_ids=[doc of logged url]``; unmatched URLs excluded, counted."""
    samples: list[Sample] = []
    counts: Counter[str] = Counter()
    unmatched: list[str] = []
    seen: Counter[str] = Counter()
    for r in rows:
        nu = normalize_url(r.url)
        if nu is None:
            counts["null_url"] += 1
            continue
        doc = url_index.get(nu)
        if doc is None:
            counts["url_not_in_corpus"] += 1
            if len(unmatched) < 20:
                unmatched.append(r.url or "")
            continue
        seen[r.id] += 1
        sid = r.id if seen[r.id] == 1 else f"{r.id}~{seen[r.id]}"
        samples.append(Sample(id=sid, user_input=r.question, response=r.answer,
                              gold_doc_ids=[doc],
                              metadata={"logged_url": r.url, "score": r.score,
                                        "created_at": r.created_at}))
    return samples, counts, unmatched


def evaluate_real_users(
    corpus: str | Path | Sequence[Any],
    *,
    db_url: str | None = None,
    query: LogQuery | None = None,
    logged: LoggedQuestions | None = None,
    retriever: Any = "bm25",
    k: int = 10,
    metrics: Sequence[str] = DEFAULT_METRICS,
    embedder: Any = None,
    language: str = "auto",
    seed: int = 42,
) -> EvalResult:
    """Read logged questions, map URLs to corpus docs, retrieve and evaluate at doc level."""
    from ragmeter.data.hashing import dataset_hash
    from ragmeter.retrieval.chunking import chunk_documents
    from ragmeter.retrieval.corpus import load_corpus
    from ragmeter.retrieval.evaluate import evaluate_retrieval
    from ragmeter.retrieval.run import retrieve_samples

    docs = load_corpus(corpus) if isinstance(corpus, (str, Path)) else list(corpus)
    index, clashes = corpus_url_index(docs)
    if not index:
        raise DataError(RecordProblem(str(corpus) if isinstance(corpus, (str, Path))
                                      else "<corpus>", None, "url",
                                      "no corpus document has a 'url'; logged URLs cannot be "
                                      "mapped to documents"))
    logged = logged or fetch_logged_questions(db_url, query)
    samples, counts, unmatched = logged_to_samples(logged.rows, index)
    counts.update(logged.counts)
    if not samples:
        raise DataError(RecordProblem(logged.url_masked, None, "url",
                                      f"no logged question maps to a corpus document "
                                      f"(read {logged.n_read}; excluded {dict(counts)})"),
                        hint="check the URL column mapping and the corpus 'url' field")
    if isinstance(retriever, str):
        from ragmeter.retrieval.retrievers import make_retriever

        r = make_retriever(retriever, embedder=embedder, language=language)
        r.index(chunk_documents(docs))
    else:
        r = retriever
    ran = retrieve_samples(r, samples, k)
    metrics, capped = cap_cutoffs(metrics, k)
    sig_extra: dict[str, Any] = {"source": "real_users", "db": logged.dialect,
                                 **{key: v for key, v in logged.query.signature_fields().items()
                                    if v is not None}}
    sigf = getattr(r, "signature_fields", None)
    if callable(sigf):
        sig_extra.update({f"retriever_{a}": b for a, b in sigf().items()})
    dh = dataset_hash([s.id, s.user_input, s.gold_doc_ids] for s in samples)
    res = evaluate_retrieval(ran, metrics=list(metrics), seed=seed,
                             name=f"real_users:{getattr(r, 'name', 'retriever')}",
                             dataset_hash=dh, extra_signature=sig_extra)
    res.meta.update({
        "tier": "real_users", "db": logged.url_masked, "table": logged.query.table,
        "n_read": logged.n_read, "n_evaluated": len(samples), "counts": dict(counts),
        "unmatched_urls": unmatched, "corpus_url_clashes": clashes[:20], "k": k,
    })
    if capped:
        res.meta["capped_cutoffs"] = capped
    return res.attach_samples(ran)  # the logged answers, for a target's answers to meet them


def cap_cutoffs(metrics: Sequence[str], k: int) -> tuple[list[str], dict[str, str]]:
    """Metrics for a ranking ``k`` deep: a cutoff above ``k`` is capped at ``k`` (``@10`` on a
    ranking of 3 is ``@3``), duplicates dropped; returns the list and ``{asked: used}``."""
    from ragmeter.metrics.registry import parse_metric

    out: list[str] = []
    capped: dict[str, str] = {}
    for text in metrics:
        m = parse_metric(text)
        if m.k is not None and m.k > k:
            used = str(m.with_k(k))
            capped[str(m)] = used
        else:
            used = str(m)
        if used not in out:
            out.append(used)
    return out, capped


# --------------------------------------------------------------------------- the tier
@dataclass(frozen=True)
class RealUsersOptions(TierOptions):
    """``db_url_env``: the environment variable holding the log database URL (never the URL
    itself); ``query``: which rows to read (table, db_schema, columns, min_score, where_score,
    limit, latest); ``retriever``: the retriever type to run (bm25, dense, hybrid, ...);
    ``k``: retrieval depth (default: the largest configured cutoff); ``embedding``: the
    configured embedding for dense retrievers (default: the first)."""

    db_url_env: str = "RAGMETER_LOGS_DB_URL"
    query: LogQuery | None = None
    retriever: str = "bm25"
    k: int | None = None
    embedding: str | None = None


def run_real_users(ctx: TierContext, samples: list[Sample],
                   options: RealUsersOptions) -> list[EvalResult]:
    """Retrieval metrics on logged questions, mapped to the corpus by URL."""
    import os

    if ctx.config.corpus is None:
        raise TierNotRunnable("real_users needs a corpus (documents with a 'url')")
    url = os.environ.get(options.db_url_env)
    if not url:
        raise TierNotRunnable(f"real_users needs the log database URL in ${options.db_url_env}")
    from ragmeter.targets.tier_hooks import target_retrievers  # the user's own systems

    out: list[EvalResult] = []
    chosen: list[Any] = list(target_retrievers(ctx)) or [options.retriever]
    for r in chosen:
        res = evaluate_real_users(
            ctx.config.corpus.path, db_url=url, query=options.query, retriever=r,
            k=options.k if options.k is not None else max(ctx.k),
            embedder=ctx.embedder(options.embedding), seed=ctx.seed)
        out += r.finish(res) if not isinstance(r, str) else [res]
    return out


register_tier(Tier(
    name="real_users", title="Real users", title_ru="Реальные пользователи",
    doc="retrieval metrics on real users' logged questions",
    run=run_real_users, options=RealUsersOptions))


__all__ = ["DEFAULT_METRICS", "cap_cutoffs", "corpus_url_index", "evaluate_real_users", "logged_to_samples",
           "normalize_url"]
