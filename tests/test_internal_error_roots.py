"""Inputs that used to end in an internal error (exit 4) are exit-2 errors naming the file,
line, option or key."""
from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmeter.cli.app import run as cli
from ragmeter.errors import ConfigError

SAMPLE = {"id": "q1", "question": "Сколько?", "answer": "950.", "reference": "950 р.",
          "retrieved_ids": ["d1#0"], "gold_doc_ids": ["d1"]}


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    code = cli(argv)
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    return code, err


def test_integer_of_5000_digits_names_file_line_and_column(tmp_path: Path, capsys) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(SAMPLE) + "\n" + '{"id": "q2", "question": "q", "answer": "a", '
                 '"n": ' + "9" * 5000 + "}\n", "utf-8")
    code, err = _cli(["score", "generation", "--samples", str(p), "--metrics", "rouge_1"], capsys)
    assert code == 2 and "s.jsonl:2" in err and "5000 digits" in err


def test_integer_of_5000_digits_in_qrels_json(tmp_path: Path, capsys) -> None:
    q = tmp_path / "q.json"
    q.write_text('{"q1": {"d1": ' + "1" * 5000 + "}}", "utf-8")
    r = tmp_path / "r.txt"
    r.write_text("q1 Q0 d1 1 1.0 t\n", "utf-8")
    code, err = _cli(["score", "retrieval", "--qrels", str(q), "--run", str(r)], capsys)
    assert code == 2 and "q.json" in err and "digits" in err


@pytest.mark.parametrize("seed", ["-1", str(2 ** 32), str(2 ** 70)])
@pytest.mark.parametrize("command", [["score", "generation", "--metrics", "rouge_1"],
                                     ["score", "retrieval"]])
def test_seed_outside_its_range_names_the_option(tmp_path: Path, capsys, seed: str,
                                                 command: list[str]) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(SAMPLE) + "\n", "utf-8")
    code, err = _cli([*command[:2], "--samples", str(p), *command[2:], "--seed", seed],
                     capsys)
    assert code == 2 and "option '--seed'" in err


def test_config_seed_2_pow_70_is_refused_when_read_not_at_save(tmp_path: Path, capsys) -> None:
    data = tmp_path / "s.jsonl"
    data.write_text(json.dumps(SAMPLE) + "\n", "utf-8")
    cfg = tmp_path / "b.yaml"
    cfg.write_text(f"name: t\nseed: {2 ** 70}\nstore: {tmp_path / 'r.sqlite'}\ndatasets:\n"
                   f"  - path: {data}\ntiers: [generation]\n", "utf-8")
    code, err = _cli(["run", str(cfg)], capsys)
    assert code == 2 and "config key 'seed'" in err
    assert not (tmp_path / "r.sqlite").exists()  # refused before any work


def test_tier0_input_not_utf8_and_lone_surrogates(tmp_path: Path, capsys) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes('{"text": "й текст", "label": "a"}\n'.encode("cp1251"))
    code, err = _cli(["score", "tier0", str(p)], capsys)
    assert code == 2 and "t.jsonl:1" in err and "UTF-8" in err
    p.write_text('{"text": "bad \\udc80 text", "label": "a"}\n'
                 '{"text": "good", "label": "b"}\n', "utf-8")
    code, err = _cli(["score", "tier0", str(p)], capsys)
    assert code == 2 and "t.jsonl:1" in err and "surrogate" in err


def test_lone_surrogate_in_samples_is_a_data_error(tmp_path: Path, capsys) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text('{"id": "a", "question": "\\udc80 q", "answer": "x", "reference": "x"}\n',
                 "utf-8")
    code, err = _cli(["score", "generation", "--samples", str(p), "--metrics", "rouge_1"], capsys)
    assert code == 2 and "s.jsonl:1" in err and "surrogate" in err


def test_target_width_negative_names_the_option(tmp_path: Path, capsys) -> None:
    labels = tmp_path / "l.jsonl"
    labels.write_text('{"sample_id": "q1", "metric": "faithfulness", "label": "yes"}\n', "utf-8")
    code, err = _cli(["judge", "card", "latest", "--labels", str(labels), "--store",
                      f"sqlite:///{tmp_path / 's.sqlite'}", "--target-width", "-0.1"], capsys)
    assert code == 2 and "--target-width" in err


SPRING = {"spring": {"ai": {
    "openai": {"base-url": "http://x", "api-key": "${K}",
               "chat": {"options": {"model": "m", "temperature": 0.1, "max-tokens": 100}}},
    "chat-models": {"default-options": {"temperature": 0.2}, "list": [{"id": "a/b"}]},
    "retry": {"backoff": {"initial-interval": "2s", "multiplier": 2}}}}}
JUDGES = {"defaults": {"temperature": 0.1, "retry": {"max_attempts": 3}}, "prices": {"m": [1, 2]},
          "judges": [{"name": "j", "backend": "openai", "base_url": "http://x/v1", "model": "m"}]}
WRONG = [3, "x", [1], True, None, {"a": 1}, 1.5, "1.2.3", ["x", "y"], [None, None]]


def _paths(d: object, pre: tuple = ()) -> Iterator[tuple]:
    items = d.items() if isinstance(d, dict) else enumerate(d) if isinstance(d, list) else ()
    for k, v in items:
        yield (*pre, k)
        yield from _paths(v, (*pre, k))


def test_wrongly_typed_judge_config_sections_are_config_errors() -> None:
    from ragmeter.judges.config import configs_from_mapping

    crashes = []
    for base in (SPRING, JUDGES):
        for path in _paths(base):
            for wrong in WRONG:
                doc = copy.deepcopy(base)
                cur: object = doc
                for k in path[:-1]:
                    cur = cur[k]  # type: ignore[index]
                cur[path[-1]] = wrong  # type: ignore[index]
                try:
                    configs_from_mapping(doc)
                except ConfigError:
                    pass
                except Exception as exc:
                    crashes.append(f"{path}={wrong!r}: {type(exc).__name__}: {exc}")
    assert not crashes, "\n".join(crashes[:20])


def test_wrongly_typed_judge_config_file_exits_2(tmp_path: Path, capsys) -> None:
    data = tmp_path / "s.jsonl"
    data.write_text(json.dumps(SAMPLE) + "\n", "utf-8")
    jc = tmp_path / "j.yaml"
    jc.write_text("defaults: 3\njudges:\n  - name: j\n    backend: openai\n"
                  "    base_url: http://127.0.0.1:9/v1\n    model: m\n", "utf-8")
    code, err = _cli(["score", "generation", "--samples", str(data), "--metrics", "faithfulness",
                      "--judge-config", str(jc)], capsys)
    assert code == 2 and "'defaults'" in err
