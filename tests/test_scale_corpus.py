"""``translate-corpus`` (transformer_hub.scale): a corpus through the one pipeline on a local Ray cluster of 2 CPUs,
in input order, resumable block by block, a bad line reported and the others translated."""
from __future__ import annotations

import gzip
import json
import os
import sys

import pytest

from helpers.corpus import MULTI30K_MISSING, read_multi30k

from transformer_hub.cli import main
from transformer_hub.decoding import DecodingConfig
from transformer_hub.scale import CorpusError, CorpusJob, PartsFolder, read_items, run_job, start_cluster
from transformer_hub.scale.blocks import blocks_of
from transformer_hub.scale.translator import load_models
from transformer_hub.text.pipeline import translate_texts

MODELS = "space/models"
MULTI = "space/models/multilingual"
SPANISH = "Un perro corre por la playa con una pelota roja en la boca."


def _ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        pytest.skip("Ray is not installed (pip install 'transformer_hub[scale]')")
    return ray


@pytest.fixture(scope="module")
def cluster():
    ray = _ray()
    started = not ray.is_initialized()
    start_cluster(ray, cpus=2)  # as run_job starts it
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    if started:
        ray.shutdown()


def test_the_local_clusters_workers_run_one_thread_with_torch_imported_before_the_work(cluster):
    @cluster.remote(num_cpus=1)
    def worker():
        preloaded = "torch" in sys.modules and "transformer_hub.scale.translator" in sys.modules
        import torch

        return os.environ.get("OMP_NUM_THREADS"), os.environ.get("MKL_NUM_THREADS"), torch.get_num_threads(), \
            preloaded

    assert cluster.get(worker.remote()) == ("1", "1", 1, True)


def test_a_running_cluster_gets_the_one_thread_settings_in_the_jobs_runtime_env(monkeypatch):
    """Joining a cluster (``address``), the workers do not inherit this process's environment: the settings go
    in the runtime_env; locally they go in the inherited environment, which is restored after the start."""
    calls = []

    class FakeRay:
        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**options):
            calls.append((options, os.environ.get("OMP_NUM_THREADS")))

    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    start_cluster(FakeRay, address="auto")
    start_cluster(FakeRay, cpus=3)
    remote, local = calls
    assert remote[0]["runtime_env"] == {"env_vars": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}}
    assert "runtime_env" not in local[0] and local[0]["num_cpus"] == 3 and local[1] == "1"
    assert local[0]["_system_config"] == {"preload_python_modules": ["torch", "transformer_hub.scale.translator"]}
    assert os.environ["OMP_NUM_THREADS"] == "7"


def mixed_lines(n: int):
    """``n`` lines of Multi30k's test set, English, French and Czech in turn (to German)."""
    per = [read_multi30k("test_2016_flickr", lang, limit=n) for lang in ("en", "fr", "cs")]
    if any(lines is None for lines in per):
        pytest.skip(MULTI30K_MISSING)
    return [per[i % 3][i // 3] for i in range(n)]


def pipeline_results(lines):
    """The pipeline's own results for the lines, as the CLI's translate --src-lang auto --tgt-lang de calls it."""
    return translate_texts(load_models(MODELS), lines, DecodingConfig(), src_lang="auto", tgt_lang="de",
                           split_sentences=False)


def pipeline_texts(lines):
    return [r.text for r in pipeline_results(lines)]


def job(tmp_path, lines, name="out.txt", block_lines=50, actors=2):
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return CorpusJob(str(source), str(tmp_path / name), dict(model=MODELS, src_lang="auto", tgt_lang="de"),
                     block_lines=block_lines, actors=actors, progress=False)


def test_jsonl_lines_that_cannot_be_read_are_items_with_their_error(tmp_path):
    path = tmp_path / "in.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write('{"text": "A dog."}\n{"text": 3}\nnot json\n["text"]\n{"body": "x", "text": "Two cats."}\n')
    items = read_items(path, field="text")
    assert [i.text for i in items] == ["A dog.", "", "", "", "Two cats."]
    assert [i.error for i in items] == [None, "no string field 'text' in this line", "not a JSON line (Expecting "
                                        "value)", "no string field 'text' in this line", None]
    assert [len(b) for b in blocks_of(items, 2)] == [2, 2, 1]
    with pytest.raises(CorpusError, match="--block-lines must be >= 1, got 0"):
        blocks_of(items, 0)


def test_the_parts_of_another_job_are_refused_not_mixed_in(tmp_path):
    parts = PartsFolder(tmp_path / "out.txt")
    parts.open({"input_sha256": "a", "lines": 3})
    parts.write(0, [{"id": 0, "text": "x"}])
    parts.open({"input_sha256": "a", "lines": 3})  # the same job: resumed, its part kept
    assert parts.done(2) == [0]
    with pytest.raises(CorpusError, match=r"out.txt.parts holds the parts of another job"):
        parts.open({"input_sha256": "b", "lines": 3})


def test_without_ray_the_command_says_which_extra_to_install(tmp_path, monkeypatch, capsys):
    (tmp_path / "in.txt").write_text("A dog.\n")
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    assert main(["translate-corpus", "--tgt-lang", "de", str(tmp_path / "in.txt"), str(tmp_path / "out.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["transformer_hub translate-corpus: error: translate-corpus needs Ray, which is not installed: "
                   "pip install 'transformer_hub[scale]'"]


@pytest.mark.slow
@pytest.mark.data
def test_300_mixed_lines_come_out_as_the_pipeline_translates_them_in_order(tmp_path, cluster):
    lines = mixed_lines(300)
    report = run_job(job(tmp_path, lines, block_lines=60))
    assert (report.lines, report.blocks, report.translated_blocks, report.bad) == (300, 5, 5, [])
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines() == pipeline_texts(lines)
    assert not (tmp_path / "out.txt.parts").exists()  # joined, then removed


@pytest.mark.slow
@pytest.mark.data
def test_an_interrupted_job_resumed_skips_its_finished_blocks_and_gives_the_same_file(tmp_path, cluster):
    lines = mixed_lines(40)
    first = job(tmp_path, lines, block_lines=10)

    def stop(block):
        raise KeyboardInterrupt  # as Ctrl-C would, once the first block's part is written

    with pytest.raises(KeyboardInterrupt):
        run_job(first, on_block=stop)
    parts = PartsFolder(first.output)
    assert len(parts.done(4)) == 1 and not (tmp_path / "out.txt").exists()
    report = run_job(first)
    assert (report.blocks, report.translated_blocks) == (4, 3)
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines() == pipeline_texts(lines)


@pytest.mark.slow
@pytest.mark.data
def test_a_bad_line_is_reported_and_the_others_translated(tmp_path, cluster):
    good = mixed_lines(6)
    records = [{"text": t} for t in good[:3]] + [{"text": SPANISH}, {"body": "no text"}] + [{"text": t}
                                                                                            for t in good[3:]]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    options = dict(model=MODELS, src_lang="auto", tgt_lang="de")
    report = run_job(CorpusJob(str(source), str(tmp_path / "out.jsonl"), options, block_lines=4, progress=False))
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == list(range(8))
    assert [r["id"] for r in report.bad] == [3, 4]
    assert rows[3]["error"].startswith("looks like es (es), which the models do not read; they serve en, de, fr")
    assert rows[4]["error"] == "no string field 'text' in this line"
    expected = pipeline_results(good)
    assert [r["text"] for r in rows if "error" not in r] == [r.text for r in expected]
    # each line's model is the pipeline's: the cards' best for its direction among the shipped folders
    assert [r["model"] for r in rows if "error" not in r] == [r.model for r in expected]
    assert {"space/models/en-de", "space/models/multilingual"} & {r.model for r in expected}


@pytest.mark.slow
@pytest.mark.data
def test_quality_best_lines_come_out_as_translate_quality_best_gives_them(tmp_path, cluster):
    from transformer_hub.rerank import RerankedModel

    lines = mixed_lines(6)
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    options = dict(model=MULTI, src_lang="auto", tgt_lang="de", quality="best")
    report = run_job(CorpusJob(str(source), str(tmp_path / "out.txt"), options, block_lines=3, progress=False))
    assert (report.blocks, report.bad) == (2, [])
    expected = translate_texts(RerankedModel.from_pretrained(MULTI), lines, src_lang="auto", tgt_lang="de",
                               quality="best")  # what translate --quality best calls
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines() == [r.text for r in expected]
    fast = translate_texts(load_models(MULTI), lines, DecodingConfig(), src_lang="auto", tgt_lang="de")
    assert [r.text for r in expected] != [r.text for r in fast]  # the reranker chose otherwise somewhere


@pytest.mark.parametrize("options, message", [
    (["--quality", "best", "--glossary", "terms.tsv"],
     "--quality best does not combine with --engine ctranslate2 or --glossary: the reranker runs its own tuned "
     "search"),
    (["--quality", "best"], "--quality best without --model needs --src-lang: the weights are tuned per direction"),
    (["--quality", "best", "--model", MODELS],
     f"--quality best needs --model to be one model folder with its rerank.json, not {MODELS}"),
    (["--quality", "best", "--model", f"{MODELS}/en-de"],
     f"{MODELS}/en-de has no rerank.json: tune one with `python -m scripts.tune_rerank`, or use --quality fast"),
])
def test_quality_best_mistakes_are_one_line_before_ray_starts(tmp_path, capsys, options, message):
    (tmp_path / "in.txt").write_text("A dog.\n")
    argv = ["translate-corpus", "--tgt-lang", "de", *options, str(tmp_path / "in.txt"), str(tmp_path / "out.txt")]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"transformer_hub translate-corpus: error: {message}"]
    assert not (tmp_path / "out.txt.parts").exists()
