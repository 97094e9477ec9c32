"""What the one config validator costs to import: ``ragmeter.schema`` (in-house) against
pydantic (``BaseModel``, ``Field``), each in a fresh process, CPU seconds (user + system) of
the child minus a baseline child that imports only ``ragmeter.errors`` (median of N).

    python benchmarks/config_validator_cost.py [--repeat 7]

CPU seconds, not wall time: they hold on a loaded machine.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys

CASES = {
    "ragmeter.schema (in-house)": "import ragmeter.errors, ragmeter.schema",
    "pydantic BaseModel + Field": "import ragmeter.errors; from pydantic import BaseModel, Field",
}
BASE = "import ragmeter.errors"


def _cpu(code: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    base = statistics.median(_cpu(BASE) for _ in range(args.repeat))
    print(f"baseline (python + ragmeter.errors): {base * 1000:.0f} ms CPU "
          f"(median of {args.repeat})")
    for label, code in CASES.items():
        cpu = statistics.median(_cpu(code) for _ in range(args.repeat))
        print(f"{label:<28} +{(cpu - base) * 1000:4.0f} ms CPU over the baseline")


if __name__ == "__main__":
    main()
