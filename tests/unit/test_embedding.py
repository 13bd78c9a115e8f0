"""The README's embedding example, run as written: the core in another Python system, on the
in-memory adapters, through the same container the server uses."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def embedding_example() -> str:
    """The Python block of the README's "Embedding the core" section."""
    section = README.read_text(encoding="utf-8").split("## Embedding the core", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the README's embedding section has no python block"
    return match.group(1)


def test_the_readme_embedding_example(tmp_path: Path) -> None:
    script = tmp_path / "embed.py"
    script.write_text(embedding_example(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"created ACME [0-9a-f-]{36}\n", done.stdout), done.stdout
    assert list(tmp_path.iterdir()) == [script]  # memory:// writes no database file here
