"""The synthetic task and the simulated reader (``dataset=synthetic corpus=synthetic generator=simulated``):
the world's texts, the reader's reading of each readable template, its planted parameters, and a
whole job through the real pipeline (BM25 retrieval, client, cache, match judge)."""

from __future__ import annotations

import numpy as np
import pytest

from rr.answers import has_answer
from rr.data.synthetic import NAME_SPACE, SyntheticCorpus, SyntheticDataset, World, is_near_miss
from rr.errors import ConfigError
from rr.generation.simulated import (
    ANSWER,
    DISTRACTOR,
    NONE,
    RAG,
    ReaderParams,
    Reading,
    SimulatedGenerator,
    UnreadablePromptError,
    decide,
    decide_one,
    noise_curve,
    read_prompt,
)
from rr.pipeline import run_job
from rr.prompts import render
from rr.records import Request
from tests.conftest import compose_config

SIM = ["generator=simulated", "dataset=synthetic", "corpus=synthetic", "retriever=[bm25]"]


def test_world_names_are_unique_and_near_misses_never_real():
    w = World(3)
    names = [w.name(i) for i in range(20000)]
    assert len(set(names)) == len(names)
    assert all("y" not in n.lower() for n in names)
    for i in range(200):
        a = w.asked(i)
        near, value = w.near_name(i, 0), w.value(i, a)
        assert (
            "y" in near.lower()
            and is_near_miss(near, w.name(i))
            and not is_near_miss(w.name(i + 1), w.name(i))
        )
        for j in range(3):  # a near-miss value never contains the answer (the match judge's test)
            assert not has_answer(w.near_value(i, a, j), [value])
    assert w.name(NAME_SPACE - 1)
    with pytest.raises(ValueError):
        w.name(NAME_SPACE)


def test_dataset_and_corpus_agree_and_corpus_size_is_independent():
    ds = SyntheticDataset(n=5, seed=2)
    corpus = SyntheticCorpus(entities=5, max_passages=60, same_entity=2, near_miss=1, seed=2).load()
    assert len(corpus) == 60
    for ex in ds.load():
        gold = corpus[ex.meta["gold_ids"][0]]
        assert has_answer(gold.text, ex.answers)
        assert World.parse_question(ex.question) == (ex.meta["entity"], ex.meta["attribute"])
        # the entity's other passages and its near-miss never hold the answer
        others = [p for p in corpus if p.id.startswith(ex.id + "-") and p.id != gold.id]
        assert len(others) == 3 and not any(has_answer(p.text, ex.answers) for p in others)
        assert len(ex.meta["positive_passages"]) == 5 and len(ex.meta["negative_passages"]) == 5
        assert all(has_answer(t, ex.answers) for t in ex.meta["positive_passages"])
        assert not any(has_answer(t, ex.answers) for t in ex.meta["negative_passages"])
    with pytest.raises(ConfigError, match="max_passages"):
        SyntheticCorpus(entities=5, max_passages=10)


def _rag_prompt(
    gen: SimulatedGenerator, question: str, docs: list[str], template: str = "rag_qa.j2", **kw
) -> str:
    return gen.render(Request.user(render(template, sources=docs, question=question, **kw)))


def test_reader_reads_each_readable_template():
    gen = SimulatedGenerator(world_seed=1)
    w = World(1)
    e, a = w.name(0), w.asked(0)
    q, v = w.question(e, a), w.value(0, a)
    docs = [
        w.statement(w.name(9), a, w.value(9, a)),  # unrelated
        w.statement(w.near_name(0, 0), a, w.near_value(0, a, 0)),  # distractor
        w.statement(e, a, v),  # the answer
    ]
    r = read_prompt(_rag_prompt(gen, q, docs))
    assert (r.kind, r.entity, r.attribute, r.roles) == (RAG, e, a, (NONE, DISTRACTOR, ANSWER))
    assert r.values[2] == v and r.values[1] == w.near_value(0, a, 0)
    own = read_prompt(_rag_prompt(gen, q, docs, "ownknow.j2", non_rag_output="Kalodor"))
    assert (own.kind, own.draft, own.roles) == ("ownknow", "Kalodor", r.roles)
    closed = read_prompt(gen.render(Request.user(render("non_rag_qa.j2", question=q))))
    assert (closed.kind, closed.roles) == ("closed", ())
    rgb = Request(
        messages=(
            ("system", render("rgb_system.j2")),
            ("user", render("rgb_user.j2", sources=docs, question=q)),
        )
    )
    assert read_prompt(gen.render(rgb)).roles == r.roles
    with pytest.raises(UnreadablePromptError, match="cannot read this prompt"):
        read_prompt(gen.render(Request.user(render("s2a.j2", sources=docs, question=q))))
    with pytest.raises(UnreadablePromptError, match="only synthetic questions"):
        read_prompt(_rag_prompt(gen, "Who wrote Hamlet?", docs))


def test_decide_follows_the_planted_rules():
    p = ReaderParams(
        knowledge=0.0, position_first=1.0, position_middle=0.0, position_last=1.0, distractor=1.0, order=1.0
    )
    rd = Reading("rag", "E", "born", (DISTRACTOR, NONE, ANSWER), ("Near", "", "Gold"))
    u = np.full((1, 5), 0.5)
    assert decide(p, rd, u).tolist() == [0]  # both noticed; order=1: the earlier (distractor) wins
    flip = ReaderParams(**{**vars(p), "order": 0.0})  # a coin flip: the earlier wins iff its draw < 0.5
    assert decide(flip, rd, u).tolist() == [2]
    assert decide(flip, rd, np.array([[0.5, 0.5, 0.5, 0.4, 0.5]])).tolist() == [0]
    assert decide(ReaderParams(**{**vars(p), "distractor": 0.0}), rd, u).tolist() == [2]
    middle = Reading("rag", "E", "born", (NONE, ANSWER, NONE), ("", "Gold", ""))
    assert decide(p, middle, u).tolist() == [-1]  # lost in the middle: w(0.5) = 0 -> own knowledge
    # the position curve: first, middle, last and the quadratic between (pinned)
    assert ReaderParams().curve(5).round(4).tolist() == [0.95, 0.65, 0.55, 0.625, 0.85]
    # RGB noise curve, hand-worked: 1 answer among 5 shuffled documents -> mean(w) = 0.725;
    # accuracy = 0.725 + 0.3 * (1 - 0.725) = 0.8075; no answer (ratio 1) -> knowledge 0.3
    curve = noise_curve(ReaderParams(), [0.8, 1.0])
    assert curve[0.8] == pytest.approx(0.8075) and curve[1.0] == pytest.approx(0.3)


def test_the_readers_fast_path_decides_as_the_vectorised_rule():
    rng = np.random.default_rng(0)
    for trial in range(300):
        m = int(rng.integers(0, 12))
        roles = tuple(int(r) for r in rng.choice([NONE, ANSWER, DISTRACTOR], size=m, p=[0.6, 0.2, 0.2]))
        params = ReaderParams(*rng.random(7))
        reading = Reading("ownknow" if trial % 2 else "rag", "E", "born", roles, ("v",) * m, "draft")
        u = rng.random((20, m + 2))
        assert [decide_one(params, reading, row.tolist()) for row in u] == decide(params, reading, u).tolist()


def test_reader_is_deterministic_and_parameter_sets_have_their_own_cache_identity():
    gen = SimulatedGenerator(world_seed=1)
    w = World(1)
    q = w.question(w.name(4), w.asked(4))
    prompts = [
        _rag_prompt(gen, q, [w.statement(w.name(4), w.asked(4), w.value(4, w.asked(4)), f)])
        for f in range(40)
    ]
    first = [c.text for c in gen.generate(prompts, gen.default_params())]
    assert first == [c.text for c in SimulatedGenerator(world_seed=1).generate(prompts, gen.default_params())]
    assert {t for t in first} <= {
        f"Answer: {w.value(4, w.asked(4))}",
        f"Answer: {gen._near_guess(read_prompt(prompts[0]))}",
    }
    assert gen.identity() != SimulatedGenerator(world_seed=1, distractor=0.4).identity()
    assert gen.identity() != SimulatedGenerator(world_seed=1, reader_seed=1).identity()
    with pytest.raises(ConfigError, match="knowledge"):
        SimulatedGenerator(knowledge=1.5)


@pytest.mark.parametrize("strategy", ["s2a", "sure_qa"])
def test_unreadable_strategies_fail_when_the_job_is_built(tmp_path, strategy):
    cfg = compose_config([*SIM, f"strategy=[{strategy}]"], tmp_path)
    with pytest.raises(ConfigError, match=f"simulated reader cannot read strategy '{strategy}'"):
        run_job(cfg, tmp_path / "job")
    assert not (tmp_path / "cache" / "runs").exists()  # nothing was retrieved
    assert not (tmp_path / "cache" / "bm25").exists()  # nor indexed


def test_simulated_job_runs_the_pipeline_and_writes_planted_values(tmp_path):
    over = [*SIM, "strategy=[vanilla,ownknow]", "dataset.n=16", "grid.k=[1,3]", "generator.planted_reps=200"]
    cfg = compose_config(over, tmp_path)
    result = run_job(cfg, tmp_path / "job")
    s = result.summary
    assert s.model_calls > 0 and s.answer_extraction_fallbacks == 0
    planted = s.planted
    assert planted.reps == 200 and {m.value("strategy") for m in planted.metrics} == {"vanilla", "ownknow"}
    for m in planted.metrics:
        assert 0 < m.ndr <= 1 and 0 < m.rsr <= 1 and 0 < m.ror <= 1
        assert m.closed_book_accuracy == pytest.approx(0.3, abs=0.02)  # knowledge, over 200 x 16 draws
    k1 = [c for c in planted.cells if c.k == 1 and c.value("strategy") == "vanilla"]
    assert k1 and all(c.n == 16 for c in k1)
    # a re-run is served from the generation cache: same table, zero model calls
    again = run_job(compose_config([*over, "force=true"], tmp_path), tmp_path / "job")
    assert again.summary.model_calls == 0
    assert again.scores["raw_output"].tolist() == result.scores["raw_output"].tolist()


# ----------------------------------------------------------------------------- known answers


def test_measured_ndr_rsr_ror_land_within_their_intervals_of_the_planted_values(tmp_path):
    """The whole pipeline recovers planted robustness: each 95% interval rr report prints
    (example-level bootstrap) holds the planted value computed from the reader's parameters."""
    from rr.analysis.intervals import robustness_ci

    over = [*SIM, "dataset.n=80", "grid.k=[2,4,8]", "corpus.max_passages=2000", "generator.planted_reps=300"]
    result = run_job(compose_config(over, tmp_path), tmp_path / "job")
    planted = {m.value("strategy"): m for m in result.summary.planted.metrics}["vanilla"]
    ci = robustness_ci(result.scores, ["generator", "strategy"], n_resamples=1000).iloc[0]
    for metric in ("ndr", "rsr", "ror", "accuracy", "closed_book_accuracy"):
        lo, hi = ci[metric + "_ci_low"], ci[metric + "_ci_high"]
        assert lo <= planted.value(metric) <= hi, (metric, lo, planted.value(metric), hi)
    # and the planted values are far from trivial: lost in the middle costs order robustness
    assert planted.ror < 0.9 and planted.rsr < 0.95 and planted.ndr < 1


def test_rgb_accuracy_vs_noise_ratio_recovers_the_planted_curve(tmp_path):
    """RGB's noise-ratio setting on the synthetic pools: measured accuracy at each ratio is within
    its interval of the exact planted curve (:func:`noise_curve`), and the job's Monte-Carlo
    planted value agrees with the exact one. Four ratios are checked, so each interval is a 99% one
    (Bonferroni: the family of four holds with at least 96%, as one 95% interval would)."""
    from rr.stats import bootstrap_mean

    # a weaker reader than the default, so that no ratio's accuracy is ~1 (a percentile bootstrap of
    # 100 identical scores is the point itself: docs/reproduction.md, coverage near the boundary)
    weak = {"position_first": 0.5, "position_middle": 0.3, "position_last": 0.4}
    exact = noise_curve(ReaderParams(**weak), [0.0, 0.4, 0.8, 1.0])
    for ratio, truth in exact.items():
        over = [
            *SIM,
            "experiment=rgb2024",
            "dataset.n=200",
            "corpus.max_passages=null",
            f"perturbation.doc.ratio={ratio}",
            "grid.k=[20]",
            "grid.closed_book=false",
            *[f"generator.{key}={value}" for key, value in weak.items()],
        ]
        result = run_job(compose_config(over, tmp_path), tmp_path / f"job{ratio}")
        rag = result.scores[result.scores["k"] > 0]
        assert (rag["n_positive_docs"] == 5 - int(np.ceil(5 * ratio - 1e-9))).all()
        r = bootstrap_mean(rag, confidence=0.99)
        assert r.ci_low <= truth <= r.ci_high, (ratio, r, truth)
        (cell,) = result.summary.planted.cells
        assert cell.planted_accuracy == pytest.approx(truth, abs=0.01)
        if ratio == 1.0:  # negative rejection: the unknown answers are RGB's refusal
            assert cell.planted_refusal_rate == pytest.approx(0.7, abs=0.01)
            assert rag["refused"].mean() == pytest.approx(1 - rag["score"].mean())


def test_readme_simulated_command_prints_planted_beside_measured(tmp_path):
    """The README's command, run as written with the output folder and BM25 only appended (the dense
    retriever's model load and corpus encoding are most of its time and are tested elsewhere)."""
    import subprocess
    import sys
    from pathlib import Path

    command = "rr generator=simulated dataset=synthetic corpus=synthetic"
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert f"\n{command}\n" in readme
    args = [*command.split()[1:], f"paths.output_root={tmp_path}", "retriever=[bm25]"]
    out = subprocess.run([sys.executable, "-m", "rr", *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Measured (m) vs planted (p)" in out.stdout
    assert "NDR m / p" in out.stdout and "│ bm25" in out.stdout
