"""Registry: unique names, helpful errors, the built-in parts, entry-point plugin loading and its off switch."""
import importlib.metadata
import logging
import sys

import pytest

from transformer_hub import ATTENTION, FEED_FORWARD, LAYOUT, NORM, POSITIONAL, Registry, registry


def test_register_get_names():
    reg = Registry("widget")

    @reg.register("b")
    class B:
        pass

    reg.register("a")(len)
    assert reg.get("b") is B and reg.get("a") is len
    assert reg.names() == ["a", "b"] and list(reg) == ["a", "b"]
    assert "a" in reg and "c" not in reg and 3 not in reg
    assert "widget" in repr(reg)


def test_duplicate_name_raises_and_keeps_the_first():
    reg = Registry("widget")
    reg.register("x")(int)
    with pytest.raises(ValueError, match=r"widget 'x' is already registered"):
        reg.register("x")(float)
    assert reg.get("x") is int


def test_unknown_name_lists_what_exists():
    reg = Registry("widget")
    reg.register("alpha")(int)
    reg.register("beta")(int)
    with pytest.raises(ValueError, match=r"unknown widget 'gamma'; registered: alpha, beta"):
        reg.get("gamma")
    with pytest.raises(ValueError, match=r"registered: \(none\)"):
        Registry("empty").get("x")


@pytest.mark.parametrize("name", ["", None, 3])
def test_names_must_be_non_empty_strings(name):
    with pytest.raises(ValueError, match="non-empty strings"):
        Registry("widget").register(name)


def test_unregister():
    reg = Registry("widget")
    reg.register("x")(int)
    reg.unregister("x")
    reg.unregister("never-there")  # no error
    assert "x" not in reg
    reg.register("x")(float)  # the name is free again
    assert reg.get("x") is float


@pytest.mark.parametrize("reg, names", [
    (POSITIONAL, {"sinusoidal", "learned", "rope"}), (NORM, {"post", "pre"}),
    (FEED_FORWARD, {"relu", "gelu", "swiglu"}), (ATTENTION, {"math", "sdpa"}),
    (LAYOUT, {"encoder-decoder", "decoder-only"}),
])
def test_built_in_parts_are_registered(reg, names):
    assert names <= set(reg.names())


def test_built_in_duplicate_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        POSITIONAL.register("sinusoidal")(object)
    from transformer_hub.model import SinusoidalPositionalEncoding
    assert POSITIONAL.get("sinusoidal") is SinusoidalPositionalEncoding


# --------------------------------------------------------------------------- entry points (faked here; a real
# installed distribution is used in test_plugins.py)
@pytest.fixture
def fake_plugins(tmp_path, monkeypatch):
    """Two plugin modules on sys.path and a fake entry-point table naming them (and one broken entry)."""
    (tmp_path / "thub_fake_module.py").write_text("LOADED = []\nLOADED.append('module')\n")
    (tmp_path / "thub_fake_func.py").write_text("CALLS = []\ndef register():\n    CALLS.append('called')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [importlib.metadata.EntryPoint("mod", "thub_fake_module", registry.ENTRY_POINT_GROUP),
           importlib.metadata.EntryPoint("func", "thub_fake_func:register", registry.ENTRY_POINT_GROUP),
           importlib.metadata.EntryPoint("broken", "thub_no_such_module", registry.ENTRY_POINT_GROUP)]
    seen_groups = []

    def entry_points(group):
        seen_groups.append(group)
        return [ep for ep in eps if ep.group == group]

    monkeypatch.setattr(registry.importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_loaded_plugins", set())
    monkeypatch.delenv(registry.DISABLE_ENV, raising=False)
    yield seen_groups
    for name in ("thub_fake_module", "thub_fake_func"):
        sys.modules.pop(name, None)


def test_load_plugins_imports_calls_and_skips_broken(fake_plugins, caplog):
    with caplog.at_level(logging.WARNING, logger="transformer_hub.registry"):
        loaded = registry.load_plugins()
    assert loaded == ["mod", "func"]  # the broken one is skipped, not fatal
    assert "could not load plugin broken" in caplog.text
    assert sys.modules["thub_fake_module"].LOADED == ["module"]
    assert sys.modules["thub_fake_func"].CALLS == ["called"]  # a callable entry point is called
    assert registry.load_plugins() == []  # each entry point is loaded once
    assert sys.modules["thub_fake_func"].CALLS == ["called"]
    assert fake_plugins == [registry.ENTRY_POINT_GROUP] * 2


@pytest.mark.parametrize("value", ["1", "true", "YES", " 1 "])
def test_env_var_disables_plugin_loading(fake_plugins, monkeypatch, value):
    monkeypatch.setenv(registry.DISABLE_ENV, value)
    assert registry.load_plugins() == []
    assert fake_plugins == []  # entry points were not even listed
    assert "thub_fake_module" not in sys.modules
    monkeypatch.setenv(registry.DISABLE_ENV, "0")  # any other value: enabled
    assert registry.load_plugins() == ["mod", "func"]


def test_unknown_name_triggers_plugin_loading(fake_plugins):
    reg = Registry("widget")
    with pytest.raises(ValueError, match="unknown widget"):
        reg.get("nothing")
    assert fake_plugins  # plugins were looked for before giving up
    assert "thub_fake_module" in sys.modules


def test_every_registered_kind_is_a_registry():
    """CLI commands and benchmarks use the same mechanism as the architecture's parts and the strategies."""
    from benchmarks import benchmark as bench
    from transformer_hub import cli
    from transformer_hub.decoding import STRATEGIES

    for reg in (cli.COMMANDS, bench.BENCHMARKS, STRATEGIES):
        assert isinstance(reg, Registry)
    assert {"decode", "train", "app"} <= set(bench.BENCHMARKS.names())
    with pytest.raises(ValueError, match="benchmark 'decode' is already registered"):
        bench.benchmark("decode", "again", lambda parser: None)(lambda args: {})
    with pytest.raises(ValueError, match="unknown command 'nope'; registered: .*translate"):
        cli.COMMANDS.get("nope")
