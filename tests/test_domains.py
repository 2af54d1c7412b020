"""Domain tags (Kobus et al., 2017): config, tokenizer pieces, one tagging rule for training and decoding,
mixed corpora through the one loader, and a warm start that learns the tags."""
import gzip
import json
import random

import pytest
import torch

from helpers.training import DE, EN
from transformer_hub import Transformer
from transformer_hub.config import TransformerConfig
from transformer_hub.decoding import generate
from transformer_hub.errors import UserError
from transformer_hub.tokenizer import source_tags
from transformer_hub.training.data import DataError, Track, load_mixed, parse_data_dirs
from transformer_hub.training.options import parse_config
from transformer_hub.training.run import encode, load_data
from transformer_hub.training.trainer import Trainer, main

SOFT_EN = "click the menu open file save tab window select button help list format table cell".split()
SOFT_DE = "klicken das Menü öffnen Datei speichern Reiter Fenster wählen Schaltfläche Hilfe Liste Format Tabelle Zelle".split()


def write_corpus(folder, en_words, de_words, seed, n=160):
    """A word-for-word en/de corpus in the Multi30k layout (train and val)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", n), ("val", 16)):
        rows = [[rng.randrange(len(en_words)) for _ in range(rng.randint(3, 7))] for _ in range(count)]
        for lang, words in (("en", en_words), ("de", de_words)):
            text = "".join(" ".join(words[i] for i in row) + "\n" for row in rows)
            (folder / f"{split}.{lang}.gz").write_bytes(gzip.compress(text.encode()))
    return folder


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    root = tmp_path_factory.mktemp("domains")
    return write_corpus(root / "captions", EN, DE[:len(EN)], 0), write_corpus(root / "software", SOFT_EN, SOFT_DE, 1)


def run_args(out, corpora, *extra):
    captions, software = corpora
    return ["--out", str(out), "--data-dir", f"captions={captions}", "--data-dir", f"software={software}",
            "--langs", "en,de", "--preset", "tiny", "--vocab-size", "400", "--max-tokens", "300", "--warmup", "4",
            "--final-beam", "0", "--threads", "1", "--bleu-every", "100", "--average-last", "1", *extra]


@pytest.fixture(scope="module")
def tagged(corpora, tmp_path_factory):
    out = tmp_path_factory.mktemp("tagged") / "run"
    assert main(run_args(out, corpora, "--domain-tags", "--max-updates", "3")) == 0
    return out


def test_the_config_checks_domain_names_and_fills_in_the_default():
    base = dict(TransformerConfig.preset("tiny").to_dict(), languages=["en", "de"])
    config = TransformerConfig(**{**base, "domains": ["captions", "software"]})
    assert config.check_domain(None) == "captions" and config.check_domain("software") == "software"
    with pytest.raises(ValueError, match="unknown domain 'legal': this model knows captions, software"):
        config.check_domain("legal")
    with pytest.raises(ValueError, match="trained without domain tags"):
        TransformerConfig(**base).check_domain("software")
    assert TransformerConfig(**base).check_domain(None) is None
    for bad, message in ((["Software"], "not a domain name"), (["a", "a"], "twice"), ([], "list of 1 to 16")):
        with pytest.raises(ValueError, match=message):
            TransformerConfig(**{**base, "domains": bad})


def test_domain_pieces_are_appended_without_moving_an_id(tiny_tokenizer, tmp_path):
    text = "A man <domain:software> rides a bicycle."
    grown = tiny_tokenizer.with_domains(["captions", "software"])
    assert grown.src_vocab_size == tiny_tokenizer.src_vocab_size + 2
    assert grown.domains == ["captions", "software"]
    assert grown.domain_tag_id("software") == tiny_tokenizer.src_vocab_size + 1
    assert grown.encode(text) == tiny_tokenizer.encode(text)  # typed text never becomes a tag
    assert grown.decode([grown.domain_tag_id("captions")] + grown.encode("A man")) == "A man"
    grown.save(tmp_path)
    again = type(grown).from_directory(tmp_path)
    assert again.domains == grown.domains and again.src_vocab_size == grown.src_vocab_size
    assert grown.with_domains(["software"]) is grown
    with pytest.raises(ValueError, match="has no tag <domain:legal>: its domains are"):
        grown.domain_tag_id("legal")


def test_training_and_decoding_start_a_source_with_the_same_tags(tagged):
    model = Transformer.from_pretrained(tagged / "final")
    tok, config = model.tokenizer, model.config
    assert config.domains == ["captions", "software"] and tok.domains == ["captions", "software"]
    expected = [tok.lang_tag_id("de"), tok.domain_tag_id("software")]
    assert source_tags(tok, config, "de", "software") == expected
    examples = encode({Track("en", "de", "software"): [("click the menu", "klicken das Menü")]}, tok, config, 64)
    result = generate(model, ["click the menu"], src_lang="en", tgt_lang="de", domain="software")[0]
    assert list(examples[0].src[:2]) == expected and result.source_ids == list(examples[0].src)
    default = generate(model, ["click the menu"], src_lang="en", tgt_lang="de")[0]
    assert default.source_ids[1] == tok.domain_tag_id("captions")
    with pytest.raises(ValueError, match="unknown domain 'legal'"):
        generate(model, ["click the menu"], src_lang="en", tgt_lang="de", domain="legal")


def test_validation_is_reported_per_corpus(tagged):
    records = [json.loads(line) for line in (tagged / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in records if r.get("kind") == "val"][-1]
    assert {"val_loss/en-de@captions", "val_loss/de-en@software"} <= set(val)


def test_mixed_corpora_go_through_the_one_loader(corpora, tmp_path):
    args = parse_config(run_args(tmp_path / "r", corpora))
    train_sets, valid_sets = load_data(args, ["en", "de"])
    assert set(train_sets) == {Track(s, t, d) for s, t in (("en", "de"), ("de", "en")) for d in ("captions", "software")}
    first = gzip.decompress((corpora[1] / "train.en.gz").read_bytes()).decode().splitlines()[0]
    assert train_sets[Track("en", "de", "software")][0][0] == first


def test_folders_of_one_name_are_one_corpus(corpora):
    one = load_mixed(parse_data_dirs([f"software={corpora[0]}", f"software={corpora[1]}"]), "train", [("en", "de")])
    apart = [load_mixed(parse_data_dirs([f"software={c}"]), "train", [("en", "de")]) for c in corpora]
    track = Track("en", "de", "software")
    assert list(one) == [track]
    assert one[track] == apart[0][track] + apart[1][track]


def test_corpora_need_names_and_domain_tags_need_named_corpora(corpora, tmp_path):
    with pytest.raises(DataError, match="need a name each"):
        parse_data_dirs([str(corpora[0]), str(corpora[1])])
    with pytest.raises(DataError, match="need a name each"):
        parse_data_dirs([f"a={corpora[0]}", str(corpora[1])])
    assert parse_data_dirs([str(corpora[0])])[0].domain == ""
    unnamed = ["--out", str(tmp_path / "u"), "--data-dir", str(corpora[0]), "--langs", "en,de", "--domain-tags"]
    with pytest.raises(UserError, match="--domain-tags needs named corpora"):
        main(unnamed + ["--preset", "tiny", "--max-updates", "1"])


def test_a_warm_start_learns_the_tags_from_average_rows(corpora, tmp_path, monkeypatch):
    assert main(run_args(tmp_path / "plain", corpora, "--max-updates", "2")) == 0
    source = tmp_path / "plain" / "final"
    seen = {}
    original = Trainer._loss

    def first_loss(self, *batch):
        seen.setdefault("weights", {k: v.detach().clone() for k, v in self.run.model.state_dict().items()})
        return original(self, *batch)

    monkeypatch.setattr(Trainer, "_loss", first_loss)
    warm = [a for a in run_args(tmp_path / "warm", corpora) if a not in ("--preset", "tiny", "--vocab-size", "400")]
    assert main(warm + ["--init-from", str(source), "--domain-tags", "--max-updates", "1"]) == 0
    before = Transformer.from_pretrained(source).state_dict()
    old = before["body.src_embed.lut.weight"].shape[0]
    start = seen["weights"]["body.src_embed.lut.weight"]
    assert start.shape[0] == old + 2
    assert torch.equal(start[:old], before["body.src_embed.lut.weight"])
    torch.testing.assert_close(start[old:], before["body.src_embed.lut.weight"].mean(0).expand(2, -1))
    after = Transformer.from_pretrained(tmp_path / "warm" / "final")
    assert after.config.domains == ["captions", "software"] and after.config.src_vocab_size == old + 2
    again = [a for a in run_args(tmp_path / "again", corpora) if a not in ("--preset", "tiny", "--vocab-size", "400")]
    with pytest.raises(UserError, match="reads the domain tags captions,software"):
        main(again + ["--init-from", str(tmp_path / "warm" / "final"), "--max-updates", "1"])


def test_the_card_names_each_corpus_its_domain_and_licence(tagged, tmp_path):
    from transformer_hub import Transformer
    from transformer_hub.hub.card import card_data_from_file
    from transformer_hub.training.data import DataSource

    folder = tmp_path / "libreoffice-help"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({
        "corpus": "libreoffice-help", "licence": {"license": "MPL-2.0"},
        "source": {"kind": "debs", "packages": {"libreoffice-help-de": {"version": "4:7.4.7-1"},
                                                "libreoffice-help-en-us": {"version": "4:7.4.7-1"}}}}))
    assert DataSource(folder, "software").describe() == {
        "corpus": "libreoffice-help", "domain": "software", "licence": "MPL-2.0",
        "source": "Debian packages libreoffice-help-de 4:7.4.7-1, libreoffice-help-en-us 4:7.4.7-1"}
    assert DataSource(tmp_path / "multi30k").describe()["licence"].startswith("non-commercial research")
    card = Transformer.from_pretrained(tagged / "final").card_data
    assert [(c["corpus"], c["domain"]) for c in card["data"]] == [("captions", "captions"), ("software", "software")]
    assert card["datasets"] == ["captions", "software"]
    text = (tagged / "final" / "README.md").read_text()
    assert "## Data" in text and "| software | software |" in text
    assert card_data_from_file(str(tagged / "final" / "README.md"))["data"] == card["data"]


def test_upsample_repeats_a_corpus_in_every_epoch_and_refuses_unknown_names(corpora, tmp_path):
    plain, _ = load_data(parse_config(run_args(tmp_path / "p", corpora)), ["en", "de"])
    twice, valid = load_data(parse_config(run_args(tmp_path / "u", corpora, "--upsample", "software=2")), ["en", "de"])
    for track, pairs in plain.items():
        assert twice[track] == pairs * (2 if track.domain == "software" else 1)
    assert all(len(v) == len(load_data(parse_config(run_args(tmp_path / "p", corpora)), ["en", "de"])[1][t])
               for t, v in valid.items())  # validation is never repeated
    for bad in ("nothing=2", "software=0", "software=x"):
        with pytest.raises(UserError, match=f"--upsample {bad}: give NAME=N"):
            load_data(parse_config(run_args(tmp_path / "b", corpora, "--upsample", bad)), ["en", "de"])
