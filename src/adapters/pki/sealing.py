"""Private keys encrypted at rest: AES-256-GCM under one service key.

A sealed value is ``"v1:" + base64url(nonce + ciphertext)`` (12-byte random nonce; the
ciphertext ends with GCM's 16-byte tag; no padding). The service key comes from configuration
(base64 of 32 bytes) or from ``<data_dir>/keys/at-rest.key`` (32 raw bytes, mode 0600), created
once. Nothing here ever prints, logs or reprs the key.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from adapters.private import make_dirs

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
PREFIX = "v1:"
KEYS_DIR = "keys"
KEY_FILE = "at-rest.key"


class KeySealer:
    """Seals and opens secrets with AES-256-GCM under one 32-byte key.

    ``context`` (optional, the same when sealing and opening) is bound to the sealed value as
    GCM associated data, e.g. the id of the record that stores it, so that a sealed value
    copied to another record does not open there.
    """

    __slots__ = ("_aead",)

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"the at-rest key must be {KEY_BYTES} bytes")
        self._aead = AESGCM(key)

    def __repr__(self) -> str:
        return "KeySealer(key=<hidden>)"

    def seal(self, plaintext: bytes, *, context: bytes = b"") -> str:
        nonce = os.urandom(NONCE_BYTES)
        ciphertext = self._aead.encrypt(nonce, plaintext, context or None)
        return PREFIX + base64.urlsafe_b64encode(nonce + ciphertext).rstrip(b"=").decode("ascii")

    def open(self, sealed: str, *, context: bytes = b"") -> bytes:
        """The plaintext; ``ValueError`` when the value is malformed, was altered, or was sealed
        under another key or context."""
        if not sealed.startswith(PREFIX):
            raise ValueError("not a sealed value of version v1")
        body = sealed[len(PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            raise ValueError("the sealed value is not valid base64url") from None
        if len(raw) < NONCE_BYTES + TAG_BYTES:
            raise ValueError("the sealed value is too short")
        try:
            return self._aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], context or None)
        except InvalidTag:
            raise ValueError(
                "the sealed value does not open: it was altered or sealed under another key"
            ) from None

    @classmethod
    def from_config(cls, secret_b64: str | None, data_dir: Path) -> KeySealer:
        """The sealer for the configured key (base64 or base64url of 32 bytes) or, when none
        is configured, for ``<data_dir>/keys/at-rest.key``, created on first use."""
        if secret_b64 is not None and secret_b64.strip():
            return cls(_decode_secret(secret_b64.strip()))
        return cls(_file_key(Path(data_dir) / KEYS_DIR / KEY_FILE))


def _decode_secret(text: str) -> bytes:
    padded = text + "=" * (-len(text) % 4)
    try:
        key = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise ValueError(f"the configured at-rest key is not the base64 of {KEY_BYTES} bytes")
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
