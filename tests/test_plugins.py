"""An outside package adds a part through the ``transformer_hub.plugins`` entry-point group.

The package is a throwaway distribution written into ``tmp_path`` (a ``*.dist-info`` folder with METADATA and
entry_points.txt, plus its module) and put on ``sys.path``: exactly what ``pip install`` leaves behind, so
``importlib.metadata`` discovers it the way it discovers a real plugin.
"""
import importlib.metadata
import logging
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from transformer_hub import NORM, POSITIONAL, Transformer, TransformerConfig, load_plugins, registry

PLUGIN_MODULE = '''
"""A transformer_hub plugin: the paper's sinusoids with one learned scale per dimension."""
import torch
import torch.nn as nn

from transformer_hub import POSITIONAL
from transformer_hub.model import PositionalEncoding, sinusoid_table


class ScaledSinusoids(PositionalEncoding):
    def __init__(self, config):
        super().__init__(config)
        self.scale = nn.Parameter(torch.full((config.d_model,), 0.5))
        self.register_buffer("table", sinusoid_table(config.max_len, config.d_model), persistent=False)

    def forward(self, x, positions):  # (B, T, d), (B|1, T)
        return x + self.scale * self.table[positions]


def register():
    POSITIONAL.register("scaled-sinusoidal")(ScaledSinusoids)


def register_duplicate():  # a badly behaved plugin: takes a built-in name
    POSITIONAL.register("sinusoidal")(ScaledSinusoids)
'''

NAME = "scaled-sinusoidal"


@pytest.fixture
def plugin_dist(tmp_path, monkeypatch):
    """Install (onto sys.path) the distribution ``thub-scaled-sinusoids``; remove every trace afterwards."""
    site = tmp_path / "site"
    dist_info = site / "thub_scaled_sinusoids-0.1.dist-info"
    dist_info.mkdir(parents=True)
    (site / "thub_scaled_sinusoids.py").write_text(PLUGIN_MODULE)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: thub-scaled-sinusoids\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [{registry.ENTRY_POINT_GROUP}]
        scaled = thub_scaled_sinusoids:register
        duplicate = thub_scaled_sinusoids:register_duplicate
        missing = thub_no_such_module_anywhere
    """))
    (dist_info / "RECORD").write_text("")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(registry, "_loaded_plugins", set())
    monkeypatch.delenv(registry.DISABLE_ENV, raising=False)
    yield site
    POSITIONAL.unregister(NAME)
    sys.modules.pop("thub_scaled_sinusoids", None)


def test_the_distribution_is_visible_to_importlib(plugin_dist):
    dist = importlib.metadata.distribution("thub-scaled-sinusoids")
    assert dist.version == "0.1"
    names = {ep.name for ep in importlib.metadata.entry_points(group=registry.ENTRY_POINT_GROUP)}
    assert {"scaled", "duplicate", "missing"} <= names


def test_plugin_is_discovered_used_saved_and_loaded(plugin_dist, tmp_path, caplog):
    assert NAME not in POSITIONAL._items
    with caplog.at_level(logging.WARNING, logger="transformer_hub.registry"):
        loaded = load_plugins()
    assert "scaled" in loaded
    # the bad entries are reported and skipped; the built-in "sinusoidal" is untouched
    assert "could not load plugin duplicate" in caplog.text and "already registered" in caplog.text
    assert "could not load plugin missing" in caplog.text
    from transformer_hub.model import SinusoidalPositionalEncoding
    assert POSITIONAL.get("sinusoidal") is SinusoidalPositionalEncoding
    plugin_class = POSITIONAL.get(NAME)
    assert plugin_class.__module__ == "thub_scaled_sinusoids"

    torch.manual_seed(0)
    model = Transformer(TransformerConfig.preset("tiny", positional=NAME)).eval()
    assert isinstance(model.body.positional, plugin_class)
    # the plugin states no parameter_count: the config counts it on a meta-device instance, exactly
    assert model.config.num_parameters() == model.num_parameters() == \
        TransformerConfig.preset("tiny").num_parameters() + 32
    with torch.no_grad():
        model.body.positional.scale.mul_(3.0)
    src, tgt = torch.tensor([[5, 6, 7, 2]]), torch.tensor([[1, 8, 9]])
    with torch.no_grad():
        logits = model(src, tgt)
    assert torch.isfinite(logits).all()

    model.save_pretrained(tmp_path / "saved")
    assert '"positional": "scaled-sinusoidal"' in (tmp_path / "saved" / "config.json").read_text()
    loaded_model = Transformer.from_pretrained(tmp_path / "saved")
    assert isinstance(loaded_model.body.positional, plugin_class)
    assert torch.equal(loaded_model.body.positional.scale, torch.full((32,), 1.5))
    with torch.no_grad():
        assert torch.equal(loaded_model(src, tgt), logits)


def test_plugin_is_found_on_first_use(plugin_dist):
    """No explicit load_plugins(): naming an unknown part makes the registry look for plugins."""
    cfg = TransformerConfig.preset("tiny", positional=NAME)
    assert cfg.positional == NAME and NAME in POSITIONAL


def test_env_var_switches_plugin_loading_off(plugin_dist, monkeypatch):
    monkeypatch.setenv(registry.DISABLE_ENV, "1")
    assert load_plugins() == []
    unknown = rf"unknown positional encoding '{NAME}'.*; registered: (?!.*{NAME}).*sinusoidal"
    with pytest.raises(ValueError, match=unknown):
        TransformerConfig.preset("tiny", positional=NAME)
    assert "thub_scaled_sinusoids" not in sys.modules  # never imported
    monkeypatch.delenv(registry.DISABLE_ENV)
    assert TransformerConfig.preset("tiny", positional=NAME).positional == NAME


def test_plugin_in_a_fresh_interpreter(plugin_dist):
    """What a user sees: install the package, import transformer_hub, the part is there (unless switched off)."""
    script = textwrap.dedent(f"""
        import os
        import transformer_hub
        os.environ["{registry.DISABLE_ENV}"] = "1"
        print("off:", "{NAME}" in transformer_hub.POSITIONAL)
        del os.environ["{registry.DISABLE_ENV}"]
        print("on:", "{NAME}" in transformer_hub.POSITIONAL)
    """)
    repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k != registry.DISABLE_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(plugin_dist), repo_root, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["off: False", "on: True"]


def test_a_plugin_part_is_drawn_and_exported_only_as_it_describes_itself(plugin_dist):
    """No guesses: the diagram asks the part its label and an export its options, and a part that does not say
    is refused by name; once the class says, the diagram draws what it says."""
    from space.pictures.architecture import architecture_figure
    from transformer_hub import PartDescriptionError
    from transformer_hub.export import UnsupportedModelError, check_exportable

    cfg = TransformerConfig.preset("tiny", positional=NAME)  # built, trained, saved and loaded without any of it
    plugin_class = POSITIONAL.get(NAME)
    with pytest.raises(PartDescriptionError, match=rf"positional encoding '{NAME}' .*defines no 'label'"):
        architecture_figure(cfg)
    with pytest.raises(UnsupportedModelError, match=rf"cannot export positional='{NAME}' to ctranslate2: .*names no"):
        check_exportable(cfg, "ctranslate2")
    plugin_class.label = "scaled sinusoids (added)"
    plugin_class.exports = {"marian": "its scales have no place in MarianMTModel"}
    try:
        texts = [t.get_text() for t in architecture_figure(cfg).axes[0].texts]
        assert texts.count("scaled sinusoids (added)") == 2  # the encoder's and the decoder's
        with pytest.raises(UnsupportedModelError, match="its scales have no place in MarianMTModel"):
            check_exportable(cfg, "marian")
    finally:
        del plugin_class.label, plugin_class.exports


def test_a_norm_is_drawn_in_the_order_it_states():
    from space.pictures.architecture import architecture_figure

    for norm, first in (("post", "Multi-head self-attention (h=4)"), ("pre", "LayerNorm")):
        figure = architecture_figure(TransformerConfig.preset("tiny", norm=norm))
        texts = [t.get_text() for t in figure.axes[0].texts if t.get_text()]  # (arrows are empty texts)
        steps = NORM.about(norm, "steps")
        assert texts[2] == first and texts.count(steps[-1]) == 2 + 3  # a layer of each stack: 2 and 3 sub-layers
