"""End to end: what ``fourcorner serve`` stores is its user's alone (issue 11, item 10).

A server started on a fresh data dir under a permissive umask (0o022) makes every folder it
creates 0700 and every file 0600: the SQLite database and its journal files, the keys, the
test PKI, the blobs of an uploaded document. A data dir an earlier version left readable is
tightened at the next start, and the log says so.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from sbd_factory import make_sbd

from .test_serve import Server, free_port

pytestmark = pytest.mark.slow


def modes(root: Path) -> dict[str, int]:
    """The permission bits of ``root`` and of everything below it, by relative path."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = Path(folder) / name
            found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def loose(found: dict[str, int]) -> dict[str, str]:
    return {path: oct(mode) for path, mode in found.items() if mode & 0o077}


def upload_a_document(server: Server) -> None:
    alice = server.token("alice@example.com")
    status, org = server.call(
        "POST",
        "/orgs",
        alice,
        {
            "legalIdentifier": "2120000787",
            "legalName": "ACME AB",
            "countryCode": "SE",
            "legalIdentifierCode": "SE:ORGNR",
        },
    )
    assert status == 201, org
    status, hook = server.call(
        "POST",
        f"/orgs/{org['id']}/webhooks",
        alice,
        {"url": "https://hooks.example.com/in", "events": ["webhook.test"]},
    )
    assert status == 201, hook  # its secret is sealed under the at-rest key, created now
    _, smps = server.call("GET", f"/orgs/{org['id']}/smps/alltouse", alice)
    _, aps = server.call("GET", f"/orgs/{org['id']}/aps/alltouse", alice)
    smp = next(x for x in smps["items"] if x["environment"] == "TEST")
    ap = next(x for x in aps["items"] if x["environment"] == "TEST")
    sender = "0088:7300010000001"
    status, body = server.call(
        "POST",
        f"/orgs/{org['id']}/participants",
        alice,
        {"name": "S", "participantIdentifier": sender, "smpRef": smp["id"], "apRef": ap["id"]},
    )
    assert status == 201, body
    status, body = server.call_raw(
        "POST", f"/orgs/{org['id']}/transactions?ap={ap['id']}", alice, make_sbd(sender=sender)
    )
    assert status == 202, body


def test_a_fresh_data_dir_is_private_and_a_loose_one_is_tightened(tmp_path: Path) -> None:
    data = tmp_path / "data"  # does not exist yet: the server creates it
    server = Server(data, free_port())
    server.log = tmp_path / "server.log"
    old_umask = os.umask(0o022)  # the subprocesses inherit it: files would be 0644
    try:
        server.start()
        try:
            upload_a_document(server)
            deadline = time.monotonic() + 10
            while not list((data / "blobs").glob("*/*")) and time.monotonic() < deadline:
                time.sleep(0.05)
            running = modes(data)  # while serving: the -wal and -shm files are there
        finally:
            server.stop()
    finally:
        os.umask(old_umask)
    for expected in (
        "fourcorner.db",
        "fourcorner.db-wal",
        "fourcorner.db-shm",
        "keys/at-rest.key",
        "keys/token-signing-key.pem",
        "pki/ap.key",
        "pki/ap.pem",
        "pki/root-ca.pem",
        "blobs/incoming",
    ):
        assert expected in running, sorted(running)
    assert [p for p in running if p.startswith("blobs/") and p.count("/") == 2], running
    assert loose(running) == {}
    assert {m for p, m in running.items() if (data / p).is_dir()} == {0o700}
    assert {m for p, m in running.items() if (data / p).is_file()} == {0o600}
    assert loose(modes(data)) == {}

    # an earlier version's data dir: readable by everyone; an operator's own file beside it
    blob = next(p for p in (data / "blobs").glob("*/*") if p.is_file())
    for path in (data, data / "keys", data / "blobs", blob.parent):
        path.chmod(0o755)
    for path in (data / "fourcorner.db", data / "keys" / "at-rest.key", data / "pki" / "ap.key"):
        path.chmod(0o644)
    blob.chmod(0o644)
    notes = data / "notes.txt"
    notes.write_text("the operator's")
    notes.chmod(0o644)
    server.start()
    try:
        status, _ = server.call("GET", "/users/me", server.token("alice@example.com"))
        assert status == 200
    finally:
        server.stop()
    after = modes(data)
    assert loose(after) == {"notes.txt": "0o644"}  # only the service's own files change
    log = server.log.read_text()
    assert "tightened to folders 0700, files 0600" in log
