"""benchmarks/versions.py: two versions of a model on the same sentences through CTranslate2 (a tagged model with
its domain's tag), the time per sentence per domain and the ratio new / old."""
import json

import pytest

from benchmarks import versions
from test_domains import corpora, run_args, tagged  # noqa: F401 - the fixtures it builds on
from transformer_hub.training.trainer import main as train

pytest.importorskip("ctranslate2")


@pytest.fixture(scope="module")
def untagged(corpora, tmp_path_factory):  # noqa: F811
    out = tmp_path_factory.mktemp("untagged-versions") / "run"
    assert train(run_args(out, corpora, "--max-updates", "2")) == 0
    return out / "final"


def test_both_versions_decode_the_same_sentences_and_the_ratio_is_theirs(tmp_path, corpora, tagged,  # noqa: F811
                                                                          untagged, monkeypatch):
    seen = {"old": [], "new": []}
    real = versions.generate

    def spy(model, texts, **options):
        seen["new" if model.config.domains else "old"].append((texts[0], options.get("domain")))
        return real(model, texts, **options)

    monkeypatch.setattr(versions, "generate", spy)
    captions, software = corpora
    args = versions.argparse.ArgumentParser()
    versions.add_arguments(args)
    out = tmp_path / "speed.json"
    report = versions.run(args.parse_args(["--old", str(untagged), "--new", str(tagged / "final"), "--n", "3",
                                           "--repeats", "2", "--data-dir", f"captions={captions}",
                                           "--data-dir", f"software={software}", "--out", str(out)]))
    assert report["sentences"] == 12 and report["per_domain"] == {"captions": 6, "software": 6}  # en-de, de-en
    # warm-up (4) + 2 rounds of 12, the same sentences; only the tagged model gets each sentence's domain
    assert [t for t, _ in seen["old"]] == [t for t, _ in seen["new"]] and len(seen["old"]) == 4 + 2 * 12
    assert {d for _, d in seen["old"]} == {None} and {d for _, d in seen["new"][4:]} == {"captions", "software"}
    ms = report["ms_per_sentence"]
    for key in ("captions", "software", "all"):
        assert report["ratio"][key] == pytest.approx(ms["new"][key] / ms["old"][key]) and ms["old"][key] > 0
    assert json.loads(out.read_text())["ratio"] == report["ratio"]
