#!/usr/bin/env python3
"""Run the `anthropic` SDK's own tests of its memory tool handler
(`tests/lib/tools/memory_tools/test_filesystem.py`, from the source
package of the installed version) with a mnemofs mount as the directory
every test works in.

Usage: anthropic_suite.py MOUNT WORK_DIR

The mount must show exactly the real files at its root (`--guide off`):
the tests compare directory snapshots. The test file is not kept in this
repository: `pip download` fetches the source package of the version the
venv has into WORK_DIR (once), and it is read from there. Its tests then
run under pytest with `anthropic_suite_conftest.py` as their conftest,
which points each test's temporary directory at the mount and skips the
tests that plant an absolute or escaping symlink (the mount refuses those
by design; see SEMANTICS.md). Exit status: pytest's.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tarfile

SUITE = "tests/lib/tools/memory_tools/test_filesystem.py"


def source_package(version: str, work: str) -> str:
    """The SDK's source package for `version`, downloaded once."""
    found = glob.glob(os.path.join(work, f"anthropic-{version}.tar.gz"))
    if found:
        return found[0]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         f"anthropic=={version}", "-d", work],
        check=True,
    )
    return os.path.join(work, f"anthropic-{version}.tar.gz")


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 64
    mount, work = sys.argv[1], sys.argv[2]
    import anthropic

    version = anthropic.__version__
    os.makedirs(work, exist_ok=True)
    sdist = source_package(version, work)
    run_dir = os.path.join(work, f"suite-{version}")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    with tarfile.open(sdist) as tar:
        member = tar.getmember(f"anthropic-{version}/{SUITE}")
        with tar.extractfile(member) as src, open(os.path.join(run_dir, "test_filesystem.py"), "wb") as dst:
            shutil.copyfileobj(src, dst)
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.copy(os.path.join(here, "anthropic_suite_conftest.py"), os.path.join(run_dir, "conftest.py"))
    env = dict(os.environ, MNEMOFS_MOUNT=mount)
    print(f"anthropic {version}: {SUITE}", flush=True)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=session",
         "--rootdir", run_dir, os.path.join(run_dir, "test_filesystem.py")],
        env=env,
        cwd=run_dir,
    ).returncode


if __name__ == "__main__":
    sys.exit(main())
