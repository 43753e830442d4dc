"""Grouped-query attention on the CPU without copying the key/value heads: a ``transformers``
attention function the HF backend switches a model to (:func:`use_cpu_gqa_attention`).

``transformers``' ``sdpa`` attention repeats the kv heads of a grouped-query model whenever there
is an attention mask: every decode step of a padded batch copied the whole KV cache three times
over for SmolLM2. :func:`_sdpa_gqa` hands the grouped heads to
``scaled_dot_product_attention(enable_gqa=True)`` instead, on the CPU, and leaves everything else
to ``sdpa`` itself; the numbers are the same (``tests/test_hf_prefix.py``).
"""

from __future__ import annotations

from typing import Any

#: The attention :func:`use_cpu_gqa_attention` registers: ``sdpa`` without copying the key/value heads.
CPU_GQA_ATTENTION = "rr_sdpa_gqa"


def _sdpa_gqa(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """``transformers``' ``sdpa`` attention, but grouped-query attention with a padding mask hands
    the kv heads to ``scaled_dot_product_attention(enable_gqa=True)`` instead of repeating them
    (``sdpa`` repeats them whenever there is a mask: every decode step of a padded batch copied
    the whole KV cache three times over for SmolLM2). Anything else goes to ``sdpa`` itself."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    plain = (
        groups <= 1
        or query.device.type != "cpu"
        or kwargs.get("output_attentions", False)
        or kwargs.get("position_bias") is not None
        or kwargs.get("cache") is not None
        or key.shape[-1] != value.shape[-1]
    )
    if plain:
        return sdpa_attention_forward(
            module,
            query,
            key,
            value,
            attention_mask,
            dropout=dropout,
            scaling=scaling,
            is_causal=is_causal,
            **kwargs,
        )
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = query.shape[2] > 1 and attention_mask is None and causal
    if causal and key.shape[2] > query.shape[2]:  # as sdpa: an empty static cache's tail
        key, value = key[:, :, : query.shape[2]], value[:, :, : query.shape[2]]
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=causal,
        enable_gqa=True,
    )
    return out.transpose(1, 2).contiguous(), None


def use_cpu_gqa_attention(model: Any) -> bool:
    """Switch a model that runs ``sdpa`` attention on the CPU to :func:`_sdpa_gqa` (same masks, the
    same numbers: ``tests/test_hf_prefix.py``); ``False`` where it does not apply."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    if getattr(model.config, "_attn_implementation", None) != "sdpa" or model.device.type != "cpu":
        return False
    AttentionInterface.register(CPU_GQA_ATTENTION, _sdpa_gqa)
    AttentionMaskInterface.register(CPU_GQA_ATTENTION, sdpa_mask)
    try:
        model.set_attn_implementation(CPU_GQA_ATTENTION)
    except (ValueError, ImportError):
        return False
    return model.config._attn_implementation == CPU_GQA_ATTENTION
