"""Drives `mnemofs mcp` with the official MCP client (the `mcp` package).

Usage: mcp_client.py MNEMOFS STORE STATE_DIR
       mcp_client.py --http URL OWNER_TOKEN ALICE_TOKEN

Starts `MNEMOFS mcp --store STORE --state-dir STATE_DIR` over stdio (or
connects to a `mnemofs mcp --http` server at URL with a token that
reaches every memory), initializes, lists the tools and the prompt, calls every tool and checks
what comes back: a write is found by search and read back, an edit
changes it, the memory tool views it, a stale expected_version is a
conflict, memories are resources by id, bad input is an isError result in
one sentence, and the server keeps answering after it. Then a second
server with --scope agent:alice sees global memories and Alice's, never
Bob's (over HTTP: a client with a token scoped to agent:alice). Prints
each check and exits 1 at the first mismatch.
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TOOLS = {
    "memory", "search", "read", "write", "edit", "move", "delete", "link",
    "unlink", "tag", "context", "dream", "status", "brief", "backlinks",
    "recent", "list", "history", "restore", "trash", "remember",
}


def types_version():
    try:
        from mcp.types import LATEST_PROTOCOL_VERSION
        return LATEST_PROTOCOL_VERSION
    except ImportError:
        return "?"


class Mismatch(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Mismatch(what)
    print(f"ok: {what}")


def field(obj, snake, camel):
    """An attribute under its 2.x (snake) or 1.x (camel) name."""
    value = getattr(obj, snake, None)
    return value if value is not None else getattr(obj, camel, None)


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


class Client:
    def __init__(self, session):
        self.session = session

    async def call(self, name, arguments):
        result = await self.session.call_tool(name, arguments)
        return result, field(result, "structured_content", "structuredContent"), text_of(result)

    async def ok(self, name, arguments):
        result, data, text = await self.call(name, arguments)
        check(not field(result, "is_error", "isError"), f"{name} {arguments} succeeds ({text[:200]!r})")
        check(isinstance(data, dict), f"{name} carries structuredContent")
        check(text.strip() != "", f"{name} carries a text rendering")
        return data, text

    async def fails(self, name, arguments, *words):
        result, _, text = await self.call(name, arguments)
        check(field(result, "is_error", "isError") is True, f"{name} {arguments} is an isError result ({text!r})")
        sentence = text.strip()
        check(sentence and "\n" not in sentence, f"{name}: the error is one sentence ({sentence!r})")
        for word in words:
            check(word.lower() in sentence.lower(), f"{name}: the error says {word!r}")
        return sentence


async def eventually(what, probe, tries=200):
    """Polls `probe` until it returns something true (the index commits
    writes in batches); fails after `tries` attempts."""
    for _ in range(tries):
        value = await probe()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise Mismatch(f"never: {what}")


def over_stdio(binary, *args):
    """Connects to a `mnemofs mcp` started with these arguments."""
    return lambda: stdio_client(StdioServerParameters(command=binary, args=["mcp", *args]))


def over_http(url, token):
    """Connects to a `mnemofs mcp --http` server with a bearer token."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    def connect():
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                    timeout=httpx2.Timeout(30.0, read=120.0))
        return streamable_http_client(url, http_client=client)
    return connect


async def drive(connect, connect_alice):
    await drive_all_tools(connect)
    await drive_scoped(connect_alice)
    print("all checks passed")


async def drive_all_tools(connect):
    async with connect() as (read, write, *_):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            version = field(init, "protocol_version", "protocolVersion")
            check(version >= "2025-06-18", f"negotiated protocol {version}")
            print(f"client offered {types_version()}, server answered {version}")
            check(init.capabilities.tools is not None, "the server offers tools")

            names = {t.name for t in (await session.list_tools()).tools}
            check(names == TOOLS, f"the tools are {sorted(TOOLS)} (got {sorted(names)})")
            prompts = {p.name for p in (await session.list_prompts()).prompts}
            check(prompts == {"memory_guide"}, "the prompt memory_guide is listed")
            guide = await session.get_prompt("memory_guide")
            guide_text = "".join(getattr(m.content, "text", "") for m in guide.messages)
            check("search/<query>/" in guide_text and "tag:" in guide_text, "the guide explains the query language")

            c = Client(session)
            written, _ = await c.ok("write", {
                "content": "The kiwi tastes of gooseberry.\n",
                "title": "Kiwi taste",
                "category": "knowledge",
                "tags": ["fruit"],
                "type": "memory",
            })
            path, mid = written["path"], written["id"]
            check(path == "knowledge/kiwi-taste.md" and mid, f"write answers id and path ({written})")

            # remember: verbatim, titled by its first line, tagged.
            text = "Kiwis ripen beside apples\nKeep them in one bag."
            kept, _ = await c.ok("remember", {"text": text})
            check(kept["path"] == "remember/kiwis-ripen-beside-apples.md", f"remember's path ({kept})")
            note, _ = await c.ok("read", {"ref": kept["id"]})
            shown = str(note)
            check("manual-capture" in shown and "Kiwis ripen beside apples" in shown
                  and "Keep them in one bag." in shown, f"remember keeps the text and the tag ({note})")
            await c.fails("remember", {"text": "   "}, "empty")

            async def found():
                data, _ = await c.ok("search", {"query": "gooseberry", "limit": 5})
                return data["results"]
            results = await eventually("search finds the new memory", found)
            hit = results[0]
            check(hit["path"] == path and hit["id"] == mid and hit["title"] == "Kiwi taste",
                  f"the hit names the memory ({hit})")
            check("score" in hit and "gooseberry" in hit["snippet"], "the hit has a score and a snippet")
            day = hit.get("day", "")
            check(len(day) == 10 and day[4] == "-" and hit.get("created", "").endswith("Z"),
                  f"the hit says when it was written ({hit})")
            _, shown = await c.ok("search", {"query": "gooseberry", "limit": 5})
            check(f"written {day}" in shown, f"the text result shows the day ({shown!r})")

            for ref in (path, mid, "Kiwi taste"):
                memory, text = await c.ok("read", {"ref": ref})
                check(memory["path"] == path and memory["id"] == mid, f"read {ref!r} finds it")
                check(memory["content"] == "The kiwi tastes of gooseberry.\n", "read returns its content")
                check(memory["frontmatter"]["category"] == "knowledge"
                      and memory["frontmatter"]["tags"] == ["fruit"], "read returns its frontmatter")
                check("gooseberry" in text, "read's text shows the body")

            edited, _ = await c.ok("edit", {"ref": mid, "old_str": "gooseberry", "new_str": "strawberry"})
            check(edited == {"id": mid, "path": path}, "edit answers id and path")
            await c.ok("edit", {"ref": path, "insert_line": 0, "insert_text": "# Kiwi"})
            memory, _ = await c.ok("read", {"ref": path})
            check(memory["content"] == "# Kiwi\nThe kiwi tastes of strawberry.\n", f"edit changed it ({memory['content']!r})")

            result, data, text = await c.call("memory", {"command": "view", "path": f"/memories/{path}"})
            check(not field(result, "is_error", "isError"), "memory view succeeds")
            check(text.startswith(f"Here's the content of /memories/{path} with line numbers:"),
                  f"memory view answers as the memory tool ({text[:80]!r})")
            check("strawberry" in text and data["content"] == text, "memory view shows the file")
            result, _, text = await c.call("memory", {"command": "view", "path": "/memories/nope.md"})
            check(field(result, "is_error", "isError") is True
                  and text == "The path /memories/nope.md does not exist. Please provide a valid path.",
                  f"memory tool errors are the memory tool's ({text!r})")

            other, _ = await c.ok("write", {"content": "See [[Kiwi taste]].\n", "title": "Fruit bowl",
                                             "path": "notes/bowl.md"})
            check(other["path"] == "notes/bowl.md", "write honours a path")
            linked, _ = await c.ok("link", {"from": "notes/bowl.md", "to": mid})
            check(linked["from"] == "notes/bowl.md" and linked["to"] == path, "link answers both ends")
            memory, _ = await c.ok("read", {"ref": "notes/bowl.md"})
            check(mid in memory["frontmatter"].get("links", []), "link recorded the id in links:")

            async def around():
                data, text = await c.ok("context", {"ref": mid, "depth": 1})
                return [r["path"] for r in data["related"]] == ["notes/bowl.md"] and (data, text)
            data, text = await eventually("context lists the linking memory", around)
            check(data["memory"]["path"] == path and data["related"][0]["direction"] == "incoming"
                  and data["related"][0]["depth"] == 1, f"context says how it is linked ({data['related']})")
            check("notes/bowl.md" in text, "context's text names the related memory")
            data, _ = await c.ok("context", {"ref": "notes/bowl.md"})
            check([r["path"] for r in data["related"]] == [path]
                  and data["related"][0]["direction"] == "outgoing", "context follows outgoing links")
            await c.fails("context", {"ref": mid, "depth": 9}, "depth")

            unlinked, _ = await c.ok("unlink", {"from": "notes/bowl.md", "to": mid})
            check(unlinked["removed"] is True, "unlink took the link away")
            memory, _ = await c.ok("read", {"ref": "notes/bowl.md"})
            check(mid not in (memory["frontmatter"].get("links") or []), "unlink emptied links:")
            check(memory["content"] == "See [[Kiwi taste]].\n", "unlink left the body's link alone")
            unlinked, text = await c.ok("unlink", {"from": "notes/bowl.md", "to": mid})
            check(unlinked["removed"] is False and "no link" in text, "unlinking twice says there was none")
            await c.ok("link", {"from": "notes/bowl.md", "to": mid})

            # expected_version: a write over a memory changed since is refused.
            memory, _ = await c.ok("read", {"ref": mid})
            version = memory["version"]
            check(version.startswith("fnv1a64:"), f"read gives a version ({version})")
            await c.ok("edit", {"ref": mid, "insert_line": 1, "insert_text": "Sweet.",
                                "expected_version": version})
            before, _ = await c.ok("read", {"ref": mid})
            check(before["version"] != version, "an edit changes the version")
            for tool, args in [
                ("edit", {"ref": mid, "old_str": "Sweet.", "new_str": "Sour."}),
                ("edit", {"ref": mid, "insert_line": 0, "insert_text": "x"}),
                ("tag", {"ref": mid, "tags": ["green"]}),
                ("link", {"from": mid, "to": "notes/bowl.md"}),
                ("unlink", {"from": mid, "to": "notes/bowl.md"}),
                ("move", {"ref": mid, "to": "knowledge/elsewhere.md"}),
                ("delete", {"ref": mid}),
                ("write", {"content": "over\n", "path": path}),
            ]:
                await c.fails(tool, dict(args, expected_version=version), "changed")
            after, _ = await c.ok("read", {"ref": mid})
            check(after == before, "a stale expected_version wrote nothing")
            await c.ok("edit", {"ref": mid, "old_str": "Sweet.", "new_str": "Sour.",
                                "expected_version": before["version"]})
            tagged, _ = await c.ok("tag", {"ref": mid, "tags": ["green", "#fruit"]})
            memory, _ = await c.ok("read", {"ref": mid})
            check(memory["frontmatter"]["tags"] == ["fruit", "green"], f"tag added a tag ({memory['frontmatter']})")
            await c.ok("edit", {"ref": mid, "old_str": "Sour.\n", "new_str": ""})

            # Memories are resources by id.
            async def listed_resources():
                resources = (await session.list_resources()).resources
                return {str(r.uri) for r in resources} >= {f"mnemofs://memory/{mid}"} and resources
            resources = await eventually("resources list the memories", listed_resources)
            mine = next(r for r in resources if str(r.uri) == f"mnemofs://memory/{mid}")
            check(mine.name == "Kiwi taste", f"a resource is named by its title ({mine})")
            contents = (await session.read_resource(f"mnemofs://memory/{mid}")).contents
            check(len(contents) == 1 and contents[0].text.startswith("---\n")
                  and "strawberry" in contents[0].text, "a resource reads as the whole file")
            templates = (await session.list_resource_templates()).resource_templates
            check([t.uri_template for t in templates] == ["mnemofs://memory/{id}"], "the resource template is listed")
            try:
                await session.read_resource("mnemofs://memory/no-such-id")
                check(False, "an unknown resource is an error")
            except Exception as e:
                check("no memory" in str(e), f"an unknown resource is an error ({e})")

            async def backlinked():
                data, _ = await c.ok("backlinks", {"ref": mid})
                return [m["path"] for m in data["memories"]] == ["notes/bowl.md"]
            await eventually("backlinks lists the linking memory", backlinked)

            async def listed():
                data, _ = await c.ok("list", {"category": "knowledge", "tag": "fruit"})
                return [m["path"] for m in data["memories"]] == [path]
            await eventually("list filters by category and tag", listed)
            data, _ = await c.ok("list", {"path": "notes"})
            check(all(m["path"].startswith("notes/") for m in data["memories"]), "list filters by folder")

            async def recent():
                data, _ = await c.ok("recent", {"limit": 10})
                return {m["path"] for m in data["memories"]} == {path, "notes/bowl.md", kept["path"]}
            await eventually("recent lists the three memories", recent)
            data, _ = await c.ok("recent", {"type": "memory", "since": "1d"})
            check([m["path"] for m in data["memories"]] == [path], "recent filters by type and time")
            data, _ = await c.ok("list", {"phase": "organized"})
            check(path in [m["path"] for m in data["memories"]], "list filters by phase")
            await c.fails("recent", {"since": "someday"}, "since")

            moved, _ = await c.ok("move", {"ref": "notes/bowl.md", "to": "notes/fruit-bowl.md"})
            check(moved["path"] == "notes/fruit-bowl.md", "move answers the new path")
            memory, _ = await c.ok("read", {"ref": "notes/fruit-bowl.md"})
            check(memory["content"] == "See [[Kiwi taste]].\n", "the moved memory reads back")

            status, text = await c.ok("status", {})
            check(status["served_by"] == "local" and "documents" in status, f"status ({text})")
            brief, text = await c.ok("brief", {})
            check(isinstance(brief["text"], str), "brief returns its text")
            report, _ = await c.ok("dream", {"level": 1})
            check(report["level"] == 1, "dream reports its level")

            # Bad input: each an isError sentence, and the server goes on.
            await c.fails("read", {"ref": "no such memory"}, "no memory is named")
            await c.fails("read", {}, "missing argument `ref`")
            await c.fails("read", {"ref": 42}, "must be a string")
            await c.fails("search", {"query": "kiwi", "limit": "ten"}, "must be an integer")
            await c.fails("write", {"content": "x", "path": "../outside.md"}, "invalid path")
            await c.fails("write", {"content": "x", "category": "nonsense"})
            await c.fails("edit", {"ref": path, "old_str": "absent text", "new_str": "y"}, "does not occur")
            await c.fails("edit", {"ref": path}, "old_str")
            await c.fails("move", {"ref": path, "to": "/etc/passwd"}, "invalid path")
            await c.fails("dream", {"level": 9}, "level")
            await c.fails("delete", {"ref": "notes"}, "is a folder")
            memory, _ = await c.ok("read", {"ref": "notes/fruit-bowl.md"})
            check(memory["path"] == "notes/fruit-bowl.md", "a folder given as a ref is left alone")
            await c.fails("list", {"path": "../x"}, "invalid path")
            dup, _ = await c.ok("write", {"content": "Another.\n", "title": "Kiwi taste", "path": "notes/kiwi.md"})
            async def ambiguous():
                result, _, text = await c.call("read", {"ref": "Kiwi taste"})
                return field(result, "is_error", "isError") and "names 2 memories" in text and text
            sentence = await eventually("an ambiguous ref is refused", ambiguous)
            check(path in sentence and "notes/kiwi.md" in sentence, f"the refusal lists the candidates ({sentence})")

            await c.ok("delete", {"ref": dup["id"]})
            await c.fails("read", {"ref": "notes/kiwi.md"}, "no memory is named")
            data, _ = await c.ok("status", {})
            check(data["served_by"] == "local", "the server still answers after bad input")

            # Memories of two agents, for the scoped session below.
            await c.ok("write", {"content": "Alice's plan: plums.\n", "title": "Alice plan",
                                 "scope": "agent:alice", "path": "agents/alice.md"})
            await c.ok("write", {"content": "Bob's plan: plums.\n", "title": "Bob plan",
                                 "scope": "agent:bob", "path": "agents/bob.md"})
            await c.ok("write", {"content": "Everyone's plan: plums.\n", "title": "Shared plan",
                                 "path": "agents/shared.md"})

            async def all_plans():
                data, _ = await c.ok("search", {"query": "plums"})
                return len(data["results"]) == 3
            await eventually("an unscoped session finds every plan", all_plans)
            data, _ = await c.ok("search", {"query": "plums", "scope": "agent:bob"})
            check(sorted(h["path"] for h in data["results"]) == ["agents/bob.md", "agents/shared.md"],
                  "a call's scope argument hides other agents' memories")


async def drive_scoped(connect):
    async with connect() as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            c = Client(session)
            data, _ = await c.ok("search", {"query": "plums"})
            paths = sorted(h["path"] for h in data["results"])
            check(paths == ["agents/alice.md", "agents/shared.md"], f"alice finds hers and the shared plan ({paths})")
            await c.fails("read", {"ref": "agents/bob.md"}, "no memory is named")
            await c.fails("read", {"ref": "Bob plan"}, "no memory is named")
            await c.fails("delete", {"ref": "agents/bob.md"}, "no memory is named")
            data, _ = await c.ok("list", {"path": "agents"})
            check(sorted(m["path"] for m in data["memories"]) == ["agents/alice.md", "agents/shared.md"],
                  "list hides bob's memory")
            await c.fails("search", {"query": "plums", "scope": "agent:bob"}, "scope")
            written, _ = await c.ok("write", {"content": "Alice again.\n", "title": "Alice two"})
            memory, _ = await c.ok("read", {"ref": written["path"]})
            check(memory["frontmatter"].get("scope") == "agent:alice", "alice's writes get her scope")
            await c.fails("write", {"content": "x\n", "scope": "agent:bob"}, "agent:bob")
            result, _, text = await c.call("memory", {"command": "view", "path": "/memories/agents"})
            check("bob.md" not in text and "alice.md" in text, f"the memory tool's view hides bob's file ({text!r})")
            resources = (await session.list_resources()).resources
            check(all("Bob" not in r.name for r in resources), "resources hide bob's memory")


def main():
    if sys.argv[1] == "--http":
        url, owner, alice = sys.argv[2:5]
        run = drive(over_http(url, owner), over_http(url, alice))
    else:
        binary, store, state = sys.argv[1:4]
        at = ["--store", store, "--state-dir", state]
        run = drive(over_stdio(binary, *at), over_stdio(binary, *at, "--scope", "agent:alice"))
    try:
        asyncio.run(run)
    except Mismatch as e:
        print(f"MISMATCH: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()
