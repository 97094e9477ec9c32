"""The pseudonym map file ($RAGMETER_PSEUDONYMISE_MAP) is the owner's alone and never written
through a link: created exclusively with mode 600, an existing file replaced atomically with
mode 600 (whatever its mode was), a symbolic link at the path refused with exit 2 before any
work. Real ``ragmeter --pseudonymise import`` processes, real files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.errors import DataError
from ragmeter.privacy.pseudonymise import load_map

ROOT = Path(__file__).parents[1]
needs_ner = pytest.mark.skipif(
    __import__("importlib").util.find_spec("natasha") is None,
    reason="needs the 'privacy' extra (pip install 'ragmeter[privacy]')")


def _import(tmp_path: Path, map_path: Path, umask: int = 0o022
            ) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "log.jsonl"
    rows = [{"id": "1", "question": "Меня зовут Иван Петров, телефон +7 912 345-67-89.",
             "answer": "Иван Петров, ваша заявка принята."}]
    src.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"),
           "RAGMETER_PSEUDONYMISE_MAP": str(map_path)}
    return subprocess.run([sys.executable, "-m", "ragmeter", "--pseudonymise", "traces", "import",
                           str(src), "--out", str(tmp_path / "s.jsonl")], capture_output=True,
                          text=True, timeout=300, env=env, cwd=tmp_path,
                          preexec_fn=lambda: os.umask(umask))


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.lstat().st_mode)


@needs_ner
def test_an_existing_map_file_is_replaced_atomically_with_mode_600(tmp_path: Path) -> None:
    map_path = tmp_path / "map.json"
    map_path.write_text("old contents", "utf-8")
    map_path.chmod(0o644)
    before = map_path.stat().st_ino
    out = _import(tmp_path, map_path)
    assert out.returncode == 0, out.stderr
    assert _mode(map_path) == 0o600
    assert map_path.stat().st_ino != before   # a new file renamed over the old one
    assert "Иван Петров" in load_map(map_path).values()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@needs_ner
def test_a_new_map_file_is_600_even_under_a_permissive_umask(tmp_path: Path) -> None:
    map_path = tmp_path / "keep" / "map.json"
    out = _import(tmp_path, map_path, umask=0)
    assert out.returncode == 0, out.stderr
    assert _mode(map_path) == 0o600


@needs_ner
def test_a_symlink_at_the_map_path_is_refused_with_exit_2(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch", "utf-8")
    victim.chmod(0o644)
    link = tmp_path / "map.json"
    link.symlink_to(victim)
    out = _import(tmp_path, link)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "map.json" in out.stderr and "symbolic link" in out.stderr
    assert "Traceback" not in out.stderr
    assert victim.read_text("utf-8") == "do not touch" and _mode(victim) == 0o644
    assert link.is_symlink()
    assert not (tmp_path / "s.jsonl").exists()   # refused before any work


def test_write_private_refuses_a_dangling_link_and_a_folder(tmp_path: Path) -> None:
    from ragmeter.privacy.pseudonymise import write_private

    link = tmp_path / "m.json"
    link.symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(DataError, match="symbolic link"):
        write_private(link, "{}")
    assert not (tmp_path / "nowhere.json").exists()
    with pytest.raises(DataError, match="folder"):
        write_private(tmp_path, "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]
