"""Rich progress display for ``ragmeter run``: one bar per tier with LLM counters."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)


def _short(n: float) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else f"{n:g}"


def _fmt_stats(stats: Any) -> str:
    d = stats.to_dict() if hasattr(stats, "to_dict") else dict(stats or {})
    calls = d.get("llm_calls", 0)
    if not calls and not d.get("cached_calls", 0):
        return ""
    return (f"{calls} calls (+{d.get('cached_calls', 0)} cached) "
            f"{_short(d.get('tokens_in', 0) + d.get('tokens_out', 0))} tok "
            f"${d.get('cost', 0.0):.3f} {d.get('errors', 0)} err")


class RunProgress:
    """Context manager whose :meth:`hook` feeds :func:`ragmeter.runner.engine.run_benchmark`."""

    def __init__(self, console: Console | None = None, enabled: bool = True):
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(bar_width=20), MofNCompleteColumn(),
            TextColumn("eta"), TimeRemainingColumn(),
            TextColumn("{task.fields[stats]}"), TextColumn("{task.fields[status]}"),
            console=self.console, disable=not enabled, transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> RunProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def _task(self, tier: str, total: int = 1, done: int = 0) -> TaskID:
        if tier not in self.tasks:
            self.tasks[tier] = self.progress.add_task(tier, total=total, completed=done,
                                                      stats="", status="")
        return self.tasks[tier]

    def hook(self, tier: str, event: str, info: dict[str, Any]) -> None:
        if event == "start":
            task = self._task(tier, info.get("total", 1), info.get("done", 0))
            self.progress.update(task, total=info.get("total", 1),
                                 completed=info.get("done", 0),
                                 stats=_fmt_stats(info.get("stats")), status="running")
        elif event == "advance":
            task = self._task(tier)
            self.progress.update(task, advance=info.get("n", 1),
                                 stats=_fmt_stats(info.get("stats")))
        elif event in ("end", "skipped_done"):
            task = self._task(tier)
            status = info.get("status", "ok")
            reason = info.get("reason")
            label = {"ok": "[green]done[/]", "not_run": "[yellow]not run[/]",
                     "error": "[red]error[/]"}.get(status, status)
            if event == "skipped_done":
                label += " (resumed)"
            if reason:
                label += f": {reason[:80]}"
            total = next(t.total for t in self.progress.tasks if t.id == task) or 1
            self.progress.update(task, completed=total, status=label,
                                 stats=_fmt_stats(info.get("stats")))
            if not self.enabled:
                self.console.print(f"{tier}: {status}" + (f" — {reason}" if reason else ""),
                                   markup=False, highlight=False)
