"""Retrievers and the cached, retrieve-once-at-max(k) TREC runs they produce."""

from rr.retrieval.base import Retriever
from rr.retrieval.runs import RunCache, read_trec_run, write_trec_run

__all__ = ["Retriever", "RunCache", "read_trec_run", "write_trec_run"]
