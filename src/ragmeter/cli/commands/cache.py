"""``ragmeter judge cache info|clear``: what the judge cache holds, and removing it.

Replies are cached per namespace (a judge config's ``cache_namespace``; the fake server has
its own), endpoint (base URL without credentials) and model.
"""

from __future__ import annotations

import datetime as dt
import json

import typer

from ragmeter.cli.lazy import group
from ragmeter.errors import UsageError

cache_app = typer.Typer(help="Inspect or clear the judge cache.", no_args_is_help=True)

_DIR_HELP = "Cache directory (default: $RAGMETER_CACHE_DIR, else ~/.cache/ragmeter)."


def _open(cache_dir: str | None) -> object:
    from ragmeter.judges.cache import JudgeCache
    from ragmeter.paths import default_cache_dir

    path = default_cache_dir(cache_dir)
    if not (path / "judge_cache.sqlite").exists():
        raise UsageError("--cache-dir", f"no judge cache in {path}")
    return JudgeCache(path)


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


@cache_app.command("info")
def info_command(
    cache_dir: str = typer.Option(None, "--cache-dir", help=_DIR_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Size of the judge cache and its entries by namespace, endpoint and model."""
    from ragmeter.judges.cache import JudgeCache

    cache = _open(cache_dir)
    assert isinstance(cache, JudgeCache)
    info = cache.info()
    if as_json:
        typer.echo(json.dumps(info, indent=1))
        return
    typer.echo(f"{info['path']}: {info['entries']} replies, {info['bytes'] / 1e6:.1f} MB")
    for g in info["groups"]:
        typer.echo(f"  {g['namespace']:<16} {g['endpoint'] or '-':<40} {g['model'] or '-':<24} "
                   f"{g['entries']:>7}  {_when(g['oldest'])} .. {_when(g['newest'])}")
    if info["legacy_entries"]:
        typer.echo(f"  + {info['legacy_entries']} replies in the older cache format (never "
                   "served: they do not record their endpoint); 'ragmeter judge cache clear' drops "
                   "them")


@cache_app.command("clear")
def clear_command(
    cache_dir: str = typer.Option(None, "--cache-dir", help=_DIR_HELP),
    namespace: str = typer.Option(None, "--namespace", help="Only this namespace."),
    endpoint: str = typer.Option(None, "--endpoint", help="Only this endpoint "
                                 "(as 'cache info' shows it)."),
    model: str = typer.Option(None, "--model", help="Only this model."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Delete cached judge replies (all, or those matching every filter given)."""
    from ragmeter.judges.cache import JudgeCache

    cache = _open(cache_dir)
    assert isinstance(cache, JudgeCache)
    what = ", ".join(f"{k} {v}" for k, v in (("namespace", namespace), ("endpoint", endpoint),
                                             ("model", model)) if v) or "everything"
    if not yes:
        typer.confirm(f"delete {what} from {cache.path}?", abort=True)
    n = cache.clear(namespace=namespace, endpoint=endpoint, model=model)
    typer.echo(f"deleted {n} cached replies ({what})")


def register(app: typer.Typer) -> None:
    group(app, "judge").add_typer(cache_app, name="cache")
