"""Data model and loaders: samples, evalsets, qrels and runs."""

from ragmeter.data.sample import QUESTION_TYPES, Sample

__all__ = ["QUESTION_TYPES", "Sample"]
