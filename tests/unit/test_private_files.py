"""Every adapter that creates files makes them its user's alone, whatever the umask (issue 11,
item 10): folders 0700, files 0600. Each test runs under umask 0o022, where a file created
without an explicit mode would be 0644 and a folder 0755."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from fourcorner.adapters import private
from fourcorner.adapters.auth import LocalTokenAuthority
from fourcorner.adapters.blobs import FileBlobStore
from fourcorner.adapters.pki import KeySealer, ensure_test_pki
from fourcorner.adapters.sqlite import SqliteStorage
from fourcorner.application.collections import USERS
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.private_files import private_files
from records import user


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def tree(root: Path) -> dict[str, int]:
    """The modes of ``root`` and of everything below it."""
    found = {".": mode(root)}
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = Path(folder) / name
            found[str(path.relative_to(root))] = mode(path)
    return found


def assert_private(root: Path) -> None:
    for name, bits in tree(root).items():
        expected = 0o700 if (root / name).is_dir() else 0o600
        assert bits == expected, (name, oct(bits))


def test_make_dirs_creates_every_missing_level_0700(tmp_path: Path) -> None:
    deep = private.make_dirs(tmp_path / "a" / "b" / "c")
    assert deep.is_dir()
    assert [mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    assert private.make_dirs(deep) == deep  # already there: fine


def test_create_file_and_touch(tmp_path: Path) -> None:
    made = private.create_file(tmp_path / "new")
    assert mode(made) == 0o600 and made.read_bytes() == b""
    with pytest.raises(FileExistsError):
        private.create_file(made)
    made.write_bytes(b"kept")
    assert private.touch(made).read_bytes() == b"kept"
    assert mode(private.touch(tmp_path / "other")) == 0o600


async def test_blob_store_folders_files_and_intake_files(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "data" / "blobs")
    incoming = store.incoming()
    assert incoming.exists() and mode(incoming) == 0o600  # intake streams into this file
    with incoming.open("wb") as out:
        out.write(b"<sbd/>")
    assert await store.adopt("ab-one", incoming) == 6
    await store.put("cd-two", b"<sbd/>")
    assert_private(tmp_path / "data")


def test_the_test_pki_is_private(tmp_path: Path) -> None:
    ensure_test_pki(tmp_path / "data")
    assert_private(tmp_path / "data")
    assert (tmp_path / "data" / "pki" / "ap.pem").exists()


def test_the_at_rest_key_is_private(tmp_path: Path) -> None:
    KeySealer.from_config(None, tmp_path / "data")
    assert (tmp_path / "data" / "keys" / "at-rest.key").exists()
    assert_private(tmp_path / "data")


def test_the_token_signing_key_is_private(tmp_path: Path) -> None:
    LocalTokenAuthority(tmp_path / "data").issue("a@example.com", ttl=timedelta(minutes=1))
    assert (tmp_path / "data" / "keys" / "token-signing-key.pem").exists()
    assert_private(tmp_path / "data")


async def test_the_sqlite_database_and_its_journal_files_are_private(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "data" / "db" / "fourcorner.db")
    await storage.open()
    try:
        async with storage.unit_of_work() as uow:
            await uow.repository(USERS).add(user("u1"))
            await uow.commit()
        names = set(tree(tmp_path / "data"))
        assert {"db/fourcorner.db", "db/fourcorner.db-wal", "db/fourcorner.db-shm"} <= names
        assert_private(tmp_path / "data")
    finally:
        await storage.close()


def test_tighten_takes_away_others_permissions_and_leaves_links(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True, mode=0o755)
    root.chmod(0o755)
    (root / "sub" / "f").write_text("x")
    (root / "sub" / "f").chmod(0o664)
    (root / "own").write_text("y")
    (root / "own").chmod(0o600)
    outside = tmp_path / "outside"
    outside.write_text("z")
    outside.chmod(0o644)
    (root / "link").symlink_to(outside)
    done = private.tighten([root, tmp_path / "missing"])
    assert sorted(p.relative_to(tmp_path).as_posix() for p in done.changed) == [
        "root",
        "root/sub",
        "root/sub/f",
    ]
    assert done.failed == []
    assert (mode(root), mode(root / "sub"), mode(root / "sub" / "f")) == (0o700, 0o700, 0o600)
    assert mode(outside) == 0o644  # a link is not followed
    assert private.tighten([root]).changed == []


def test_the_cli_tightens_an_old_data_dir_once_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    (data / "blobs" / "ab").mkdir(parents=True)
    (data / "keys").mkdir()
    for path in (data, data / "blobs", data / "blobs" / "ab", data / "keys"):
        path.chmod(0o755)
    for name in ("blobs/ab/ab-doc", "keys/at-rest.key", "fourcorner.db", "fourcorner.db-wal"):
        (data / name).write_bytes(b"x")
        (data / name).chmod(0o644)
    (data / "operator-notes.txt").write_text("not the service's")
    settings = Settings(data_dir=data)
    umask = os.umask(0o022)
    try:
        with caplog.at_level(logging.WARNING, logger="fourcorner"):
            private_files(settings)
        assert os.umask(0o022) == private.UMASK  # the process umask was set
    finally:
        os.umask(umask)
    assert "tightened to folders 0700, files 0600" in caplog.text
    [said] = caplog.records  # with an event name of its own (the logger's is for libraries')
    assert said.__dict__["event"] == "data_dir.tightened"
    assert said.__dict__["tightened"] == 8  # the data dir, blobs/, blobs/ab/, keys/, 4 files
    found = tree(data)
    assert {n: oct(m) for n, m in found.items() if m & 0o077} == {"operator-notes.txt": "0o644"}
    # a private data dir is not walked again: nobody else can reach below it
    (data / "blobs" / "ab" / "ab-doc").chmod(0o644)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="fourcorner"):
        private_files(settings)
    os.umask(0o022)
    assert caplog.text == "" and mode(data / "blobs" / "ab" / "ab-doc") == 0o644


def test_the_cli_creates_a_missing_data_dir_0700(tmp_path: Path) -> None:
    private_files(Settings(data_dir=tmp_path / "new" / "data"))
    os.umask(0o022)
    assert mode(tmp_path / "new") == 0o700 and mode(tmp_path / "new" / "data") == 0o700


def test_a_data_dir_reached_by_a_link_is_tightened_itself(tmp_path: Path) -> None:
    real = tmp_path / "volume"
    (real / "keys").mkdir(parents=True)
    real.chmod(0o755)
    (real / "keys").chmod(0o755)
    (tmp_path / "data").symlink_to(real)
    private_files(Settings(data_dir=tmp_path / "data"))
    os.umask(0o022)
    assert mode(real) == 0o700 and mode(real / "keys") == 0o700
