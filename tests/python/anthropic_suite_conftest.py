"""conftest for the SDK's memory tool tests on a mnemofs mount.

Each test's temporary directory (the first `tempfile.TemporaryDirectory()`
it makes, which its `temp_directory` fixture or its own body asks for) is
the mount's root, emptied afterwards; later ones (the "outside" folders of
the symlink tests) are ordinary temp dirs. A test that plants a symlink
with an absolute target, or one that leads out of the mount, is skipped:
the mount refuses such links by design.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

MOUNT = os.path.realpath(os.environ["MNEMOFS_MOUNT"])
_temporary_directory = tempfile.TemporaryDirectory
_symlink = os.symlink


def _empty(root: str) -> None:
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


class _MountRoot:
    """The mount's root, used as a temporary directory."""

    name = MOUNT

    def __enter__(self) -> str:
        return MOUNT

    def __exit__(self, *exc: object) -> None:
        _empty(MOUNT)

    def cleanup(self) -> None:
        _empty(MOUNT)


def _in_the_mount(path: str) -> bool:
    return path == MOUNT or path.startswith(MOUNT + os.sep)


def _leaves_the_mount(folder: str, target: str) -> bool:
    if os.path.isabs(target):
        return True
    return not _in_the_mount(os.path.normpath(os.path.join(folder, target)))


@pytest.fixture(autouse=True)
def _on_the_mount(monkeypatch: pytest.MonkeyPatch):
    assert os.listdir(MOUNT) == [], f"the mount's root is not empty: {os.listdir(MOUNT)}"
    handed_out: list[bool] = []

    def temporary_directory(*args, **kwargs):
        if not handed_out and not args and not kwargs:
            handed_out.append(True)
            return _MountRoot()
        return _temporary_directory(*args, **kwargs)

    def symlink(src, dst, target_is_directory=False, *, dir_fd=None):
        folder = os.path.realpath(os.path.dirname(os.path.abspath(os.fspath(dst))))
        if _in_the_mount(folder) and _leaves_the_mount(folder, os.fspath(src)):
            pytest.skip("plants an absolute or escaping symlink, which the mount refuses by design")
        return _symlink(src, dst, target_is_directory, dir_fd=dir_fd)

    monkeypatch.setattr(tempfile, "TemporaryDirectory", temporary_directory)
    monkeypatch.setattr(os, "symlink", symlink)
    yield
    _empty(MOUNT)
