"""Training pushes to the Hub as it goes (through the local Hub test double), retrying failed pushes."""
import pytest
import torch

from helpers.training import args_for
from transformer_hub import Transformer
from transformer_hub.training.checkpoint import HubPusher
from transformer_hub.training.trainer import main

REPO = "learner/tiny-en-de"


def test_training_pushes_checkpoints_and_final_model(tmp_path, hub_server, monkeypatch):
    monkeypatch.setattr(HubPusher, "__init__", _fast_pusher_init)
    first_commit_fails = hub_server.fail_next(count=1, status=500, path=r"/commit/")
    main(args_for(tmp_path, "pushed", "--max-updates", "12", "--bleu-every", "1", "--push-to-hub", REPO))
    assert first_commit_fails.hits == 1, "the first push attempt must have met the injected HTTP 500"
    repo = hub_server._repo("model", REPO)
    titles = [c.title for c in repo.commits.values()]
    checkpoint_titles = [t for t in titles if t.startswith("step ")]
    assert checkpoint_titles and all("val BLEU" in t for t in checkpoint_titles), titles
    assert titles[-1].startswith("final model: average of")
    stored = hub_server.files_at(REPO)
    assert {"config.json", "model.safetensors", "README.md", "spm.model", "tokenizer_config.json"} <= set(stored)
    assert not any(name.startswith("training_state") for name in stored)

    local = Transformer.from_pretrained(tmp_path / "pushed" / "final")
    remote = Transformer.from_pretrained(REPO)
    for (name, a), (_, b) in zip(local.state_dict().items(), remote.state_dict().items()):
        assert torch.equal(a, b), name
    assert remote.tokenizer.encode("a red dog") == local.tokenizer.encode("a red dog")


def test_a_push_that_keeps_failing_never_stops_training(tmp_path, hub_server, monkeypatch, caplog):
    monkeypatch.setattr(HubPusher, "__init__", _fast_pusher_init)
    hub_server.fail_next(count=10_000, status=500, path=r"/commit/")
    main(args_for(tmp_path, "offline", "--max-updates", "6", "--bleu-every", "100", "--push-to-hub", REPO))
    assert (tmp_path / "offline" / "final" / "model.safetensors").is_file()  # the local result is intact
    assert "could not push" in caplog.text


_original_init = HubPusher.__init__


def _fast_pusher_init(self, repo_id, private=False, revision=None, retries=3, backoff=2.0):
    _original_init(self, repo_id, private, revision, retries=retries, backoff=0.05)


@pytest.fixture(autouse=True)
def _single_thread():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)
