"""English translations of a seeded, balanced subset of the judge benchmark's Russian items.

The language probe compares the judge on the *same* item in Russian and in English. This
module picks the Russian items to translate (seeded; per task an equal share of each label),
reads the hand-written translations from ``judge_bench_behaviours/language_pairs.tsv``
(``ru id <TAB> question <TAB> context <TAB> answer <TAB> reference``, an empty column where the
Russian item has no such field) and builds ``data/judge_bench_pairs.jsonl``: one English item
per line, with the Russian item's task, kind and label and ``"pair"`` = the Russian item's id.

Checked when building: the translated ids are exactly the chosen subset, every field the
Russian item has is translated (and no other), and the numbers of both sides agree (digits
after removing digit grouping), so a translation cannot silently change a label.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from pathlib import Path

PAIRS_OUT = (Path(__file__).resolve().parents[1]
             / "src/ragmeter/judge_trust/data/judge_bench_pairs.jsonl")
TSV = Path(__file__).resolve().parent / "judge_bench_behaviours" / "language_pairs.tsv"
FIELDS = ("question", "context", "answer", "reference")
#: items per task and label: yes/no for binary tasks, 0/1/2 for graded ones
QUOTA = {"faithfulness": {"yes": 6, "no": 6},
         "factual_correctness": {"yes": 5, "no": 5},
         "production_gate": {"yes": 5, "no": 5},
         "answer_relevance": {"2": 4, "1": 3, "0": 3},
         "context_relevance": {"2": 4, "1": 3, "0": 3}}
SEED = 20261126


def chosen(items: list[dict]) -> list[dict]:
    """The Russian items to translate: per task and label a seeded sample of ``QUOTA``."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for it in items:
        if it["lang"] == "ru" and it["task"] in QUOTA:
            groups[(it["task"], str(it["label"]))].append(it)
    rng = random.Random(SEED)
    out: list[dict] = []
    for task, per in QUOTA.items():
        for label, n in per.items():
            pool = sorted(groups[(task, label)], key=lambda i: i["id"])
            out += rng.sample(pool, n)
    return out


def _numbers(text: str) -> list[str]:
    """The numbers of a text, digit grouping removed (``48 200`` / ``48,200`` → ``48200``)."""
    return sorted(re.sub(r"[\s,\u00a0]", "", m)
                  for m in re.findall(r"\d{1,3}(?:[ ,\u00a0]\d{3})+|\d+", text))


def translations() -> dict[str, dict[str, str]]:
    """The hand-written translations: Russian id → field → English text."""
    out: dict[str, dict[str, str]] = {}
    for n, line in enumerate(TSV.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 1 + len(FIELDS):
            raise SystemExit(f"{TSV}:{n}: expected {1 + len(FIELDS)} tab-separated columns")
        out[cols[0]] = {f: v.strip() for f, v in zip(FIELDS, cols[1:], strict=True)
                        if v.strip()}
    return out


def pairs(items: list[dict]) -> list[dict]:
    """The English items, each linked to its Russian original by ``pair``."""
    subset = chosen(items)
    tr = translations()
    want = {it["id"] for it in subset}
    if set(tr) != want:
        raise SystemExit(f"{TSV}: translations missing for {sorted(want - set(tr))}, "
                         f"not in the chosen subset: {sorted(set(tr) - want)}")
    out = []
    for it in subset:
        en = tr[it["id"]]
        have = [f for f in FIELDS if it.get(f)]
        if sorted(en) != sorted(have):
            raise SystemExit(f"{TSV}: {it['id']}: translate exactly {have}, got {sorted(en)}")
        for f in have:
            if _numbers(it[f]) != _numbers(en[f]):
                raise SystemExit(f"{TSV}: {it['id']} {f}: numbers differ: "
                                 f"{_numbers(it[f])} vs {_numbers(en[f])}")
        out.append({"id": "en-tr-" + it["id"].removeprefix("ru-"), "lang": "en",
                    "task": it["task"], "kind": it["kind"], "label": it["label"],
                    "pair": it["id"], **{f: en[f] for f in have}})
    return out


def pairs_text(items: list[dict]) -> str:
    return "".join(json.dumps(it, ensure_ascii=False) + "\n" for it in pairs(items))


if __name__ == "__main__":  # print the chosen Russian items (to write their translations)
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from build_judge_bench import build

    for it in chosen(build()):
        print(it["id"] + "\t" + "\t".join(it.get(f, "") for f in FIELDS))
