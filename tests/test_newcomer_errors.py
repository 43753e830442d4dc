"""A newcomer's mistakes each print one line ``rr: ...`` naming the thing and the fix, exit 2 (issue 24).

Every case runs the real ``rr`` entry point in-process (:func:`tests.test_cli_errors.run_main`)
and fails before any model loads (the tests run with ``HF_HUB_OFFLINE=1``: a hub model or
dataset that is not cached is what a compute node without internet sees).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from rr.preflight import MissingResourceError
from rr.resume import job_folders

from .synthetic import job_rows, write_job
from .test_cli_errors import SMALL, assert_one_line
from .test_cli_errors import run_main as run_job_main


def write_synthetic_job(root):
    """One synthetic job folder (scores.parquet, summary.json) under ``root``."""
    return write_job(root, job_rows("org/m", "vanilla", 4, base=0.4, gain=0.1))


def run_main(args, tmp_path, monkeypatch, capsys):
    """``rr <args>`` in-process; a job's or plan's/encode's outputs go under ``tmp_path``."""
    from rr.commands.cli import SUBCOMMANDS

    if args and args[0] in SUBCOMMANDS:
        root = [f"paths.output_root={tmp_path}"] if args[0] in ("plan", "encode") else []
        return run_job_main([*args, *root], tmp_path, monkeypatch, capsys, root=False)
    return run_job_main(args, tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (
            ["dataset=nq_open", *SMALL],
            [
                "dataset 'google-research-datasets/nq_open' (dataset.path)",
                "not in the local cache",
                "`hf download --repo-type dataset google-research-datasets/nq_open`",
                "dataset.data_files=",
            ],
        ),
        (
            ["dataset=nq_open", "dataset.data_files=/no/such/nq.parquet", *SMALL],
            ["file '/no/such/nq.parquet' (dataset.data_files): no such file", "check the path"],
        ),
        (
            ["plan", "experiment=cao2025", "dataset=mini", "judge=match", "dataset.n=2"],
            [
                "model 'BAAI/bge-large-en-v1.5' (retriever.bge_large.model)",
                "`hf download BAAI/bge-large-en-v1.5`",
            ],
        ),
        (
            [
                "plan",
                "--retrieval-only",
                "retriever=[bge_large]",
                "corpus=jsonl",
                "corpus.path=/no/chunks.jsonl",
            ],
            ["model 'BAAI/bge-large-en-v1.5'", "file '/no/chunks.jsonl' (corpus.path): no such file"],
        ),
        (
            [
                "encode",
                "retriever=bge_large",
                "corpus=jsonl",
                "corpus.path=/no/chunks.jsonl",
                "shards=64",
                "shard=3",
            ],
            ["model 'BAAI/bge-large-en-v1.5' (retriever.bge_large.model)", "hf download"],
        ),
        (
            ["generator.model=rr-no-such-org/no-such-model", *SMALL],
            ["model 'rr-no-such-org/no-such-model' (generator.model)", "hf download"],
        ),
        (  # the paper's corpus (issue 49): never the bundled stand-in in its place
            ["experiment=cao2025", "judge=match", "retriever=[bm25]", "dataset.data_files=nq.jsonl", *SMALL],
            [
                "file 'enwiki-20240601-pages-articles.xml.bz2' (corpus.path): no such file",
                "`wget https://dumps.wikimedia.org/enwiki/20240601/enwiki-20240601-pages-articles.xml.bz2`",
                "https://archive.org/details/enwiki-20240601",
            ],
        ),
    ],
    ids=[
        "hub-dataset",
        "data-files",
        "plan-hub-model",
        "plan-retrieval-only",
        "encode",
        "hub-generator",
        "paper-dump",
    ],
)
def test_missing_model_dataset_or_file_is_one_line_before_any_work(
    args, needles, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if args[0] == "encode":  # rr encode has its own output root
        args = [*args, f"paths.cache_dir={tmp_path}/cache"]
    code, err = run_main(args, tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, *needles)
    # the job never started (no config.yaml); a job folder Hydra made is marked failed with the line
    for folder in job_folders(tmp_path):
        assert not (folder / "config.yaml").exists(), f"the job started in {folder}"
        assert json.loads((folder / "failed.json").read_text())["message"] in err


def test_sweep_without_m_says_to_add_it(tmp_path, monkeypatch, capsys):
    code, err = run_main(["sweep=rgb2024", *SMALL], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, "sweep=rgb2024 is a multirun sweep", "`rr -m sweep=rgb2024 ...`")


def test_multirun_with_cfg_is_one_line(tmp_path, monkeypatch, capsys):
    code, err = run_main(
        ["-m", "--cfg", "job", "strategy=vanilla,closed_book"], tmp_path, monkeypatch, capsys
    )
    assert_one_line(code, err, "cannot be combined with -m", "rr plan -m")


@pytest.mark.parametrize(
    ("override", "needles"),
    [
        ("generator=hff", ["generator/hff", "hf llamacpp openai simulated vllm"]),
        (
            "retriever=[bm2]",
            ["Could not load 'retriever/bm2'", "Available options in 'retriever': bge_base", " bm25 "],
        ),
    ],
)
def test_misspelled_option_lists_options_not_schemas(override, needles, tmp_path, monkeypatch, capsys):
    code, err = run_main([override], tmp_path, monkeypatch, capsys)
    line = assert_one_line(code, err, *needles)
    assert "_schema" not in line


def test_report_unknown_section_lists_the_sections(tmp_path, monkeypatch, capsys):

    job = write_synthetic_job(tmp_path / "job")
    code, err = run_main(["report", str(job), "--only", "robustnes"], tmp_path, monkeypatch, capsys)
    assert_one_line(
        code,
        err,
        "--only: unknown report section(s) 'robustnes'",
        "did you mean 'robustness'",
        "paired_comparisons",
    )


@pytest.mark.parametrize("make", [False, True], ids=["missing", "empty"])
def test_report_on_a_folder_without_jobs(make, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "nothing"
    if make:
        folder.mkdir()
    code, err = run_main(["report", str(folder)], tmp_path, monkeypatch, capsys)
    if make:
        assert_one_line(code, err, f"no scores.parquet under '{folder}': no finished job there", "rr status")
    else:
        assert_one_line(code, err, f"no such folder, file or glob match: '{folder}'", "outputs/runs/<name>/")


def test_status_on_a_folder_without_jobs(tmp_path, monkeypatch, capsys):
    (tmp_path / "empty").mkdir()
    code, err = run_main(["status", str(tmp_path / "empty")], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, f"no job below {tmp_path / 'empty'}", "paths.output_root")
    code, err = run_main(["status", str(tmp_path / "absent")], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, f"no such folder: {tmp_path / 'absent'}")


def test_perturb_queries_missing_input(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = ["perturb-queries", "typo", "--input", "q.jsonl", "--output", "typos.jsonl"]
    code, err = run_main(args, tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, "--input q.jsonl: no such file")


def test_judge_agreement_on_tables_that_do_not_pair(tmp_path, monkeypatch, capsys):

    a = write_synthetic_job(tmp_path / "a")
    b = tmp_path / "b"
    b.mkdir()
    df = pd.read_parquet(a / "scores.parquet")
    df.assign(example_id="other-" + df["example_id"].astype(str)).to_parquet(b / "scores.parquet")
    code, err = run_main(["judge-agreement", str(a), str(b)], tmp_path, monkeypatch, capsys)
    assert_one_line(
        code, err, "no rows pair up between the two tables (", "only in A", "rows pair on dataset, generator,"
    )


def test_rerun_of_a_done_job_reprints_its_table(tmp_path, monkeypatch, capsys):
    """A done job (summary.json naming its id + scores.parquet) is not re-run: its table is printed again."""
    from hydra.core.global_hydra import GlobalHydra

    import rr.commands.cli
    from rr.config import compose, job_id

    cfg = compose([*SMALL, f"paths.output_root={tmp_path}"])
    jid = job_id(cfg)
    job = tmp_path / "runs" / "cao2025_mini" / jid
    job.mkdir(parents=True)
    pd.DataFrame({"example_id": ["q"], "k": [0], "score": [1.0]}).to_parquet(job / "scores.parquet")
    summary = {
        "job_id": jid,
        "examples": 2,
        "rows": 8,
        "metrics": [],
        "accuracy": 0.25,
        "closed_book_accuracy": 0.5,
        "answer_recall": {"bm25": {"1": 1.0}},
        "requests": 8,
        "unique_requests": 4,
        "model_calls": 4,
        "cache_hits": 0,
        "answer_extraction_fallbacks": 0,
        "rows_truncated_to_fit_window": 0,
        "wall_s": 3.0,
    }
    (job / "summary.json").write_text(json.dumps(summary))
    GlobalHydra.instance().clear()
    monkeypatch.setattr("sys.argv", ["rr", *SMALL, f"paths.output_root={tmp_path}"])
    try:
        rr.commands.cli.main()
    finally:
        GlobalHydra.instance().clear()
    out = " ".join(capsys.readouterr().out.split())
    assert "accuracy (k > 0) 0.250, closed-book accuracy (k = 0) 0.500; 8 rows" in out
    assert f"job {jid} was already done: nothing re-run, model calls 0 (force=true re-runs it)" in out
    assert "Its first run: requests 8, unique 4, model calls 4" in out


def test_default_config_needs_nothing_from_the_hub() -> None:
    """The demo's models and data are packaged: nothing to fetch, so the check passes offline."""
    from rr.config import compose
    from rr.preflight import declared_resources

    assert declared_resources(compose([])) == []
    found = declared_resources(compose(["experiment=cao2025", "judge=match"]))
    assert [(r.kind, r.name, r.key) for r in found] == [
        ("dataset", "google-research-datasets/nq_open", "dataset.path"),
        ("file", "enwiki-20240601-pages-articles.xml.bz2", "corpus.path"),
        ("model", "BAAI/bge-large-en-v1.5", "retriever.bge_large.model"),
    ]


def test_an_api_model_without_its_key_is_refused_where_the_job_uses_it(monkeypatch) -> None:
    """A paper's API model (RGB's ChatGPT judge, the query-level study's GPT-4o rewriter) needs its key: a
    job that uses it and has none is told which variable to set; RGB's judge with its LLM checks off never
    calls ChatGPT, so needs no key."""
    from rr.config import compose
    from rr.preflight import check_resources, declared_resources

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert not [r for r in declared_resources(compose(["experiment=rgb2024"])) if r.kind == "api"]
    cfg = compose(["experiment=rgb2024", "judge.llm_rejection=true"])
    (api,) = [r for r in declared_resources(cfg) if r.kind == "api"]
    assert (api.name, api.key) == ("gpt-3.5-turbo", "judge.generator.model")
    with pytest.raises(MissingResourceError) as exc:
        check_resources(cfg)
    line = str(exc.value)
    assert "\n" not in line and "api 'gpt-3.5-turbo' (judge.generator.model)" in line
    assert "export OPENAI_API_KEY=..." in line
    rewriter = compose(["experiment=query_level2025", "perturbation/query=llm_formal"])
    assert [r.name for r in declared_resources(rewriter) if r.kind == "api"] == ["gpt-4o"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert not [r for r in declared_resources(rewriter) if r.kind == "api"]


def test_a_model_in_the_hub_cache_is_found_offline(tmp_path, monkeypatch) -> None:
    """A hub cache laid out as huggingface_hub writes it (refs/main -> snapshots/<commit>/config.json)."""
    from huggingface_hub import constants

    from rr.preflight import Resource, missing_resources

    repo = tmp_path / "hub" / "models--org--cached-model"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "snapshots" / "abc123" / "config.json").write_text("{}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    cached = Resource("model", "org/cached-model", "generator.model")
    absent = Resource("model", "org/absent-model", "generator.model")
    assert missing_resources([cached]) == []
    assert missing_resources([absent]) == [
        (absent, "not in the local cache and the hub is off (HF_HUB_OFFLINE=1)")
    ]


def test_online_the_hub_is_asked_before_any_work(monkeypatch) -> None:
    """HF_HUB_OFFLINE unset (a compute node that just has no route out): the hub answers, or the job stops."""
    from huggingface_hub import HfApi, constants

    from rr.preflight import Resource, _on_hub, missing_resources

    _on_hub.cache_clear()
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    res = Resource("model", "org/not-cached", "retriever.x.model")
    asked = []
    monkeypatch.setattr(HfApi, "repo_info", lambda self, name, **kw: asked.append((name, kw["repo_type"])))
    assert missing_resources([res]) == [] and asked == [("org/not-cached", "model")]

    def unreachable(self, name, **kw):
        raise ConnectionError("no route to host")

    monkeypatch.setattr(HfApi, "repo_info", unreachable)
    _on_hub.cache_clear()  # the hub is asked once per repository and process
    assert missing_resources([res]) == [
        (res, "not in the local cache and the hub cannot be reached (ConnectionError)")
    ]


def test_report_over_an_rgb_and_a_cao_sweep(tmp_path, monkeypatch, capsys) -> None:
    """``rr report 'outputs/multirun/*'`` over a Cao sweep and an RGB sweep (issue 24).

    The RGB jobs have one k and one order, and their closed-book rows carry no document
    perturbation, so the RGB systems (noise_ratio@x) have no k = 0 rows of their own: the oracle
    curves (which compare with f(q, 0)) failed on them (exit 1). Now the Cao system gets its
    curves and the RGB systems are named as left out.
    """
    write_job(tmp_path / "multirun" / "cao2025_mini", job_rows("org/m", "vanilla", 4, base=0.4, gain=0.1))
    for ratio in (0.2, 0.6):
        rgb = job_rows("org/m", "rgb", 4, base=0.5, gain=0.0, doc_perturbation=f"noise_ratio@{ratio}")
        keep = rgb["k"].isin([0, rgb["k"].max()]) & rgb["order"].isin(["original", "none"])
        rgb = rgb[keep & rgb["retriever"].isin(["bm25", "none"])].copy()
        rgb.loc[rgb["k"] == 0, "doc_perturbation"] = "none"
        write_job(tmp_path / "multirun" / "rgb2024", rgb)
    out = tmp_path / "report"
    monkeypatch.chdir(tmp_path)
    code, _ = run_main(
        [
            "report",
            "multirun/*",
            "--out",
            str(out),
            "--resamples",
            "20",
            "--only",
            "oracle_curves",
            "robustness",
        ],
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert code == 0
    curves = pd.read_csv(out / "tables" / "oracle_curves.csv")
    assert set(curves["strategy"]) == {"vanilla"}
    readme = " ".join((out / "README.md").read_text().split())
    assert "Left out (no k = 0 rows or fewer than two k > 0): " in readme
    assert "rgb / noise_ratio@0.2" in readme and "rgb / noise_ratio@0.6" in readme


def test_pyserini_prebuilt_index_and_query_encoder_offline(tmp_path, monkeypatch) -> None:
    """retriever=pyserini_faiss names a prebuilt index and a hub query encoder: both checked offline."""
    from rr.config import compose
    from rr.preflight import check_resources, declared_resources, missing_resources

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini"))
    cfg = compose(["retriever=[pyserini_faiss]"])
    found = declared_resources(cfg, roots=("retriever",))
    assert [(r.kind, r.name) for r in found] == [
        ("model", "facebook/dpr-question_encoder-multiset-base"),
        ("index", "wikipedia-dpr-100w.dpr-multi"),
    ]
    with pytest.raises(MissingResourceError) as exc:
        check_resources(cfg, roots=("retriever",))
    assert "index 'wikipedia-dpr-100w.dpr-multi' (retriever.pyserini_faiss.prebuilt_index)" in str(exc.value)
    assert "download_prebuilt_index('wikipedia-dpr-100w.dpr-multi')" in str(exc.value)
    # unpacked by pyserini as <url file name>.<md5>/
    (tmp_path / "pyserini" / "indexes" / "faiss.wikipedia-dpr-100w.dpr-multi.20200127.f403c3.29eb39fe").mkdir(
        parents=True
    )
    assert [r.kind for r, _ in missing_resources(found)] == ["model"]


@pytest.mark.parametrize("given", ["folder", "file"])
def test_a_gguf_under_generator_hf_names_llamacpp(given, tmp_path, monkeypatch, capsys):
    """A folder holding only a ``.gguf`` file (a traceback, ``Unrecognized model``, before) and the
    ``.gguf`` file itself under the default ``generator=hf``: one line naming the command that runs it."""
    folder = tmp_path / "gguf-only"
    folder.mkdir()
    gguf = folder / "model.Q4_K_M.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 60)
    model = folder if given == "folder" else gguf
    code, err = run_main([f"generator.model={model}", *SMALL], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, "generator.model", "GGUF", f"`generator=llamacpp generator.model={gguf}`")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (  # RGB's commands without the data file: a 74-line MissingMandatoryValue traceback before
            ["experiment=rgb2024", "dataset=rgb_en", *SMALL],
            ["dataset.path is not set", "add dataset.path=/path/to/RGB/data/en.json"],
        ),
        (["dataset=jsonl", *SMALL], ["dataset.path is not set", "add dataset.path=/path/to/questions.jsonl"]),
        (  # a mistyped interpolation: omegaconf's raw traceback before
            ["name=${paths.output_rot}", *SMALL],
            ["the override name=${paths.output_rot} does not resolve", "'paths.output_rot' not found"],
        ),
    ],
    ids=["rgb-without-path", "jsonl-without-path", "mistyped-interpolation"],
)
def test_a_value_left_out_or_a_mistyped_interpolation_is_one_line(
    args, needles, tmp_path, monkeypatch, capsys
):
    """Issue 52: which key, and an example value from the option's own usage line."""
    code, err = run_main(args, tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, *needles)


def test_an_openai_server_that_is_down_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """Issue 52: 65-95 lines ending in OpenAIBackendError before; now the server, the error and
    what to check, and the job's folder is marked failed with that line."""
    from .openai_servers import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    args = ["generator=openai", f"generator.base_url={url}", "generator.model=m", "generator.max_retries=0"]
    code, err = run_main([*args, *SMALL], tmp_path, monkeypatch, capsys)
    line = assert_one_line(code, err, f"{url}/chat/completions", "ConnectError", "is the server running")
    (folder,) = job_folders(tmp_path)
    assert json.loads((folder / "failed.json").read_text())["message"] in line
