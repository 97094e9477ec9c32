"""Numbers scored from ``ragmeter serve mock-judge`` replies are labelled as mock everywhere: the
signature, the console, the HTML report (and so the dashboard) and the Markdown summary."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ragmeter.cli.app import run as cli
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.results.store import ResultStore, TierRecord

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "generation"))
from fake_judge import make_script

SCRIPT = make_script()


def _reply(body, schema):
    return SCRIPT(SimpleNamespace(schema=schema, messages=body["messages"]))


def _generation(tmp_path: Path, mark: bool, capsys) -> tuple[dict, str]:
    data = tmp_path / "s.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "user_input": f"Where is city {i}?",
                                        "response": f"City {i}."}) + "\n" for i in range(4)),
                    "utf-8")
    out = tmp_path / f"o{int(mark)}.json"
    with MockJudgeServer(MockConfig(reply_fn=_reply, mark_replies=mark)) as srv:
        code = cli(["score", "generation", "--samples", str(data), "--metrics", "answer_relevance",
                    "--judge-url", srv.base_url, "--judge-model", "m", "--judge-key-env", "",
                    "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    return json.loads(out.read_text("utf-8")), text


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "250")


def test_mock_replies_put_mock_in_the_signature_and_console(tmp_path: Path, capsys) -> None:
    saved, text = _generation(tmp_path, True, capsys)
    assert "|mock:yes" in saved["results"]["answer_relevance"]["signature"]
    assert saved["meta"]["judge_calls"]["mock"] is True
    assert "MOCK judge" in text


def test_unmarked_replies_are_not_called_mock(tmp_path: Path, capsys) -> None:
    saved, text = _generation(tmp_path, False, capsys)
    assert "mock:yes" not in saved["results"]["answer_relevance"]["signature"]
    assert "MOCK judge" not in text


def test_report_summary_and_dashboard_label_mock_numbers(tmp_path: Path, capsys) -> None:
    from ragmeter.reports.html import render_run_html
    from ragmeter.reports.markdown import run_markdown
    from ragmeter.results.records import EvalResult

    saved, _ = _generation(tmp_path, True, capsys)
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    ResultStore(url).save_run(name="r", tiers={"generation": TierRecord(
        "generation", results=[EvalResult.from_dict(saved)])}, run_id="r1", git=False)
    run = ResultStore(url).load_run("r1")
    html = render_run_html(run)
    assert 'id="mock-banner"' in html and "mock-judge" in html
    assert "Mock judge" in run_markdown(run, lang="en")
    from ragmeter.view.pages import run_page

    body, _ = run_page(run, "en")
    assert 'id="mock-banner"' in body


def test_mock_numbers_get_no_quality_band() -> None:
    from ragmeter.reports.bands import from_demo_judge

    assert from_demo_judge([], {"judge": "j", "mock": "yes"})
    assert not from_demo_judge([], {"judge": "j"})
