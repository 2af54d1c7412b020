"""The reranker (transformer_hub/rerank): MBR, features, the weighted sum, rerank.json, tuning on val only."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.decoding_fixtures import one_thread
from helpers.scoring_models import MULTILINGUAL, random_model
from helpers.tolerances import f64
from transformer_hub.decoding import generate
from transformer_hub.decoding.scoring import score_texts
from transformer_hub.training.metrics import score as corpus_score
from transformer_hub.rerank import (RERANK_FILE, DirectionWeights, NBestList, Reranker, RerankFile, SearchSettings,
                                    collect, expected_utility, mbr_choice, utility)
from transformer_hub.rerank.tuning import CorpusBleu, Table, tune

from scripts import tune_rerank

TEXTS = ["a big dog .", "two small people near the water .", "green shirt ."]


# --------------------------------------------------------------------------- MBR
def test_mbr_picks_the_candidate_that_dominates_under_its_utility():
    def agrees(hyp: str, ref: str) -> float:  # "best" is the only candidate every other one rates highly
        return 1.0 if hyp == "best" else 0.1
    assert mbr_choice(["one", "two", "best", "three"], agrees) == 2


def test_mbr_with_chrf_picks_the_consensus_not_the_outlier():
    candidates = ["a man rides a red bike down the street", "a man rides a red bicycle down the street",
                  "a man is riding a red bike down the street", "three cats sleep on a sofa"]
    chrf = utility("chrf")
    utilities = expected_utility(candidates, chrf)
    assert mbr_choice(candidates, chrf) == 0
    assert utilities[3] == min(utilities) and utilities[3] < 20


def test_expected_utility_weights_the_other_candidates_only():
    table = {("x", "y"): 10.0, ("x", "z"): 40.0, ("y", "x"): 1.0, ("y", "z"): 2.0, ("z", "x"): 3.0, ("z", "y"): 4.0}
    got = expected_utility(["x", "y", "z"], lambda h, r: table[h, r], weights=[0.5, 0.25, 0.25])
    assert got == f64([(0.25 * 10 + 0.25 * 40) / 0.5, (0.5 * 1 + 0.25 * 2) / 0.75, (0.5 * 3 + 0.25 * 4) / 0.75])
    assert expected_utility(["alone"], lambda h, r: 1.0) == [0.0]
    with pytest.raises(ValueError, match="unknown MBR utility 'ter'"):
        utility("ter")


# --------------------------------------------------------------------------- features and the weighted sum
@pytest.fixture(scope="module")
def model():
    return random_model(seed=1, **MULTILINGUAL)  # (seed 0 ends some outputs at once: empty strings)


@pytest.fixture(scope="module")
def lists(model):
    with one_thread():
        return collect(model, TEXTS, "en", "de", SearchSettings(beam_size=4, length_penalty=0.6))


def test_all_weight_on_the_forward_score_returns_the_beams_best(model, lists):
    with one_thread():
        beam = generate(model, TEXTS, strategy="beam", beam_size=4, src_lang="en", tgt_lang="de")
    forward_only = DirectionWeights({"forward": 1.0}, alpha=0.6)
    assert [n.texts[forward_only.choose(n)] for n in lists] == [r.text for r in beam]


def test_the_reverse_score_is_the_forward_score_of_the_swapped_pair(model, lists):
    pairs = [(n.source, y) for n in lists for y in n.texts]
    swapped = score_texts(model, [y for _, y in pairs], [x for x, _ in pairs], src_lang="de", tgt_lang="en")
    assert [v for n in lists for v in n.features["reverse"]] == [s.normalized_score for s in swapped]
    assert {"reverse", "length_ratio", "mbr_chrf", "mbr_bleu"} <= set(lists[0].features)
    assert "second" not in lists[0].features  # no helper model was given


def test_a_source_longer_than_the_decoder_reads_leaves_its_reverse_score_to_the_other_features():
    short = random_model(seed=1, **dict(MULTILINGUAL, max_len=24))
    texts = [TEXTS[0], " ".join([TEXTS[1]] * 6)]  # the second is too long to be a target of the reverse score
    with one_thread():
        lists = collect(short, texts, "en", "de", SearchSettings(3, 0.6), needed=["forward", "reverse"])
        reverse = score_texts(short, lists[0].texts, [texts[0]] * len(lists[0].texts), src_lang="de",
                              tgt_lang="en")
    assert lists[0].features["reverse"] == [s.normalized_score for s in reverse]
    assert lists[1].features["reverse"] == [0.0] * len(lists[1].texts) and lists[1].texts


def test_quality_fast_is_the_tuned_beam_alone_and_a_bad_quality_is_refused(model):
    reranker = Reranker(model, RerankFile({"en-de": DirectionWeights({"reverse": 1.0}, 0.6, SearchSettings(3, 1.0))}))
    with one_thread():
        fast = reranker.translate(TEXTS + [""], "en", "de", quality="fast")
        beam = generate(model, TEXTS + [""], strategy="beam", beam_size=3, length_penalty=1.0, src_lang="en",
                        tgt_lang="de")
    assert fast == [r.text for r in beam]
    with pytest.raises(ValueError, match="quality must be one of fast, best, got 'great'"):
        reranker.translate(TEXTS, "en", "de", quality="great")


def test_a_second_model_scores_through_its_own_tokenizer_and_adds_its_candidates(model):
    helper = random_model(seed=2)  # a bilingual model, en -> de by default, its own weights
    helper.config.src_lang, helper.config.tgt_lang = "en", "de"
    with one_thread():
        (alone,) = collect(model, TEXTS[:1], "en", "de", SearchSettings(4, 0.6), [helper])
        (union,) = collect(model, TEXTS[:1], "en", "de", SearchSettings(4, 0.6, union=True), [helper])
    expected = score_texts(helper, [TEXTS[0]] * len(alone.texts), alone.texts)
    assert alone.features["second"] == [s.normalized_score for s in expected]
    assert union.texts[: len(alone.texts)] == alone.texts and len(union.texts) >= len(alone.texts)
    added = union.texts[len(alone.texts):]
    forced = score_texts(model, [TEXTS[0]] * len(added), added, src_lang="en", tgt_lang="de")
    assert union.forward_raw[len(alone.texts):] == [s.score for s in forced]


def test_only_the_needed_features_are_computed(model, lists):
    with one_thread():
        lean = collect(model, TEXTS, "en", "de", SearchSettings(4, 0.6), needed=["forward", "mbr_chrf"])
    assert [n.texts for n in lean] == [n.texts for n in lists]
    assert all(set(n.features) == {"mbr_chrf"} for n in lean)
    assert [n.features["mbr_chrf"] for n in lean] == [n.features["mbr_chrf"] for n in lists]


def test_weights_combine_features_linearly():
    nbest = NBestList("x y", ["a", "b"], [-2.0, -1.0], [2, 2], {"reverse": [0.0, -3.0]})
    w = DirectionWeights({"forward": 1.0, "reverse": 1.0}, alpha=0.0)
    assert w.scores(nbest) == [-2.0, -4.0] and w.choose(nbest) == 0
    assert DirectionWeights({"forward": 1.0}, alpha=0.0).choose(nbest) == 1
    assert w.used() == ["forward", "reverse"]
    with pytest.raises(ValueError, match="unknown reranking features \\['bogus'\\]"):
        DirectionWeights({"bogus": 1.0})


# --------------------------------------------------------------------------- rerank.json
def test_the_weights_file_round_trips(tmp_path):
    original = RerankFile({"en-de": DirectionWeights({"forward": 1.0, "mbr_chrf": 3.0}, 1.0,
                                                     SearchSettings(5, 0.6, True), {"sentences": 10})},
                          ["../en-de"], "python -m scripts.tune_rerank --model m", "Multi30k val: every sentence")
    original.save(tmp_path / RERANK_FILE)
    assert RerankFile.load(tmp_path / RERANK_FILE) == original
    (tmp_path / "bad.json").write_text(json.dumps({"schema": 99}))
    with pytest.raises(ValueError, match="not a schema-1 reranking file"):
        RerankFile.load(tmp_path / "bad.json")


def test_a_folder_without_weights_or_a_direction_without_them_is_a_clear_error(model, tmp_path):
    with pytest.raises(ValueError, match="has no rerank.json: tune one with `python -m scripts.tune_rerank`"):
        Reranker.from_pretrained(tmp_path, model=model)
    reranker = Reranker(model, RerankFile({"en-de": DirectionWeights()}))
    with pytest.raises(ValueError, match="no reranking weights for de-fr; tuned: en-de"):
        reranker.translate(["ein hund"], src_lang="de", tgt_lang="fr")
    out = reranker.generate(["", TEXTS[0]], src_lang="en", tgt_lang="de")
    assert out[0].text == "" and out[0].candidates == [] and out[1].text == out[1].candidates[
        max(range(len(out[1].scores)), key=lambda i: (out[1].scores[i], -i))]


# --------------------------------------------------------------------------- tuning
def synthetic_lists(n: int = 40):
    """Lists where the reference is never the first candidate, and only ``reverse`` says which one it is."""
    rng = np.random.default_rng(0)
    lists, refs = [], []
    for i in range(n):
        ref = f"the {i} dog runs in the park near {i + 1} trees"
        texts = [f"a {i} cat sits", ref, f"the {i} dog walks home", f"some {i} birds fly"]
        reverse = [-3.0, -0.5, -2.5, -4.0]
        lists.append(NBestList(f"source {i}", texts, list(-rng.uniform(1, 2, 4) * np.array([1, 1.4, 1.2, 1.3])),
                               [6, 11, 7, 6], {"reverse": reverse, "length_ratio": [1.0] * 4}))
        refs.append(ref)
    return lists, refs


def test_corpus_bleu_from_cached_statistics_is_sacrebleus():
    lists, refs = synthetic_lists()
    choice = np.array([i % 4 for i in range(len(lists))])
    chosen = [n.texts[c] for n, c in zip(lists, choice)]
    assert CorpusBleu(lists, refs)(choice) == f64(corpus_score(chosen, refs)["bleu_lowercase"], 100)


def test_tuning_finds_the_feature_that_knows_the_reference():
    lists, refs = synthetic_lists()
    tuned = tune(lists, refs, SearchSettings(4, 0.6))
    assert tuned.weights.get("reverse", 0) > 0
    assert tuned.val["reranked_bleu_lowercase"] == 100.0 > tuned.val["beam_bleu_lowercase"]
    table = Table(lists)  # the library's choice equals the tuner's
    assert [tuned.choose(n) for n in lists] == table.choose(tuned.weights, tuned.alpha).tolist() == [1] * len(lists)


def test_tuning_reads_only_val(model, tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "val", "test_2016_flickr"):
        for lang, lines in (("en", TEXTS), ("de", ["ein grosser hund .", "zwei leute .", "gruen ."])):
            (data / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    model.save_pretrained(tmp_path / "model")
    opened = []
    hook_on = [True]
    sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" and hook_on[0] else None)
    try:
        status = tune_rerank.main(["--model", str(tmp_path / "model"), "--data-dir", str(data), "--beam", "2",
                                   "--directions", "en-de,de-en", "--cache", str(tmp_path / "cache")])
    finally:
        hook_on[0] = False
    assert status == 0
    read = {Path(p).name for p in opened if Path(p).parent == data}
    assert read == {"val.en", "val.de"}
    tuned = RerankFile.load(tmp_path / "model" / RERANK_FILE)
    assert set(tuned.directions) == {"en-de", "de-en"} and tuned.command.startswith("python -m scripts.tune_rerank ")
    assert tuned.directions["en-de"].val["sentences"] == 3


# --------------------------------------------------------------------------- the quality mode at the command line
@pytest.fixture(scope="module")
def tuned_dir(model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tuned") / "model"
    model.save_pretrained(folder)
    weights = DirectionWeights({"forward": 1.0, "reverse": 0.5, "mbr_chrf": 3.0}, 1.0, SearchSettings(3, 0.6))
    RerankFile({"en-de": weights}, command="test").save(folder / RERANK_FILE)
    return folder


def run_cli(argv, stdin: str, monkeypatch, capsys):
    import io

    from transformer_hub import cli

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_the_cli_quality_mode_gives_the_librarys_result(tuned_dir, monkeypatch, capsys):
    lines = TEXTS + [""]
    status, out, err = run_cli(["translate", "--model", str(tuned_dir), "--quality", "best", "--src-lang", "en",
                                "--tgt-lang", "de", "--threads", "1"], "\n".join(lines) + "\n", monkeypatch, capsys)
    assert status == 0, err
    with one_thread():
        expected = Reranker.from_pretrained(tuned_dir).translate(lines, "en", "de")
    assert out.split("\n")[:-1] == expected and expected[-1] == "" and all(expected[:-1])


@pytest.mark.parametrize("extra, message", [
    (["--n-best", "2"], "--quality best does not combine with --n-best"),
    (["--tgt-lang", "fr"], "no reranking weights for en-fr; tuned: en-de"),
])
def test_the_cli_quality_mode_refuses_in_one_line(tuned_dir, monkeypatch, capsys, extra, message):
    argv = ["translate", "--model", str(tuned_dir), "--quality", "best", "--src-lang", "en", "--tgt-lang", "de"]
    status, out, err = run_cli(argv + extra, "a dog .\n", monkeypatch, capsys)
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1 and out == ""


def test_tuning_drops_a_model_pass_that_another_feature_makes_redundant():
    """``reverse`` finds the reference in half the lists and is picked first; ``mbr_chrf`` then finds it in all,
    so the costly ``reverse`` goes."""
    lists, refs = synthetic_lists()
    for i, nbest in enumerate(lists):
        nbest.forward_raw, nbest.forward_length = [-1.0, -1.1, -1.2, -1.3], [6] * 4
        nbest.features["reverse"] = [-3.0, -0.5, -2.5, -4.0] if i % 2 == 0 else [-3.0, -2.5, -0.5, -4.0]
        nbest.features["mbr_chrf"] = [0.0, 1.0, 0.0, 0.0]
    tuned = tune(lists, refs, SearchSettings(4, 0.6))
    assert "reverse" not in tuned.weights and tuned.weights["mbr_chrf"] > 0
    assert tuned.val["reranked_bleu_lowercase"] == 100.0


def test_without_a_model_the_cli_quality_mode_takes_the_folder_tuned_for_the_direction(tuned_dir, tmp_path,
                                                                                         monkeypatch, capsys):
    import shutil

    models = tmp_path / "models"
    shutil.copytree(tuned_dir, models / "multi")
    monkeypatch.setenv("TRANSFORMER_HUB_SPACE_MODELS", str(models))
    status, out, err = run_cli(["translate", "--quality", "best", "--src-lang", "en", "--tgt-lang", "de",
                                "--threads", "1"], TEXTS[0] + "\n", monkeypatch, capsys)
    assert status == 0, err
    assert f"model: {models / 'multi'}" in err
    with one_thread():
        assert out == Reranker.from_pretrained(tuned_dir).translate(TEXTS[:1], "en", "de")[0] + "\n"
