"""ragmeter where users already work: a pytest gate whose failure names the three worst samples
(question, answer, reason), a plain function as the judge, loader results passed as samples,
per-sample DataFrames, JUnit XML from ``check``, ``runs list --tag`` and shell completion."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from ragmeter.results.store import ResultStore

ROOT = Path(__file__).parents[1]
FAKE = ROOT / "tests" / "fixtures" / "generation"
_spec = importlib.util.spec_from_file_location(
    "runner_builders", ROOT / "tests" / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]

RECORDS = [
    {"id": f"s{i}", "question": f"Where is Paris? (variant {i})",
     "answer": ("Paris is in France." if i % 2 == 0 else f"Paris is on the Moon ({i})."),
     "contexts": ["Paris is in France.", "Paris has 2 million people."],
     "ground_truth": "Paris is in France."}
    for i in range(6)]


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{FAKE}"}
    env.pop("RAGMETER_STORE_URL", None)
    return env


def test_failing_pytest_gate_names_the_three_worst_samples(tmp_path):
    test = tmp_path / "test_my_rag.py"
    test.write_text(textwrap.dedent(f"""
        import ragmeter
        from ragmeter.data.loaders import from_records
        from fake_judge import make_script

        pytest_plugins = ["ragmeter.testing"]
        RECORDS = {RECORDS!r}

        def test_answers_are_faithful(rag_gate):
            loaded = from_records(RECORDS)           # a LoadResult, passed as it is
            judge = make_script()                    # a plain function: request -> reply
            result = ragmeter.evaluate_generation(loaded, ["faithfulness"], judge=judge)
            rag_gate(result, min={{"faithfulness": 0.9}})
    """), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "pytest", str(test), "-q", "-p",
                          "no:cacheprovider"], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path, env=_env())
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "1 of 1 metric check(s) failed" in text
    assert "worst samples of generation:faithfulness:" in text
    # the failure's own report (pytest repeats it untruncated in the summary when CI is set)
    worst = text.split("worst samples of generation:faithfulness:", 1)[1]
    worst = worst.split("short test summary info", 1)[0]
    listed = re.findall(r"- (s\d) \(", worst)
    assert listed == ["s1", "s3", "s5"]  # the three answers about the Moon, value 0
    assert "question: Where is Paris? (variant 1)" in worst
    assert "answer:   Paris is on the Moon (1)." in worst
    assert "reason:   Paris is on the Moon (1).:" in worst  # the unsupported claim, named
    assert "ragmeter quality gates" in text and "FAILED" in text


def test_to_pandas_wide_and_long_with_text_value_and_reason():
    pd = pytest.importorskip("pandas")
    sys.path.insert(0, str(FAKE))
    from fake_judge import make_script

    import ragmeter
    from ragmeter.data.loaders import from_records

    result = ragmeter.evaluate_generation(from_records(RECORDS), ["faithfulness"],
                                          judge=make_script())
    wide = result.to_pandas()
    assert list(wide.columns) == ["sample_id", "question", "answer", "contexts", "reference",
                                  "faithfulness", "faithfulness:reason"]
    assert len(wide) == 6 and wide.loc[0, "question"] == "Where is Paris? (variant 0)"
    assert wide.loc[0, "faithfulness"] == 1.0 and wide.loc[1, "faithfulness"] == 0.0
    assert "Moon" in wide.loc[1, "faithfulness:reason"]
    assert wide.loc[0, "contexts"] == ["Paris is in France.", "Paris has 2 million people."]
    long = result.to_pandas("long")
    assert isinstance(long, pd.DataFrame) and len(long) == 6
    assert set(long.columns) >= {"question", "answer", "contexts", "metric", "value", "reason"}
    with pytest.raises(Exception, match="shape"):
        result.to_pandas("tall")


def test_a_plain_function_is_a_judge():
    from ragmeter import make_judge

    def my_judge(request):
        return {"verdict": "yes"}
    judge = make_judge(my_judge)
    assert hasattr(judge, "ask_many") and judge.config.name == "my_judge"


def _stored(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    store = ResultStore(url)
    for i, (rid, tags) in enumerate((("run-a", ["nightly"]), ("run-b", ["nightly", "ab"]),
                                     ("run-c", []))):
        run = builders.make_run(rid, n=8)
        run.created_at = f"2026-05-0{i + 1}T00:00:00+00:00"
        run.meta["tags"] = tags
        store.save_run(run)
    store.engine.dispose()
    store._write_engine.dispose()
    return url


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragmeter", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=_env())


def test_check_writes_junit_xml_with_the_worst_samples(tmp_path):
    url = _stored(tmp_path)
    out = _cli("gate", "run-b", "--store", url, "--min", "bm25:mrr=0.99", "--min",
               "bm25:hit_rate@10=0.1", "--junit", str(tmp_path / "ci" / "gate.xml"), cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    root = ET.parse(tmp_path / "ci" / "gate.xml").getroot()
    suite = root.find("testsuite")
    assert suite is not None and suite.get("tests") == "2" and suite.get("failures") == "1"
    failed = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert len(failed) == 1 and failed[0].get("name", "").startswith("mrr")
    body = failed[0].find("failure").text or ""
    assert body.count("question:") == 3 and "Как оформить отпуск номер" in body
    assert "worst samples of retrieval/bm25:mrr" in out.stdout


def test_runs_list_by_tag(tmp_path):
    url = _stored(tmp_path)
    one = json.loads(_cli("runs", "list", "--store", url, "--tag", "nightly", "--json",
                          cwd=tmp_path).stdout)
    both = json.loads(_cli("runs", "list", "--store", url, "--tag", "nightly", "--tag", "ab",
                           "--json", cwd=tmp_path).stdout)
    assert [r["id"] for r in one] == ["run-b", "run-a"]
    assert [r["id"] for r in both] == ["run-b"]


def test_shell_completion_completes_commands(tmp_path):
    env = {**_env(), "_RAGMETER_COMPLETE": "complete_bash", "COMP_WORDS": "ragmeter ru",
           "COMP_CWORD": "1"}
    out = subprocess.run([sys.executable, "-m", "ragmeter"], capture_output=True, text=True,
                         timeout=120, env=env, cwd=tmp_path)
    words = out.stdout.split()
    assert "run" in words and "runs" in words, out.stdout + out.stderr
    show = _cli("--show-completion", "bash", cwd=tmp_path)
    assert show.returncode == 0 and "complete" in show.stdout
