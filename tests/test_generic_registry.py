"""The generic name table behind backends, embedders, formats, tiers, metrics and pages."""

from __future__ import annotations

import pytest

from ragmeter.errors import ConfigError
from ragmeter.registry import Registry


def test_register_get_alias_and_order() -> None:
    reg: Registry[int] = Registry("thing", key="kind")
    reg.register("b", 2)
    reg.register("a", 1, aliases=("alpha",))
    assert reg.names() == ["b", "a"]
    assert reg.get("alpha") == 1 and reg.canonical("alpha") == "a"
    assert "alpha" in reg and "zzz" not in reg
    assert reg.find("zzz") is None


def test_unknown_name_is_config_error_listing_names() -> None:
    reg: Registry[int] = Registry("judge backend", key="backend")
    reg.register("openai", 1)
    with pytest.raises(ConfigError) as e:
        reg.get("opnai")
    assert "'backend'" in str(e.value) and "openai" in str(e.value)


def test_decorator_and_duplicate() -> None:
    reg: Registry[object] = Registry("format")

    @reg.register("x")
    def f() -> None: ...

    assert reg.get("x") is f
    with pytest.raises(ValueError):
        reg.register("x", 3)
    reg.register("x", 3, replace=True)
    assert reg.get("x") == 3
    reg.unregister("x")
    assert "x" not in reg


def test_lazy_modules_imported_on_first_lookup() -> None:
    reg: Registry[object] = Registry("thing", modules=("json",))
    assert reg._loaded is False
    assert reg.names() == []
    assert reg._loaded is True


def test_alias_declared_before_its_name_scopes_and_loader() -> None:
    loaded: list[str] = []
    reg: Registry[int] = Registry("tier", loader=lambda: loaded.append("x"))
    reg.alias("tier1", "retrieval")
    assert reg.find("tier1", load=False) is None and loaded == []
    assert "tier1" not in reg and loaded == ["x"]  # an alias of nothing yet is unknown
    reg.register("retrieval", 1)
    assert reg.get("tier1") == 1 and reg.aliases() == {"tier1": "retrieval"}
    with reg.scoped():
        reg.register("extra", 2)
        reg.unregister("retrieval")
        assert reg.names() == ["extra"]
    assert reg.names() == ["retrieval"] and loaded == ["x"]
    with pytest.raises(ConfigError, match="config key 'dataset_format'"):
        reg.get("nope", key="dataset_format")


def test_generated_block_and_sync(tmp_path, capsys) -> None:
    from ragmeter.registry import replace_block, sync_generated

    text = "a\n<!-- x:begin -->\nold\n<!-- x:end -->\nb\n"
    assert replace_block(text, "x", "new") == "a\n<!-- x:begin -->\nnew\n<!-- x:end -->\nb\n"
    with pytest.raises(ValueError, match="markers"):
        replace_block("no markers", "x", "new")
    f = tmp_path / "page.md"
    assert sync_generated({f: "v1"}, check=True, command="regen") == 1
    assert "stale: run regen" in capsys.readouterr().err and not f.exists()
    assert sync_generated({f: "v1"}, check=False, command="regen") == 0
    assert f.read_text() == "v1" and sync_generated({f: "v1"}, check=True, command="x") == 0
