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
import importlib.util
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Generic, TypeVar, overload

from ragmeter.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """An ordered name -> entry table with aliases and a clear error for an unknown name.

    ``what`` names the kind of entry in messages; ``key`` is the config key or option an
    unknown name is reported under. ``modules`` are imported on first lookup, so entries
    declared in optional modules register themselves lazily (no import-time cost);
    ``loader`` is called once on first lookup where the modules are found at run time.
    """

    def __init__(self, what: str, *, key: str | None = None,
                 modules: Sequence[str] = (),
                 loader: Callable[[], None] | None = None) -> None:
        self.what = what
        self.key = key or what
        self._modules = tuple(modules)
        self._loader = loader
        self._loaded = not self._modules and loader is None
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

    def alias(self, alias: str, name: str) -> None:
        """Let ``alias`` stand for ``name`` (which may be declared later, by a lazy module)."""
        if alias in self._entries:
            raise ValueError(f"{self.what} alias {alias!r} is a registered name")
        self._aliases[alias] = name

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
            if self._loader is not None:
                self._loader()

    def canonical(self, name: str) -> str | None:
        """The registered name ``name`` stands for (itself or an alias's target), or None."""
        self._load()
        if name in self._entries:
            return name
        target = self._aliases.get(name)
        return target if target in self._entries else None

    def get(self, name: str, *, key: str | None = None) -> T:
        """The entry for ``name``; an unknown name is a ConfigError listing the names, reported
        under ``key`` (default: the registry's key)."""
        canon = self.canonical(name)
        if canon is None:
            raise ConfigError(key or self.key, f"unknown {self.what} {name!r}",
                              allowed=self.names())
        return self._entries[canon]

    def find(self, name: str, *, load: bool = True) -> T | None:
        """The entry for ``name`` or None (no error). ``load=False`` looks only at what is
        registered so far (for a ``register`` called while the lazy modules load)."""
        if not load:
            target = name if name in self._entries else self._aliases.get(name)
            return None if target is None else self._entries.get(target)
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

    def aliases(self) -> dict[str, str]:
        """``{alias: name}`` of every alias whose name is registered."""
        self._load()
        return {a: n for a, n in self._aliases.items() if n in self._entries}

    @contextmanager
    def scoped(self) -> Iterator[Registry[T]]:
        """Entries added or removed inside the ``with`` block are undone at its end (tests,
        one-off plug-ins)."""
        self._load()
        entries, aliases = dict(self._entries), dict(self._aliases)
        try:
            yield self
        finally:
            self._entries, self._aliases = entries, aliases

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {len(self._entries)} entries)"


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with the part between ``<!-- name:begin -->`` and ``<!-- name:end -->`` replaced
    by ``body``: a generated listing (formats, pages) inside a hand-written page. A page
    without the markers is a programming error."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    head, found, rest = text.partition(begin)
    _, found_end, tail = rest.partition(end)
    if not found or not found_end:
        raise ValueError(f"markers {begin} ... {end} not found")
    return f"{head}{begin}\n{body.strip()}\n{end}{tail}"


def sync_generated(outputs: Mapping[Path, str], *, check: bool, command: str) -> int:
    """Write each generated file whose text changed, or with ``check`` only report the stale
    ones (exit status 1, with ``command`` as the fix)."""
    stale = []
    for path, text in outputs.items():
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current == text:
            continue
        if check:
            stale.append(str(path))
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print(f"{', '.join(stale)} stale: run {command}", file=sys.stderr)
        return 1
    return 0


def import_module_or_file(name: str, as_name: str) -> ModuleType:
    """A module by dotted name, or a ``.py`` file loaded as the module ``as_name`` (plug-in
    tiers, Python targets: the ``module:function`` / ``file.py:function`` spellings).
    A file that cannot be loaded raises :class:`FileNotFoundError`."""
    if not name.endswith(".py"):
        return importlib.import_module(name)
    path = Path(name)
    spec = importlib.util.spec_from_file_location(as_name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise FileNotFoundError(str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
