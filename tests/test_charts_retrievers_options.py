"""`ragmeter score baselines` rejects a bad --chunk-size / --overlap / -k as a usage error (exit 2,
one line naming the option) before it reads a file or writes the output folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.cli.app import run


@pytest.mark.parametrize("args, option", [
    (["--chunk-size", "0"], "--chunk-size"),
    (["--chunk-size", "-5"], "--chunk-size"),
    (["--chunk-size", "100", "--overlap", "100"], "--overlap"),
    (["--chunk-size", "100", "--overlap", "250"], "--overlap"),
    (["--overlap", "-1"], "--overlap"),
    (["-k", "0,5"], "-k"),
])
def test_bad_chunking_option_is_a_usage_error_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], option: str) -> None:
    out = tmp_path / "out"
    missing = tmp_path / "no-such-corpus.jsonl"  # would fail later if it were read
    code = run(["score", "baselines", "--corpus", str(missing), "--evalset",
                str(tmp_path / "no-such-evalset.jsonl"), "--out", str(out), *args])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert code == 2, text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and f"option '{option}'" in lines[0], text
    assert "no-such" not in text and "Traceback" not in text
    assert not out.exists()
