"""The viewer bound to loopback answers only requests that name this machine exactly."""
from __future__ import annotations

import asyncio

import pytest

from ragmeter.view.app import host_is_local, make_app


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:8765", "localhost", "LOCALHOST:1",
                                  "[::1]", "[::1]:8765"])
def test_loopback_host_headers_are_admitted(host: str) -> None:
    assert host_is_local(host)


@pytest.mark.parametrize("host", ["127.0.0.1:8765@evil.example", "localhost:evil", "evil.example",
                                  "localhost.evil.example", "127.0.0.1.evil.example:80", "",
                                  "localhost:", "127.0.0.1:8765 ", "[::1]@evil", "::1"])
def test_host_headers_that_smuggle_another_name_are_refused(host: str) -> None:
    assert not host_is_local(host)


@pytest.mark.parametrize("target", ["http://evil.example/", "//evil.example/", "*"])
def test_absolute_form_request_targets_are_refused(target: str) -> None:
    assert not host_is_local("127.0.0.1:8765", target)




def test_served_app_refuses_smuggled_hosts_and_absolute_targets(tmp_path) -> None:
    from aiohttp.test_utils import TestServer

    from ragmeter.results.store import ResultStore

    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    ResultStore(url)

    async def go() -> list[bytes]:
        server = TestServer(make_app(url, local_only=True), host="127.0.0.1")
        await server.start_server()
        try:
            out = []
            for line, host in [("GET / HTTP/1.1", "127.0.0.1"),
                               ("GET / HTTP/1.1", "127.0.0.1:1@evil.example"),
                               ("GET / HTTP/1.1", "localhost:evil"),
                               ("GET http://evil.example/ HTTP/1.1", "127.0.0.1")]:
                reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
                writer.write(f"{line}\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
                await writer.drain()
                out.append(await reader.read(40))
                writer.close()
            return out
        finally:
            await server.close()

    first, *rest = asyncio.run(go())
    assert first.split(b" ")[1] != b"421"
    assert [r.split(b" ")[1] for r in rest] == [b"421", b"421", b"421"]
