"""Rotating the at-rest key: a sealer given the previous key opens what it sealed and says so
(``key_of``), always seals with the current key; which stored secrets are sealed again, at
start and by ``fourcorner reseal`` (``SealedField.due``); and every stored sealed value is in
``sealed.FIELDS``, which the reseal and ``fourcorner check`` go through."""

from __future__ import annotations

import ast
import base64
import os
import uuid
from pathlib import Path

import attrs
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st

import fourcorner
from fourcorner.adapters.pki.sealing import KeySealer
from fourcorner.application.collections import ALL
from fourcorner.application.sealed import FIELDS, WEBHOOK_SECRET
from fourcorner.domain.errors import SecretUnusable
from records import webhook

OLD, NEW, OTHER = bytes(range(32)), bytes(range(1, 33)), bytes(range(2, 34))
KEYS = {"current": NEW, "previous": OLD, "other": OTHER}


def legacy_seal(key: bytes, plaintext: bytes) -> str:
    """v1: sealed before values were bound to their records, with no associated data."""
    nonce = os.urandom(12)
    raw = nonce + AESGCM(key).encrypt(nonce, plaintext, None)
    return "v1:" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def sealed_by(key: bytes, plaintext: bytes, context: bytes, legacy: bool) -> str:
    return (
        legacy_seal(key, plaintext) if legacy else KeySealer(key).seal(plaintext, context=context)
    )


@settings(max_examples=60)
@given(
    plaintext=st.binary(max_size=128),
    context=st.binary(min_size=1, max_size=64),
    legacy=st.booleans(),
    by=st.sampled_from(sorted(KEYS)),
)
def test_the_previous_key_opens_what_it_sealed(
    plaintext: bytes, context: bytes, legacy: bool, by: str
) -> None:
    rotating = KeySealer(NEW, previous=OLD)
    sealed = sealed_by(KEYS[by], plaintext, context, legacy)
    if by == "other":
        for sealer in (rotating, KeySealer(NEW)):
            with pytest.raises(ValueError, match="sealed under another at-rest key"):
                sealer.key_of(sealed, context=context)
            with pytest.raises(ValueError, match="sealed under another at-rest key"):
                sealer.open(sealed, context=context)
        return
    assert rotating.open(sealed, context=context) == plaintext
    assert rotating.key_of(sealed, context=context) == by
    # sealing uses the current key alone
    again = rotating.seal(plaintext, context=context)
    assert KeySealer(NEW).open(again, context=context) == plaintext
    assert rotating.key_of(again, context=context) == "current"
    with pytest.raises(ValueError):
        KeySealer(OLD).open(again, context=context)
    # and the context still binds: the previous key does not open a value elsewhere
    with pytest.raises(ValueError):
        rotating.open(KeySealer(OLD).seal(plaintext, context=context), context=context + b"/x")


def test_a_previous_key_equal_to_the_current_one_is_the_current_one() -> None:
    sealed = KeySealer(NEW).seal(b"s", context=b"c")
    assert KeySealer(NEW, previous=NEW).key_of(sealed, context=b"c") == "current"


def test_the_previous_key_is_configured_as_the_current_one(tmp_path: Path) -> None:
    old = base64.b64encode(OLD).decode()
    new = base64.urlsafe_b64encode(NEW).decode().rstrip("=")
    sealed = KeySealer(OLD).seal(b"secret", context=b"c")
    rotating = KeySealer.from_config(new, tmp_path, old)
    assert rotating.key_of(sealed, context=b"c") == "previous"
    for unset in ("", "  ", None):  # empty is no previous key
        with pytest.raises(ValueError, match="another at-rest key"):
            KeySealer.from_config(new, tmp_path, unset).open(sealed, context=b"c")
    # beside the key file of the data dir
    from_file = KeySealer.from_config(None, tmp_path, old)
    assert from_file.open(sealed, context=b"c") == b"secret"
    with pytest.raises(ValueError, match="previous at-rest key is not the base64 of 32") as e:
        KeySealer.from_config(new, tmp_path, "c2hvcnQ=")
    assert "c2hvcnQ" not in str(e.value)


def test_neither_key_shows() -> None:
    text = repr(KeySealer(NEW, previous=OLD))
    assert text == "KeySealer(key=<hidden>, previous=<hidden>)"
    with pytest.raises(ValueError, match="32 bytes"):
        KeySealer(NEW, previous=b"short")


@settings(max_examples=40)
@given(legacy=st.booleans(), by=st.sampled_from(sorted(KEYS)), rotate=st.booleans())
def test_what_is_sealed_again(legacy: bool, by: str, rotate: bool) -> None:
    """At start, a v1 value the current key opens (one only the previous key opens waits for
    ``fourcorner reseal``: a process not restarted yet would not open it under the new key);
    with ``rotate``, every value the current key does not open as it seals now."""
    rotating = KeySealer(NEW, previous=OLD)
    ident = uuid.UUID(int=7)
    context = WEBHOOK_SECRET.context(ident)
    hook = webhook(ident, sealed_by(KEYS[by], b"whsec_x", context, legacy))
    if by == "other" and (legacy or rotate):
        with pytest.raises(SecretUnusable, match="another at-rest key"):
            WEBHOOK_SECRET.due(rotating, hook, rotate=rotate)
        return
    expected = (legacy or by == "previous") if rotate else (legacy and by == "current")
    assert WEBHOOK_SECRET.due(rotating, hook, rotate=rotate) is expected
    resealed = WEBHOOK_SECRET.reseal(rotating, hook, rotate=rotate)
    if not expected:
        assert resealed is None
        return
    assert resealed is not None
    assert KeySealer(NEW).open(resealed.sealed_secret, context=context) == b"whsec_x"
    assert WEBHOOK_SECRET.reseal(KeySealer(NEW), resealed, rotate=True) is None
    assert not WEBHOOK_SECRET.due(rotating, attrs.evolve(hook, sealed_secret=""), rotate=True)


def test_every_sealed_field_is_known() -> None:
    """Every record attribute named ``sealed_*`` of every stored collection is in
    ``sealed.FIELDS`` (which the reseal and the check go through), with its own context."""
    known = {(f.collection.name, f.attribute) for f in FIELDS}
    stored = {
        (c.name, a.name) for c in ALL for a in attrs.fields(c.type) if a.name.startswith("sealed")
    }
    assert stored == known
    assert len({f.context(uuid.UUID(int=1)) for f in FIELDS}) == len(FIELDS)


# KeySealer.seal called directly (not through a SealedField): only where no value is stored
RAW_SEALING = {
    "application/sealed.py",  # SealedField itself
    "entrypoints/http/transaction_handlers.py",  # the upload URL's token, given, not stored
}


def test_stored_secrets_are_sealed_through_their_fields() -> None:
    """A value sealed with ``KeySealer.seal`` (a ``context=`` keyword) anywhere else would be
    stored where no reseal and no check looks: seal it through a ``SealedField`` in FIELDS."""
    src = Path(fourcorner.__file__).parent
    raw = set()
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "seal"
                and any(k.arg == "context" for k in node.keywords)
            ):
                raw.add(path.relative_to(src).as_posix())
    raw.discard("adapters/pki/sealing.py")
    assert raw == RAW_SEALING


def test_keys_derived_from_the_at_rest_key_are_shared_by_its_holders_and_per_label():
    """Processes holding one at-rest key derive the same key for a use (the failure
    notifications' MAC), another key or label derives another; while the key is rotated, the
    previous key's comes second (what the processes not restarted yet still use)."""
    label = b"fourcorner failure notifications"
    (current,) = KeySealer(NEW).derived(label)
    assert KeySealer(NEW).derived(label) == (current,)
    assert len(current) == 32 and current != NEW
    assert KeySealer(OTHER).derived(label) != (current,)
    assert KeySealer(NEW).derived(b"another use") != (current,)
    assert KeySealer(NEW, OLD).derived(label) == (current, *KeySealer(OLD).derived(label))
    assert KeySealer(NEW, NEW).derived(label) == (current,)
