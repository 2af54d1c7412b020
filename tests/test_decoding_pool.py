"""transformer_hub.decoding.pool: worker processes give the results of in-process decoding, and fail cleanly."""
import os
import signal
import time

import pytest
import torch

from helpers.tolerances import f32, f32_close
from helpers.decoding_fixtures import one_thread, random_model, synthetic_pairs
from transformer_hub.decoding import DecodingPool, generate
from helpers.decoding_fixtures import STRATEGY_OPTIONS, same_hypotheses


@pytest.fixture(scope="module")
def model():
    return random_model()


@pytest.fixture(scope="module")
def pool(model):
    with one_thread():  # the workers get one torch thread each, like this process: results match to the bit
        with DecodingPool(model, processes=2) as pool:
            yield pool


TEXTS = [s for s, _ in synthetic_pairs(9, seed=5, max_words=14)] + ["", "a dog ."]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["greedy", "beam", "sample"])
def test_pool_gives_the_in_process_results(model, pool, strategy):
    opts = dict(strategy=strategy, max_len_offset=6, batch_size=2, return_attention=True,
                **STRATEGY_OPTIONS[strategy])
    with one_thread():
        expected = generate(model, TEXTS, **opts)
        got = pool.generate(TEXTS, **opts)
    assert [r.source for r in got] == TEXTS and got[9].text == ""
    same_hypotheses(got, expected)
    assert pool.translate(TEXTS[:3], strategy=strategy, max_len_offset=6, **STRATEGY_OPTIONS[strategy]) == \
        [r.text for r in expected[:3]]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_prefixes_through_the_pool_equal_prefixes_in_process(model, pool, strategy):
    """Forced prefixes (whole words, a word cut short, none) travel with their batches to the workers."""
    prefixes = ["ein hund ", None, "der k", "", "zwei leute "] + [None] * (len(TEXTS) - 5)
    opts = dict(strategy=strategy, max_len_offset=6, batch_size=2, return_alternatives=3,
                **STRATEGY_OPTIONS[strategy])
    with one_thread():
        expected = generate(model, TEXTS, prefix=prefixes, **opts)
        got = generate(model, TEXTS, prefix=prefixes, engine=pool, **opts)
        one_for_all = generate(model, TEXTS[:3], prefix="ein ", engine=pool, **opts)
        assert [r.text for r in one_for_all] == [r.text for r in generate(model, TEXTS[:3], prefix="ein ", **opts)]
    same_hypotheses(got, expected)
    assert [r.text for r in got] == [r.text for r in expected]
    assert got[0].text.startswith("ein hund") and got[2].text.startswith("der k")
    assert all(r.text.startswith("ein") for r in one_for_all if r.source.strip())
    for a, b in zip(got, expected):  # the alternatives are computed in the workers too
        for ha, hb in zip(a.hypotheses, b.hypotheses):
            assert (ha.alternatives is None) == (not ha.tokens) and (hb.alternatives is None) == (not hb.tokens)
            ha.alternatives, hb.alternatives = ha.alternatives or [], hb.alternatives or []
            assert [[t for t, _ in step] for step in ha.alternatives] == [[t for t, _ in step] for step in hb.alternatives]
            assert [p for step in ha.alternatives for _, p in step] == \
                f32([p for step in hb.alternatives for _, p in step])


def test_an_engine_is_recognised_by_its_shape_and_workers_is_a_thread_count():
    """``engine=`` takes a name or an object with ``check``/``decode`` (a pool is one); ``workers=`` only an int."""
    from transformer_hub.decoding import Engine

    assert isinstance(DecodingPool.__new__(DecodingPool), Engine) and not isinstance(object(), Engine)
    with pytest.raises(ValueError, match=r"unknown engine <object object at .*>; engines: ctranslate2, pytorch"):
        generate(random_model(), TEXTS[:1], engine=object())
    pool_like = DecodingPool.__new__(DecodingPool)
    with pytest.raises(ValueError, match=r"workers must be an integer between 1 and 64, got .* \(pass a "
                                         r"DecodingPool as engine=, not workers=\)"):
        generate(random_model(), TEXTS[:1], workers=pool_like)


@pytest.mark.slow
def test_pool_checks_its_model_and_arguments(model, pool):
    with pytest.raises(ValueError, match="holds a different model"):
        generate(random_model(seed=1), TEXTS, engine=pool)
    with pytest.raises(ValueError, match="a DecodingPool decodes in its 2 processes: pass workers=1 with it"):
        generate(model, TEXTS, engine=pool, workers=2)
    for bad in (0, 65, 2.0, True):
        with pytest.raises(ValueError, match="processes must be an integer between 1 and 64"):
            DecodingPool(model, processes=bad)
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        DecodingPool(model, processes=1, threads=0)


@pytest.mark.slow
def test_closed_pool_and_dead_worker_give_clear_errors(model):
    with one_thread():
        pool = DecodingPool(model, processes=1)
        folder = pool.folder
        assert os.path.isfile(os.path.join(folder, "model.safetensors"))
        assert len(pool.generate(TEXTS[:1], max_len_offset=2)) == 1
        (worker,) = pool._state["executor"]._processes.values()  # the executor's processes, by pid
        os.kill(worker.pid, signal.SIGKILL)
        # wait for its exit, not a guess of how long dying takes; the executor's own thread may reap it first
        # (then this join returns at once and the exit code appears when that thread has stored it)
        worker.join(30)
        deadline = time.monotonic() + 30
        while worker.exitcode is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert worker.exitcode == -signal.SIGKILL
        with pytest.raises(RuntimeError, match="a decoding worker stopped unexpectedly; this pool is closed"):
            pool.generate(TEXTS, max_len_offset=2, batch_size=2)
        assert pool.closed and not os.path.exists(folder)
        with pytest.raises(RuntimeError, match="this DecodingPool is closed"):
            pool.generate(TEXTS, max_len_offset=2)
        pool.close()  # idempotent
        assert torch.get_num_threads() == 1


# ---------------------------------------------------------------------------- a pool from a source
@pytest.fixture(scope="module")
def folder(model, tmp_path_factory):
    path = tmp_path_factory.mktemp("pool-source") / "model"
    model.save_pretrained(path)
    return path


@pytest.mark.slow
def test_a_worker_dead_while_idle_closes_a_pool_from_a_source(folder):
    """generate submits work to the executor: a worker that died between calls is reported the same way."""
    with one_thread(), DecodingPool(str(folder), processes=1, threads=1) as pool:
        assert len(pool.generate(TEXTS[:1], max_len_offset=2)) == 1
        (worker,) = pool._state["executor"]._processes.values()
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(30)
        with pytest.raises(ValueError, match="tgt_lang has 3 entries for 2 texts"):  # not "for 1 text" (a chunk)
            pool.generate(TEXTS[:2], tgt_lang=["de", "de", "de"])
        with pytest.raises(RuntimeError, match="a decoding worker stopped unexpectedly; this pool is closed"):
            pool.generate(TEXTS[:1], max_len_offset=2)
        assert pool.closed


@pytest.mark.slow
def test_a_worker_keeps_its_last_models_only(folder, tmp_path, monkeypatch):
    from transformer_hub.decoding import pool as pool_module

    monkeypatch.setattr(pool_module, "MODELS_PER_WORKER", 2)
    monkeypatch.setattr(pool_module, "_MODELS", pool_module.OrderedDict())
    others = []
    for seed in (1, 2):
        others.append(tmp_path / f"m{seed}")
        random_model(seed=seed).save_pretrained(others[-1])
    with one_thread():
        for source in (folder, others[0], folder, others[1]):  # this process plays the worker
            pool_module._model((str(source), None))
    assert list(pool_module._MODELS) == [(str(folder), None), (str(others[1]), None)]  # the least recent left


@pytest.mark.slow
def test_pool_from_a_folder_never_loads_the_model_here_and_decodes_alike(model, folder, monkeypatch, tmp_path):
    from transformer_hub import Transformer

    opts = dict(strategy="beam", beam_size=3, n_best=2, max_len_offset=6, return_attention=True)
    other = tmp_path / "other"
    random_model(seed=1).save_pretrained(other)  # another model, loaded by the workers on first use
    with one_thread():
        expected = generate(model, TEXTS, **opts)
        theirs = generate(Transformer.from_pretrained(str(other)), TEXTS[:2], max_len_offset=4)
        monkeypatch.setattr(Transformer, "from_pretrained", lambda *a, **k: pytest.fail("loaded in the parent"))
        with DecodingPool(str(folder), processes=2, threads=1, wait=False) as pool:
            assert pool.model is None and pool.folder is None
            got = pool.generate(TEXTS, **opts)  # split between the two workers, tokenized there
            same_hypotheses(got, expected)
            assert [r.source for r in got] == TEXTS
            assert [r.text for r in pool.generate(TEXTS[:2], source=other, max_len_offset=4)] == \
                [r.text for r in theirs]
    assert folder.is_dir()  # a source folder is the caller's: closing leaves it


@pytest.mark.slow
def test_pool_from_a_source_reports_a_model_it_cannot_load_and_keeps_serving(folder, tmp_path):
    from transformer_hub.hub import ModelLoadError

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    with pytest.raises(ModelLoadError, match="could not load the model at .*broken"):
        DecodingPool(str(broken), processes=1, threads=1)  # wait=True: the constructor says so
    with DecodingPool(str(broken), processes=1, threads=1, wait=False) as pool:
        with pytest.raises(ModelLoadError, match="broken"):
            pool.generate(TEXTS[:1])
        assert not pool.closed and pool.generate(TEXTS[:1], source=folder, max_len_offset=2)[0].text is not None
    with pytest.raises(ValueError, match="applies to Hub repo ids"):
        DecodingPool(str(folder), processes=1, revision="v1")


@pytest.mark.slow
def test_call_runs_a_function_on_the_workers_model(model, pool):
    from transformer_hub.inside import attention_maps

    with one_thread():
        expected = attention_maps(model, "a dog runs in the park .")
        got = pool.call(attention_maps, "a dog runs in the park .")
    assert got.target_ids == expected.target_ids
    assert f32_close(got.cross, expected.cross)  # probabilities, computed in another process
    with pytest.raises(ValueError, match="the text is empty"):  # the worker's exception, as raised there
        pool.call(attention_maps, " ")
