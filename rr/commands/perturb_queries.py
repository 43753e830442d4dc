"""Generate perturbed query sets once, as JSON-lines files that later jobs consume.

Three commands (``rr perturb-queries <command> --help``):

``questions OUT [overrides ...]``
    Write a dataset's questions (``{"id", "question"}`` per line), composed from rr's configs
    with Hydra overrides (e.g. ``dataset=mini dataset.n=50``). Runs in rr's environment.

``typo --input IN --output OUT [--backend nlpaug|textattack] [--rate 0.25] [--n 5] ...``
    Typo variants of the questions in ``IN``. ``--backend textattack`` runs TextAttack's own
    ``Augmenter`` in its environment (``make textattack``), from rr's environment.

``apply OUT [overrides ...]``
    Run any configured query perturbation (``perturbation/query=llm_rewrite ...``; model
    calls go through the generation cache under ``paths.cache_dir``) and write its variants.

Jobs then read the file with ``perturbation/query=file perturbation.query.path=OUT``; the
variants keep their tags (``typo@0.25#3``) and their example ids.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rr.data.base import DataError
from rr.data.jsonl import iter_jsonl, parse_id, parse_question
from rr.errors import UserError
from rr.perturbations.typo import TextAttackUnavailable
from rr.records import Example


def read_questions(path: str | Path) -> list[Example]:
    """Examples (no answers) from a ``{"id", "question"}`` JSON-lines file; ``path:line`` errors."""
    out: list[Example] = []
    seen: dict[str, int] = {}
    for lineno, row in iter_jsonl(path):
        where = f"{path}:{lineno}"
        for key in ("id", "question"):
            if key not in row:
                raise DataError(f"{where}: missing field {key!r} (fields: {sorted(row)})")
        ex = Example(parse_id(row["id"], where), parse_question(row["question"], where), [])
        if ex.id in seen:
            raise DataError(f"{where}: duplicate id {ex.id!r} (first at line {seen[ex.id]})")
        seen[ex.id] = lineno
        out.append(ex)
    if not out:
        raise DataError(f"{path}: no questions")
    return out


def _compose(overrides: list[str]) -> Any:
    from rr.config.composition import compose

    return compose(overrides)


def _counter() -> tuple[dict[str, int], Any]:
    counts: dict[str, int] = {}

    def count(name: str, n: int = 1) -> None:
        counts[name] = counts.get(name, 0) + n

    return counts, count


def print_counters(counts: dict[str, int], perturbation: Any) -> None:
    """One line per counter, with what it means where the perturbation says (its ``COUNTERS``)."""
    meanings = getattr(perturbation, "COUNTERS", {})
    for name, n in sorted(counts.items()):
        meaning = meanings.get(name.rsplit(":", 1)[-1])
        print(f"  {name}: {n}" + (f" - {meaning}" if meaning else ""))


def cmd_questions(args: argparse.Namespace) -> None:
    from rr.config.instantiation import instantiate

    cfg = _compose(args.overrides)
    examples = instantiate(cfg.dataset).load()
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        for ex in examples:
            f.write(json.dumps({"id": ex.id, "question": ex.question}, ensure_ascii=False) + "\n")
    print(f"wrote {len(examples)} questions to {args.output}")


def cmd_typo(args: argparse.Namespace) -> None:
    from rr.perturbations.query_file import write_query_file
    from rr.perturbations.typo import TypoPerturbation

    examples = read_questions(args.input)
    pert = TypoPerturbation(
        rate=args.rate,
        n=args.n,
        ops=args.ops,
        backend=args.backend,
        candidates=args.candidates,
        include_original=False,
        name=args.name,
    )
    counts, count = _counter()
    variants = pert.perturb(examples, args.seed, count)
    n = write_query_file(args.output, variants, {ex.id: ex.question for ex in examples})
    print(f"wrote {n} variants of {len(examples)} questions to {args.output}")
    print_counters(counts, pert)


def cmd_apply(args: argparse.Namespace) -> None:
    from rr.config.identity import job_id
    from rr.config.instantiation import instantiate
    from rr.generation.cache import GenerationCache
    from rr.generation.client import LLM
    from rr.perturbations.query_file import write_query_file
    from rr.runtime import Runtime

    cfg = _compose(args.overrides)
    examples = instantiate(cfg.dataset).load()
    pert = instantiate(cfg.perturbation.query)
    generator = instantiate(cfg.generator)
    jid = "perturb-" + job_id(cfg)
    cache = GenerationCache(cfg.paths.cache_dir, generator.identity(), writer=jid)
    rt = Runtime(LLM(generator, cache), Path(cfg.paths.cache_dir), seed=int(cfg.seed), job_id=jid)
    try:
        variants = pert.variants(examples, rt)
    finally:
        rt.close()  # e.g. vLLM's engine process (the interpreter would wait on it forever)
    n = write_query_file(args.output, variants, {ex.id: ex.question for ex in examples})
    print(f"wrote {n} variants of {len(examples)} questions to {args.output}")
    print_counters(dict(rt.counters), pert)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rr perturb-queries", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    q = sub.add_parser("questions", help="write a dataset's questions as JSONL")
    q.add_argument("output")
    q.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. dataset=mini dataset.n=50")
    q.set_defaults(func=cmd_questions)
    t = sub.add_parser("typo", help="typo variants of a questions file")
    t.add_argument("--input", required=True, help='JSONL with {"id", "question"} per line')
    t.add_argument("--output", required=True)
    t.add_argument("--backend", default="nlpaug", choices=["nlpaug", "textattack"])
    t.add_argument("--rate", type=float, default=0.1)
    t.add_argument("--n", type=int, default=5)
    t.add_argument("--ops", nargs="+", default=["qwerty"], choices=["qwerty", "delete", "embedding"])
    t.add_argument("--candidates", type=int, default=None)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--name", default="typo")
    t.set_defaults(func=cmd_typo)
    a = sub.add_parser("apply", help="run a configured query perturbation and write its variants")
    a.add_argument("output")
    a.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. perturbation/query=llm_rewrite")
    a.set_defaults(func=cmd_apply)
    return p


def main(argv: list[str] | None = None) -> None:
    """``rr perturb-queries``: a missing input, bad data or a missing backend is one user error."""
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except FileNotFoundError as e:
        what = "--input" if e.filename and str(e.filename) == str(getattr(args, "input", None)) else "file"
        raise UserError(f"{what} {e.filename}: no such file (check the path)") from e
    except ImportError as e:
        raise UserError(f"{e} (install the backend's package, see docs/query-level.md)") from e
    except (DataError, TextAttackUnavailable) as e:
        raise UserError(str(e)) from e


if __name__ == "__main__":
    from rr.commands.cli import run_reporting_errors

    sys.exit(run_reporting_errors(main, "--verbose" in sys.argv))
