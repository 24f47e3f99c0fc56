"""Headless Chromium, driven through its DevTools protocol: as a person opens a page.

Debian's chromium, started once with the flags that keep it off the network and out of any
profile. The protocol (a JSON-over-websocket API every Chromium speaks) is enough here: set the
Airflow session cookie a login sets, open a URL, wait for it to load, read the text a person
sees (innerText), click where a person clicks, and take a screenshot. No selenium, no
playwright, no driver to download.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Browser:
    """One headless Chromium and one page in it."""

    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        executable = shutil.which("chromium")
        if executable is None:
            raise RuntimeError("chromium is not installed: apt-get install -y chromium")
        self.profile = tempfile.mkdtemp(prefix="dogana-chromium-")
        port = free_port()
        self.process = subprocess.Popen(
            [
                executable,
                *FLAGS,
                f"--user-data-dir={self.profile}",
                f"--remote-debugging-port={port}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.ids = itertools.count(1)
        endpoint = f"http://127.0.0.1:{port}/json/list"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(endpoint, timeout=2) as answer:
                    pages = [p for p in json.load(answer) if p.get("type") == "page"]
                if pages:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its DevTools endpoint within 60 s")
            time.sleep(0.3)
        self.connection = ExitStack()
        self.socket = self.connection.enter_context(
            connect(pages[0]["webSocketDebuggerUrl"], max_size=64 * 2**20)
        )
        self.call("Page.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result, passing over the events that arrive first."""
        ident = next(self.ids)
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=60))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))

    def set_cookie(self, url: str, name: str, value: str) -> None:
        self.call("Network.setCookie", url=url, name=name, value=value)

    def open(self, url: str) -> str:
        """Open url and wait for its load event; return the text a person sees on it."""
        ident = next(self.ids)
        self.socket.send(
            json.dumps({"id": ident, "method": "Page.navigate", "params": {"url": url}})
        )
        answered = loaded = False
        while not (answered and loaded):
            message = json.loads(self.socket.recv(timeout=60))
            answered = answered or message.get("id") == ident
            loaded = loaded or message.get("method") == "Page.loadEventFired"
        return str(self.evaluate("document.body.innerText"))

    def resize(self, width: int, height: int) -> None:
        """The window's size as a page sees it (its viewport), from now on."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def wait_for(self, expression: str, timeout: float = 60) -> Any:
        """The value of expression once it is truthy, evaluated every 0.2 s up to timeout."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"not true within {timeout} s: {expression}")
            time.sleep(0.2)

    def click(self, x: float, y: float) -> None:
        """A person's left click at (x, y) of the window: moved there, pressed, released."""
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def evaluate(self, expression: str) -> Any:
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)[
            "result"
        ].get("value")

    def screenshot(self, path: Path) -> Path:
        """The whole page, not only the window, as a PNG."""
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        width = int(self.evaluate("document.documentElement.scrollWidth"))
        shot = self.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        try:
            if hasattr(self, "connection"):
                self.connection.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            shutil.rmtree(self.profile, ignore_errors=True)
