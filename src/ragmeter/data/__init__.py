"""Data model and loaders: samples, evalsets, qrels and runs.

The names below are imported on first use, so that importing one submodule (``data.sample``,
``data.trec``) does not import every loader and format.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmeter.data.evalset import load_evalset, write_evalset
    from ragmeter.data.hashing import dataset_hash
    from ragmeter.data.loaders import (
        LoadResult,
        from_pandas,
        from_records,
        load_dataset_file,
        load_samples,
        read_records,
    )
    from ragmeter.data.sample import QUESTION_TYPES, Sample
    from ragmeter.data.trec import Qrels, Run, load_qrels, load_run, save_qrels, save_run

# public name -> the submodule that defines it
_LAZY: dict[str, str] = {
    "load_evalset": "evalset", "write_evalset": "evalset", "dataset_hash": "hashing",
    "LoadResult": "loaders", "from_pandas": "loaders", "from_records": "loaders",
    "load_dataset_file": "loaders", "load_samples": "loaders", "read_records": "loaders",
    "QUESTION_TYPES": "sample", "Sample": "sample", "Qrels": "trec", "Run": "trec",
    "load_qrels": "trec", "load_run": "trec", "save_qrels": "trec", "save_run": "trec",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmeter.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ragmeter.data.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "QUESTION_TYPES",
    "LoadResult",
    "Qrels",
    "Run",
    "Sample",
    "dataset_hash",
    "from_pandas",
    "from_records",
    "load_dataset_file",
    "load_evalset",
    "load_qrels",
    "load_run",
    "load_samples",
    "read_records",
    "save_qrels",
    "save_run",
    "write_evalset",
]
