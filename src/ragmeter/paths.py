"""Where ragmeter keeps its files: the cache directory (``$RAGMETER_CACHE_DIR``, else
``~/.cache/ragmeter``) under which the judge cache, embedding vectors, recorded target replies
and downloaded models live. Floor 0: imports nothing of ragmeter."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``explicit`` when given, else ``$RAGMETER_CACHE_DIR``, else ``~/.cache/ragmeter``."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("RAGMETER_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "ragmeter"


__all__ = ["default_cache_dir"]
