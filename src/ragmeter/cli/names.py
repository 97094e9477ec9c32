"""The names of the command line: its groups, and the old names that still work for a while.

One name per concept: the tiers scored one at a time are ``score <tier>``, everything about the
LLM judge is under ``judge``, a synthetic test set is made by ``testset generate`` (never
confused with the ``generation`` tier), production traces come in and scores go back out
under ``traces``, and the local servers run under ``serve``. Pure data: the console entry
reads it before anything heavy is imported.

The old names (``ragmeter retrieval``, ``ragmeter judge-quality``, ``ragmeter check`` ...)
keep working until :data:`OLD_NAMES_UNTIL` with a one-line notice on stderr; they are no
command of the tree, so ``--help`` and shell completion list only the new names.
"""

from __future__ import annotations

from collections.abc import Sequence

#: command groups -> their help line
GROUPS: dict[str, str] = {
    "score": "Score one tier from files, without a benchmark config (`ragmeter run` runs a "
             "whole config).",
    "judge": "The LLM judge: check and trust it, grade its quality, the production judge, "
             "its cache.",
    "testset": "Synthetic test sets generated from your knowledge base.",
    "traces": "Production traces: import them as samples, export scores back to your "
              "tracing tool.",
    "serve": "Local servers to try ragmeter on: the reference RAG service, a fake judge.",
    "runs": "Runs in the results store: list, show, export.",
}

#: the order of the top-level entries in ``ragmeter --help`` (a name not listed comes last)
ORDER = ("run", "score", "judge", "label", "testset", "traces", "gate", "compare", "report", "view",
         "runs", "init", "demo", "metrics", "serve")

#: an old command name -> the words of its new name
RENAMED: dict[str, tuple[str, ...]] = {
    "retrieval": ("score", "retrieval"),
    "generation": ("score", "generation"),
    "tier0": ("score", "tier0"),
    "ux": ("score", "ux"),
    "real-users": ("score", "real-users"),
    "retrievers": ("score", "baselines"),
    "judge-quality": ("judge", "quality"),
    "judge-pipeline": ("judge", "pipeline"),
    "cache": ("judge", "cache"),
    "check": ("gate",),
    "generate": ("testset", "generate"),
    "import": ("traces", "import"),
    "export": ("traces", "export"),
    "serve-example": ("serve", "example"),
    "mock-judge": ("serve", "mock-judge"),
}

#: the release that drops the old names
OLD_NAMES_UNTIL = "0.3"

#: the root's flags (no value), which may stand before the command's name
ROOT_FLAGS = frozenset({"--debug", "--verbose", "-v", "--quiet", "-q", "--json",
                        "--pseudonymise", "-vv", "-vvv"})


def command_words(argv: Sequence[str]) -> tuple[int, tuple[str, ...]]:
    """Where the command's name starts in ``argv`` and its words, old names mapped to new
    ones: ``["-q", "retrieval", "--qrels", "q"]`` -> ``(1, ("score", "retrieval"))``; a
    group's second word is included when one follows (``judge card`` -> both words)."""
    pos = next((i for i, a in enumerate(argv) if a not in ROOT_FLAGS), len(argv))
    if pos == len(argv) or argv[pos].startswith("-"):
        return pos, ()
    first = argv[pos]
    words = RENAMED.get(first, (first,))
    if len(words) == 1 and first in GROUPS and pos + 1 < len(argv) \
            and not argv[pos + 1].startswith("-"):
        words = (first, argv[pos + 1])
    return pos, words


def deprecation(old: str) -> str:
    """The one-line notice of an old command name."""
    new = " ".join(RENAMED[old])
    return (f"note: 'ragmeter {old}' is now 'ragmeter {new}'; the old name works until "
            f"ragmeter {OLD_NAMES_UNTIL}")


__all__ = ["GROUPS", "OLD_NAMES_UNTIL", "ORDER", "RENAMED", "ROOT_FLAGS", "command_words",
           "deprecation"]
