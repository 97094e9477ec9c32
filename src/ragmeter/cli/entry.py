"""The ``ragmeter`` command's first module: process settings that must precede numpy's import.

numpy's OpenBLAS starts one worker thread per core when it loads, and the workers spin while
idle: about 0.1 s of CPU per invocation on a 2-core machine, for nothing where a command does no
large matrix product. Commands that never embed text therefore run with one BLAS thread, unless
the user set ``OPENBLAS_NUM_THREADS`` (or ``OMP_NUM_THREADS``) themselves. Commands that embed
(dense retrieval, semantic similarity, the full benchmark) keep numpy's default.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

#: commands that do no large matrix product (no embedding model); a group's name alone
#: stands for all of its commands
SINGLE_BLAS_THREAD = frozenset({"score retrieval", "report", "compare", "runs", "gate",
                                "metrics", "judge cache", "init", "traces", "view",
                                "serve mock-judge"})


def single_blas_thread(argv: Sequence[str], environ: dict[str, str] | None = None) -> bool:
    """Ask for one BLAS thread when ``argv``'s command does no matrix work and the user left the
    thread count alone; True when it did. Must run before numpy is imported."""
    from ragmeter.cli.names import command_words

    env = os.environ if environ is None else environ
    words = command_words(argv)[1]
    if not words or (" ".join(words[:2]) not in SINGLE_BLAS_THREAD
                     and words[0] not in SINGLE_BLAS_THREAD):
        return False
    if "OPENBLAS_NUM_THREADS" in env or "OMP_NUM_THREADS" in env:
        return False
    env["OPENBLAS_NUM_THREADS"] = "1"
    return True


def main() -> None:
    """Console-script entry point (``ragmeter``): settings first, then the command line; a
    shell's Tab is answered from the completion table without loading the command line."""
    from ragmeter.cli import completion

    if os.environ.get(completion.COMPLETE_VAR):
        def build() -> object:
            from ragmeter.cli.app import click_command
            return click_command()
        text = completion.answer(os.environ, build)
        if text is not None:
            sys.stdout.write(text + ("\n" if text else ""))
            sys.exit(0)
    if "numpy" not in sys.modules:
        single_blas_thread(sys.argv[1:])
    from ragmeter.cli.app import main as run_cli

    run_cli()
