"""scripts/lock.sh, `make lock`, with stand-ins for pip-compile and pip that only say what they
were asked: each lock compiled with every file's hash, then installed by hash on each machine."""

import os
import subprocess
from pathlib import Path

from tests.support import REPO
from tests.support.locks import LOCKS

STAND_IN = '#!/bin/sh\necho "$(basename "$0") $(basename "$PWD") $*" >>"$CALLS"\n'


def calls(tmp_path: Path) -> list[str]:
    for tool in ("pip-compile", "pip"):
        (tmp_path / tool).write_text(STAND_IN)
        (tmp_path / tool).chmod(0o755)
    log = tmp_path / "calls"
    done = subprocess.run(
        [str(REPO / "scripts" / "lock.sh")],
        env=os.environ | {"LOCK_BIN": str(tmp_path), "CALLS": str(log)},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines()


def test_each_lock_is_compiled_with_hashes_then_installed_by_hash_per_machine(
    tmp_path: Path,
) -> None:
    made = calls(tmp_path)
    compiles = [line.split() for line in made if line.startswith("pip-compile ")]
    assert [(c[1], c[-2], c[-1]) for c in compiles] == [
        (i.parent.name, f"--output-file={lock.name}", i.name) for i, lock, _ in LOCKS
    ]
    for c in compiles:
        assert {"--generate-hashes", "--allow-unsafe", "--no-emit-find-links"} <= set(c)
    installs = [line.split() for line in made if line.startswith("pip ")]
    assert [(i[-1].removeprefix("--requirement="), machines(i)) for i in installs] == [
        (str(lock.relative_to(REPO)), {m}) for _, lock, ms in LOCKS for m in ms
    ]
    for i in installs:
        assert {
            "--dry-run",
            "--require-hashes",
            "--only-binary=:all:",
            "--python-version=3.11",
        } <= set(i)


def machines(install: list[str]) -> set[str]:
    """The machines of an install's --platform tags (manylinux_2_17_x86_64 is x86_64's)."""
    tags = [word.split("=", 1)[1] for word in install if word.startswith("--platform=")]
    assert tags
    return {m for tag in tags for m in ("x86_64", "aarch64") if tag.endswith(f"_{m}")}
