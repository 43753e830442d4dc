"""Prefix reuse for the HF backend: prompts that share a prefix compute it once.

Cao et al.'s grid sends many prompts that start alike: every prompt of a strategy opens with the
same system message and instruction, and the original-order prompt at k = 1 is the start of the
one at k = 2 (the demo: 58,668 prompt tokens, 28,923 of them distinct prefixes). ``generate``
prefills every prompt from scratch; this module prefills each prompt only from where it parts
from the prompt before it, then decodes a batch of them together.

How: the prompts are sorted by token ids, so neighbours share their longest prefixes (a depth-first
walk of their prefix tree). One running KV cache holds the previous prompt's prefix; for each
prompt it is cut back to the tokens both share and extended by the rest, all but the last token
(one forward call). Each row's cache is kept; a batch of ``batch_size`` rows is then left-padded
into one cache (padding masked out, so it changes nothing) and ``model.generate`` runs the last
prompt token of every row and the decode steps, as it would after its own prefill.

The predictions are the same as without reuse up to float rounding (a prefix computed in another
call and another batch shape sums in another order; so does another ``batch_size``):
``tests/test_hf_prefix.py`` compares the two on real prompts. Used only where the model's cache
is the plain growing one (:class:`transformers.DynamicLayer` in every layer); sliding-window,
hybrid or recurrent caches fall back to plain batched ``generate``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rr.generation.throughput import BatchTiming


def common_prefix_length(a: list[int], b: list[int]) -> int:
    """Tokens at the start of ``a`` and ``b`` that are equal (as ``shared_prefix_tokens`` counts
    characters: ``os.path.commonprefix``, which compares any sequences)."""
    return len(os.path.commonprefix([a, b]))


def prefix_order(ids: Sequence[Sequence[int]]) -> list[int]:
    """Indices of ``ids`` sorted by their token ids: prompts sharing a prefix become neighbours."""
    return sorted(range(len(ids)), key=lambda i: list(ids[i]))


def distinct_prefix_tokens(ids: Sequence[list[int]]) -> int:
    """Prompt tokens computed with reuse: each prompt in :func:`prefix_order` less what it shares
    with the one before it (the number of nodes of the prompts' prefix tree)."""
    order = prefix_order(ids)
    total, prev = 0, None
    for i in order:
        shared = 0 if prev is None else common_prefix_length(prev, ids[i])
        total += len(ids[i]) - shared
        prev = ids[i]
    return total


@dataclass
class RowCache:
    """One prompt's keys and values, all its tokens but the last: per layer ``(keys, values)`` of
    shape ``[1, heads, len - 1, head_dim]``."""

    layers: list[tuple[Any, Any]]
    length: int


class PrefixPrefill:
    """The running cache and the per-row caches of :mod:`rr.generation.hf_prefix`.

    Args:
        model: A loaded ``AutoModelForCausalLM``.

    Attributes:
        prompt_tokens: Prompt tokens of every row prefilled so far.
        computed_tokens: Of those, the tokens this object ran through the model (the rest were
            reused from the previous row's prefix); the last token of each row runs in
            ``generate`` and is counted here too.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self._cache: Any = None
        self._ids: list[int] = []
        self.prompt_tokens = 0
        self.computed_tokens = 0

    @staticmethod
    def supported(model: Any) -> bool:
        """Whether the model's default cache is a plain growing one in every layer."""
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        if not getattr(model, "_supports_cache_class", True) or model.config.is_encoder_decoder:
            return False
        try:
            cache = DynamicCache(config=model.config)
        except Exception:  # an architecture DynamicCache cannot describe
            return False
        layers = getattr(cache, "layers", None) or []
        return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)

    def row(self, ids: Sequence[int]) -> RowCache:
        """Prefill ``ids`` but its last token, reusing what it shares with the previous row."""
        import torch
        from transformers import DynamicCache

        target = list(ids[:-1])
        shared = common_prefix_length(self._ids, target) if self._cache is not None else 0
        if self._cache is None:
            self._cache = DynamicCache(config=self.model.config)
        elif shared < len(self._ids):
            self._cache.crop(shared - len(self._ids)) if shared else self._cache.reset()
        if len(target) > shared:
            with torch.inference_mode():
                self.model(
                    input_ids=torch.tensor([target[shared:]], device=self.model.device),
                    past_key_values=self._cache,
                    use_cache=True,
                    logits_to_keep=1,
                )
        self._ids = target
        self.prompt_tokens += len(ids)
        self.computed_tokens += len(target) - shared + 1
        layers = (
            [(layer.keys, layer.values) for layer in self._cache.layers] if target else []
        )  # no copy: cropping slices, extending concatenates into new tensors
        return RowCache(layers=layers, length=len(target))

    def batch_cache(self, rows: Sequence[RowCache], new_tokens: int) -> Any:
        """One cache for ``rows``, each row's keys and values at the right end (left padding, as
        the batch's ``input_ids`` are padded) and zeros before them (masked out); room for the
        batch's last prompt token and ``new_tokens`` more, written in place (a growing cache
        copies all of itself at every decode step)."""
        from transformers import StaticCache

        width = max(r.length for r in rows)
        cache = StaticCache(config=self.model.config, max_cache_len=width + 1 + new_tokens)
        if width == 0:
            return cache
        ref = next(r.layers for r in rows if r.layers)
        for layer in range(len(ref)):
            k0, v0 = ref[layer]
            keys = k0.new_zeros((len(rows), k0.shape[1], width, k0.shape[3]))
            values = v0.new_zeros((len(rows), v0.shape[1], width, v0.shape[3]))
            for b, r in enumerate(rows):
                if r.length:
                    keys[b, :, width - r.length :] = r.layers[layer][0][0]
                    values[b, :, width - r.length :] = r.layers[layer][1][0]
            cache.update(keys, values, layer)
        return cache


def generate_batch(
    model: Any,
    pad_id: int,
    prefill: PrefixPrefill,
    ids: Sequence[Sequence[int]],
    gen_kwargs: dict[str, Any],
    streamer: Any,
    on_row: Callable[[int, int], None] | None = None,
) -> tuple[Any, BatchTiming]:
    """Generate for one batch of token-id prompts with :class:`PrefixPrefill`.

    Returns:
        The output ids (``[rows, width + new]``, prompts left-padded to ``width``) and the batch's
        timing, whose ``padded_tokens`` are the prompt tokens computed (reused ones are not).
    """
    import torch

    t0 = time.perf_counter()
    before = prefill.computed_tokens
    rows = []
    for j, r in enumerate(ids):
        rows.append(prefill.row(r))
        if on_row is not None:
            on_row(j + 1, len(ids))
    width = max(len(r) for r in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for b, r in enumerate(ids):
        input_ids[b, width - len(r) :] = torch.tensor(list(r))
        mask[b, width - len(r) :] = 1
    cache = prefill.batch_cache(rows, gen_kwargs["max_new_tokens"])
    prefill_s = time.perf_counter() - t0
    with torch.inference_mode():
        output = model.generate(
            input_ids=input_ids.to(model.device),
            attention_mask=mask.to(model.device),
            past_key_values=cache,
            **gen_kwargs,
            streamer=streamer,
        )
    timing = streamer.timing(prefill.computed_tokens - before, gen_kwargs["max_new_tokens"])
    return output, replace(timing, prefill_s=prefill_s + timing.prefill_s)
