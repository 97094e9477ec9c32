"""The floors of docs/ARCHITECTURE.md ("Layering"), held by a test.

Every import in ``src/ragmeter`` is collected with :mod:`ast` -- at module level, inside
functions and under ``TYPE_CHECKING`` alike (a types-only import still ties the lower module's
meaning to the higher one, so it needs an entry in ``ALLOWED`` like any other) -- and an import
from a higher floor fails unless ``ALLOWED`` names it with a reason. ``ALLOWED`` may only
shrink: an entry that no longer matches an import fails too, so it is removed when its import is.

The packages also form no cycle: two packages that import each other, in any direction and on
any floor (an allowed upward import included), or a longer loop, fail the test.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "ragmeter"
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"

# The floors of docs/ARCHITECTURE.md, by the first name under ``ragmeter.``; a second number
# orders the units of one floor ("within a floor errors <- the rest of floor 0 <- calls,
# results <- metrics, and judges <- cost, privacy <- retrieval <- metrics.judged <- generation
# <- targets"). A dotted unit
# (``metrics.judged``) is a package with a floor of its own, above its parent's. ``__init__`` is
# the front door (``import ragmeter``, lazily loading everything), above every floor.
FLOORS: dict[str, tuple[int, int]] = {
    "errors": (0, 0), "_version": (0, 0),
    "secrets": (0, 1), "text": (0, 1), "stats": (0, 1), "registry": (0, 1), "journal": (0, 1),
    "seeds": (0, 1), "paths": (0, 1), "controls": (0, 1), "schema": (0, 1), "bulk": (0, 1),
    "serving": (0, 1),
    "calls": (0, 2),
    "data": (1, 0), "results": (1, 0), "metrics": (1, 1),
    "judges": (2, 0), "privacy": (2, 1), "cost": (2, 1), "retrieval": (2, 2),
    "metrics.judged": (2, 3), "generation": (2, 4), "targets": (2, 5),
    "judge_trust": (3, 0), "synth": (3, 0),
    "tiers": (4, 0),
    "runner": (5, 0), "testing": (5, 0),
    "reports": (6, 0), "view": (6, 0),
    "cli": (7, 0), "demo": (7, 0), "__main__": (7, 0),
    "__init__": (8, 0),
}

# (importing file under src/ragmeter, imported module) -> why it runs against the floors.
# Each entry is also listed in the Layering table of docs/ARCHITECTURE.md.
ALLOWED: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    file: str       # relative to src/ragmeter
    line: int
    module: str     # the absolute module imported
    unit: str       # the importing unit (first name under ragmeter.)
    target: str     # the imported unit

    def describe(self) -> str:
        return (f"src/ragmeter/{self.file}:{self.line} imports {self.module}: "
                f"{self.unit} sits on floor {_floor_text(self.unit)}, {self.target} on floor "
                f"{_floor_text(self.target)}")


def _floor_text(unit: str) -> str:
    major, minor = FLOORS[unit]
    return f"{major}" if minor == 0 else f"{major} (rank {minor} within it)"


def _unit(module: str) -> str | None:
    """The first name under ``ragmeter.``; a name of the front door (``from ragmeter import
    evaluate_retrieval``) is the front door itself."""
    parts = module.split(".")
    if parts[0] != "ragmeter":
        return None
    if len(parts) == 1:
        return "__init__"
    if ".".join(parts[1:3]) in FLOORS:
        return ".".join(parts[1:3])
    is_module = (PACKAGE / f"{parts[1]}.py").is_file() or (PACKAGE / parts[1]).is_dir()
    return parts[1] if is_module else "__init__"


def _absolute(node: ast.ImportFrom, package: list[str]) -> list[str]:
    if node.level:
        base = package[:len(package) - node.level + 1]
        module = ".".join([*base, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    if module == "ragmeter" or (node.level and not node.module):
        return [f"{module}.{alias.name}" for alias in node.names]
    return [module]


def collect_imports() -> list[Import]:
    """Every ragmeter import of every module, wherever it sits in the file."""
    found: list[Import] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent)
        parts = list(rel.with_suffix("").parts)
        package = parts[:-1]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        me = _unit(".".join(parts))
        assert me is not None
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = _absolute(node, package)
            else:
                continue
            for module in modules:
                target = _unit(module)
                if target is not None and target != me:
                    found.append(Import(path.relative_to(PACKAGE).as_posix(), node.lineno,
                                        module, me, target))
    return found


def upward(imports: list[Import]) -> list[Import]:
    return [imp for imp in imports if FLOORS[imp.target] > FLOORS[imp.unit]]


def test_every_unit_has_a_floor() -> None:
    units = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").exists())}
    assert units - set(FLOORS) == set(), (
        f"new top-level module(s) {sorted(units - set(FLOORS))}: give each a floor in FLOORS "
        "here and in the Layering section of docs/ARCHITECTURE.md")


def test_no_import_runs_against_the_floors() -> None:
    bad = [imp for imp in upward(collect_imports())
           if (imp.file, imp.module) not in ALLOWED]
    assert not bad, (
        "imports against the floors of docs/ARCHITECTURE.md (Layering):\n  "
        + "\n  ".join(imp.describe() for imp in bad)
        + "\nMove the shared code down to the lower floor (or the caller up), pass the "
          "higher-floor object in as an argument, or -- only if the dependency is truly "
          "intended -- add (file, module) to ALLOWED in tests/test_architecture_floors.py with "
          "a one-line reason and list it in the Layering table of docs/ARCHITECTURE.md.")


def package_cycles(imports: list[Import]) -> list[list[str]]:
    """Every set of packages that import each other, directly or round a loop (the strongly
    connected components of the package graph with more than one package), each sorted."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.unit, set()).add(imp.target)
        graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:   # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _edges(imports: list[Import], units: list[str]) -> list[str]:
    within = set(units)
    return sorted({f"{imp.file}:{imp.line} ({imp.unit} -> {imp.target})" for imp in imports
                   if imp.unit in within and imp.target in within})


def test_no_package_cycle() -> None:
    imports = collect_imports()
    cycles = package_cycles(imports)
    assert not cycles, (
        "packages that import each other (a cycle in the package graph):\n  "
        + "\n  ".join(f"{' <-> '.join(c)}: " + "; ".join(_edges(imports, c)[:6])
                      for c in cycles)
        + "\nMove the shared code down, pass the higher object in as an argument, or let the "
          "higher package register into a hook of the lower one (ragmeter.registry.Registry).")


def test_the_cycle_check_finds_a_pair_and_a_loop() -> None:
    def imp(a: str, b: str) -> Import:
        return Import(f"{a}/x.py", 1, f"ragmeter.{b}", a, b)

    assert package_cycles([imp("data", "results"), imp("results", "data")]) == [
        ["data", "results"]]
    assert package_cycles([imp("runner", "tiers"), imp("tiers", "reports"),
                           imp("reports", "runner"), imp("view", "runner")]) == [
        ["reports", "runner", "tiers"]]
    assert package_cycles([imp("tiers", "data"), imp("runner", "tiers")]) == []


def test_allow_list_has_no_stale_entry() -> None:
    present = {(imp.file, imp.module) for imp in upward(collect_imports())}
    stale = sorted(set(ALLOWED) - present)
    assert not stale, (
        f"ALLOWED entries that match no upward import any more (remove them here and from the "
        f"Layering table of docs/ARCHITECTURE.md): {stale}")


def _layering_section() -> str:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    match = re.search(r"^## Layering\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, "docs/ARCHITECTURE.md has no '## Layering' section"
    return match.group(1)


def test_the_documented_floors_are_the_tested_floors() -> None:
    documented: dict[str, int] = {}
    for floor, names in re.findall(r"^floor (\d+)\s+(.+)$", _layering_section(), re.M):
        for name in re.findall(r"[a-z_.]+", names):
            documented[name] = int(floor)
    tested = {unit: major for unit, (major, _) in FLOORS.items()
              if not unit.startswith("_")}
    assert documented == tested


@pytest.mark.parametrize(("file", "module"), sorted(ALLOWED) or [pytest.param(
    "", "", marks=pytest.mark.skip(reason="no upward import is allowed"))])
def test_each_allowed_import_is_documented(file: str, module: str) -> None:
    section = _layering_section()
    short = module.removeprefix("ragmeter.")
    assert f"`{file}`" in section and short in section, (
        f"{file} -> {module} is allowed here but not listed in the Layering table of "
        "docs/ARCHITECTURE.md")
