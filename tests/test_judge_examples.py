"""Labelled items harvested as graded examples for the judge's prompt (``ragmeter judge
examples``): the judge built from a config naming the examples file shows them in the prompt
of their metric (over a real socket to an OpenAI-compatible server), the judged result's
signature names them, and ``judge card`` leaves them out of agreement and of the
bias-corrected estimate — and refuses a run whose prompt carried examples the labels file
does not record."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from ragmeter.cli.app import run as cli
from ragmeter.judge_trust.labelling import run_task
from ragmeter.judge_trust.labels import load_labels
from ragmeter.judges.fewshot import load_shots
from ragmeter.results.store import ResultStore
from test_judge_label_session import label_n, make_run, session


def _labelled(tmp_path: Path, n: int = 60, k: int = 30) -> tuple[str, Path, dict[str, float]]:
    url = make_run(tmp_path, n=n)
    labels = tmp_path / "labels.jsonl"
    judge = run_task(ResultStore.open_readonly(url)[0].load_run("r1"), "faithfulness").values
    s = session(url, labels)
    label_n(s, "anna", k, lambda sid: int(judge[sid] if int(sid[1:]) % 4 else 1 - judge[sid]))
    s.close()
    return url, labels, judge


def _card(url: str, labels: Path, out: Path, run_id: str = "r1") -> dict[str, Any]:
    assert cli(["judge", "card", run_id, "--labels", str(labels), "--store", url, "--out",
                str(out), "--no-save"]) == 0
    return dict(json.loads(out.read_text(encoding="utf-8")))


def test_items_used_as_examples_never_enter_the_card(tmp_path: Path, capsys) -> None:
    url, labels, _judge = _labelled(tmp_path)
    before = _card(url, labels, tmp_path / "before.json")
    assert before["ppi"]["faithfulness"]["n_labelled"] == 30
    shots_file = tmp_path / "shots.jsonl"
    assert cli(["judge", "examples", "r1", "-l", str(labels), "-m", "faithfulness", "-k", "4",
                "-o", str(shots_file), "--store", url]) == 0
    shots = load_shots(shots_file)
    ids = {e.sample_id for e in shots.examples}
    labs = load_labels(labels)
    assert len(ids) == 4 and labs.examples("faithfulness") == ids
    assert len(labs.by_rater("faithfulness")["anna"]) == 30       # still the labeller's
    assert set(labs.values("faithfulness")).isdisjoint(ids) and \
        len(labs.values("faithfulness")) == 26
    for e in shots.examples:                 # the human grade and the sample's own texts
        assert e.label == labs.by_rater("faithfulness")["anna"][e.sample_id]
        assert e.sample_id in e.answer and len(e.contexts) == 2
    # the labelling session still counts them as labelled (it resumes after them)
    s = session(url, labels)
    assert s.resume_index("anna") == 30
    s.close()
    after = _card(url, labels, tmp_path / "after.json")
    ppi = after["ppi"]["faithfulness"]
    assert ppi["n_labelled"] == 26 and ppi["n_all"] == 56          # out of kappa, PPI and N
    assert after["judge_card"]["metrics"]["faithfulness"]["n"] == 26
    assert after["judge_card"]["meta"]["examples_held_out"] == {"faithfulness": 4}
    assert "left out as the judge's examples: faithfulness 4" in capsys.readouterr().err
    # more examples later: drawn from the labels not used yet
    assert cli(["judge", "examples", "r1", "-l", str(labels), "-m", "faithfulness", "-k", "2",
                "-o", str(tmp_path / "more.jsonl"), "--store", url]) == 0
    more = {e.sample_id for e in load_shots(tmp_path / "more.jsonl").examples}
    assert not more & ids and load_labels(labels).examples("faithfulness") == ids | more
    # asking for as many as are left is refused (nothing would grade the judge)
    assert cli(["judge", "examples", "r1", "-l", str(labels), "-m", "faithfulness", "-k", "24",
                "-o", str(tmp_path / "x.jsonl"), "--store", url]) == 2


def test_a_run_judged_with_examples_needs_the_labels_that_record_them(tmp_path: Path,
                                                                     capsys) -> None:
    url, labels, _ = _labelled(tmp_path)
    shots_file = tmp_path / "shots.jsonl"
    assert cli(["judge", "examples", "r1", "-l", str(labels), "-m", "faithfulness", "-k", "4",
                "-o", str(shots_file), "--store", url]) == 0
    digest = load_shots(shots_file).digest
    # the same samples judged again with the examples in the prompt (a second store)
    url2 = make_run(tmp_path, n=60, name="s2.sqlite", sig_extra={"shots": f"4@{digest}"})
    card = _card(url2, labels, tmp_path / "c2.json")
    assert card["ppi"]["faithfulness"]["n_labelled"] == 26
    # a run whose prompt carried other examples: its card is refused, with the reason
    url3 = make_run(tmp_path, n=60, name="s3.sqlite", sig_extra={"shots": "4@0123456789abcdef"})
    assert cli(["judge", "card", "r1", "--labels", str(labels), "--store", url3,
                "--no-save"]) == 2
    assert "carried graded examples (shots 4@0123456789abcdef)" in capsys.readouterr().err
    # a labels file without the examples line: the same refusal for the run judged with them
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(line + "\n" for line in labels.read_text("utf-8").splitlines()
                             if '"kind": "examples"' not in line), encoding="utf-8")
    assert cli(["judge", "card", "r1", "--labels", str(plain), "--store", url2,
                "--no-save"]) == 2
    assert "does not record" in capsys.readouterr().err


def test_the_judge_prompt_carries_the_examples_of_its_metric(tmp_path: Path) -> None:
    from ragmeter.judges import JudgeConfig, make_judge
    from ragmeter.judges.base import JudgeRequest
    from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

    url, labels, _ = _labelled(tmp_path)
    shots_file = tmp_path / "shots.jsonl"
    assert cli(["judge", "examples", "r1", "-l", str(labels), "-m", "faithfulness", "-k", "3",
                "-o", str(shots_file), "--store", url]) == 0
    shots = load_shots(shots_file)
    seen: list[dict[str, Any]] = []

    def reply(body: dict[str, Any], schema: Any) -> Any:
        seen.append(body)
        return {"verdict": "yes"}

    schema = {"type": "object", "properties": {"verdict": {"type": "string"}},
              "required": ["verdict"]}

    def req(metric: str, kind: str, text: str) -> JudgeRequest:
        return JudgeRequest(messages=({"role": "system", "content": "You grade answers."},
                                      {"role": "user", "content": text}),
                            schema=schema, prompt_version="gen.verify/v1", metric=metric,
                            kind=kind, sample_id=text)
    with MockJudgeServer(MockConfig(reply_fn=reply)) as srv:
        judge = make_judge(JudgeConfig(name="j", backend="openai", base_url=srv.base_url,
                                       model="m", api_key_env=None, examples=str(shots_file),
                                       no_cache=True))
        assert judge.shots_meta.digest == shots.digest
        judge.ask_many([req("faithfulness", "verify", "A"), req("faithfulness", "claims", "B"),
                        req("answer_relevance", "answer", "C")])
    by_user = {b["messages"][-1]["content"]: b["messages"][0]["content"] for b in seen}
    shown = by_user["A"]
    assert shown.startswith("You grade answers.") and "Examples graded by people" in shown
    for k, e in enumerate(shots.examples, 1):
        assert f"<example_{k}>" in shown and e.answer in shown
        assert f"Human grade: {int(e.label)}" in shown
    assert by_user["B"] == "You grade answers." == by_user["C"]   # extraction, other metric


def test_a_judged_run_names_its_examples_in_the_signature(tmp_path: Path, monkeypatch) -> None:
    from types import SimpleNamespace

    from typer.testing import CliRunner

    from ragmeter.cli.app import app
    from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "generation"))
    from fake_judge import make_script

    script = make_script()
    prompts: list[str] = []

    def reply(body: dict[str, Any], schema: Any) -> Any:
        prompts.append(body["messages"][0]["content"])
        return script(SimpleNamespace(schema=schema, messages=body["messages"]))

    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    url, labels, _ = _labelled(tmp_path)
    shots_file = tmp_path / "shots.jsonl"
    assert cli(["judge", "examples", "r1", "-l", str(labels), "-m", "faithfulness", "-k", "2",
                "-o", str(shots_file), "--store", url]) == 0
    digest = load_shots(shots_file).digest
    data = tmp_path / "s.jsonl"
    data.write_text(json.dumps({"id": "1", "user_input": "Where is Paris?",
                                "response": "Paris is in France.",
                                "retrieved_contexts": ["[rel=2] Paris is in France."]}) + "\n",
                    "utf-8")
    out = tmp_path / "res.json"
    with MockJudgeServer(MockConfig(reply_fn=reply)) as srv:
        cfg = tmp_path / "judges.yaml"
        cfg.write_text(f"judges:\n  - name: j\n    backend: openai\n    base_url: "
                       f"{srv.base_url}\n    model: m\n    examples: {shots_file}\n", "utf-8")
        res = CliRunner().invoke(app, ["score", "generation", "--samples", str(data), "--metrics",
                                       "faithfulness,context_relevance", "--judge-config",
                                       str(cfg), "--judge-key-env", "", "--out", str(out)])
    assert res.exit_code == 0, res.output
    saved = json.loads(out.read_text("utf-8"))["results"]
    assert f"shots:2@{digest}" in saved["faithfulness"]["signature"]
    assert "shots:" not in saved["context_relevance"]["signature"]
    assert sum("Examples graded by people for faithfulness" in p for p in prompts) >= 1
