"""What the commands check before they start, so that a problem of the machine or the
configuration stops them with one clear line instead of a traceback.

Each check raises ``StartupError``, whose text says what is wrong, which setting is involved
and what to do; ``fourcorner`` prints it and exits with ``status``. The checks run in the
order an operator can fix things: the data dir, the listening address, then the database,
which may still be starting (a bounded wait with a progress line every few seconds).
"""

from __future__ import annotations

import errno
import re
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from fourcorner.adapters.auth.local import KEY_FILE
from fourcorner.adapters.pki.sealing import KEY_BYTES, KEYS_DIR
from fourcorner.adapters.pki.sealing import KEY_FILE as AT_REST_FILE
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.setting_values import PREFIX

PROGRESS_EVERY = 5.0  # seconds between two "waiting for the database" lines
# Driver messages of problems that waiting does not cure: the server answered and refused.
_LASTING = re.compile(
    r"does not exist|authentication failed|no pg_hba\.conf entry|permission denied|"
    r"password|certificate|SSL|invalid|missing \"=\"|unsupported",
    re.IGNORECASE,
)
_AT = re.compile(r'connection to server (?:at "([^"]+)", port (\d+)|on socket "([^"]+)") failed: ')


class StartupError(Exception):
    """A command cannot start; ``str()`` is the one line to print, ``status`` the exit status."""

    def __init__(self, line: str, status: int = 1) -> None:
        super().__init__(line)
        self.status = status


class AddressInUse(StartupError):
    """Another program listens on ``FOURCORNER_HOST:FOURCORNER_PORT``."""


def data_dir(settings: Settings) -> Path:
    """The data dir, created when missing, and proven writable; for SQLite also the folder of
    the database file."""
    folders = [(Path(settings.data_dir), f"{PREFIX}DATA_DIR")]
    if settings.storage_kind == "sqlite" and settings.database_url:
        folders.append((Path(settings.sqlite_path).parent, f"the folder of {PREFIX}DATABASE_URL"))
    for folder, name in folders:
        _writable_folder(folder, name)
    return Path(settings.data_dir)


def _writable_folder(folder: Path, name: str) -> None:
    if folder.exists() and not folder.is_dir():
        raise StartupError(f"{name}: {folder} is a file, not a folder; name a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        why = e.strerror or str(e)
        raise StartupError(
            f"{name}: {folder} is not writable ({why.lower()}); give the user running "
            "fourcorner write access to it, or choose another folder"
        ) from None


def listening_socket(settings: Settings, setting: str = "port") -> socket.socket:
    """A socket on ``FOURCORNER_HOST`` and the port of ``setting`` (``port``: the server's;
    ``worker_port``: the worker's probes and metrics), bound and listening."""
    port: int = getattr(settings, setting)
    where, named = f"{settings.host}:{port}", f"{PREFIX}{setting.upper()}"
    both = f"{PREFIX}HOST/{setting.upper()}"
    try:
        return socket.create_server((settings.host, port), backlog=1024)
    except OSError as e:
        # a name that does not resolve: create_server raises the resolver's error (a negative
        # EAI_* number) again as a plain OSError
        if isinstance(e, socket.gaierror) or (e.errno or 0) < 0:
            raise StartupError(
                f"{PREFIX}HOST={settings.host!r} is not a name or address of this machine; "
                "set it to an address to listen on (127.0.0.1, 0.0.0.0)"
            ) from None
        if e.errno == errno.EADDRINUSE:
            raise AddressInUse(
                f"cannot listen on {where} ({both}): the address is in use by another "
                f"program; stop that program, or set {named} to a free port"
            ) from None
        if e.errno == errno.EACCES:
            why = "permission denied"
            do = f"set {named} to 1024 or above, or run with the right to bind low ports"
        elif e.errno == errno.EADDRNOTAVAIL:
            why = "the address is not one of this machine's"
            do = f"set {PREFIX}HOST to an address of this machine (127.0.0.1, 0.0.0.0)"
        else:
            why, do = (e.strerror or str(e)).lower(), f"check {PREFIX}HOST and {named}"
        raise StartupError(f"cannot listen on {where} ({both}): {why}; {do}") from None


def database_address(url: str) -> str:
    """``host:port/dbname`` of a PostgreSQL URL, without user or password."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return "(a malformed URL)"
    return (
        f"{parts.get('host') or 'localhost'}:{parts.get('port') or 5432}/{parts.get('dbname', '')}"
    )


def database_reason(error: psycopg.Error) -> str:
    """The driver's reason in a few words: ``connection refused at 127.0.0.1:5432``,
    ``role "app" does not exist at 127.0.0.1:5432``."""
    text = str(error).strip() or type(error).__name__
    matches = list(_AT.finditer(text))
    if not matches:
        first = text.splitlines()[0].removeprefix("connection failed: ")
        return first.strip().rstrip(".")
    last = matches[-1]
    where = last[3] or f"{last[1]}:{last[2]}"
    reason = text[last.end() :].splitlines()[0].strip()
    reason = reason.removeprefix("FATAL:").strip().rstrip(".")
    return f"{reason[:1].lower()}{reason[1:]} at {where}"


def _hint(reason: str) -> str:
    if "does not exist" in reason and "database" in reason:
        return f"create the database (createdb), or correct {PREFIX}DATABASE_URL"
    if "role" in reason or "authentication" in reason or "password" in reason:
        return f"create the role or correct the user and password in {PREFIX}DATABASE_URL"
    return f"start PostgreSQL there, or correct {PREFIX}DATABASE_URL"


def wait_for_database(settings: Settings, wait: float, say: Callable[[str], None]) -> None:
    """Return once PostgreSQL accepts a connection, trying for up to ``wait`` seconds while
    the failure is one that time may cure (refused, timed out, starting up) and calling
    ``say`` with a progress line every few seconds. SQLite and memory have nothing to wait for."""
    if settings.storage_kind != "postgres":
        return
    where = database_address(settings.database)
    started = time.monotonic()
    deadline = started + max(wait, 0.0)
    said = started - PROGRESS_EVERY
    while True:
        remaining = deadline - time.monotonic()
        try:
            timeout = max(1, min(5, int(remaining) or 1))
            psycopg.connect(settings.database, connect_timeout=timeout).close()
            return
        except psycopg.Error as e:
            reason = database_reason(e)
            lasting = _LASTING.search(reason) is not None
            now = time.monotonic()
            if lasting or now >= deadline:
                waited = "" if lasting else f" (waited {wait:g} s)"
                raise StartupError(
                    f"the database {where} ({PREFIX}DATABASE_URL) cannot be used: "
                    f"{reason}{waited}; {_hint(reason)}"
                ) from None
            if now - said >= PROGRESS_EVERY:
                said = now
                say(
                    f"waiting for the database {where}: {reason} "
                    f"({now - started:.0f} s of {wait:g} s)"
                )
            time.sleep(min(1.0, max(deadline - now, 0.0)))


def token_key(settings: Settings) -> Path:
    """The local token signing key of the server on this data dir; ``StartupError`` when no
    server has created one there (a new key would sign tokens that server refuses)."""
    path = Path(settings.data_dir) / KEY_FILE
    if not path.is_file():
        raise StartupError(
            f"no server state in {PREFIX}DATA_DIR={settings.data_dir}: the token signing key "
            f"{path} does not exist. Start the server once on this data dir (fourcorner serve "
            f"creates it), or set {PREFIX}DATA_DIR to the data dir of the running server"
        )
    return path


def at_rest_key_file(settings: Settings) -> Path | None:
    """The at-rest key file in use (``None`` when the key is configured); ``StartupError``
    when it exists and is not a key (it would open no sealed value)."""
    if settings.at_rest_key.strip():
        return None
    path = Path(settings.data_dir) / KEYS_DIR / AT_REST_FILE
    if not path.exists():
        return path
    try:
        size = len(path.read_bytes())
    except OSError as e:
        raise StartupError(
            f"the at-rest key {path} cannot be read ({(e.strerror or str(e)).lower()}); "
            "give the user running fourcorner access to it"
        ) from None
    if size != KEY_BYTES:
        raise StartupError(
            f"the at-rest key {path} holds {size} bytes, not {KEY_BYTES}: it is damaged; "
            f"restore it from a backup, or set {PREFIX}AT_REST_KEY to the key in use"
        )
    return path
