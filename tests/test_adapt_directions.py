"""``adapt`` with a project's catalogs in two languages (``de.po``, ``fr.po``) on a tiny multilingual model trained
with domain tags: one run, one project tag, a hold-out per direction that shares no source across directions, a
replay drawn in each direction, scores, card rows and curves per direction, the tag reaching decoding in each
direction, and training pairs masked as serving masks them."""
import dataclasses
import json
import random

import pytest

from helpers.adapt_fixtures import entries, train_tagged
from transformer_hub import Transformer
from transformer_hub.decoding import generate
from transformer_hub.hub.selection import candidate_from_folder
from transformer_hub.tokenizer import source_tags
from transformer_hub.training import adaptation
from transformer_hub.training.adapt import AdaptConfig, adapt
from transformer_hub.training.adaptation import epoch_examples, prepare

pytestmark = pytest.mark.slow  # the fixture trains a model and adapts it

def write_po(path, lang, rows):
    body = "".join(f'msgid "{r["en"]}"\nmsgstr "{r[lang]}"\n\n' for r in rows)
    path.write_text(f'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n"Language: {lang}\\n"\n\n'
                    + body, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    root = tmp_path_factory.mktemp("directions")
    base, captions, software = train_tagged(root)
    rows = entries()
    files = [write_po(root / "de.po", "de", rows), write_po(root / "fr.po", "fr", rows[:-10])]  # fr lacks 10
    config = AdaptConfig(base=str(base), data=[str(f) for f in files], out=str(root / "project"),
                         domain="project", max_updates=6, eval_every=3, max_tokens=300, peak_lr=3e-3, warmup=4,
                         val_limit=8, threads=1, replay_data=[f"captions={captions}", f"software={software}"])
    return config, rows


@pytest.fixture(scope="module")
def adapted(setting):
    config, _ = setting
    out = adapt(config, command="adapt (test)")
    return out, json.loads((out / "adapt.json").read_text())


def test_each_direction_is_held_out_and_scored_on_its_own(adapted, setting):
    _, record = adapted
    _, rows = setting
    assert record["directions"] == ["en-de", "en-fr"]
    sizes = {d: p["train"] + p["held_out"] for d, p in record["pairs"].items()}
    assert sizes == {"en-de": len(rows), "en-fr": len(rows) - 10}
    for direction, pairs in record["pairs"].items():
        assert 0.1 < pairs["held_out"] / sizes[direction] < 0.3  # 20 % of the sources of both, by chance per direction
        assert pairs["replay"] == {"captions": 120, "software": 120}  # each corpus in that direction
        for scores in (record["before"][direction], record["after"][direction]):
            assert set(scores) == {"held_out", "val/captions", "val/software"}
        assert [p["step"] for p in record["curve"][direction]] == [0, 3, 6]
        assert record["curve"][direction][0]["loss"] == record["before"][direction]["held_out"]["loss"]
    assert [f["direction"] for f in record["data"]] == ["en-de", "en-fr"]


def test_no_source_held_out_in_one_direction_is_trained_on_in_another(setting):
    config, _ = setting
    a = prepare(config)
    held = {s for d in a.directions for s, _ in d.held}
    assert not held & {s for d in a.directions for s, _ in d.train}
    fr_sources = {s for s, _ in a.directions[1].train + a.directions[1].held}
    assert {s for s, _ in a.directions[1].held} == held & fr_sources


def test_each_epoch_replays_every_direction_in_its_share(setting):
    config, _ = setting
    a = prepare(config)
    project = {d.name: a.examples(a.model, d.train, a.domain, d) for d in a.directions}
    drawn = epoch_examples(a, 0, project)
    for d in a.directions:
        own = sum(e.direction == f"{d.name}@project" for e in drawn)
        assert own == len(project[d.name]) > 0.9 * len(d.train)  # (a pair over the tiny model's length: dropped)
        for name in ("captions", "software"):  # replay_share 0.5: as many replayed as own, shared by two corpora
            assert sum(e.direction == f"{d.name}@{name}" for e in drawn) == own // 2


def test_folders_of_one_name_are_replayed_as_one_corpus(setting):
    config, _ = setting
    one = prepare(config)
    software = next(r.split("=", 1)[1] for r in config.replay_data if r.startswith("software="))
    twice = prepare(dataclasses.replace(config, replay_data=config.replay_data + [f"software={software}"]))
    assert twice.replay_sources["software"] == [software, software]
    for d1, d2 in zip(one.directions, twice.directions):
        train, val = d1.replay["software"]
        assert d2.replay["software"] == (train + train, val + val)  # both folders' pairs, each val to val_limit
        assert d2.replay["captions"] == d1.replay["captions"]


def test_the_training_pairs_are_masked_as_serving_masks_them(setting):
    config, _ = setting
    a = prepare(config)
    d = a.directions[0]
    (example,) = a.examples(a.model, [("commit %s to <b>{name}</b>", "Einspielung %s in <b>{name}</b>")], a.domain, d)
    tags = source_tags(a.model.tokenizer, a.model.config, "de", "project")
    assert a.model.tokenizer.decode(example.src[len(tags):]) == "commit #1 to #2#3#4"
    assert a.model.tokenizer.decode(example.tgt) == "Einspielung #1 in #2#3#4"


def test_the_scores_translate_as_serving_does(setting, monkeypatch):
    config, _ = setting
    a = prepare(config)
    seen = []
    monkeypatch.setattr(adaptation, "score", lambda hyps, refs: seen.append(hyps) or {"bleu": 0.0, "chrf": 0.0})
    pairs = [("commit %s", "Einspielung %s"), ("merge <b>{name}</b> now", "Zusammenführung <b>{name}</b>")]
    adaptation.served_scores(a.model, pairs, "en", "de", "project")
    for (source, _), output in zip(pairs, seen[0]):  # the marks went back: the source's pieces, or the source
        assert "#" not in output and all(p in output for p in ("%s",) if p in source)
        assert ("<b>" in output and "{name}" in output) or "<b>" not in source


def test_the_tag_reaches_decoding_in_each_direction(adapted, setting):
    out, record = adapted
    config, _ = setting
    model = Transformer.from_pretrained(out)
    assert model.config.domains == ["captions", "software", "project"]
    a = prepare(config)
    text = "commit branch merge"
    for d, tgt in zip(a.directions, ("de", "fr")):
        tags = source_tags(model.tokenizer, model.config, tgt, "project")
        assert tags[-1] == model.tokenizer.domain_tag_id("project")
        (trained,) = a.examples(model, [(text, "x")], "project", d)
        decoded = generate(model, [text], src_lang="en", tgt_lang=tgt, domain="project")[0]
        assert list(trained.src[:len(tags)]) == tags == decoded.source_ids[:len(tags)]
    found = candidate_from_folder(out)  # the card scores the held-out pairs of each direction as the project's test
    for direction, (src, tgt) in (("en-de", ("en", "de")), ("en-fr", ("en", "fr"))):
        assert found.scores_on("project")[(src, tgt)] == pytest.approx(
            record["after"][direction]["held_out"]["bleu_lowercase"], abs=0.005)
    card = (out / "README.md").read_text()
    assert "| held-out project en-de (" in card and "| software val en-fr (8) |" in card
