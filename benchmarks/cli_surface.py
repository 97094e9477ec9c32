"""The command line's surface and its start-up cost: top-level entries, leaf commands, options
(declared per leaf command, and distinct spellings), and the CPU time of a few light
invocations and of one shell Tab (each in a fresh process, best of N).

    python benchmarks/cli_surface.py [--repeat 5] [--src DIR]

``--src`` measures another source tree (an earlier version unpacked with ``git archive``); the
surface is counted in a child process run on that tree.

CPU seconds (user + system of the child) are reported, not wall time: they hold on a loaded
machine. The Tab is timed with the completion table already written (as after the first Tab).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _leaves(cmd: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    subs = getattr(cmd, "commands", None)
    if not subs:
        return [(path, cmd)]
    out = []
    for name, sub in subs.items():
        if not getattr(sub, "hidden", False):
            out.extend(_leaves(sub, (*path, name)))
    return out


def surface() -> dict[str, Any]:
    from ragmeter.cli.app import click_command

    root = click_command()
    top = [n for n, c in root.commands.items() if not getattr(c, "hidden", False)]
    leaves = _leaves(root)
    per_leaf = 0
    spellings: set[str] = set()
    for _, leaf in leaves:
        for p in leaf.params:
            opts = [o for o in getattr(p, "opts", []) if o.startswith("-")]
            if opts and not getattr(p, "hidden", False):
                per_leaf += 1
                spellings.add(max(opts, key=len))
    return {"top_level": len(top), "top_names": sorted(top), "leaf_commands": len(leaves),
            "options": per_leaf, "distinct_options": len(spellings)}


def _cpu(argv: list[str], env: dict[str, str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return best


def timings(repeat: int, src: Path) -> dict[str, float]:
    cache = tempfile.mkdtemp(prefix="ragmeter-surface-")
    env = {**os.environ, "PYTHONPATH": str(src), "RAGMETER_CACHE_DIR": cache}
    py = [sys.executable, "-c", "from ragmeter.cli.entry import main; main()"]
    out = {"import ragmeter": _cpu([sys.executable, "-c", "import ragmeter"], env, repeat)}
    words = _retrieval_words()
    for label, args in (("--help", ["--help"]),
                        (f"{' '.join(words)} --help", [*words, "--help"]),
                        (f"{' '.join(words)} --no-such-flag", [*words, "--no-such-flag"]),
                        ("retrieval --help (old name)", ["retrieval", "--help"])):
        if label.endswith("(old name)") and words == ["retrieval"]:
            continue
        out[f"ragmeter {label}"] = _cpu([*py, *args], env, repeat)
    tab = {**env, "_RAGMETER_COMPLETE": "complete_bash", "COMP_WORDS": "ragmeter ",
           "COMP_CWORD": "1"}
    subprocess.run(py, env=tab, stdout=subprocess.DEVNULL, check=False)  # writes the table
    out["one Tab (table written)"] = _cpu(py, tab, repeat)
    return out


def _retrieval_words() -> list[str]:
    """The words of the retrieval command (``score retrieval``; ``retrieval`` before the
    command line was regrouped)."""
    try:
        from ragmeter.cli.names import RENAMED
    except ImportError:
        return ["retrieval"]
    return list(RENAMED["retrieval"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--src", type=Path, default=ROOT / "src")
    args = ap.parse_args()
    src = args.src.resolve()
    if src != (ROOT / "src").resolve() and "ragmeter" not in sys.modules:
        sys.path.insert(0, str(src))
    s = surface()
    print(f"top-level entries: {s['top_level']}  ({', '.join(s['top_names'])})")
    print(f"leaf commands: {s['leaf_commands']}  options (per leaf command): {s['options']}  "
          f"distinct option spellings: {s['distinct_options']}")
    for label, cpu in timings(args.repeat, src).items():
        print(f"{label:<34} {cpu * 1000:7.0f} ms CPU (best of {args.repeat})")


if __name__ == "__main__":
    main()
