"""Datasets (questions with gold answers) and corpora (retrievable passages)."""

from rr.data.base import Corpus, Dataset, sample_examples

__all__ = ["Corpus", "Dataset", "sample_examples"]
