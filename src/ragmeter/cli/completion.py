"""Shell completion that answers a Tab without building the command line.

Building every command (typer's parameter adapters load pydantic) takes about half a second —
too slow for a key press. So the command tree's names, options and help lines are written once
to a small JSON table (``<cache dir>/completion/<version>-<state>.json``, the state of the
command modules' files; also when completion is installed) and each Tab reads it: the words typed so far walk down the commands, a word that
starts with ``-`` completes the current command's options, anything else its subcommands.
bash, zsh and fish are answered in the formats typer's own completion scripts read; any other
shell, or a table that cannot be written, goes through typer's completion on the whole tree.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter._version import __version__

#: the environment variable of shell completion (``--install-completion`` sets it up)
COMPLETE_VAR = "_RAGMETER_COMPLETE"
SHELLS = ("complete_bash", "complete_zsh", "complete_fish")


def table_path() -> Path:
    """Where the table is kept: one file per version and state of the command modules (a
    command renamed or an option added writes a new table; a few ``stat`` calls)."""
    import hashlib

    root = os.environ.get("RAGMETER_CACHE_DIR") or str(Path.home() / ".cache" / "ragmeter")
    here = Path(__file__).parent
    state = hashlib.sha256()
    for f in sorted([*here.glob("*.py"), *here.glob("commands/*.py")]):
        try:
            st = f.stat()
        except OSError:
            continue
        state.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return Path(root) / "completion" / f"{__version__}-{state.hexdigest()[:12]}.json"


def describe(cmd: Any) -> dict[str, Any]:
    """A click command as the table keeps it: its options (names, whether they take a value,
    help) and its subcommands, recursively."""
    opts = []
    for p in getattr(cmd, "params", []):
        names = [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])]
        if names and names[0].startswith("-") and not getattr(p, "hidden", False):
            opts.append({"names": names, "flag": bool(getattr(p, "is_flag", False)
                                                      or getattr(p, "count", False)),
                         "help": (getattr(p, "help", "") or "").split("\n")[0][:120]})
    subs = {name: describe(sub) for name, sub in (getattr(cmd, "commands", None) or {}).items()
            if not getattr(sub, "hidden", False)}
    help_text = (getattr(cmd, "short_help", None) or getattr(cmd, "help", "") or "")
    return {"help": help_text.strip().split("\n")[0][:120], "options": opts, "commands": subs}


def load_table(build: Any) -> dict[str, Any] | None:
    """The completion table (written from ``build()``, the whole click tree, when missing);
    None when it can be neither read nor written."""
    path = table_path()
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        pass
    table = describe(build())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        return table
    return table


def _args(environ: Mapping[str, str], shell: str) -> tuple[list[str], str]:
    """The words before the cursor (after ``ragmeter``) and the word being completed."""
    if shell == "complete_bash":
        words = _split(environ.get("COMP_WORDS", ""))
        try:
            cword = int(environ.get("COMP_CWORD", len(words)))
        except ValueError:
            cword = len(words)
        return words[1:cword], (words[cword] if cword < len(words) else "")
    line = environ.get("_TYPER_COMPLETE_ARGS", "")
    words = _split(line)[1:]
    if words and not line.endswith(" "):
        return words[:-1], words[-1]
    return words, ""


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def candidates(table: Mapping[str, Any], args: Sequence[str], incomplete: str
               ) -> list[tuple[str, str]]:
    """(value, help) pairs for the word being completed."""
    node: Mapping[str, Any] = table
    expects_value = False
    for word in args:
        if expects_value:
            expects_value = False
            continue
        if word.startswith("-"):
            name = word.split("=", 1)[0]
            opt = next((o for o in node["options"] if name in o["names"]), None)
            expects_value = opt is not None and not opt["flag"] and "=" not in word
            continue
        sub = node["commands"].get(word)
        if sub is not None:
            node = sub
    if expects_value:
        return []  # an option's value: the shell's own (files) completion
    if incomplete.startswith("-"):
        return [(n, o["help"]) for o in node["options"] for n in o["names"]
                if n.startswith(incomplete)]
    return [(name, sub["help"]) for name, sub in node["commands"].items()
            if name.startswith(incomplete)]


def _format(shell: str, items: Sequence[tuple[str, str]]) -> str:
    if shell == "complete_bash":
        return "\n".join(v for v, _ in items)
    if shell == "complete_fish":
        return "\n".join(f"{v}\t{h}" if h else v for v, h in items)

    def esc(s: str) -> str:
        return s.replace('"', '""').replace("'", "''").replace("$", "\\$").replace("`", "\\`")
    if not items:
        return "_files"
    shown = "\n".join(f'"{esc(v)}":"{esc(h)}"' if h else f'"{esc(v)}"' for v, h in items)
    return f"_arguments '*: :(({shown}))'"


def answer(environ: Mapping[str, str], build: Any) -> str | None:
    """The completion a Tab prints, or None when this call is not one the table answers."""
    shell = environ.get(COMPLETE_VAR, "")
    if shell not in SHELLS:
        return None
    table = load_table(build)
    if table is None:
        return None
    args, incomplete = _args(environ, shell)
    return _format(shell, candidates(table, args, incomplete))


__all__ = ["COMPLETE_VAR", "answer", "candidates", "describe", "load_table", "table_path"]
