"""Where a command writes: ``init -`` is stdout (no file named '-'), ``view --port 0`` picks a
free port as ``mock-judge --port 0`` does."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ragmeter.cli.app import run as cli


def test_init_dash_writes_the_config_to_stdout(tmp_path: Path, capsys,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = cli(["init", "-"])
    out = capsys.readouterr().out
    assert code == 0 and "ragmeter run" in out and "tiers:" in out
    assert not (tmp_path / "-").exists()


def test_view_port_zero_picks_a_free_port(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import ragmeter.view as view_pkg

    seen: dict[str, int] = {}

    def fake_serve(store, *, port, **kwargs):  # type: ignore[no-untyped-def]
        seen["port"] = port

    monkeypatch.setattr(view_pkg, "serve", fake_serve)
    assert cli(["view", "--port", "0"]) == 0
    assert 0 < seen["port"] < 65536
    with socket.socket() as s:  # the port is free to bind
        s.bind(("127.0.0.1", seen["port"]))
    assert cli(["view", "--port", "-1"]) == 2
