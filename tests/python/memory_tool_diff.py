#!/usr/bin/env python3
"""Run Anthropic's reference `memory` tool handler against a plain directory
and against a mnemofs mount, and require identical results.

Usage: memory_tool_diff.py PLAIN_DIR MOUNT_DIR

Both handlers get the same long command sequence. For every command the
output (or the exception's type and message, with each side's base path
replaced by <BASE>) must be identical, and after every command the trees
under <base>/memories must be identical (paths, types, modes, contents).
Exit status 0 means no difference; 1 lists the first differences; 2 means
the `anthropic` package is missing.
"""

from __future__ import annotations

import os
import stat
import sys

try:
    from anthropic.tools.memory import BetaLocalFilesystemMemoryTool
except ImportError as err:  # pragma: no cover - environment problem
    print(f"cannot import anthropic.tools.memory ({err}); run: pip install anthropic", file=sys.stderr)
    sys.exit(2)


LONG_TEXT = "".join(f"line {i}: {'x' * (i % 50)}\n" for i in range(1, 4001))

COMMANDS: list[dict] = [
    # An empty store.
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/nothing.md"},
    # Create, and create over an existing file.
    {"command": "create", "path": "/memories/notes.md", "file_text": "first line\nsecond line\nthird line\nfourth\nfifth\n"},
    {"command": "create", "path": "/memories/notes.md", "file_text": "overwrite attempt\n"},
    {"command": "create", "path": "/memories/projects/alpha/plan.md", "file_text": "# Plan\n- step one\n- step two\n- step one\n"},
    {"command": "create", "path": "/memories/people/josé.md", "file_text": "Café ☕\n中文内容\nemoji 🙂 and ünïcödé\n"},
    {"command": "create", "path": "/memories/crlf.md", "file_text": "one\r\ntwo\r\nthree\r\n"},
    {"command": "create", "path": "/memories/empty.md", "file_text": ""},
    {"command": "create", "path": "/memories/no-newline.md", "file_text": "a\nb\nc"},
    {"command": "create", "path": "/memories/long.md", "file_text": LONG_TEXT},
    {"command": "create", "path": "/memories/a/b/c/d/deep.md", "file_text": "deep\n"},
    {"command": "create", "path": "/memories/.hidden.md", "file_text": "hidden\n"},
    {"command": "create", "path": "/memories/.config/settings.md", "file_text": "hidden dir\n"},
    # Views of directories and files, with ranges.
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/"},
    {"command": "view", "path": "/memories/projects"},
    {"command": "view", "path": "/memories/a"},
    {"command": "view", "path": "/memories/notes.md"},
    {"command": "view", "path": "/memories/notes.md", "view_range": [2, 3]},
    {"command": "view", "path": "/memories/notes.md", "view_range": [2, -1]},
    {"command": "view", "path": "/memories/notes.md", "view_range": [0, 1]},
    {"command": "view", "path": "/memories/notes.md", "view_range": [10, 20]},
    {"command": "view", "path": "/memories/notes.md", "view_range": [4, 2]},
    {"command": "view", "path": "/memories/people/josé.md"},
    {"command": "view", "path": "/memories/crlf.md"},
    {"command": "view", "path": "/memories/empty.md"},
    {"command": "view", "path": "/memories/long.md", "view_range": [3990, -1]},
    {"command": "view", "path": "/memories/.hidden.md"},
    {"command": "view", "path": "/memories/missing/dir"},
    {"command": "view", "path": "/memories/notes.md/child"},
    # str_replace: unique, missing, multiple, on a dir, on a missing file.
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "second line", "new_str": "2nd line ✓"},
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "not there", "new_str": "x"},
    {"command": "str_replace", "path": "/memories/projects/alpha/plan.md", "old_str": "step one", "new_str": "x"},
    {"command": "str_replace", "path": "/memories/projects", "old_str": "a", "new_str": "b"},
    {"command": "str_replace", "path": "/memories/ghost.md", "old_str": "a", "new_str": "b"},
    {"command": "str_replace", "path": "/memories/people/josé.md", "old_str": "中文内容", "new_str": "中文内容（已编辑）"},
    {"command": "str_replace", "path": "/memories/crlf.md", "old_str": "two\r\n", "new_str": ""},
    {"command": "str_replace", "path": "/memories/long.md", "old_str": "line 2000: ", "new_str": "LINE TWO THOUSAND: "},
    {"command": "view", "path": "/memories/notes.md"},
    # insert: start, end, out of range, negative, missing file, dir.
    {"command": "insert", "path": "/memories/notes.md", "insert_line": 0, "insert_text": "zeroth\n"},
    {"command": "insert", "path": "/memories/notes.md", "insert_line": 6, "insert_text": "appended at the end"},
    {"command": "insert", "path": "/memories/notes.md", "insert_line": 3, "insert_text": "multi\nline\ninsert\n"},
    {"command": "insert", "path": "/memories/notes.md", "insert_line": 99, "insert_text": "nope"},
    {"command": "insert", "path": "/memories/notes.md", "insert_line": -1, "insert_text": "nope"},
    {"command": "insert", "path": "/memories/empty.md", "insert_line": 0, "insert_text": "now not empty"},
    {"command": "insert", "path": "/memories/no-newline.md", "insert_line": 3, "insert_text": "d"},
    {"command": "insert", "path": "/memories/ghost.md", "insert_line": 0, "insert_text": "x"},
    {"command": "insert", "path": "/memories/a", "insert_line": 0, "insert_text": "x"},
    {"command": "view", "path": "/memories/notes.md"},
    {"command": "view", "path": "/memories/empty.md"},
    # rename: plain, onto existing, into a new nested dir, a directory, missing.
    {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/renamed.md"},
    {"command": "rename", "old_path": "/memories/renamed.md", "new_path": "/memories/crlf.md"},
    {"command": "rename", "old_path": "/memories/renamed.md", "new_path": "/memories/archive/2024/renamed.md"},
    {"command": "rename", "old_path": "/memories/projects", "new_path": "/memories/archive/projects"},
    {"command": "rename", "old_path": "/memories/ghost.md", "new_path": "/memories/ghost2.md"},
    {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
    {"command": "rename", "old_path": "/memories/crlf.md", "new_path": "/memories/../crlf.md"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/archive"},
    # Path traversal and malformed paths.
    {"command": "view", "path": "/memories/../etc/passwd"},
    {"command": "view", "path": "/etc/passwd"},
    {"command": "view", "path": "/memories/../../../../etc/shadow"},
    {"command": "create", "path": "/memories/../escape.md", "file_text": "x"},
    {"command": "create", "path": "/memories/a/../../escape.md", "file_text": "x"},
    {"command": "delete", "path": "/memories/../memories"},
    {"command": "view", "path": "/memories/./crlf.md"},
    {"command": "view", "path": "/memories//crlf.md"},
    {"command": "view", "path": "/memories/a/../crlf.md"},
    {"command": "create", "path": "/memoriesX/sneaky.md", "file_text": "starts with /memories\n"},
    {"command": "view", "path": "memories/crlf.md"},
    # delete: file, dir tree, missing, the root itself.
    {"command": "delete", "path": "/memories/empty.md"},
    {"command": "delete", "path": "/memories/empty.md"},
    {"command": "delete", "path": "/memories/a"},
    {"command": "delete", "path": "/memories/nowhere"},
    {"command": "delete", "path": "/memories"},
    {"command": "delete", "path": "/memories/"},
    # Re-create where things were deleted, then a final look.
    {"command": "create", "path": "/memories/a/again.md", "file_text": "again\n"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/archive/2024/renamed.md"},
]


def normalize(value: object, bases: list[str]) -> object:
    if isinstance(value, str):
        for b in sorted(set(bases), key=len, reverse=True):
            value = value.replace(b, "<BASE>")
        return value
    if isinstance(value, (list, tuple)):
        return [normalize(v, bases) for v in value]
    if isinstance(value, dict):
        return {k: normalize(v, bases) for k, v in value.items()}
    return repr(value)


def run(tool: BetaLocalFilesystemMemoryTool, base: str, command: dict) -> tuple:
    bases = [base, os.path.realpath(base)]
    try:
        return ("ok", normalize(tool.call(dict(command)), bases))
    except Exception as exc:  # every failure must match too
        return ("error", type(exc).__name__, normalize(str(exc), bases))


def tree(root: str) -> list[tuple]:
    """Every entry under root: relative path, type, permission bits, content."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                out.append((rel, "dir", oct(mode)))
            elif stat.S_ISLNK(st.st_mode):
                out.append((rel, "symlink", os.readlink(full)))
            elif stat.S_ISREG(st.st_mode):
                with open(full, "rb") as f:
                    out.append((rel, "file", oct(mode), st.st_size, f.read()))
            else:
                out.append((rel, "other", oct(st.st_mode)))
    return sorted(out)


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 64
    plain_base, mount_base = sys.argv[1], sys.argv[2]
    os.umask(0o022)
    plain = BetaLocalFilesystemMemoryTool(base_path=plain_base)
    mounted = BetaLocalFilesystemMemoryTool(base_path=mount_base)
    plain_root = os.path.join(plain_base, "memories")
    mount_root = os.path.join(mount_base, "memories")

    failures = []

    def compare_trees(after: str) -> None:
        want, got = tree(plain_root), tree(mount_root)
        if want != got:
            only_plain = [e for e in want if e not in got]
            only_mount = [e for e in got if e not in want]
            failures.append(
                f"trees differ after {after}:\n  only on plain: {only_plain!r}\n  only on mount: {only_mount!r}"
            )

    compare_trees("construction")
    for i, command in enumerate(COMMANDS):
        if i == len(COMMANDS) // 2:
            # Symlinks created by other tools: relative and inside, or dangling.
            for root in (plain_root, mount_root):
                os.symlink("crlf.md", os.path.join(root, "link-to-crlf.md"))
                os.symlink("does-not-exist.md", os.path.join(root, "dangling.md"))
            for extra in (
                {"command": "view", "path": "/memories/link-to-crlf.md"},
                {"command": "view", "path": "/memories/dangling.md"},
                {"command": "view", "path": "/memories"},
                {"command": "str_replace", "path": "/memories/link-to-crlf.md", "old_str": "one", "new_str": "uno"},
            ):
                want, got = run(plain, plain_base, extra), run(mounted, mount_base, extra)
                if want != got:
                    failures.append(f"command {extra!r}:\n  plain: {want!r}\n  mount: {got!r}")
            compare_trees("symlink commands")
        want = run(plain, plain_base, command)
        got = run(mounted, mount_base, command)
        if want != got:
            failures.append(f"command #{i} {command!r}:\n  plain: {want!r}\n  mount: {got!r}")
        compare_trees(f"command #{i} {command.get('command')} {command.get('path') or command.get('old_path')}")
        if len(failures) >= 10:
            break

    if failures:
        print(f"{len(failures)} difference(s) between a plain directory and the mount:", file=sys.stderr)
        for f in failures:
            print(f, file=sys.stderr)
        return 1
    print(f"{len(COMMANDS)} memory tool commands gave identical results on the plain directory and the mount")
    return 0


if __name__ == "__main__":
    sys.exit(main())
