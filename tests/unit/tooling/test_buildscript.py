"""localcluster/buildscript.py, the one runner of the build scripts: progress lines reach the caller as
they come, the `NAME=<path>` lines are the result, and a failure carries the whole output."""

from pathlib import Path

import pytest

from localcluster import buildscript

SCRIPT = """\
echo "fake-build: building $1" >&2
echo "compiler chatter"
echo "TOOL=/cache/tool-$1"
exit "${2:-0}"
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "fake-build.sh"
    path.write_text(SCRIPT)
    return path


def test_progress_lines_are_followed_and_paths_returned(script: Path) -> None:
    progress: list[str] = []
    assert buildscript.run(script, ["v1"], progress.append) == {"TOOL": Path("/cache/tool-v1")}
    assert progress == ["fake-build: building v1"]


def test_a_failure_raises_with_the_whole_output(script: Path) -> None:
    with pytest.raises(buildscript.BuildScriptError, match=r"failed \(3\)") as error:
        buildscript.run(script, ["v1", "3"], lambda _: None)
    assert "compiler chatter" in str(error.value)
