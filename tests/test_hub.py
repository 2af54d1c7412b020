"""save_pretrained / from_pretrained / push_to_hub: exact round trips, the model card, hostile checkpoints refused
cheaply, and the Hub protocol through the local test double (tests/hub_server.py)."""
import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from huggingface_hub import HfApi, ModelCard, hf_hub_download
from huggingface_hub.errors import HfHubHTTPError
from safetensors import safe_open
from safetensors.torch import save_file

from helpers.hub_server import HubServer, fast_retries, use_hub, validate_card_metadata
from helpers.isolated_load import IsolatedLoader, error_types
from transformer_hub import Tokenizer, Transformer, TransformerConfig
from transformer_hub.hub import CheckpointError

FILES = {"config.json", "model.safetensors", "README.md", "tokenizer_config.json", "spm.model"}


def assert_same_model(a: Transformer, b: Transformer) -> None:
    """Bit-identical weights, equal config, equal logits, equal tokenizer."""
    assert a.config == b.config
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for name in sa:
        assert sa[name].dtype == sb[name].dtype and torch.equal(sa[name], sb[name]), name
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 2, 0, 0]])
    tgt = torch.tensor([[1, 11, 12], [1, 13, 14]])
    with torch.no_grad():
        assert torch.equal(a.eval()(src, tgt), b.eval()(src, tgt))
    assert (a.tokenizer is None) == (b.tokenizer is None)
    if a.tokenizer is not None:
        assert a.tokenizer.joint == b.tokenizer.joint
        for side in ("source", "target"):
            assert a.tokenizer._side(side).serialized_model_proto() == b.tokenizer._side(side).serialized_model_proto()
        for text in ("A dog runs through the grass.", "Ein Hund läuft über die Wiese.", "漢字 😀"):
            assert a.tokenizer.encode(text) == b.tokenizer.encode(text)


# --------------------------------------------------------------------------- local folders
def test_save_pretrained_files(tiny_model, tmp_path):
    tiny_model.save_pretrained(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == FILES
    assert json.loads((tmp_path / "config.json").read_text()) == tiny_model.config.to_dict()


@pytest.mark.parametrize("overrides", [
    {}, dict(layout="decoder-only", positional="rope", norm="pre"),
    dict(positional="learned", feed_forward="swiglu", attention="sdpa", share_embeddings=False),
], ids=["paper", "decoder-only-rope-pre", "learned-swiglu-sdpa-unshared"])
def test_round_trip_is_exact(make_model, tmp_path, overrides):
    model = make_model(**overrides)
    with torch.no_grad():  # non-trivial values everywhere (biases and norms start at 0 and 1)
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    model.save_pretrained(tmp_path)
    for where in (tmp_path, str(tmp_path)):
        loaded = Transformer.from_pretrained(where)
        assert not loaded.training
        assert_same_model(model, loaded)


def test_round_trip_with_separate_vocabularies(sentence_pairs, tmp_path):
    en, de = zip(*sentence_pairs)
    tokenizer = Tokenizer.train(en, de, vocab_size=350, joint=False)
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.preset("tiny", src_vocab_size=tokenizer.src_vocab_size,
                                                 tgt_vocab_size=tokenizer.tgt_vocab_size))
    model.tokenizer = tokenizer
    model.save_pretrained(tmp_path)
    assert {"source.spm.model", "target.spm.model"} <= {p.name for p in tmp_path.iterdir()}
    loaded = Transformer.from_pretrained(tmp_path)
    assert not loaded.tokenizer.joint
    assert_same_model(model, loaded)


def test_saving_is_deterministic(tiny_model, tmp_path):
    tiny_model.save_pretrained(tmp_path / "a")
    tiny_model.save_pretrained(tmp_path / "b")
    for name in FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_model_without_tokenizer(make_model, tmp_path):
    model = make_model(tokenizer=False)
    model.save_pretrained(tmp_path)
    assert not (tmp_path / "tokenizer_config.json").exists()
    assert Transformer.from_pretrained(tmp_path).tokenizer is None


def test_from_pretrained_argument_checks(tiny_model, tmp_path):
    tiny_model.save_pretrained(tmp_path)
    with pytest.raises(TypeError, match="unexpected arguments"):
        Transformer.from_pretrained(tmp_path, d_model=64)
    with pytest.raises(OSError, match="neither a local folder nor a valid Hub repository id"):
        Transformer.from_pretrained(tmp_path / "does" / "not" / "exist")


# --------------------------------------------------------------------------- the model card
def test_model_card_metadata(tiny_model, tmp_path):
    tiny_model.save_pretrained(tmp_path)
    card = ModelCard.load(tmp_path / "README.md")
    data = card.data
    assert data.library_name == "transformer_hub"
    assert data.pipeline_tag == "translation"
    assert data.license == "apache-2.0"
    assert data.language == ["en", "de"]
    assert "translation" in data.tags
    assert not data.eval_results and "model-index" not in data.to_dict()
    assert "| d_model | 32 |" in card.text and f"| parameters | {tiny_model.num_parameters():,} |" in card.text
    assert validate_card_metadata(card.content) == []  # what the (test) Hub checks on upload


def test_model_card_results_and_training(tiny_model, tmp_path):
    plot = tmp_path / "curves.png"
    plot.write_bytes(b"\x89PNG fake")
    tiny_model.card_data = {
        "name": "tiny en-de", "datasets": ["bentrevett/multi30k"], "plot": str(plot),
        "results": [{"metric": "bleu", "metric_name": "BLEU", "value": 12.345, "split": "test_2016_flickr"},
                    {"metric": "chrf", "value": 40.5, "split": "test_2016_flickr"},
                    {"metric": "bleu", "value": 7.5, "split": "test_2016_flickr", "direction": "de-en"}],
        "training": {"steps": 100, "hardware": "2 CPU cores"},
        "provenance": "`python -m transformer_hub train --out run`; this folder is the run's `final/`.",
    }
    out = tmp_path / "model"
    tiny_model.save_pretrained(out)
    card = ModelCard.load(out / "README.md")
    index = card.data.to_dict()["model-index"]
    assert index[0]["name"] == "tiny en-de"
    results = index[0]["results"]
    assert [(m["type"], m["value"]) for r in results for m in r["metrics"]] == [("bleu", 12.345), ("chrf", 40.5),
                                                                                 ("bleu", 7.5)]
    assert all(r["task"]["type"] == "translation" and r["dataset"]["split"] == "test_2016_flickr" for r in results)
    assert card.data.datasets == ["bentrevett/multi30k"]
    assert "| dataset | split | direction | BLEU | chrf | bleu |" in card.text  # a column per metric
    assert "| Multi30k | test_2016_flickr | en → de | 12.35 | 40.50 |  |" in card.text
    assert "| Multi30k | test_2016_flickr | de-en |  |  | 7.50 |" in card.text
    assert "## How this folder was made\n\n`python -m transformer_hub train --out run`" in card.text
    assert (out / "training_curves.png").read_bytes() == plot.read_bytes() and "training_curves.png" in card.text
    assert validate_card_metadata(card.content) == []
    loaded = Transformer.from_pretrained(out)  # results and training facts come back from the card
    assert loaded.card_data["name"] == "tiny en-de"
    assert loaded.card_data["results"] == [{k: v for k, v in r.items() if k != "metric_name"} | {
        "dataset_name": "Multi30k", "dataset_type": "multi30k", "metric_name": r.get("metric_name", r["metric"])}
        for r in tiny_model.card_data["results"]]  # directions included: a multilingual card survives a round trip
    assert loaded.card_data["training"] == {"steps": 100, "hardware": "2 CPU cores"}
    assert loaded.card_data["provenance"] == tiny_model.card_data["provenance"]


def test_a_broken_model_card_is_not_fatal(tiny_model, tmp_path):
    tiny_model.save_pretrained(tmp_path)
    (tmp_path / "README.md").write_text("---\n: : not yaml [\n---\n")
    assert Transformer.from_pretrained(tmp_path).card_data == {}


# --------------------------------------------------------------------------- hostile and broken checkpoints
@pytest.fixture
def checkpoint(tiny_model, tmp_path):
    folder = tmp_path / "ckpt"
    tiny_model.save_pretrained(folder)
    return folder


def _tensors(folder):
    with safe_open(str(folder / "model.safetensors"), framework="pt") as fh:
        return {name: fh.get_tensor(name) for name in fh.keys()}


def _edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


@pytest.fixture(scope="module")
def loader():
    isolated = IsolatedLoader()
    yield isolated
    isolated.close()


def refused(loader, folder, match, error=CheckpointError):
    """Loading ``folder`` raises ``error`` quickly, without a large allocation (its process grows < 300 MB)."""
    report = loader.load(folder)
    assert f"{error.__module__}.{error.__qualname__}" in error_types(report), report
    assert re.search(match, report["error"]["message"]), report["error"]["message"]
    assert report["seconds"] < 10
    assert report["peak_growth_kib"] < 300 * 1024, f"loading allocated {report['peak_growth_kib'] // 1024} MB"


def test_the_memory_meter_sees_an_allocation(loader, checkpoint):
    """The check above can fail: 400 MB allocated in the helper's child shows up, a good load stays small."""
    assert loader.allocate(400)["peak_growth_kib"] > 390 * 1024
    loaded = loader.load(checkpoint)
    assert loaded["error"] is None and loaded["peak_growth_kib"] < 300 * 1024
    with pytest.raises(AssertionError, match="CheckpointError"):
        refused(loader, checkpoint, "anything")  # a good checkpoint is not refused


def test_truncated_weights(loader, checkpoint):
    data = (checkpoint / "model.safetensors").read_bytes()
    (checkpoint / "model.safetensors").write_bytes(data[: len(data) // 2])
    refused(loader, checkpoint, "truncated or corrupt")


@pytest.mark.parametrize("content", [b"", b"garbage", (10**15).to_bytes(8, "little") + b"{}",
                                     (20).to_bytes(8, "little") + b'{"a": [1, 2, 3]}    '])
def test_garbage_weights(loader, checkpoint, content):
    (checkpoint / "model.safetensors").write_bytes(content)
    refused(loader, checkpoint, "not a readable safetensors file")


def test_tensor_of_the_wrong_shape(loader, checkpoint):
    tensors = _tensors(checkpoint)
    name = next(n for n in tensors if n.endswith("in_proj.weight"))
    tensors[name] = torch.zeros(tensors[name].shape[0], tensors[name].shape[1] + 1)
    save_file(tensors, str(checkpoint / "model.safetensors"))
    refused(loader, checkpoint, rf"tensor {name} has shape \[96, 33\], the config needs \[96, 32\]")


def test_missing_tensor(loader, checkpoint):
    tensors = _tensors(checkpoint)
    name = next(n for n in tensors if "feed_forward.w_2.bias" in n)
    del tensors[name]
    save_file(tensors, str(checkpoint / "model.safetensors"))
    refused(loader, checkpoint, rf"missing tensors \['{name}'\]")


def test_extra_tensor(loader, checkpoint):
    tensors = _tensors(checkpoint)
    tensors["body.backdoor.weight"] = torch.zeros(3)
    save_file(tensors, str(checkpoint / "model.safetensors"))
    refused(loader, checkpoint, r"unexpected tensors \['body.backdoor.weight'\]")


def test_integer_tensor(loader, checkpoint):
    tensors = _tensors(checkpoint)
    name = next(n for n in tensors if n.endswith("norm.bias"))
    tensors[name] = torch.zeros(tensors[name].shape, dtype=torch.int64)
    save_file(tensors, str(checkpoint / "model.safetensors"))
    refused(loader, checkpoint, "expected a float type")


@pytest.mark.parametrize("changes, match", [
    (dict(d_model=10**9), r"invalid config.json: d_model=1000000000 is out of range"),
    (dict(max_len=10**10), r"max_len=10000000000 is out of range"),
    (dict(positional="alibi"), r"unknown positional encoding 'alibi'.*registered: .*sinusoidal"),
    (dict(layout="mixture"), r"unknown layout 'mixture'"),
    (dict(hidden_size=32), r"unknown config keys \['hidden_size'\]"),
    (dict(d_model="32"), r"d_model must be an integer"),
    (dict(n_heads=5), r"divisible"),
])
def test_bad_config(loader, checkpoint, changes, match):
    _edit_config(checkpoint, **changes)
    refused(loader, checkpoint, match)


def test_large_valid_config_with_small_weights_is_refused_before_allocation(loader, checkpoint):
    """~1.5 B parameters (6 GB) declared, a 0.3 MB weights file: the header's size is checked before building."""
    _edit_config(checkpoint, d_model=4096, n_heads=8, d_ff=8192, n_encoder_layers=4, n_decoder_layers=4,
                 src_vocab_size=30000, tgt_vocab_size=30000)
    assert TransformerConfig.from_json_file(str(checkpoint / "config.json")).num_parameters() > 1_400_000_000
    refused(loader, checkpoint, "refusing to build a model the weights cannot fill")


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe garbage", b""])
def test_unreadable_config(loader, checkpoint, content):
    (checkpoint / "config.json").write_bytes(content)
    refused(loader, checkpoint, "invalid config.json")


def test_huge_config(loader, checkpoint):
    config = json.loads((checkpoint / "config.json").read_text())
    config["padding"] = "x" * (2 * 1024 * 1024)
    (checkpoint / "config.json").write_text(json.dumps(config))
    refused(loader, checkpoint, "larger than 1048576 bytes")


def test_missing_config(loader, checkpoint):
    (checkpoint / "config.json").unlink()
    refused(loader, checkpoint, "has no config.json")


class _Payload:
    """Unpickling this creates a marker file: proof that a pickle was (never) loaded."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def test_pickle_weights_are_never_loaded(loader, checkpoint, tmp_path):
    marker = tmp_path / "PWNED"
    (checkpoint / "model.safetensors").unlink()
    (checkpoint / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload(marker)))
    refused(loader, checkpoint, "has no model.safetensors")
    assert not marker.exists()


def test_tokenizer_that_does_not_fit_the_config(loader, checkpoint, sentence_pairs):
    en, _ = zip(*sentence_pairs)
    Tokenizer.train(en, vocab_size=420).save(checkpoint)
    refused(loader, checkpoint, r"tokenizer vocabularies \(\d+, \d+\) do not match the config")


def test_corrupt_tokenizer_file(loader, checkpoint):
    (checkpoint / "spm.model").write_bytes(b"corrupt")
    refused(loader, checkpoint, "not a valid SentencePiece model", error=ValueError)


def test_tokenizer_config_cannot_point_outside(loader, checkpoint):
    (checkpoint / "tokenizer_config.json").write_text(json.dumps({"source": "../../spm.model", "target": "spm.model"}))
    refused(loader, checkpoint, "must be a plain file name", error=ValueError)


# --------------------------------------------------------------------------- through the Hub (the local test double)
REPO = "user/tiny-model"


def test_push_and_pull(tiny_model, hub_server, tmp_path):
    url = tiny_model.push_to_hub(REPO)
    assert str(url).startswith(hub_server.url)
    stored = hub_server.files_at(REPO)
    assert set(stored) == FILES | {".gitattributes"}
    tiny_model.save_pretrained(tmp_path / "local")
    for name in FILES:  # the Hub holds exactly what save_pretrained writes
        assert stored[name] == (tmp_path / "local" / name).read_bytes(), name
    loaded = Transformer.from_pretrained(REPO)
    assert_same_model(tiny_model, loaded)
    assert hub_server.unhandled == []
    assert ("POST", "/api/validate-yaml") in hub_server.requests  # the card's metadata was checked on upload


def _perturbed(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    return {k: v.clone() for k, v in model.state_dict().items()}


def _weights_equal(model, state):
    return all(torch.equal(v, state[k]) for k, v in model.state_dict().items())


def test_revisions(tiny_model, hub_server):
    v1 = _perturbed(tiny_model, 1)
    tiny_model.push_to_hub(REPO)
    commit_v1 = hub_server.commits(REPO)[-1]
    v2 = _perturbed(tiny_model, 2)
    tiny_model.push_to_hub(REPO, commit_message="v2")
    assert _weights_equal(Transformer.from_pretrained(REPO), v2)
    assert _weights_equal(Transformer.from_pretrained(REPO, revision=commit_v1), v1)
    HfApi().create_branch(REPO, branch="dev")
    v3 = _perturbed(tiny_model, 3)
    tiny_model.push_to_hub(REPO, branch="dev")
    assert _weights_equal(Transformer.from_pretrained(REPO, revision="dev"), v3)
    assert _weights_equal(Transformer.from_pretrained(REPO, revision="main"), v2)
    with pytest.raises(OSError, match="Revision Not Found"):
        Transformer.from_pretrained(REPO, revision="v9")


def test_missing_repo(hub_server):
    with pytest.raises(OSError, match=r"(?s)could not download config.json from user/no-such-model.*Repository Not"):
        Transformer.from_pretrained("user/no-such-model")


def test_repo_without_config(hub_server):
    hub_server.put_files("user/empty", {"README.md": b"# nothing here\n"})
    with pytest.raises(CheckpointError, match=r"repository user/empty \(revision main\) has no config.json"):
        Transformer.from_pretrained("user/empty")


def test_pickle_only_repo_is_refused_without_downloading_it(tiny_model, hub_server, tmp_path):
    marker = tmp_path / "PWNED"
    tiny_model.save_pretrained(tmp_path / "m")
    hub_server.put_files("user/pickled", {"config.json": (tmp_path / "m" / "config.json").read_bytes(),
                                          "pytorch_model.bin": pickle.dumps(_Payload(marker))})
    with pytest.raises(CheckpointError, match="has no model.safetensors"):
        Transformer.from_pretrained("user/pickled")
    assert not marker.exists()
    assert not any(path.endswith("pytorch_model.bin") for _, path in hub_server.requests)


def test_hostile_config_on_the_hub(tiny_model, hub_server, tmp_path):
    tiny_model.save_pretrained(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    config["d_model"] = 10**9
    hub_server.put_files("user/hostile", {"config.json": json.dumps(config).encode(),
                                          "model.safetensors": (tmp_path / "m" / "model.safetensors").read_bytes()})
    with pytest.raises(ValueError, match="d_model=1000000000") as caught:  # caught as a bad argument is, too
        Transformer.from_pretrained("user/hostile")
    assert type(caught.value) is CheckpointError
    assert not any(path.endswith("model.safetensors") for _, path in hub_server.requests)  # stopped at the config


def test_server_that_times_out(tiny_model, hub_server):
    tiny_model.push_to_hub(REPO)
    rule = hub_server.fail_next(count=1000, path=r"/resolve/", delay=30, status=None)  # never answers in time
    start = time.perf_counter()
    with use_hub(hub_server.url, hub_server.home, timeout=1), fast_retries(retry_timeout=0.5):
        with pytest.raises(OSError, match=r"(?s)could not download config.json from user/tiny-model.*[Tt]imed? ?out"):
            Transformer.from_pretrained(REPO)
    assert time.perf_counter() - start < 20
    assert rule.hits >= 2  # the client retried before giving up


def test_transient_server_error_is_retried(tiny_model, hub_server):
    tiny_model.push_to_hub(REPO)
    rule = hub_server.fail_next(count=1, status=500, path=r"/resolve/main/config\.json$")
    with fast_retries():
        assert_same_model(tiny_model, Transformer.from_pretrained(REPO))
    assert rule.hits == 1 and rule.remaining == 0


def test_persistent_server_error(tiny_model, hub_server):
    tiny_model.push_to_hub(REPO)
    hub_server.fail_next(count=1000, status=503, path=r"/resolve/")
    with fast_retries(), pytest.raises(OSError, match="could not download config.json"):
        Transformer.from_pretrained(REPO)


@pytest.mark.parametrize("with_tokenizer", [True, False])
def test_cached_model_loads_when_the_hub_is_down(make_model, hub_server, with_tokenizer):
    model = make_model(tokenizer=with_tokenizer)
    model.push_to_hub(REPO)
    Transformer.from_pretrained(REPO)  # fills the cache (and records that absent files are absent)
    hub_server.fail_next(count=1000, status=503)
    with fast_retries():
        loaded = Transformer.from_pretrained(REPO)
    assert_same_model(model, loaded)
    assert_same_model(model, Transformer.from_pretrained(REPO, local_files_only=True))


def test_local_files_only_without_cache(hub_server, tiny_model):
    tiny_model.push_to_hub(REPO)
    with pytest.raises(OSError, match="could not download config.json"):
        Transformer.from_pretrained(REPO, local_files_only=True)


def test_failed_push_raises(tiny_model, hub_server):
    hub_server.fail_next(count=10, status=500, path=r"/commit/")
    with fast_retries(), pytest.raises(HfHubHTTPError):
        tiny_model.push_to_hub(REPO)
    assert set(hub_server.files_at(REPO)) == {".gitattributes"}  # the repo was created, nothing was committed


# --------------------------------------------------------------------------- the test double itself
def test_hub_double_serves_spaces(hub_server, tmp_path):
    api = HfApi()
    repo = api.create_repo("user/demo", repo_type="space", space_sdk="gradio")
    assert repo.repo_id == "user/demo" and repo.repo_type == "space"
    (tmp_path / "space").mkdir()
    (tmp_path / "space" / "app.py").write_text("import gradio\n")
    (tmp_path / "space" / "requirements.txt").write_text("torch==2.13.0\n")
    api.upload_folder(folder_path=tmp_path / "space", repo_id="user/demo", repo_type="space")
    assert hub_server.files_at("user/demo", repo_type="space")["app.py"] == b"import gradio\n"
    path = hf_hub_download("user/demo", "requirements.txt", repo_type="space")
    assert Path(path).read_text() == "torch==2.13.0\n"
    assert sorted(api.list_repo_files("user/demo", repo_type="space")) == [".gitattributes", "app.py",
                                                                           "requirements.txt"]
    assert api.space_info("user/demo").sdk == "gradio"
    assert api.get_space_runtime("user/demo").stage == "RUNNING"
    api.add_space_secret("user/demo", "TOKEN", "s3cret")
    assert hub_server.repos[("space", "user/demo")].secrets == {"TOKEN": "s3cret"}
    with pytest.raises(HfHubHTTPError):  # creating it again is a conflict ...
        api.create_repo("user/demo", repo_type="space", space_sdk="gradio")
    api.create_repo("user/demo", repo_type="space", space_sdk="gradio", exist_ok=True)  # ... unless allowed
    assert hub_server.unhandled == []


def test_hub_double_failure_injection(hub_server):
    hub_server.put_files("user/x", {"a.txt": b"a"})
    api = HfApi()
    rule = hub_server.fail_next(count=2, status=502, path=r"^/api/models/user/x$", method="GET")
    for _ in range(2):
        with pytest.raises(HfHubHTTPError, match="502"):
            api.model_info("user/x")
    assert (rule.hits, rule.remaining) == (2, 0)
    assert api.model_info("user/x").sha == hub_server.commits("user/x")[-1]  # the next request is served
    slow = hub_server.fail_next(status=None, delay=0.3, path="a.txt")  # slowed down, then served
    start = time.perf_counter()
    assert Path(hf_hub_download("user/x", "a.txt")).read_bytes() == b"a"
    assert time.perf_counter() - start >= 0.3 and slow.hits == 1


def test_hub_double_from_a_subprocess(hub_server, tmp_path):
    """``server.env(home)`` points a child process's huggingface_hub at the server (HF_ENDPOINT and friends)."""
    hub_server.put_files("user/x", {"greeting.txt": b"hello"})
    script = textwrap.dedent("""
        from pathlib import Path
        from huggingface_hub import hf_hub_download
        print(Path(hf_hub_download("user/x", "greeting.txt")).read_text())
    """)
    env = {**os.environ, **hub_server.env(tmp_path / "child_home")}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello"


def test_hub_double_requires_the_token_when_set(tmp_path):
    with HubServer(token="hf_right") as server, use_hub(server.url, tmp_path, token="hf_wrong"):
        with pytest.raises(HfHubHTTPError, match="401"):
            HfApi().create_repo("user/locked")
    with HubServer(token="hf_right") as server, use_hub(server.url, tmp_path, token="hf_right"):
        HfApi().create_repo("user/locked")
        assert ("model", "user/locked") in server.repos


def test_model_card_names_no_invented_address(tiny_model, tmp_path):
    """The card links the paper only: no repository URL or repo id that nobody created."""
    tiny_model.save_pretrained(tmp_path / "card")
    text = (tmp_path / "card" / "README.md").read_text()
    assert re.findall(r"https?://[^\s)\]]+", text) == ["https://arxiv.org/abs/1706.03762"]
    assert "github.com" not in text and tiny_model._hub_mixin_info.repo_url is None
    assert 'Transformer.from_pretrained("<this repo or folder>")' in text  # a placeholder, not a made-up id


def test_one_rule_tells_a_hub_repo_id_from_a_path(tmp_path, capsys):
    """``is_repo_id`` is what the CLI's --model and the trainer's --init-from both ask (a folder wins first)."""
    from transformer_hub.cli import main
    from transformer_hub.hub import is_repo_id

    assert is_repo_id("user/model") and is_repo_id("gpt2") and is_repo_id("user/model-v1.2")
    assert not any(is_repo_id(name) for name in ("a/b/c", "../model", "./model", "/abs/path", "~/model", "a b", ""))
    missing = str(tmp_path / "nowhere")
    (tmp_path / "in.txt").write_text("A dog.\n", encoding="utf-8")
    assert main(["translate", "--model", missing, "--input", str(tmp_path / "in.txt")]) == 2
    assert f"model folder {missing} does not exist" in capsys.readouterr().err
    assert main(["train", "--out", str(tmp_path / "run"), "--init-from", missing, "--max-updates", "1"]) == 2
    assert f"--init-from {missing}: no such model folder" in capsys.readouterr().err
