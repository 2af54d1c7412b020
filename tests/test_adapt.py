"""``adapt`` on a tiny model trained with domain tags: the held-out loss falls, the replayed domains stay, the
project's tag reaches decoding through training's own rule, the folder loads strictly, ships and is served with
``domain=NAME``, the time budget stops a run, and a TMX and a TSV of the same pairs give the same weights."""
import json
import random
import shutil

import pytest
from safetensors.torch import load_file

from helpers.cli import run
from helpers.space_fixtures import LIMITS, serving
from helpers.training import EN
from test_domains import SOFT_EN, corpora, tagged  # noqa: F401 - the fixtures it builds on
from test_rest import call
from test_rest_domain import library
from transformer_hub import Transformer
from transformer_hub.decoding import generate
from transformer_hub.hub.selection import candidate_from_folder
from transformer_hub.text.domain import DomainClassifier
from transformer_hub.tokenizer import source_tags
from transformer_hub.training.adapt import AdaptConfig, adapt
from transformer_hub.training.data import Track
from transformer_hub.training.run import encode
from scripts import domain_classifier
from scripts.ship_model import ship

pytestmark = pytest.mark.slow  # each fixture trains

PROJECT_EN = "commit branch merge push pull repository stash rebase conflict remote".split()
PROJECT_DE = "Einspielung Zweig Zusammenführung Hochladen Abholen Depot Ablage Neuaufbau Konflikt Gegenstelle".split()


def project_pairs(n=120, seed=3):
    rng = random.Random(seed)
    rows = [[rng.randrange(len(PROJECT_EN)) for _ in range(rng.randint(2, 5))] for _ in range(n)]
    return list(dict.fromkeys((" ".join(PROJECT_EN[i] for i in r), " ".join(PROJECT_DE[i] for i in r))
                              for r in rows))


def write_tsv(path, pairs):
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


def write_tmx(path, pairs):
    units = "".join(f'<tu><tuv xml:lang="en"><seg>{s}</seg></tuv><tuv xml:lang="de"><seg>{t}</seg></tuv>'
                    f'<tuv xml:lang="fr"><seg>ignored</seg></tuv></tu>\n' for s, t in pairs)
    path.write_text(f'<?xml version="1.0"?><tmx version="1.4"><header srclang="en"/><body>{units}</body></tmx>',
                    encoding="utf-8")
    return path


def options(base, data, out, corpora, **changes):  # noqa: F811
    captions, software = corpora
    settings = dict(base=str(base), data=[str(d) for d in data], out=str(out), domain="project", minutes=10.0,
                    max_updates=40, eval_every=10, max_tokens=300, peak_lr=3e-3, warmup=4, val_limit=16, threads=1,
                    replay_data=[f"captions={captions}", f"software={software}"])
    return AdaptConfig(**{**settings, **changes})


@pytest.fixture(scope="module")
def adapted(tagged, corpora, tmp_path_factory):  # noqa: F811
    root = tmp_path_factory.mktemp("adapt")
    tsv = write_tsv(root / "project.tsv", project_pairs())
    out = adapt(options(tagged / "final", [tsv], root / "project", corpora, src_lang="en", tgt_lang="de"),
                command="adapt (test)")
    return out, json.loads((out / "adapt.json").read_text())


def test_the_held_out_loss_falls_and_the_replayed_domains_stay(adapted):
    _, record = adapted
    assert record["directions"] == ["en-de"]
    before, after, curve = record["before"]["en-de"], record["after"]["en-de"], record["curve"]["en-de"]
    assert record["pairs"]["en-de"]["train"] + record["pairs"]["en-de"]["held_out"] == len(project_pairs())
    assert after["held_out"]["loss"] < before["held_out"]["loss"] - 0.5
    assert curve[0]["loss"] == before["held_out"]["loss"] and curve[-1]["loss"] < curve[1]["loss"]
    assert [p["step"] for p in curve] == [0, 10, 20, 30, 40]
    for name in ("captions", "software"):  # replayed at half of every epoch: the base domains do not drift
        assert after[f"val/{name}"]["loss"] < before[f"val/{name}"]["loss"] + 0.25
    assert record["training"]["stopped_by"] == "max_updates" and record["training"]["updates"] == 40


def test_the_project_tag_reaches_decoding_through_the_training_rule(adapted, tagged):  # noqa: F811
    out, _ = adapted
    model = Transformer.from_pretrained(out)  # strict: config first, the header, every weight
    base = Transformer.from_pretrained(tagged / "final")
    assert model.config.domains == ["captions", "software", "project"]
    assert model.config.tgt_vocab_size == base.config.tgt_vocab_size + 1
    text = " ".join(PROJECT_EN[:4])
    assert model.tokenizer.encode(text) == base.tokenizer.encode(text)  # no old id moved
    tags = source_tags(model.tokenizer, model.config, "de", "project")
    assert tags[-1] == model.tokenizer.domain_tag_id("project")
    trained = encode({Track("en", "de", "project"): [(text, "x")]}, model.tokenizer, model.config, 256)[0]
    decoded = generate(model, [text], src_lang="en", tgt_lang="de", domain="project")[0]
    assert list(trained.src[:len(tags)]) == tags == decoded.source_ids[:len(tags)]


def test_the_folder_carries_its_card_plot_and_a_classifier_that_knows_the_project(adapted):
    out, record = adapted
    classifier = DomainClassifier.from_folder(out)
    assert classifier.domains == ["captions", "software", "project"]
    texts = [" ".join(PROJECT_EN[3:7]), " ".join(SOFT_EN[:4]), " ".join(EN[:5])]
    assert [d for d, _ in classifier.predict(texts)] == ["project", "software", "captions"]
    card = (out / "README.md").read_text()
    assert "adapted to project" in card and "| held-out project" in card and "training_curves.png" in card
    assert (out / "training_curves.png").stat().st_size > 10_000
    found = candidate_from_folder(out)  # the Space's choice of model reads the held-out BLEU as the project's test
    assert found.scores_on("project")[("en", "de")] == pytest.approx(
        record["after"]["en-de"]["held_out"]["bleu_lowercase"], abs=0.005)


def test_the_shipped_folder_is_served_with_its_domain(adapted, tagged, corpora, tmp_path):  # noqa: F811
    out, _ = adapted
    shipped, base = tmp_path / "models" / "project", tmp_path / "base"
    ship(out, shipped, "float32")
    shutil.copytree(tagged / "final", base)  # the base model with a classifier of its own two domains, listed first
    assert domain_classifier.main(["--model", str(base), "--data-dir", f"captions={corpora[0]}",
                                   "--data-dir", f"software={corpora[1]}", "--langs", "en,de"]) == 0
    model = Transformer.from_pretrained(shipped)
    text = " ".join(PROJECT_EN[:5])
    with serving([base, shipped], LIMITS) as served:
        for asked in ("project", "auto"):  # named, or told from the text by the classifier the folder ships
            status, answer, _ = call(served, "/translate", {"q": text, "source": "en", "target": "de",
                                                             "domain": asked})
            assert status == 200 and answer["domain"] == "project"
            assert answer["translatedText"] == library(model, text, "project")
        status, answer, _ = call(served, "/translate", {"q": text, "source": "en", "target": "de", "domain": "x"})
        assert status == 400 and "domain must be auto, captions, software, project, got" in answer["error"]


def test_the_cli_translates_in_the_projects_domain(adapted, tmp_path, monkeypatch, capsys):
    out, _ = adapted
    text = " ".join(PROJECT_EN[:5])
    status, stdout, _ = run(["translate", "--model", str(out), "--src-lang", "en", "--tgt-lang", "de",
                             "--domain", "project"], stdin=(text + "\n").encode(), monkeypatch=monkeypatch,
                            capsys=capsys)
    model = Transformer.from_pretrained(out)
    assert status == 0 and stdout == generate(model, [text], src_lang="en", tgt_lang="de",
                                              domain="project")[0].text + "\n"
    status, _, err = run(["translate", "--model", str(out), "--src-lang", "en", "--tgt-lang", "de", "--domain",
                          "legal"], stdin=b"a\n", monkeypatch=monkeypatch, capsys=capsys)
    assert status == 2 and "unknown domain 'legal': this model knows captions, software, project" in err


def test_the_time_budget_stops_the_run_and_leaves_a_model_that_loads(tagged, corpora, tmp_path):  # noqa: F811
    tsv = write_tsv(tmp_path / "project.tsv", project_pairs())
    out = adapt(options(tagged / "final", [tsv], tmp_path / "timed", corpora, src_lang="en", tgt_lang="de",
                        minutes=0.02, max_updates=0, eval_every=1000))
    training = json.loads((out / "adapt.json").read_text())["training"]
    assert training["stopped_by"] == "minutes" and training["updates"] >= 1
    assert training["train_minutes"] >= 0.02
    assert Transformer.from_pretrained(out).config.domains[-1] == "project"


def test_a_tmx_and_a_tsv_of_the_same_pairs_give_the_same_model(tagged, corpora, tmp_path):  # noqa: F811
    pairs = project_pairs(60)
    outs = [adapt(options(tagged / "final", [path], tmp_path / path.stem, corpora, src_lang="en", tgt_lang="de",
                          max_updates=6,
                          eval_every=100))
            for path in (write_tmx(tmp_path / "memory.tmx", pairs), write_tsv(tmp_path / "pairs.tsv", pairs))]
    tmx, tsv = (load_file(str(out / "model.safetensors")) for out in outs)
    assert tmx.keys() == tsv.keys() and all(tmx[k].equal(tsv[k]) for k in tmx)
