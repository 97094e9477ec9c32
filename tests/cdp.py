"""A small Chrome DevTools Protocol driver for the browser tests (real headless Chromium).

It starts the system Chromium with ``--remote-debugging-port=0``, talks to it over one
WebSocket (aiohttp's client, already a ragmeter dependency) and offers what a person does with
a page: open it, wait for it, read the DOM, click, take a screenshot, and collect every console
error, uncaught exception and failed resource load along the way.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser",
                                                        "google-chrome")) if p), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-extensions", "--hide-scrollbars", "--mute-audio",
         "--disable-dev-shm-usage"]


class Browser:
    """One headless Chromium and one page (tab) in it."""

    def __init__(self, profile: Path, width: int = 1400, height: int = 900):
        assert CHROMIUM, "chromium is not installed"
        self.width, self.height = width, height
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, "--remote-debugging-port=0", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ws_url = None
        deadline = time.time() + 60
        assert self.proc.stderr is not None
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                ws_url = m.group(1)
                break
            if not line and self.proc.poll() is not None:
                break
        if ws_url is None:
            self.proc.kill()
            raise RuntimeError("chromium did not print its DevTools address")
        self.loop = asyncio.new_event_loop()
        self._id = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.loop.run_until_complete(self._connect(ws_url))

    # ---------------------------------------------------------------- protocol
    async def _connect(self, url: str) -> None:
        import aiohttp

        self._http = aiohttp.ClientSession()
        self._ws = await self._http.ws_connect(url, max_msg_size=0)
        self._reader = asyncio.ensure_future(self._read())
        target = await self._send("Target.createTarget", {"url": "about:blank"})
        attached = await self._send("Target.attachToTarget",
                                    {"targetId": target["targetId"], "flatten": True})
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            await self._send(f"{domain}.enable", session=True)
        await self._send("Emulation.setDeviceMetricsOverride",
                         {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                          "mobile": False}, session=True)

    async def _read(self) -> None:
        async for msg in self._ws:
            data = json.loads(msg.data)
            fut = self._pending.pop(data["id"], None) if "id" in data else None
            if fut is not None:
                if not fut.done():
                    fut.set_result(data)
            else:
                self.events.append(data)

    async def _send(self, method: str, params: dict[str, Any] | None = None, *,
                    session: bool = False, timeout: float = 60) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        fut: asyncio.Future[Any] = self.loop.create_future()
        self._pending[self._id] = fut
        await self._ws.send_str(json.dumps(msg))
        res = await asyncio.wait_for(fut, timeout)
        if "error" in res:
            raise RuntimeError(f"{method}: {res['error']}")
        return dict(res.get("result", {}))

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.loop.run_until_complete(self._send(method, params, session=True))

    # ---------------------------------------------------------------- page actions
    def open(self, url: str, *, ready: str = "document.body && "
             "document.body.getAttribute('data-rendered') === 'true'",
             timeout: float = 60) -> float:
        """Navigate and wait until ``ready`` is true; returns the load time in seconds."""
        self.events.clear()
        start = time.perf_counter()
        self.call("Page.navigate", {"url": url})
        deadline = time.time() + timeout
        loaded = False
        while time.time() < deadline:
            self.loop.run_until_complete(asyncio.sleep(0.05))
            if not loaded:
                loaded = any(e.get("method") == "Page.loadEventFired" for e in self.events)
                continue
            if self.eval(f"!!({ready})"):
                return time.perf_counter() - start
        raise TimeoutError(f"page {url} not ready: {ready}")

    def eval(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                             "awaitPromise": True})
        if "exceptionDetails" in res:
            raise RuntimeError(f"evaluate failed: {res['exceptionDetails']}")
        return res.get("result", {}).get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions, failed loads and CSP reports since ``open``."""
        out = []
        for e in self.events:
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                  for a in p.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: " + str(d.get("exception", {}).get("description")
                                               or d.get("text")))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + str(p["entry"].get("text")))
            elif method == "Network.loadingFailed" and not p.get("canceled"):
                out.append("network: " + str(p.get("errorText")))
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path, *, full: bool = True, max_height: int = 7000) -> Path:
        """PNG of the page (the whole page up to ``max_height`` px, or the viewport)."""
        params: dict[str, Any] = {"format": "png"}
        if full:
            metrics = self.call("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            height = min(int(size["height"]), max_height)
            params.update({"captureBeyondViewport": True,
                           "clip": {"x": 0, "y": 0, "width": self.width, "height": height,
                                    "scale": 1}})
        data = self.call("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self._ws.close())
            self.loop.run_until_complete(self._http.close())
            self._reader.cancel()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.loop.close()


# JavaScript run in the page: every text element of every chart must lie inside its <svg>,
# and no two unrotated labels of one chart may overlap.
CHART_TEXT_CHECK = r"""
(() => {
  const problems = [];
  let texts = 0;
  document.querySelectorAll('svg.rm-chart').forEach((svg, i) => {
    const box = svg.getBoundingClientRect();
    const name = (svg.getAttribute('aria-label') || ('chart ' + i));
    const rects = [];
    svg.querySelectorAll('text').forEach(t => {
      const r = t.getBoundingClientRect();
      if (!r.width) { return; }
      texts += 1;
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 ||
          r.bottom > box.bottom + 1) {
        problems.push(name + ': text "' + t.textContent + '" outside the chart');
      }
      if (!t.getAttribute('transform')) { rects.push([r, t.textContent]); }
    });
    for (let a = 0; a < rects.length; a++) {
      for (let b = a + 1; b < rects.length; b++) {
        const [p, pt] = rects[a], [q, qt] = rects[b];
        const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
        const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
        if (w > 1 && h > 1) { problems.push(name + ': "' + pt + '" overlaps "' + qt + '"'); }
      }
    }
  });
  return {texts: texts, problems: problems};
})()
"""
