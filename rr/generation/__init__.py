"""Generator backends, the generation cache and the cached, deduplicating client in front of them."""

from rr.generation.base import Completion, Generator
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM

__all__ = ["Completion", "Generator", "GenerationCache", "LLM"]
