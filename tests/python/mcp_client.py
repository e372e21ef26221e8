"""Drives `mnemofs mcp` with the official MCP client (the `mcp` package).

Usage: mcp_client.py MNEMOFS STORE STATE_DIR

Starts `MNEMOFS mcp --store STORE --state-dir STATE_DIR` over stdio,
initializes, lists the tools and the prompt, calls every tool and checks
what comes back: a write is found by search and read back, an edit
changes it, the memory tool views it, bad input is an isError result in
one sentence, and the server keeps answering after it. Prints each check
and exits 1 at the first mismatch.
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TOOLS = {
    "memory", "search", "read", "write", "edit", "move", "delete", "link",
    "dream", "status", "brief", "backlinks", "recent", "list",
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


async def drive(binary, store, state):
    params = StdioServerParameters(
        command=binary, args=["mcp", "--store", store, "--state-dir", state]
    )
    async with stdio_client(params) as (read, write):
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

            async def found():
                data, _ = await c.ok("search", {"query": "gooseberry", "limit": 5})
                return data["results"]
            results = await eventually("search finds the new memory", found)
            hit = results[0]
            check(hit["path"] == path and hit["id"] == mid and hit["title"] == "Kiwi taste",
                  f"the hit names the memory ({hit})")
            check("score" in hit and "gooseberry" in hit["snippet"], "the hit has a score and a snippet")

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
                return {m["path"] for m in data["memories"]} == {path, "notes/bowl.md"}
            await eventually("recent lists both memories", recent)

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
    print("all checks passed")


def main():
    binary, store, state = sys.argv[1:4]
    try:
        asyncio.run(drive(binary, store, state))
    except Mismatch as e:
        print(f"MISMATCH: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()
