"""What a `mnemofs mcp --http` server refuses, and how it holds under load.

Usage: mcp_http_checks.py MNEMOFS URL STORE STATE_DIR OWNER_TOKEN ALICE_TOKEN

With the official MCP client (the `mcp` package) and plain HTTP (httpx2,
raw sockets):
- no token, a wrong token, another scheme: 401 with WWW-Authenticate,
  and the MCP client cannot connect;
- an Origin not allowed (a web page, `null`): 403, even with a token;
- another path: 404; a body over the limit: 413;
- 32 clients at once, each writing, reading back and searching its own
  memory, all succeed, and every file holds exactly what was sent;
- a client that holds a connection half sent blocks nobody;
- clients that hang up mid-call leave each memory whole or absent, and
  the server answers on;
- a token revoked with `mnemofs token revoke` is refused at its next
  request, while the others still work.
Prints each check and exits 1 at the first mismatch.
"""

import asyncio
import json
import os
import socket
import subprocess
import sys
import urllib.parse

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from mcp_client import Mismatch, check

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "checks", "version": "0"}}}


def call_body(tool, arguments, rid=2):
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}


def session(url, token):
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                timeout=httpx2.Timeout(30.0, read=120.0))
    return streamable_http_client(url, http_client=client)


async def tool(s, name, arguments):
    result = await s.call_tool(name, arguments)
    error = getattr(result, "is_error", None) or getattr(result, "isError", None)
    data = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    text = "".join(getattr(c, "text", "") for c in result.content)
    if error:
        raise Mismatch(f"{name} {arguments} failed: {text}")
    return data


async def refusals(url, owner):
    async with httpx2.AsyncClient(timeout=30.0) as http:
        r = await http.post(url, json=INIT, headers=HEADERS)
        check(r.status_code == 401 and r.headers.get("www-authenticate", "").startswith("Bearer"),
              f"no token: 401 with WWW-Authenticate ({r.status_code})")
        check("bearer token is required" in r.json()["error"], f"it says why ({r.text})")
        check(r.headers.get("connection", "").lower() == "close",
              f"a refusal closes its connection, so no client reuses it ({r.headers.get('connection')})")
        wrong = "mnemofs_" + "0" * 64
        r = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {wrong}"})
        check(r.status_code == 401 and "not valid" in r.json()["error"], f"a wrong token: 401 ({r.text})")
        r = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Basic {owner}"})
        check(r.status_code == 401, "another scheme than Bearer: 401")
        r = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {owner}x"})
        check(r.status_code == 401, "a token with a byte more: 401")
        auth = {**HEADERS, "Authorization": f"Bearer {owner}"}
        for origin in ("https://evil.example", "null", "http://127.0.0.1:1"):
            r = await http.post(url, json=INIT, headers={**auth, "Origin": origin})
            check(r.status_code == 403, f"Origin {origin}: 403 even with a token ({r.status_code})")
        r = await http.post(url, json=INIT, headers=auth)
        check(r.status_code == 200 and r.json()["result"]["serverInfo"]["name"] == "mnemofs",
              "the same request with the token and no Origin: 200")
        parts = urllib.parse.urlsplit(url)
        r = await http.post(f"{parts.scheme}://{parts.netloc}/other", json=INIT, headers=auth)
        check(r.status_code == 404, f"another path: 404 ({r.status_code})")
        big = call_body("write", {"content": "x" * (5 << 20), "title": "too big"})
        r = await http.post(url, json=big, headers={**auth, "MCP-Protocol-Version": "2025-06-18"})
        check(r.status_code == 413, f"a 5 MiB body: 413 ({r.status_code})")
    try:
        async with session(url, "mnemofs_" + "1" * 64) as (read, write, *_):
            async with ClientSession(read, write) as s:
                await asyncio.wait_for(s.initialize(), 30)
        check(False, "the MCP client with a wrong token cannot initialize")
    except Mismatch:
        raise
    except BaseException as e:  # the client's task groups wrap the refusal
        said = repr(leaves(e))
        check("401" in said or "error response" in said,
              f"the MCP client with a wrong token cannot initialize ({said})")


def leaves(error):
    """The errors inside nested exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def one_client(url, token, n):
    async with session(url, token) as (read, write, *_):
        async with ClientSession(read, write) as s:
            await s.initialize()
            content = f"Client {n} keeps the quince number {n * 7919}.\n"
            written = await tool(s, "write", {"content": content, "title": f"Load {n}",
                                              "path": f"load/client-{n}.md"})
            memory = await tool(s, "read", {"ref": written["id"]})
            if memory["content"] != content:
                raise Mismatch(f"client {n} read back {memory['content']!r}")
            await tool(s, "search", {"query": f"quince {n * 7919}", "limit": 3})
            return written["path"], content


async def load(url, owner, store):
    done = await asyncio.gather(*(one_client(url, owner, n) for n in range(32)))
    check(len(done) == 32, "32 clients at once each wrote, read back and searched")
    for path, content in done:
        with open(os.path.join(store, path), encoding="utf-8") as f:
            text = f.read()
        if not text.endswith(content):
            raise Mismatch(f"{path} holds {text!r}")
    check(True, "every file holds exactly what its client sent")


def raw_request(url, body, token):
    parts = urllib.parse.urlsplit(url)
    data = json.dumps(body).encode()
    head = (f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode()
    return parts, head, data


def connect(parts):
    return socket.create_connection((parts.hostname, parts.port), timeout=30)


async def slow_and_vanishing(url, owner, store):
    # Held connections: a head half sent, a body half sent.
    parts, head, data = raw_request(url, call_body("status", {}), owner)
    held = []
    for partial in (head[: len(head) // 2], head + data[: len(data) // 2]):
        sock = connect(parts)
        sock.sendall(partial)
        held.append(sock)
    async with session(url, owner) as (read, write, *_):
        async with ClientSession(read, write) as s:
            await s.initialize()
            status = await tool(s, "status", {})
            check("documents" in status, "a call is answered while two connections hang half sent")
    for sock in held:
        sock.close()

    # Hang-ups mid-call: right after sending, and after half the body.
    expected = {}
    for n in range(12):
        content = f"Vanishing client {n} wrote this whole.\n" * 50
        path = f"vanish/v-{n}.md"
        expected[path] = content
        parts, head, data = raw_request(url, call_body("write", {"content": content, "path": path}), owner)
        sock = connect(parts)
        sock.sendall(head + (data if n % 3 else data[: len(data) // 2]))
        if n % 2:
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
    async with session(url, owner) as (read, write, *_):
        async with ClientSession(read, write) as s:
            await s.initialize()
            status = await tool(s, "status", {})
            check("documents" in status, "the server answers after 12 clients hung up mid-call")
            await asyncio.sleep(0.5)  # calls already running finish on their own
    whole = 0
    for path, content in expected.items():
        full = os.path.join(store, path)
        if os.path.exists(full):
            with open(full, encoding="utf-8") as f:
                text = f.read()
            if not text.endswith(content):
                raise Mismatch(f"{path} is not whole: {len(text)} bytes")
            whole += 1
    check(True, f"each hung-up write is whole or absent ({whole} whole, {len(expected) - whole} absent)")


async def revoke(binary, url, store, state, owner, alice):
    out = subprocess.run([binary, "token", "revoke", "alice", "--store", store, "--state-dir", state],
                         capture_output=True, text=True, timeout=60)
    check(out.returncode == 0 and "revoked" in out.stdout, f"mnemofs token revoke ({out.stdout}{out.stderr})")
    async with httpx2.AsyncClient(timeout=30.0) as http:
        r = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {alice}"})
        check(r.status_code == 401, f"the revoked token is refused at its next request ({r.status_code})")
        r = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {owner}"})
        check(r.status_code == 200, "the other token still works")


async def main_async(binary, url, store, state, owner, alice):
    await refusals(url, owner)
    await load(url, owner, store)
    await slow_and_vanishing(url, owner, store)
    await revoke(binary, url, store, state, owner, alice)
    print("all checks passed")


def main():
    try:
        asyncio.run(main_async(*sys.argv[1:7]))
    except Mismatch as e:
        print(f"MISMATCH: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()
