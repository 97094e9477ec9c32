"""Convert a SQuAD-format file (SQuAD v1.1, XQuAD, SberQuAD, ...) to a ragmeter evalset and corpus.

Each paragraph becomes one document of the corpus (``doc_id`` = ``<article>-p<n>``, ``title`` =
the article's title); each question becomes one evalset record whose gold is that document
(``gold_doc_ids``, no chunk gold: the corpus is chunked by ragmeter, so chunk ids are not known in
advance) and whose reference answer is the first answer text. Retrieval metrics are then scored
at document level (``level`` left unset means ``auto``: document level when there is no chunk
gold), a retrieved chunk ``<doc>#<n>`` counting as a hit of its document.

    python scripts/squad_to_evalset.py xquad.ru.json out/      # out/evalset.jsonl, out/corpus.jsonl
    python scripts/squad_to_evalset.py xquad.ru.json out/ --limit-articles 3

Then, with a config whose dataset is ``out/evalset.jsonl`` and corpus ``out/corpus.jsonl``
(see ``docs/retrieval.md``, "Document-level gold"), ``ragmeter run bench.yaml``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

_SLUG = re.compile(r"[^0-9A-Za-z_\-]+")


def convert(data: dict[str, Any], limit_articles: int | None = None
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(evalset records, corpus documents)`` of a parsed SQuAD-format object."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ValueError("not a SQuAD-format file: expected an object with a 'data' list")
    records: list[dict[str, Any]] = []
    corpus: list[dict[str, Any]] = []
    seen: set[str] = set()
    for a_i, article in enumerate(data["data"][:limit_articles]):
        title = str(article.get("title") or f"article{a_i}")
        slug = _SLUG.sub("_", title).strip("_") or f"article{a_i}"
        for p_i, para in enumerate(article.get("paragraphs", [])):
            doc_id = f"{slug}-p{p_i}"
            corpus.append({"doc_id": doc_id, "title": title, "text": para["context"]})
            for qa in para.get("qas", []):
                qid = str(qa["id"])
                if qid in seen:
                    raise ValueError(f"question id {qid!r} appears twice")
                seen.add(qid)
                answers = [x["text"] for x in qa.get("answers", []) if x.get("text")]
                rec: dict[str, Any] = {"id": qid, "question": qa["question"],
                                       "gold_doc_ids": [doc_id], "gold_chunk_ids": [],
                                       "type": "fact", "source": title}
                if answers:
                    rec["reference"] = answers[0]
                records.append(rec)
    return records, corpus


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path, help="SQuAD-format JSON file")
    ap.add_argument("out", type=Path, help="output folder (evalset.jsonl, corpus.jsonl)")
    ap.add_argument("--limit-articles", type=int, default=None)
    args = ap.parse_args(argv)
    try:
        data = json.loads(args.source.read_text(encoding="utf-8-sig"))
        records, corpus = convert(data, args.limit_articles)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: {args.source}: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(records, args.out / "evalset.jsonl")
    write_jsonl(corpus, args.out / "corpus.jsonl")
    print(f"wrote {len(records)} questions to {args.out / 'evalset.jsonl'} and {len(corpus)} "
          f"documents to {args.out / 'corpus.jsonl'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
