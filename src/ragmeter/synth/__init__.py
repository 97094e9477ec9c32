"""Synthetic test sets from a knowledge base, Russian first.

``generate_testset(corpus, generator=judge, n=50, mix="fact=0.4,negative=0.2")`` turns a
corpus (a ``.jsonl`` file or a folder of ``.txt``/``.md``/``.html``, chunked as the retrievers
chunk it) into an evalset with gold doc and chunk ids, reference answers and reference
contexts; ``estimate_testset`` prints nothing and sends nothing — it returns the planned calls,
tokens and cost. The generator is any judge (``ragmeter.judges.make_judge(cfg)``), so the
engine's concurrency, retries, cache and accounting apply.
"""

from __future__ import annotations

from ragmeter.synth.filters import FilterSettings, passage_reference
from ragmeter.synth.items import Item
from ragmeter.synth.kinds import DEFAULT_MIX, EVALSET_TYPE, KINDS, Mix
from ragmeter.synth.output import write_testset
from ragmeter.synth.pipeline import Testset, estimate_testset, generate_testset
from ragmeter.synth.prompts import PROMPT_SET_VERSION

__all__ = [
    "DEFAULT_MIX", "EVALSET_TYPE", "KINDS", "PROMPT_SET_VERSION",
    "FilterSettings", "Item", "Mix", "Testset", "estimate_testset",
    "generate_testset", "passage_reference", "write_testset",
]
