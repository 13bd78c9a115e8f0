"""Secrets encrypted at rest: AES-256-GCM under the service key, each bound to its place.

A sealed value is ``"v2:" + base64url(nonce + ciphertext)`` (12-byte random nonce; the
ciphertext ends with GCM's 16-byte tag; no padding), sealed with a ``context`` as GCM's
associated data: for a stored secret, the record and field that hold it
(``application.sealed``), so a value copied to another record, or to another field, does not
open there. Values of version ``v1`` were sealed before that binding (with no associated data
for stored secrets): they still open, with the context they were sealed with
(``legacy_context``), and ``is_current`` says they should be sealed again. A v2 value relabelled
v1 does not open: its tag covers the context it was sealed with.

The service key comes from configuration (base64 of 32 bytes) or from
``<data_dir>/keys/at-rest.key`` (32 raw bytes, mode 0600), created once. While the key is
rotated, the key it replaces may be configured too (``previous``): a value the current key does
not open is opened with it, and ``key_of`` says which key opened a value, so that what the
previous one sealed can be sealed again (``fourcorner reseal``). Sealing always uses the
current key. Keys for other uses are derived from the at-rest key (``derived``: HKDF-SHA256,
one label per use), so that the processes sharing it share them. Nothing here ever prints,
logs or reprs a key.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import secrets
from pathlib import Path
from typing import Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fourcorner.adapters.private import make_dirs

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
PREFIX = "v2:"  # bound to a context
LEGACY_PREFIX = "v1:"  # sealed before values were bound to their records
KEYS_DIR = "keys"
KEY_FILE = "at-rest.key"
CURRENT: Literal["current"] = "current"
PREVIOUS: Literal["previous"] = "previous"


class KeySealer:
    """Seals and opens secrets with AES-256-GCM under one 32-byte key, opening with the key it
    replaced (``previous``, while the key is rotated) what that key sealed; satisfies
    ``application.ports.KeySealer``.

    ``context`` (the same when sealing and opening, never empty) is bound to the sealed value
    as GCM associated data, e.g. the record and field that store it, so that a sealed value
    copied elsewhere does not open there.
    """

    __slots__ = ("_aead", "_keys", "_previous")

    def __init__(self, key: bytes, previous: bytes | None = None) -> None:
        if len(key) != KEY_BYTES or (previous is not None and len(previous) != KEY_BYTES):
            raise ValueError(f"the at-rest key must be {KEY_BYTES} bytes")
        self._aead = AESGCM(key)
        self._previous = None if previous in (None, key) else AESGCM(previous)
        self._keys = (key,) if previous in (None, key) else (key, previous)

    def derived(self, label: bytes) -> tuple[bytes, ...]:
        """32-byte keys for the use ``label`` names (HKDF-SHA256, no salt): the current
        key's, then, while the key is rotated, the previous one's."""
        return tuple(
            HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=label).derive(key)
            for key in self._keys
        )

    def __repr__(self) -> str:
        previous = "" if self._previous is None else ", previous=<hidden>"
        return f"KeySealer(key=<hidden>{previous})"

    def seal(self, plaintext: bytes, *, context: bytes) -> str:
        if not context:
            raise ValueError("a sealed value is bound to a context; none was given")
        nonce = os.urandom(NONCE_BYTES)
        ciphertext = self._aead.encrypt(nonce, plaintext, context)
        return PREFIX + base64.urlsafe_b64encode(nonce + ciphertext).rstrip(b"=").decode("ascii")

    def open(self, sealed: str, *, context: bytes, legacy_context: bytes = b"") -> bytes:
        """The plaintext of a value sealed with ``context`` (or, for a v1 value, with
        ``legacy_context``), under the current key or the previous one; ``ValueError`` saying
        why when it is malformed, was altered, was sealed for another context or under
        another key."""
        return self._opened(sealed, context, legacy_context)[0]

    def key_of(
        self, sealed: str, *, context: bytes, legacy_context: bytes = b""
    ) -> Literal["current", "previous"]:
        """Which key opens ``sealed`` (as ``open`` opens it): the current one, or only the
        previous one (it should be sealed again); ``ValueError`` as ``open`` when neither."""
        return self._opened(sealed, context, legacy_context)[1]

    def _opened(
        self, sealed: str, context: bytes, legacy_context: bytes
    ) -> tuple[bytes, Literal["current", "previous"]]:
        if sealed.startswith(PREFIX):
            body, bound = sealed[len(PREFIX) :], context
        elif sealed.startswith(LEGACY_PREFIX):
            body, bound = sealed[len(LEGACY_PREFIX) :], legacy_context
        else:
            raise ValueError("it is not a sealed value (of version v1 or v2)")
        try:
            raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_", validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the sealed value is not valid base64url") from None
        if len(raw) < NONCE_BYTES + TAG_BYTES:
            raise ValueError("the sealed value is too short")
        nonce, ciphertext = raw[:NONCE_BYTES], raw[NONCE_BYTES:]
        with contextlib.suppress(InvalidTag):
            return self._aead.decrypt(nonce, ciphertext, bound or None), CURRENT
        if self._previous is not None:
            with contextlib.suppress(InvalidTag):
                return self._previous.decrypt(nonce, ciphertext, bound or None), PREVIOUS
        raise ValueError(
            "the sealed value does not open here: it was altered, copied from another "
            "record, or sealed under another at-rest key"
        )

    def is_current(self, sealed: str) -> bool:
        """Whether ``sealed`` is bound to its context (v2); a v1 value should be sealed again."""
        return sealed.startswith(PREFIX)

    @classmethod
    def from_config(
        cls, secret_b64: str | None, data_dir: Path, previous_b64: str | None = None
    ) -> KeySealer:
        """The sealer for the configured key (base64 or base64url of 32 bytes) or, when none
        is configured, for ``<data_dir>/keys/at-rest.key``, created on first use; with the
        configured previous key (the same format; empty: none) to open what it sealed."""
        previous = (
            _decode_secret(previous_b64.strip(), "previous at-rest key")
            if previous_b64 is not None and previous_b64.strip()
            else None
        )
        if secret_b64 is not None and secret_b64.strip():
            return cls(_decode_secret(secret_b64.strip()), previous)
        return cls(_file_key(Path(data_dir) / KEYS_DIR / KEY_FILE), previous)


def _decode_secret(text: str, what: str = "at-rest key") -> bytes:
    padded = text + "=" * (-len(text) % 4)
    try:
        key = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise ValueError(f"the configured {what} is not the base64 of {KEY_BYTES} bytes")
    return key


def _file_key(path: Path) -> bytes:
    """The key in ``path``, created first if absent: written to a temporary file and linked into
    place, so that of two processes creating it at once both end up with the one that won."""
    if not path.exists():
        make_dirs(path.parent)
        tmp = path.with_name(f"{path.name}.tmp-{secrets.token_hex(8)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as file:
                os.fchmod(fd, 0o600)
                file.write(secrets.token_bytes(KEY_BYTES))
                file.flush()
                os.fsync(fd)
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    key = path.read_bytes()
    if len(key) != KEY_BYTES:
        raise ValueError(f"the at-rest key file {path} does not hold {KEY_BYTES} bytes")
    return key
