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
