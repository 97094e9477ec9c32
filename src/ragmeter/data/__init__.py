"""Data model and loaders: samples, evalsets, qrels and runs."""

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
