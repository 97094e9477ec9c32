"""One small generic registry: a name table for anything that is chosen by name.

Judge backends, embedders, input formats, tiers, metrics and the viewer's pages are each one
:class:`Registry`; adding one of them is one ``register`` call (or decorator) next to its
implementation. Floor 0: imports nothing of ragmeter but :mod:`ragmeter.errors`.

    BACKENDS: Registry[BackendFactory] = Registry("judge backend", key="backend")

    @BACKENDS.register("openai")
    def _openai(config): ...

    BACKENDS.get("opnai")   # ConfigError "config key 'backend': unknown judge backend
                            #   'opnai' (allowed: local-demo, mock, openai, ...)"
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar, overload

from ragmeter.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """An ordered name -> entry table with aliases and a clear error for an unknown name.

    ``what`` names the kind of entry in messages; ``key`` is the config key or option an
    unknown name is reported under. ``modules`` are imported on first lookup, so entries
    declared in optional modules register themselves lazily (no import-time cost).
    """

    def __init__(self, what: str, *, key: str | None = None,
                 modules: Sequence[str] = ()) -> None:
        self.what = what
        self.key = key or what
        self._modules = tuple(modules)
        self._loaded = not self._modules
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, str] = {}

    # -- declaring ---------------------------------------------------------------------
    @overload
    def register(self, name: str, entry: T, *, aliases: Sequence[str] = (),
                 replace: bool = False) -> T: ...

    @overload
    def register(self, name: str, entry: None = None, *, aliases: Sequence[str] = (),
                 replace: bool = False) -> Callable[[T], T]: ...

    def register(self, name: str, entry: T | None = None, *, aliases: Sequence[str] = (),
                 replace: bool = False) -> T | Callable[[T], T]:
        """Add ``entry`` under ``name`` (and ``aliases``); as a decorator without ``entry``.

        A second entry under a taken name is a programming error unless ``replace=True``.
        """
        if entry is None:
            def deco(obj: T) -> T:
                self.register(name, obj, aliases=aliases, replace=replace)
                return obj
            return deco
        if not replace and (name in self._entries or name in self._aliases):
            raise ValueError(f"{self.what} {name!r} is already registered")
        self._entries[name] = entry
        for a in aliases:
            self._aliases[a] = name
        return entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` and its aliases (tests and plug-ins that replace an entry)."""
        self._entries.pop(name, None)
        for a in [a for a, n in self._aliases.items() if n == name]:
            del self._aliases[a]

    # -- looking up --------------------------------------------------------------------
    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            for m in self._modules:
                importlib.import_module(m)

    def canonical(self, name: str) -> str | None:
        """The registered name ``name`` stands for (itself or an alias's target), or None."""
        self._load()
        if name in self._entries:
            return name
        return self._aliases.get(name)

    def get(self, name: str) -> T:
        """The entry for ``name``; an unknown name is a ConfigError listing the names."""
        canon = self.canonical(name)
        if canon is None:
            raise ConfigError(self.key, f"unknown {self.what} {name!r}", allowed=self.names())
        return self._entries[canon]

    def find(self, name: str) -> T | None:
        """The entry for ``name`` or None (no error)."""
        canon = self.canonical(name)
        return None if canon is None else self._entries[canon]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.canonical(name) is not None

    def names(self) -> list[str]:
        """Registered names in declaration order (aliases not included)."""
        self._load()
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        self._load()
        return list(self._entries.items())

    def __iter__(self) -> Iterator[T]:
        self._load()
        return iter(list(self._entries.values()))

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {len(self._entries)} entries)"
