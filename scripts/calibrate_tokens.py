"""Calibrate ragmeter's characters-per-token estimate against measured prompt tokens.

Reads the judge cache filled by a benchmark run of a local GGUF judge (``ragmeter judge bench
--judge-backend tiny`` or ``scripts/measure_judge_card.py``), pairs every cached reply's
``prompt_tokens`` with the request that produced it, and fits
``tokens ≈ cyrillic / a + other / b + c · messages`` by least squares. Prints the fit and the
error of the shipped constants (``ragmeter.cost.CHARS_PER_TOKEN``).

Usage: RAGMETER_CACHE_DIR=... PYTHONPATH=src python scripts/calibrate_tokens.py {tiny|demo}
"""

from __future__ import annotations

import re
import sys

import numpy as np

from ragmeter.cost import request_tokens
from ragmeter.judge_trust.bench import item_request, load_bench
from ragmeter.judges.cache import JudgeCache, cache_key
from ragmeter.judges.config import default_cache_dir
from ragmeter.judges.gguf import DEMO_MODEL, TINY_MODEL

_CYR = re.compile(r"[\u0400-\u04ff]")


def main() -> None:
    spec = TINY_MODEL if (sys.argv[1:] or ["tiny"])[0] == "tiny" else DEMO_MODEL
    model = f"{spec.name}@{spec.sha256[:12]}"
    cache = JudgeCache(default_cache_dir())
    rows, ours = [], []
    for it in load_bench(lang="all"):
        for binary in (True, False):
            req = item_request(it, binary=binary)
            key = cache_key(req, backend="gguf", model=model, temperature=0.0, seed=0,
                            max_tokens=1000)
            got = cache.get_many([key]).get(key)
            if got is None or not got.tokens_in:
                continue
            text = "".join(m["content"] for m in req.messages)
            cyr = len(_CYR.findall(text))
            rows.append((cyr, len(text) - cyr, len(req.messages), got.tokens_in))
            ours.append(request_tokens(req))
    if not rows:
        raise SystemExit("no cached replies with prompt tokens found for " + model)
    A = np.array([[r[0], r[1], r[2]] for r in rows], dtype=float)
    y = np.array([r[3] for r in rows], dtype=float)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    err = (np.array(ours) - y) / y
    print(f"{len(rows)} prompts of {model}")
    print(f"fit: chars/token cyrillic {1 / coef[0]:.2f}, other {1 / coef[1]:.2f}, "
          f"{coef[2]:.1f} tokens per message")
    print(f"shipped estimate: median error {np.median(err):+.1%}, "
          f"p10 {np.percentile(err, 10):+.1%}, p90 {np.percentile(err, 90):+.1%}")


if __name__ == "__main__":
    main()
