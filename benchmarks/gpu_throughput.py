"""Throughput of the paper's model shapes on the GPU at hand: the figures ``rr plan`` assumes.

``rr plan`` turns prompt and new tokens into GPU-hours with default throughputs
(``rr.cost.PROMPT_TPS``, ``GENERATED_TPS``, ``ENCODE_PPS``). This measures them on one GPU for
the shapes the papers use, with random weights built from a config (no download: a compute node
without network runs it; throughput depends on the shapes, not the weights):

* encoder: bge-large's shape (BERT, 24 layers, hidden 1024, 16 heads, FFN 4096), float16, passages
  of ``--passage-tokens`` tokens (a 100-word Wikipedia passage with its title is ~140-160), batches
  of ``--encode-batch``: passages/s, what ``retriever=bge_large`` encodes a corpus at;
* decoder: Llama-3.1-8B's shape (32 layers, hidden 4096, 32 heads / 8 KV heads, FFN 14336, vocab
  128,256), bfloat16, transformers' ``generate`` as ``generator=hf`` calls it (greedy, a batch of
  equal-length prompts of ``--prompt-tokens``, exactly ``--new-tokens`` new tokens): prefill
  (prompt tokens/s, one forward over the batch) and decode (new tokens/s over the rest).

Usage::

    python benchmarks/gpu_throughput.py                 # on a GPU: the paper's shapes
    python benchmarks/gpu_throughput.py --quick         # tiny shapes on whatever is here (seconds)

One line per figure, then ``summary:``; ``--json PATH`` writes them too. Results:
``benchmarks/README.md`` ("gpu_throughput.py").
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^\[encode\] .* passages/s$",
    r"^\[generate\] .*: prefill [\d,]+ prompt tokens/s, decode [\d,]+ new tokens/s",
    r"^summary: \d+ figures in \d+ s on ",
]


@dataclass(frozen=True)
class Shapes:
    """The model shapes and workload sizes of one run."""

    enc_layers: int = 24
    enc_hidden: int = 1024
    enc_heads: int = 16
    enc_ffn: int = 4096
    dec_layers: int = 32
    dec_hidden: int = 4096
    dec_heads: int = 32
    dec_kv_heads: int = 8
    dec_ffn: int = 14336
    dec_vocab: int = 128_256
    passages: int = 16_384
    passage_tokens: int = 160
    encode_batch: int = 256
    prompt_tokens: int = 1500
    new_tokens: int = 100
    batches: tuple[int, ...] = (8, 32)


#: Tiny shapes: every code path in seconds on a CPU (the suite runs this).
QUICK = Shapes(
    enc_layers=2,
    enc_hidden=64,
    enc_heads=2,
    enc_ffn=128,
    dec_layers=2,
    dec_hidden=64,
    dec_heads=2,
    dec_kv_heads=1,
    dec_ffn=128,
    dec_vocab=512,
    passages=64,
    passage_tokens=32,
    encode_batch=16,
    prompt_tokens=48,
    new_tokens=4,
    batches=(2,),
)


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def encoder_throughput(s: Shapes, device: str) -> dict[str, Any]:
    """Passages/s of a bge-large-shaped BERT (mean pooling and normalisation, as sentence-transformers)."""
    import torch
    from transformers import BertConfig, BertModel

    dtype = torch.float16 if device.startswith("cuda") else torch.float32
    config = BertConfig(
        hidden_size=s.enc_hidden,
        num_hidden_layers=s.enc_layers,
        num_attention_heads=s.enc_heads,
        intermediate_size=s.enc_ffn,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    model = BertModel(config).to(device=device, dtype=dtype).eval()
    ids = torch.randint(1000, config.vocab_size, (s.passages, s.passage_tokens), device=device)
    mask = torch.ones_like(ids)

    def run(n: int) -> None:
        for i in range(0, n, s.encode_batch):
            out = model(input_ids=ids[i : i + s.encode_batch], attention_mask=mask[i : i + s.encode_batch])
            emb = out.last_hidden_state.mean(dim=1)
            torch.nn.functional.normalize(emb, dim=-1).float().cpu()

    with torch.inference_mode():
        run(min(s.passages, 2 * s.encode_batch))  # warm-up
        _sync(device)
        t0 = time.perf_counter()
        run(s.passages)
        _sync(device)
        seconds = time.perf_counter() - t0
    params = sum(p.numel() for p in model.parameters())
    return {
        "what": "encoder",
        "params_m": round(params / 1e6, 1),
        "dtype": str(dtype).removeprefix("torch."),
        "passages": s.passages,
        "passage_tokens": s.passage_tokens,
        "batch": s.encode_batch,
        "seconds": round(seconds, 3),
        "passages_per_s": round(s.passages / seconds, 1),
    }


def decoder_throughput(s: Shapes, device: str) -> list[dict[str, Any]]:
    """Prefill and decode tokens/s of a Llama-3.1-8B-shaped model under ``generate`` (greedy)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    config = LlamaConfig(
        vocab_size=s.dec_vocab,
        hidden_size=s.dec_hidden,
        intermediate_size=s.dec_ffn,
        num_hidden_layers=s.dec_layers,
        num_attention_heads=s.dec_heads,
        num_key_value_heads=s.dec_kv_heads,
        max_position_embeddings=max(8192, s.prompt_tokens + s.new_tokens),
        rope_theta=500_000.0,
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(dtype=dtype).eval()
    params = sum(p.numel() for p in model.parameters())
    rows = []
    for batch in s.batches:
        ids = torch.randint(10, s.dec_vocab, (batch, s.prompt_tokens), device=device)
        mask = torch.ones_like(ids)
        greedy = {"do_sample": False, "pad_token_id": 0}
        warm = min(64, s.prompt_tokens)
        with torch.inference_mode():
            model.generate(  # warm-up
                ids[:, :warm], attention_mask=mask[:, :warm], max_new_tokens=2, min_new_tokens=2, **greedy
            )
            _sync(device)
            t0 = time.perf_counter()
            model(input_ids=ids, attention_mask=mask, logits_to_keep=1)
            _sync(device)
            prefill_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            out = model.generate(
                ids, attention_mask=mask, max_new_tokens=s.new_tokens, min_new_tokens=s.new_tokens, **greedy
            )
            _sync(device)
            total_s = time.perf_counter() - t0
        new = (out.shape[1] - s.prompt_tokens) * batch
        decode_s = max(total_s - prefill_s, 1e-9)
        rows.append(
            {
                "what": "decoder",
                "params_b": round(params / 1e9, 2),
                "dtype": str(dtype).removeprefix("torch."),
                "batch": batch,
                "prompt_tokens": s.prompt_tokens,
                "new_tokens": out.shape[1] - s.prompt_tokens,
                "prefill_s": round(prefill_s, 3),
                "generate_s": round(total_s, 3),
                "prompt_tokens_per_s": round(batch * s.prompt_tokens / prefill_s, 1),
                "new_tokens_per_s": round(new / decode_s, 1),
            }
        )
        if device.startswith("cuda"):
            rows[-1]["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 1)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny shapes (seconds, any device)")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    a = ap.parse_args(argv)
    import torch

    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    shapes = QUICK if a.quick else Shapes()
    name = (
        torch.cuda.get_device_name(0)
        if device.startswith("cuda")
        else f"CPU ({torch.get_num_threads()} threads)"
    )
    print(f"gpu-throughput: {name}, torch {torch.__version__}, {'quick' if a.quick else 'paper'} shapes")
    t0 = time.perf_counter()
    enc = encoder_throughput(shapes, device)
    print(
        f"[encode] {enc['params_m']} M-parameter encoder ({enc['dtype']}), {enc['passages']} passages of "
        f"{enc['passage_tokens']} tokens, batch {enc['batch']}: {enc['passages_per_s']:,.0f} passages/s"
    )
    dec = decoder_throughput(shapes, device)
    for r in dec:
        print(
            f"[generate] {r['params_b']} B-parameter decoder ({r['dtype']}), batch {r['batch']} x "
            f"{r['prompt_tokens']} prompt tokens + {r['new_tokens']} new: prefill "
            f"{r['prompt_tokens_per_s']:,.0f} prompt tokens/s, decode {r['new_tokens_per_s']:,.0f} new tokens/s"
            + (f", peak {r['peak_gib']} GiB" if "peak_gib" in r else "")
        )
    print(f"summary: {1 + len(dec)} figures in {time.perf_counter() - t0:.0f} s on {name}")
    if a.json:
        a.json.write_text(
            json.dumps({"device": name, "shapes": asdict(shapes), "encoder": enc, "decoder": dec}, indent=2)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
