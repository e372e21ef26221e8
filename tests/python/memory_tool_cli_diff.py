#!/usr/bin/env python3
"""Compare `mnemofs tool` with Anthropic's reference `memory` tool handler.

Usage:
  memory_tool_cli_diff.py plain PLAIN_BASE STORE STATE_DIR MNEMOFS
  memory_tool_cli_diff.py mount MOUNTPOINT STORE MNEMOFS

The reference is `BetaLocalFilesystemMemoryTool`, run as the SDK's tool
runner runs it: its text, or for an exception `is_error` with the runner's
content (a ToolError's message, any other exception's repr). `mnemofs tool`
is one long-lived process fed one command per line.

plain: no daemon. The reference works on PLAIN_BASE/memories, the tool on
STORE (`--store STORE --state-dir STATE_DIR`), both from empty. They get
the mount test's command sequence (tests/python/memory_tool_diff.py), then
symlinks, odd and malformed inputs and Python's str_replace counting; every
answer (content and is_error) must be identical, and after every command
the trees (paths, types, modes, contents) too. The reference's absolute
paths, which only its exception reprs show, are written as the tool's
(`<PLAIN_BASE>/memories/x` is `/memories/x`). Views, which a plain
directory lacks, must show what the reference shows for the memory they
lead to. Lines that are not JSON must get one error each and leave the
loop going; a pretty-printed object works in the stream and alone on stdin.

mount: a daemon serves STORE at MOUNTPOINT (views unlisted, the guide at
its root, which the tool then shows too); the tool
runs with `--store STORE` only, so it can only work through the daemon.
What it writes must be read back through the mount, and for read-only
commands (views included) it must answer exactly as the reference handler
running on the mount does.

Exit status 0 means no difference; 1 lists them; 2 means the `anthropic`
package is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import memory_tool_diff as base
    from anthropic.tools.memory import BetaLocalFilesystemMemoryTool
    from anthropic.lib.tools._beta_builtin_memory_tool import _format_file_size
except ImportError as err:  # pragma: no cover - environment problem
    print(f"cannot import anthropic ({err}); run: pip install anthropic", file=sys.stderr)
    sys.exit(2)

try:  # The runner's own rendering of a tool's result and of its exceptions.
    from anthropic.lib.tools._tool_dispatch import tool_error_content, tool_result_content
except ImportError:  # pragma: no cover - an SDK without that module
    from anthropic.lib.tools._beta_functions import ToolError

    def tool_result_content(content):
        return content

    def tool_error_content(exc):
        return exc.content if isinstance(exc, ToolError) else repr(exc)[:4096]


# How long the index may take to show a new memory (a bound, not a measure).
INDEX_WAIT = 120.0

ADA_ID = "7d0c6a52-5d0e-4a39-9f43-3c5f6a1e2b10"
ADA = (
    "---\n"
    f"id: {ADA_ID}\n"
    "title: Ada Lovelace\n"
    "tags: [math, history]\n"
    "---\n"
    "# Ada Lovelace\n"
    "Wrote the first published program, for the analytical engine.\n"
    "Notes on Menabrea's paper.\n"
)
QUERY = "analytical"

# At the sequence's midpoint, after the mount test's own symlinks.
LINKS = [
    ("loop", "loop"),
    ("ping", "pong"),
    ("pong", "ping"),
    ("out", "/etc/passwd"),
    ("up", "../.."),
    ("dirlink", "projects"),
]
LINK_COMMANDS: list = [
    {"command": "view", "path": "/memories/loop"},
    {"command": "view", "path": "/memories/loop/x/../y"},
    {"command": "view", "path": "/memories/ping"},
    {"command": "view", "path": "/memories/out"},
    {"command": "view", "path": "/memories/up"},
    {"command": "create", "path": "/memories/up/escape.md", "file_text": "x"},
    {"command": "view", "path": "/memories/dirlink"},
    {"command": "view", "path": "/memories/dirlink/alpha/plan.md"},
    {"command": "view", "path": "/memories/dirlink/../crlf.md"},
    {"command": "view", "path": "/memories/fifo"},
    {"command": "delete", "path": "/memories/fifo"},
    {"command": "str_replace", "path": "/memories/fifo", "old_str": "a", "new_str": "b"},
    {"command": "insert", "path": "/memories/fifo", "insert_line": 0, "insert_text": "b"},
    {"command": "view", "path": "/memories"},
    {"command": "str_replace", "path": "/memories/dirlink/alpha/plan.md", "old_str": "# Plan", "new_str": "# The plan"},
    {"command": "create", "path": "/memories/dangling.md", "file_text": "made through a dangling link\n"},
    {"command": "view", "path": "/memories/does-not-exist.md"},
    {"command": "rename", "old_path": "/memories/link-to-crlf.md", "new_path": "/memories/crlf-moved.md"},
    {"command": "rename", "old_path": "/memories/crlf-moved.md", "new_path": "/memories/crlf.md"},
    {"command": "view", "path": "/memories/link-to-crlf.md"},
]

# After the sequence: inputs the API would never send, and edge cases.
EXTRA: list = [
    [1, 2],
    "view",
    42,
    None,
    {},
    {"command": "frobnicate", "path": "/memories"},
    {"command": 5},
    {"command": ["view", {"a": None, "b": 1.5e20, "c": 1e-7, "d": True, "e": "it's"}]},
    {"command": "view"},
    {"command": "view", "path": 5},
    {"command": "view", "path": None},
    {"command": "view", "path": ["/memories"]},
    {"command": "view", "path": "/memories/a\u0000b"},
    {"command": "view", "path": "/memories", "extra": "ignored"},
    {"command": "create", "path": "/memories/no-text.md"},
    {"command": "create", "file_text": "x"},
    {"command": "create", "path": "/memories", "file_text": "x"},
    {"command": "create", "path": "/memories/crlf.md/below.md", "file_text": "x"},
    {"command": "str_replace", "path": "/memories/crlf.md", "old_str": "three"},
    {"command": "str_replace", "path": "/memories/crlf.md", "old_str": "nowhere"},
    {"command": "str_replace", "path": "/memories/crlf.md", "new_str": "x"},
    {"command": "str_replace", "path": "/memories/crlf.md", "old_str": 5, "new_str": "x"},
    {"command": "insert", "path": "/memories/crlf.md", "insert_text": "x"},
    {"command": "insert", "path": "/memories/crlf.md", "insert_line": "1", "insert_text": "coerced"},
    {"command": "insert", "path": "/memories/crlf.md", "insert_line": 1.0, "insert_text": "coerced too"},
    {"command": "insert", "path": "/memories/crlf.md", "insert_line": True, "insert_text": "a bool"},
    {"command": "insert", "path": "/memories/crlf.md", "insert_line": 1.5, "insert_text": "x"},
    {"command": "insert", "path": "/memories/crlf.md", "insert_line": 99.5, "insert_text": "x"},
    {"command": "insert", "path": "/memories/crlf.md", "insert_line": "x", "insert_text": "x"},
    {"command": "insert", "path": "/memories/crlf.md", "insert_line": 1},
    {"command": "insert", "path": "/memories/crlf.md", "insert_line": 99},
    {"command": "view", "path": "/memories/crlf.md", "view_range": ["1", "2"]},
    {"command": "view", "path": "/memories/crlf.md", "view_range": [1.5, 2]},
    {"command": "view", "path": "/memories/crlf.md", "view_range": [0.5, 2]},
    {"command": "view", "path": "/memories/crlf.md", "view_range": [2, None]},
    {"command": "view", "path": "/memories/crlf.md", "view_range": [2, "x"]},
    {"command": "view", "path": "/memories/crlf.md", "view_range": ["x", 2]},
    {"command": "view", "path": "/memories/crlf.md", "view_range": [-3, -2]},
    {"command": "view", "path": "/memories/crlf.md", "view_range": [3, 1]},
    {"command": "view", "path": "/memories/crlf.md", "view_range": "12"},
    {"command": "view", "path": "/memories/crlf.md", "view_range": "123"},
    {"command": "view", "path": "/memories/crlf.md", "view_range": [1]},
    {"command": "view", "path": "/memories/crlf.md", "view_range": []},
    {"command": "view", "path": "/memories/crlf.md", "view_range": True},
    {"command": "view", "path": "/memories/crlf.md", "view_range": 0},
    {"command": "view", "path": "/memories/crlf.md", "view_range": {"a": 1, "b": 2}},
    {"command": "rename", "old_path": "/memories/crlf.md"},
    {"command": "rename", "old_path": "/memories/a", "new_path": "/memories/a/inside"},
    {"command": "rename", "old_path": "/memories/crlf.md", "new_path": "/memories/crlf.md"},
    {"command": "rename", "old_path": "/memories/crlf.md", "new_path": "/memories"},
    {"command": "delete", "path": 7},
    {"command": "delete", "path": "/memories/."},
    {"command": "view", "path": "/memories/../memories/a"},
    {"command": "view", "path": "/memories/../other"},
    {"command": "view", "path": "/memories/a/../../memories/a/again.md"},
    # Python's str.count decides: "aa" occurs once in "aaa".
    {"command": "create", "path": "/memories/overlap.md", "file_text": "aaa\nbbbb\nccc\n"},
    {"command": "str_replace", "path": "/memories/overlap.md", "old_str": "aa", "new_str": "X"},
    {"command": "str_replace", "path": "/memories/overlap.md", "old_str": "bb", "new_str": "Y"},
    {"command": "str_replace", "path": "/memories/overlap.md", "old_str": "", "new_str": "Y"},
    {"command": "create", "path": "/memories/blank.md", "file_text": ""},
    {"command": "str_replace", "path": "/memories/blank.md", "old_str": "", "new_str": "filled\n"},
    {"command": "view", "path": "/memories/blank.md"},
    {"command": "str_replace", "path": "/memories/overlap.md", "old_str": "c", "new_str": "d"},
    {"command": "create", "path": "/memories/snippet.md", "file_text": "".join(f"l{i}\n" for i in range(1, 11))},
    {"command": "str_replace", "path": "/memories/snippet.md", "old_str": "l1\n", "new_str": "first\nline\n"},
    {"command": "str_replace", "path": "/memories/snippet.md", "old_str": "l6\nl7", "new_str": "six-seven"},
    {"command": "str_replace", "path": "/memories/snippet.md", "old_str": "l10\n", "new_str": ""},
    {"command": "view", "path": "/memories/snippet.md", "view_range": [3, -1]},
    # Sizes as _format_file_size writes them.
    {"command": "create", "path": "/memories/sizes/k.md", "file_text": "x" * 1024},
    {"command": "create", "path": "/memories/sizes/k5.md", "file_text": "x" * 1536},
    {"command": "create", "path": "/memories/sizes/k25.md", "file_text": "x" * 1280},
    {"command": "create", "path": "/memories/sizes/odd.md", "file_text": "x" * 1023},
    {"command": "create", "path": "/memories/sizes/m.md", "file_text": "x" * (1024 * 1024 + 100000)},
    {"command": "view", "path": "/memories/sizes"},
    {"command": "delete", "path": "/memories/sizes"},
    {"command": "view", "path": "/memories"},
]


def unbase(value, bases: dict[str, str]):
    if isinstance(value, str):
        for prefix in sorted(bases, key=len, reverse=True):
            value = value.replace(prefix, bases[prefix])
    return value


def reference(tool, command, bases: dict[str, str]) -> dict:
    """What the SDK's tool runner makes of the handler's answer."""
    try:
        content = tool_result_content(tool.call(command))
        is_error = False
    except Exception as exc:  # the runner catches everything
        content = tool_error_content(exc)
        is_error = True
    return {"content": unbase(content, bases), "is_error": is_error}


class ToolProcess:
    """`mnemofs tool`, fed line by line."""

    def __init__(self, argv: list[str]):
        self.argv = argv
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)

    def log(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")

    def send(self, raw: bytes, answers: int = 1) -> list[dict]:
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()
        out = []
        for _ in range(answers):
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"mnemofs tool stopped answering; its stderr:\n{self.log()}")
            if not line.endswith(b"\n"):
                raise RuntimeError(f"an answer without its newline: {line!r}")
            out.append(json.loads(line))
        return out

    def call(self, command) -> dict:
        return self.send((json.dumps(command) + "\n").encode())[0]

    def close(self) -> int:
        self.proc.stdin.close()
        rest = self.proc.stdout.read()
        code = self.proc.wait(timeout=60)
        if rest:
            raise RuntimeError(f"answers nobody asked for: {rest!r}")
        return code


def run_alone(argv: list[str], stdin: bytes) -> list[dict]:
    """A tool process that gets `stdin` and its end at once."""
    done = subprocess.run(argv, input=stdin, capture_output=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited with {done.returncode}: {done.stderr.decode('utf-8', 'replace')}")
    if done.stdout and not done.stdout.endswith(b"\n"):
        raise RuntimeError(f"an answer without its newline: {done.stdout!r}")
    return [json.loads(line) for line in done.stdout.splitlines()]


def as_view(answer: dict, real: str, view: str) -> dict:
    """`answer` with its header naming `view` instead of `real`."""
    head, sep, rest = answer["content"].partition("\n")
    return {"content": head.replace(real, view) + sep + rest, "is_error": answer["is_error"]}


def poll(ask, want, timeout: float = INDEX_WAIT) -> dict:
    """Asks until the answer is `want` (the index catches up), at most `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        got = ask()
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def left_behind(command) -> str | None:
    """Where the reference leaves an empty file that mnemofs does not make:
    a `create` whose `file_text` is not a string, relative to the root."""
    if not isinstance(command, dict) or command.get("command") != "create":
        return None
    path = command.get("path")
    if isinstance(command.get("file_text"), str) or not isinstance(path, str):
        return None
    if not path.startswith("/memories/"):
        return None
    return path[len("/memories/"):]


def plain(plain_base: str, store: str, state: str, mnemofs: str) -> list[str]:
    os.umask(0o022)
    ref = BetaLocalFilesystemMemoryTool(base_path=plain_base)
    ref_root = os.path.join(plain_base, "memories")
    bases = {plain_base: "", os.path.realpath(plain_base): ""}
    # The reference handler's directory has no guide: leave mnemofs's out.
    argv = [mnemofs, "tool", "--store", store, "--state-dir", state, "--guide", "off"]
    tool = ToolProcess(argv)
    failures: list[str] = []

    def want(command) -> dict:
        return reference(ref, command, bases)

    def compare_trees(after: str) -> None:
        plain_tree, store_tree = base.tree(ref_root), base.tree(store)
        if plain_tree != store_tree:
            only_plain = [e for e in plain_tree if e not in store_tree]
            only_store = [e for e in store_tree if e not in plain_tree]
            failures.append(f"trees differ after {after}:\n  only plain: {only_plain!r}\n  only store: {only_store!r}")

    def expect(label: str, wanted: dict, got: dict) -> None:
        if wanted != got:
            failures.append(f"{label}:\n  reference: {wanted!r}\n  mnemofs:   {got!r}")

    def same(command, label: str = "") -> None:
        expect(f"command {label}{command!r}", want(command), tool.call(command))
        left = left_behind(command)
        if left is not None:
            # The reference leaves an empty file (and its folders) where a
            # create without its text failed; mnemofs makes nothing.
            left = os.path.join(ref_root, left)
            if os.path.isfile(left) and os.path.getsize(left) == 0:
                os.remove(left)
            for folder in (os.path.dirname(left),):
                while folder != ref_root and os.path.isdir(folder) and not os.listdir(folder):
                    os.rmdir(folder)
                    folder = os.path.dirname(folder)
        compare_trees(f"{label}{command!r}")

    compare_trees("the start")
    for i, command in enumerate(base.COMMANDS):
        if i == len(base.COMMANDS) // 2:
            for root in (ref_root, store):
                os.symlink("crlf.md", os.path.join(root, "link-to-crlf.md"))
                os.symlink("does-not-exist.md", os.path.join(root, "dangling.md"))
                for name, target in LINKS:
                    os.symlink(target, os.path.join(root, name))
                os.mkfifo(os.path.join(root, "fifo"))
            for extra in (
                {"command": "view", "path": "/memories/link-to-crlf.md"},
                {"command": "view", "path": "/memories/dangling.md"},
                {"command": "view", "path": "/memories"},
                {"command": "str_replace", "path": "/memories/link-to-crlf.md", "old_str": "one", "new_str": "uno"},
            ):
                same(extra, "(links) ")
            for extra in LINK_COMMANDS:
                same(extra, "(links) ")
            for root in (ref_root, store):
                for name in ["fifo", *(name for name, _ in LINKS)]:
                    os.remove(os.path.join(root, name))
        same(command, f"#{i} ")
    for command in EXTRA:
        same(command, "(extra) ")

    # Lines that are not JSON: one error each, and the loop goes on.
    for raw in (b"garbage\n", b'{"command": }\n', b"\xff\xfe{}\n", b"{'command': 'view'}\n", b"[1, 2] [3]\n"):
        [got] = tool.send(raw)
        if not (got["is_error"] and got["content"].startswith("Invalid JSON input: ")):
            failures.append(f"not JSON {raw!r}: {got!r}")
    view_root = {"command": "view", "path": "/memories"}
    view_crlf = {"command": "view", "path": "/memories/crlf.md"}
    cut, whole = tool.send(b'{"command": "view", "path": \n' + json.dumps(view_root).encode() + b"\n", answers=2)
    if not (cut["is_error"] and cut["content"].startswith("Invalid JSON input: ")):
        failures.append(f"an object cut short: {cut!r}")
    expect("the object after one cut short", want(view_root), whole)
    [got] = tool.send(b"\n   \n\t\n" + json.dumps(view_crlf).encode() + b"\n")
    expect("after blank lines", want(view_crlf), got)
    [got] = tool.send(json.dumps(view_crlf, indent=2).encode() + b"\n")
    expect("a pretty-printed object in the stream", want(view_crlf), got)

    # The views: what the reference shows for the memory they lead to.
    same({"command": "create", "path": "/memories/people/ada.md", "file_text": ADA}, "(views) ")
    ada = "/memories/people/ada.md"
    by_id = f"/memories/by-id/{ADA_ID}.md"
    expect(
        "view by-id",
        as_view(want({"command": "view", "path": ada}), ada, by_id),
        poll(lambda: tool.call({"command": "view", "path": by_id}), as_view(want({"command": "view", "path": ada}), ada, by_id)),
    )
    expect(
        "view by-id with a range",
        as_view(want({"command": "view", "path": ada, "view_range": [6, -1]}), ada, by_id),
        tool.call({"command": "view", "path": by_id, "view_range": [6, -1]}),
    )
    folder = f"/memories/search/{QUERY}"
    size = _format_file_size(os.path.getsize(os.path.join(ref_root, "people/ada.md")))

    def listing() -> dict:
        # summary.md reports its real size, which only the tool can tell.
        summary = tool.call({"command": "view", "path": f"{folder}/summary.md"})["content"]
        body = "\n".join(line.split("\t", 1)[1] for line in summary.split("\n")[1:])
        return {
            "content": f"Here're the files and directories up to 2 levels deep in {folder}, excluding hidden items:\n"
            f"0B\t{folder}\n{size}\t{folder}/01-ada.md\n{_format_file_size(len(body.encode()))}\t{folder}/summary.md",
            "is_error": False,
        }

    poll(lambda: "01-ada.md" in tool.call({"command": "view", "path": folder})["content"], True)
    expect("view a search", listing(), tool.call({"command": "view", "path": folder}))
    expect(
        "view a search result",
        as_view(want({"command": "view", "path": ada}), ada, f"{folder}/01-ada.md"),
        tool.call({"command": "view", "path": f"{folder}/01-ada.md"}),
    )
    summary = tool.call({"command": "view", "path": f"{folder}/summary.md"})
    if summary["is_error"] or "people/ada.md" not in summary["content"]:
        failures.append(f"view a search's summary.md: {summary!r}")
    # Editing a view's link edits the memory itself.
    edit = {"command": "str_replace", "old_str": "Menabrea's paper", "new_str": "the Menabrea paper"}
    expect("str_replace through by-id", want({**edit, "path": ada}), tool.call({**edit, "path": by_id}))
    compare_trees("str_replace through by-id")
    expect(
        "create inside a view",
        {"content": "OSError(30, 'Read-only file system')", "is_error": True},
        tool.call({"command": "create", "path": f"{folder}/new.md", "file_text": "x"}),
    )
    compare_trees("create inside a view")
    same({"command": "view", "path": "/memories/by-id/no-such-id.md"}, "(views) ")
    same({"command": "view", "path": "/memories"}, "(views) ")

    code = tool.close()
    if code != 0:
        failures.append(f"mnemofs tool exited with {code}: {tool.log()}")

    # One pretty-printed object and the end of input, without a newline.
    for command in (view_crlf, {"command": "view", "path": "/memories/people"}):
        got = run_alone(argv, json.dumps(command, indent=2).encode())
        expect(f"alone on stdin, pretty-printed: {command!r}", [want(command)], got)
    got = run_alone(argv, b"")
    expect("an empty stdin", [], got)
    return failures


MOUNT_FILES = [
    ("/memories/people/ada.md", ADA),
    ("/memories/notes/plan.md", "# Plan\n- tag the #history notes\n- read about the analytical engine\n"),
    ("/memories/notes/todo.md", "nothing analytical here? yes: analytical\n"),
]

MOUNT_READ_ONLY: list = [
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/people"},
    {"command": "view", "path": "/memories/people/ada.md"},
    {"command": "view", "path": "/memories/people/ada.md", "view_range": [2, 4]},
    {"command": "view", "path": f"/memories/by-id/{ADA_ID}.md"},
    {"command": "view", "path": f"/memories/by-id/{ADA_ID}.md", "view_range": [6, -1]},
    {"command": "view", "path": "/memories/by-id/no-such-id.md"},
    {"command": "view", "path": "/memories/by-id"},
    {"command": "view", "path": f"/memories/search/{QUERY}"},
    {"command": "view", "path": f"/memories/search/{QUERY}/summary.md"},
    {"command": "view", "path": "/memories/search/ada lovelace"},
    {"command": "view", "path": "/memories/search/nothing-matches-this"},
    {"command": "view", "path": "/memories/search"},
    {"command": "view", "path": "/memories/by-tag"},
    {"command": "view", "path": "/memories/by-tag/math"},
    {"command": "view", "path": "/memories/by-tag/no-such-tag"},
    {"command": "view", "path": "/memories/recent"},
    {"command": "view", "path": "/memories/../etc"},
    {"command": "view", "path": "/memories/nothing.md"},
    {"command": "str_replace", "path": f"/memories/by-id/{ADA_ID}.md", "old_str": "nowhere", "new_str": "x"},
    {"command": "view", "path": "/memories/search/lovelace/01-ada.md", "view_range": [2, 3]},
    {"command": "insert", "path": "/memories/search/lovelace/01-ada.md", "insert_line": 99, "insert_text": "x"},
    {"command": "create", "path": f"/memories/by-id/{ADA_ID}.md", "file_text": "x"},
    {"command": "create", "path": "/memories/search/x.md", "file_text": "x"},
    {"command": "create", "path": "/memories/search/lovelace/x.md", "file_text": "x"},
    {"command": "create", "path": "/memories/by-tag/no-such-tag/x.md", "file_text": "x"},
    {"command": "create", "path": "/memories/recent/x.md", "file_text": "x"},
    {"command": "create", "path": "/memories/MNEMOFS.md", "file_text": "x"},
    {"command": "view", "path": "/memories/MNEMOFS.md", "view_range": [1, 3]},
    {"command": "str_replace", "path": "/memories/MNEMOFS.md", "old_str": "# mnemofs", "new_str": "x"},
    {"command": "insert", "path": "/memories/MNEMOFS.md", "insert_line": 0, "insert_text": "x"},
    {"command": "delete", "path": "/memories/MNEMOFS.md"},
    {"command": "delete", "path": "/memories/recent"},
    {"command": "rename", "old_path": "/memories/notes", "new_path": f"/memories/by-id/{ADA_ID}.md"},
    {"command": "rename", "old_path": "/memories/notes/plan.md", "new_path": "/memories/search/plan.md"},
    {"command": "delete", "path": "/memories/by-id/no-such-id.md"},
]


def mount(mountpoint: str, store: str, mnemofs: str) -> list[str]:
    os.umask(0o022)
    holder = tempfile.mkdtemp(prefix="memory-tool-ref-")
    os.symlink(mountpoint, os.path.join(holder, "memories"))
    ref = BetaLocalFilesystemMemoryTool(base_path=holder)
    bases = {os.path.realpath(mountpoint): "/memories", holder: ""}
    tool = ToolProcess([mnemofs, "tool", "--store", store])
    failures: list[str] = []

    def expect(label: str, wanted, got) -> None:
        if wanted != got:
            failures.append(f"{label}:\n  wanted:  {wanted!r}\n  mnemofs: {got!r}")

    # Writes through the tool reach the mount.
    for path, text in MOUNT_FILES:
        got = tool.call({"command": "create", "path": path, "file_text": text})
        expect(f"create {path}", {"content": f"File created successfully at: {path}", "is_error": False}, got)
        with open(mountpoint + path[len("/memories") :], encoding="utf-8") as f:
            expect(f"{path} read back through the mount", text, f.read())

    def compare(command, label: str = "") -> None:
        # Both read the same index; a commit may land between the two asks.
        wanted = reference(ref, command, bases)
        got = poll(lambda: tool.call(command), wanted, timeout=10.0)
        expect(f"command {label}{command!r}", reference(ref, command, bases), got)

    by_id = {"command": "view", "path": f"/memories/by-id/{ADA_ID}.md"}
    poll(lambda: tool.call(by_id)["is_error"], False)
    poll(lambda: "03-" in tool.call({"command": "view", "path": f"/memories/search/{QUERY}"})["content"], True)
    for command in MOUNT_READ_ONLY:
        compare(command)

    # An edit through the mount, seen by the tool; one through the tool's
    # view link, seen on the mount.
    ref.call({"command": "str_replace", "path": "/memories/people/ada.md", "old_str": "first", "new_str": "first ever"})
    compare({"command": "view", "path": "/memories/people/ada.md"}, "(after an edit on the mount) ")
    got = tool.call({"command": "str_replace", "path": f"/memories/by-id/{ADA_ID}.md", "old_str": "Menabrea's", "new_str": "L. F. Menabrea's"})
    if got["is_error"]:
        failures.append(f"str_replace through by-id: {got!r}")
    with open(os.path.join(mountpoint, "people/ada.md"), encoding="utf-8") as f:
        if "L. F. Menabrea's" not in f.read():
            failures.append("an edit through by-id is not seen on the mount")
    compare({"command": "view", "path": f"/memories/by-id/{ADA_ID}.md"}, "(after an edit by the tool) ")
    got = tool.call({"command": "delete", "path": "/memories/notes/todo.md"})
    expect("delete", {"content": "Successfully deleted /memories/notes/todo.md", "is_error": False}, got)
    if os.path.exists(os.path.join(mountpoint, "notes/todo.md")):
        failures.append("a file deleted by the tool is still on the mount")
    compare({"command": "view", "path": "/memories"}, "(after a delete) ")

    code = tool.close()
    if code != 0:
        failures.append(f"mnemofs tool exited with {code}: {tool.log()}")
    os.remove(os.path.join(holder, "memories"))
    os.rmdir(holder)
    return failures


def main() -> int:
    if len(sys.argv) == 6 and sys.argv[1] == "plain":
        failures = plain(*sys.argv[2:])
        count = len(base.COMMANDS) + len(LINK_COMMANDS) + len(EXTRA)
    elif len(sys.argv) == 5 and sys.argv[1] == "mount":
        failures = mount(*sys.argv[2:])
        count = len(MOUNT_FILES) + len(MOUNT_READ_ONLY)
    else:
        print(__doc__, file=sys.stderr)
        return 64
    if failures:
        print(f"{len(failures)} difference(s) between mnemofs tool and the reference handler:", file=sys.stderr)
        for failure in failures[:25]:
            print(failure, file=sys.stderr)
        return 1
    print(f"{sys.argv[1]}: {count} memory tool commands and more answered as the reference handler does")
    return 0


if __name__ == "__main__":
    sys.exit(main())
