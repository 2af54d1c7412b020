"""train --init-from: the saved model's weights, config and tokenizer, a fresh optimizer, exact resume, refusals."""
import json
import os
import shutil
import signal

import pytest
import torch
from safetensors.torch import load_file

from helpers.training import args_for, checkpoint_weights
from transformer_hub import Transformer
from transformer_hub.training import checkpoint as ckpt
from transformer_hub.cli import main as cli_main
from transformer_hub.errors import UserError
from transformer_hub.training.options import parse_config
from transformer_hub.training.trainer import Trainer, main


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A short run's final model (the folder --init-from reads)."""
    root = tmp_path_factory.mktemp("warm")
    main(args_for(root, "first", "--max-updates", "8", "--bleu-every", "100", "--average-last", "1"))
    return root / "first" / "final"


def init_args(tmp_path, out, source, *extra):
    base = [a for a in args_for(tmp_path, out) if a not in ("--preset", "tiny")]  # the architecture is the model's
    return [*base, "--init-from", str(source), "--warmup", "3", *extra]


def test_starts_from_the_saved_weights_with_a_fresh_optimizer(saved, tmp_path, monkeypatch):
    seen = {}
    original = Trainer._loss

    def first_loss(self, *batch):
        if not seen:
            seen["weights"] = {k: v.detach().clone() for k, v in self.run.model.state_dict().items()}
            seen["optimizer"] = dict(self.run.optimizer.state)
            seen["step"] = self.run.state.step
        return original(self, *batch)

    monkeypatch.setattr(Trainer, "_loss", first_loss)
    main(init_args(tmp_path, "warm", saved, "--max-updates", "4", "--bleu-every", "100", "--dropout", "0.2"))
    stored = Transformer.from_pretrained(saved).state_dict()
    assert seen["step"] == 0 and seen["optimizer"] == {}  # a fresh schedule and fresh Adam moments
    for name, value in stored.items():
        assert torch.equal(seen["weights"][name], value), name
    run = tmp_path / "warm"
    assert (run / "tokenizer" / "spm.model").read_bytes() == (saved / "spm.model").read_bytes()
    final = Transformer.from_pretrained(run / "final")
    first = Transformer.from_pretrained(saved)
    expected = {**first.config.to_dict(), "dropout": 0.2}  # the saved config, with this run's dropout
    assert final.config.to_dict() == expected
    assert final.card_data["training"]["init_from"] == os.path.relpath(saved)  # results.json: no absolute paths
    card = (run / "final" / "README.md").read_text()
    assert f"Initialised from the weights of `{os.path.relpath(saved)}` (model.safetensors sha256 " in card


def test_an_interrupted_warm_start_resumes_exactly_even_without_its_source(saved, tmp_path, monkeypatch):
    source = tmp_path / "source"
    shutil.copytree(saved, source)
    common = ["--max-updates", "10", "--save-every", "5", "--bleu-every", "100", "--keep-last", "20"]
    main(init_args(tmp_path, "straight", source, *common))
    original = Trainer._loss

    def loss_then_sigterm(self, *batch):  # a SIGTERM arrives during update 3
        if self.run.state.step == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self, *batch)

    monkeypatch.setattr(Trainer, "_loss", loss_then_sigterm)
    main(init_args(tmp_path, "interrupted", source, *common))
    assert [p.name for p in ckpt.list_checkpoints(tmp_path / "interrupted" / "checkpoints")] == ["step_0000003"]
    monkeypatch.setattr(Trainer, "_loss", original)
    shutil.rmtree(source)  # the resumed run reads its checkpoint and its own tokenizer copy, not the source
    main(init_args(tmp_path, "interrupted", source, *common, "--resume"))
    a, b = checkpoint_weights(tmp_path / "straight", 10), checkpoint_weights(tmp_path / "interrupted", 10)
    for name in a:
        assert torch.equal(a[name], b[name]), name
    state = json.loads((ckpt.step_dir(tmp_path / "interrupted" / "checkpoints", 10) / ckpt.STATE_JSON).read_text())
    assert state["init"]["source"] == str(source) and len(state["init"]["sha256"]) == 64
    final = load_file(str(tmp_path / "interrupted" / "final" / "model.safetensors"))
    assert final.keys() == a.keys()


@pytest.mark.parametrize("extra, message", [
    (["--d-model", "64"], r"--d-model 64 \(the model has 32\)"),
    (["--vocab-size", "999"], r"--vocab-size 999 \(the model's vocabulary has \d+ pieces\)"),
    (["--preset", "tiny"], r"--preset tiny \(the architecture is the model's\)"),
    (["--no-share-embeddings"], r"--no-share-embeddings \(the model shares its embeddings\)"),
    (["--src-lang", "fr"], r"direction fr-de \(the model serves en-de\)"),
])
def test_contradicting_options_are_refused_in_one_line(saved, tmp_path, extra, message):
    with pytest.raises(UserError, match=r"--init-from .* fixes the architecture and vocabulary; these options "
                                        r"contradict it: .*" + message):
        main(init_args(tmp_path, "bad", saved, "--max-updates", "2", *extra))


def test_agreeing_options_are_accepted_and_a_missing_source_is_one_line(saved, tmp_path, capsys):
    vocab = Transformer.from_pretrained(saved).config.tgt_vocab_size
    trainer = Trainer(parse_config(
        init_args(tmp_path, "same", saved, "--d-model", "32", "--vocab-size", str(vocab), "--max-updates", "1")))
    assert trainer.run.config.d_model == 32
    status = cli_main(["train", *init_args(tmp_path, "missing", tmp_path / "nowhere", "--max-updates", "1")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert err.startswith(f"transformer_hub train: error: --init-from {tmp_path / 'nowhere'}: no such model folder")
