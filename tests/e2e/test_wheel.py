"""The built wheel embeds cleanly: it installs exactly one top-level package, ``fourcorner``
(no ``domain`` or ``adapters`` of its own to clash with an embedding system's modules), and
the README's embedding example runs in a fresh virtual environment that has only the wheel
(its dependencies are made importable from the test environment, without its sources)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
from tests.unit.test_embedding import embedding_example

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def build_wheel(out: Path) -> Path:
    """Build from a copy of the tracked tree, so the build leaves nothing in the checkout."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    tree = out / "tree"
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_bytes(source.read_bytes())
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(tree)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = out.glob("fourcorner-*.whl")
    return wheel


def test_the_wheel_has_one_top_level_package_and_embeds(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    tops = {
        name.split("/", 1)[0] for name in names if not name.split("/", 1)[0].endswith(".dist-info")
    }
    assert tops == {"fourcorner"}
    assert "fourcorner/adapters/codelists/data/__init__.py" in names
    assert any(n.startswith("fourcorner/adapters/validation/data/schematron/") for n in names)
    assert any(
        n.startswith("fourcorner/adapters/sql/migrations/") and n.endswith(".sql") for n in names
    )
    # the harness: its modules, the `harness` extra and the pytest plugin (docs/harness.md)
    assert "fourcorner/entrypoints/harness/strategies/__init__.py" in names
    with zipfile.ZipFile(wheel) as archive:
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(info).decode()
        entry_points = archive.read(info.replace("METADATA", "entry_points.txt")).decode()
    assert "Provides-Extra: harness" in metadata
    assert 'Requires-Dist: hypothesis>=6.100; extra == "harness"' in metadata
    assert "[pytest11]\nfourcorner = fourcorner.entrypoints.harness.plugin" in entry_points

    fresh = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False).create(fresh)
    python = fresh / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(purelib)
    # The dependencies (attrs, aiohttp, ...) come from the test environment; a path line in a
    # .pth adds its folder but runs none of its .pth files, so the editable install of the
    # checkout is not visible in the fresh environment.
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import fourcorner, importlib.util as u; print(fourcorner.__file__);"
            "print(u.find_spec('domain'), u.find_spec('application'), u.find_spec('entrypoints'))",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.splitlines() == [f"{purelib}/fourcorner/__init__.py", "None None None"]

    (work / "embed.py").write_text(embedding_example(), encoding="utf-8")
    done = subprocess.run(
        [str(python), "embed.py"], cwd=work, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("created ACME "), done.stdout

    drawn = subprocess.run(
        [
            str(python),
            "-c",
            "from fourcorner.entrypoints.harness import strategies as hs;"
            "print(hs.participant_identifiers(('0088',)).example()[:5])",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert drawn.returncode == 0, drawn.stderr
    assert drawn.stdout.strip() == "0088:"
