"""The console entry: one BLAS thread for commands that do no matrix work, nothing else changed."""

from __future__ import annotations

import subprocess
import sys

from ragmeter.cli.entry import SINGLE_BLAS_THREAD, single_blas_thread


def test_retrieval_command_asks_for_one_blas_thread() -> None:
    env: dict[str, str] = {}
    assert single_blas_thread(["score", "retrieval", "--qrels", "q", "--run", "r"], env)
    assert env == {"OPENBLAS_NUM_THREADS": "1"}


def test_commands_that_embed_keep_numpys_default_threads() -> None:
    for argv in (["run", "bench.yaml"], ["score", "generation", "-s", "x"],
                 ["score", "baselines"], ["score", "tier0"], ["generation", "-s", "x"],
                 ["-v", "demo"], []):
        env: dict[str, str] = {}
        assert not single_blas_thread(argv, env)
        assert env == {}


def test_a_thread_count_the_user_set_is_kept() -> None:
    for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        env = {key: "4"}
        assert not single_blas_thread(["retrieval"], env)
        assert env == {key: "4"}


def test_every_single_thread_command_exists() -> None:
    from ragmeter.cli.lazy import COMMAND_MODULES

    names = set(COMMAND_MODULES) | {k.split(" ")[0] for k in COMMAND_MODULES}
    assert names >= SINGLE_BLAS_THREAD


def test_new_and_old_names_of_a_command_ask_alike() -> None:
    for argv in (["score", "retrieval", "-q"], ["-q", "retrieval"], ["gate", "latest"],
                 ["check", "latest"], ["traces", "import", "x"], ["import", "x"],
                 ["judge", "cache", "info"], ["cache", "info"]):
        env: dict[str, str] = {}
        assert single_blas_thread(argv, env), argv
    for argv in (["score", "generation"], ["judge", "bench"], ["score", "baselines"]):
        assert not single_blas_thread(argv, {}), argv


def test_import_ragmeter_does_not_load_numpy() -> None:
    code = ("import sys, ragmeter, ragmeter.cli.entry; assert 'numpy' not in sys.modules; "
            "print(ragmeter.Sample.__name__, ragmeter.compare_results.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["Sample", "compare_results"]
