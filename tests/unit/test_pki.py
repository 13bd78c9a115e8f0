"""The test PKI, the inspection of uploaded certificates and the sealing of keys at rest."""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.x509.oid import NameOID
from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.pki import (
    ChainError,
    KeySealer,
    PrivateKey,
    TestPki,
    cert_pem,
    ensure_test_pki,
    inspect_certificate,
    issue_leaf,
    key_pem,
    new_ca,
    verify_chain,
)
from fourcorner.adapters.pki.certificates import (
    _FINGERPRINTS,
    _SIGNED,
    _Fingerprints,
    _SignedPairs,
    stored_public_key_sha256,
)
from fourcorner.domain.errors import InvalidInput

NOW = datetime.now(UTC)
HOUR = timedelta(hours=1)
PKI_FILES = {
    "root-ca.pem",
    "root-ca.key",
    "ap-ca.pem",
    "ap-ca.key",
    "smp-ca.pem",
    "smp-ca.key",
    "ap.pem",
    "ap.key",
    "smp.pem",
    "smp.key",
    "ap-chain.pem",
    "smp-chain.pem",
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def pki(data_dir: Path) -> TestPki:
    # made at NOW, however long after this module was imported the fixture runs
    return ensure_test_pki(data_dir, clock=lambda: NOW)


def ec_leaf(
    issuer: x509.Certificate,
    issuer_key: PrivateKey,
    cn: str = "PFC000777",
    *,
    not_before: datetime = NOW - HOUR,
    not_after: datetime = NOW + HOUR,
) -> tuple[x509.Certificate, PrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    return issue_leaf(issuer, issuer_key, cn, not_before=not_before, not_after=not_after, key=key)


def fingerprint(cert: x509.Certificate) -> bytes:
    return cert.fingerprint(hashes.SHA256())


REQUIRED = ("$.privateKeyPem", "the certificate's private key is required, to prove it is yours")


def refusal(
    pki: TestPki,
    cert: str,
    chain: str = "",
    key: str | None = None,
) -> list[tuple[str, str]]:
    """The problems found; without ``key``, those of the other fields (the missing key is
    always one, see ``test_the_key_is_required``)."""
    with pytest.raises(InvalidInput) as caught:
        inspect_certificate(cert, chain, key or "", pki.trust_anchors, NOW)
    found = [(d.field, d.problem) for d in caught.value.details()]
    if key is None:
        assert REQUIRED in found
        found.remove(REQUIRED)
    return found


# --- the test PKI ---------------------------------------------------------------------------


def test_pki_has_the_network_shape(pki: TestPki) -> None:
    assert {p.name for p in pki.directory.iterdir()} == PKI_FILES
    assert pki.seat_id == "PFC000001"
    cn = pki.ap_certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    assert cn == "PFC000001"
    assert pki.root.issuer == pki.root.subject
    assert pki.ap_ca.issuer == pki.root.subject
    assert pki.smp_ca.issuer == pki.root.subject
    assert pki.ap_certificate.issuer == pki.ap_ca.subject
    assert pki.smp_certificate.issuer == pki.smp_ca.subject
    for ca in (pki.root, pki.ap_ca, pki.smp_ca):
        assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        usage = ca.extensions.get_extension_for_class(x509.KeyUsage).value
        assert usage.key_cert_sign and usage.crl_sign and not usage.digital_signature
    for leaf in (pki.ap_certificate, pki.smp_certificate):
        assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        usage = leaf.extensions.get_extension_for_class(x509.KeyUsage).value
        assert usage.digital_signature and usage.key_encipherment and usage.data_encipherment
        assert not usage.key_cert_sign
        assert leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier)
        assert leaf.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
        lifetime = leaf.not_valid_after_utc - leaf.not_valid_before_utc
        assert timedelta(days=730) < lifetime < timedelta(days=732)
        assert leaf.not_valid_before_utc < NOW
    ca_lifetime = pki.root.not_valid_after_utc - pki.root.not_valid_before_utc
    assert timedelta(days=3650) < ca_lifetime < timedelta(days=3654)
    assert pki.ap_key.key_size == 2048
    assert x509.load_pem_x509_certificates(pki.ap_chain_pem.encode()) == [pki.ap_ca, pki.root]
    assert x509.load_pem_x509_certificates(pki.smp_chain_pem.encode()) == [pki.smp_ca, pki.root]
    assert pki.trust_anchors == [pki.root]


def test_key_files_are_private(pki: TestPki) -> None:
    keys = [p for p in pki.directory.iterdir() if p.suffix == ".key"]
    assert len(keys) == 5
    for path in keys:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_second_call_reuses_the_pki(pki: TestPki, data_dir: Path) -> None:
    before = {p.name: p.read_bytes() for p in pki.directory.iterdir()}
    again = ensure_test_pki(data_dir, seat_id="PFC000999")
    assert {p.name: p.read_bytes() for p in again.directory.iterdir()} == before
    assert fingerprint(again.root) == fingerprint(pki.root)
    assert fingerprint(again.ap_certificate) == fingerprint(pki.ap_certificate)
    assert again.seat_id == "PFC000001"
    assert [p.name for p in data_dir.iterdir()] == ["pki"]


def test_concurrent_creation_ends_with_one_pki(tmp_path: Path) -> None:
    start = threading.Barrier(3)
    results: list[TestPki] = []

    def create() -> None:
        start.wait()
        results.append(ensure_test_pki(tmp_path, seat_id="PFC000042"))

    threads = [threading.Thread(target=create) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3
    assert len({fingerprint(r.ap_certificate) for r in results}) == 1
    assert len({fingerprint(r.root) for r in results}) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["pki"]
    assert results[0].seat_id == "PFC000042"


def test_a_malformed_seat_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="seat id"):
        ensure_test_pki(tmp_path, seat_id="pfc1")


# --- inspection: accepted -------------------------------------------------------------------


def test_the_ap_certificate_inspects(pki: TestPki) -> None:
    info = inspect_certificate(
        pki.ap_certificate_pem, pki.ap_chain_pem, pki.ap_key_pem, pki.trust_anchors, NOW
    )
    assert info.common_name == "PFC000001"
    assert info.subject == "CN=PFC000001,O=fourcorner"
    assert info.issuer == "CN=fourcorner TEST ACCESS POINT CA,O=fourcorner"
    assert info.valid_from == pki.ap_certificate.not_valid_before_utc
    assert info.valid_until == pki.ap_certificate.not_valid_after_utc
    assert info.valid_until.tzinfo is not None
    assert info.serial == format(pki.ap_certificate.serial_number, "x")
    assert info.fingerprint_sha256 == fingerprint(pki.ap_certificate).hex()
    assert info.der == pki.ap_certificate.public_bytes(serialization.Encoding.DER)


def test_the_smp_certificate_inspects_without_the_root_in_the_chain(pki: TestPki) -> None:
    info = inspect_certificate(
        pki.smp_certificate_pem, cert_pem(pki.smp_ca), pki.smp_key_pem, pki.trust_anchors, NOW
    )
    assert info.common_name == "fourcorner TEST SMP"


def test_an_ec_leaf_issued_by_the_root_needs_no_chain(pki: TestPki) -> None:
    cert, key = ec_leaf(pki.root, pki.root_key)
    info = inspect_certificate(cert_pem(cert), "  \n", key_pem(key), pki.trust_anchors, NOW)
    assert info.common_name == "PFC000777"


def test_the_chain_order_is_free(pki: TestPki) -> None:
    cert, key = ec_leaf(pki.ap_ca, pki.ap_ca_key)
    chain = cert_pem(pki.root) + cert_pem(pki.smp_ca) + cert_pem(pki.ap_ca)
    info = inspect_certificate(cert_pem(cert), chain, key_pem(key), pki.trust_anchors, NOW)
    assert info.issuer.startswith("CN=fourcorner TEST ACCESS POINT CA")


def test_the_key_is_required(pki: TestPki) -> None:
    """Proof of possession: a certificate is registered only with its own private key."""
    for blank in ("", "  \n"):
        with pytest.raises(InvalidInput) as caught:
            inspect_certificate(
                pki.ap_certificate_pem, pki.ap_chain_pem, blank, pki.trust_anchors, NOW
            )
        assert [(d.field, d.problem) for d in caught.value.details()] == [REQUIRED]


def test_the_public_key_digest_is_the_same_for_every_certificate_of_one_key(
    pki: TestPki,
) -> None:
    info = inspect_certificate(
        pki.ap_certificate_pem, pki.ap_chain_pem, pki.ap_key_pem, pki.trust_anchors, NOW
    )
    spki = pki.ap_key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert info.public_key_sha256 == hashlib.sha256(spki).hexdigest()
    # another certificate for the same key
    again, _ = issue_leaf(
        pki.ap_ca, pki.ap_ca_key, "PFC000778", not_before=NOW - HOUR, not_after=NOW, key=pki.ap_key
    )
    assert stored_public_key_sha256(cert_pem(again)) == info.public_key_sha256
    other, _ = ec_leaf(pki.ap_ca, pki.ap_ca_key)
    assert stored_public_key_sha256(cert_pem(other)) != info.public_key_sha256
    with pytest.raises(InvalidInput):
        stored_public_key_sha256("not a certificate")


def test_verify_chain_returns_the_path(pki: TestPki) -> None:
    path = verify_chain(pki.ap_certificate, [pki.ap_ca], pki.trust_anchors, NOW)
    assert path == [pki.ap_ca, pki.root]
    with pytest.raises(ChainError, match="expired on"):
        verify_chain(pki.ap_certificate, [pki.ap_ca], pki.trust_anchors, NOW + timedelta(days=800))


def test_a_checked_signature_is_remembered_by_the_certificates_bytes(pki: TestPki) -> None:
    """The chain of a certificate seen before is walked without checking its signatures
    again, but as strictly: a CA of the same name with another key is still refused, and the
    validity windows are checked each time."""
    assert verify_chain(pki.ap_certificate, [pki.ap_ca], pki.trust_anchors, NOW)
    before = _SIGNED.hits
    again = x509.load_pem_x509_certificate(pki.ap_certificate_pem.encode())  # another object
    assert verify_chain(again, [pki.ap_ca], pki.trust_anchors, NOW) == [pki.ap_ca, pki.root]
    assert _SIGNED.hits - before == 2
    impostor, _ = ca_at_now(
        "fourcorner TEST ACCESS POINT CA",
        issuer_cert=pki.root,
        issuer_key=pki.root_key,
        key=ec.generate_private_key(ec.SECP256R1()),
    )
    assert impostor.subject == pki.ap_ca.subject
    with pytest.raises(ChainError):
        verify_chain(again, [impostor], pki.trust_anchors, NOW)
    with pytest.raises(ChainError, match="expired on"):
        verify_chain(again, [pki.ap_ca], pki.trust_anchors, NOW + timedelta(days=800))


def test_only_signatures_that_verified_are_remembered_and_at_most_size_pairs(
    pki: TestPki,
) -> None:
    """A peer sending ever new certificates that name a trusted CA but fail its signature makes
    nothing grow; the pairs that verified are kept up to the bound, the oldest dropped."""
    pairs = _SignedPairs(2)
    impostors = [
        ca_at_now(
            "fourcorner TEST ACCESS POINT CA",
            issuer_cert=pki.root,
            issuer_key=ec.generate_private_key(ec.SECP256R1()),  # not the root's key
            key=ec.generate_private_key(ec.SECP256R1()),
        )[0]
        for _ in range(3)
    ]
    assert not any(pairs.verified(cert, pki.root) for cert in impostors)
    assert len(pairs) == 0
    assert pairs.verified(pki.ap_certificate, pki.ap_ca)
    assert pairs.verified(pki.ap_ca, pki.root)
    assert pairs.verified(pki.ap_certificate, pki.ap_ca) and pairs.hits == 1
    assert not pairs.verified(pki.ap_certificate, pki.root)  # a wrong issuer stays refused
    assert not pairs.verified(pki.ap_ca, pki.ap_ca)
    assert len(pairs) == 2
    pairs.verified(pki.root, pki.root)  # a third pair that verifies (self-signed)
    assert len(pairs) == 2
    assert pairs.verified(pki.ap_certificate, pki.ap_ca) and pairs.hits == 1  # dropped: checked


def test_a_walk_through_the_same_certificate_objects_computes_no_fingerprint(
    pki: TestPki,
) -> None:
    """The fingerprints a walk keys its checks by are remembered by certificate object: the
    walk again through the same objects takes them all from memory, and still refuses what
    it refused (an expired certificate)."""
    assert verify_chain(pki.ap_certificate, [pki.ap_ca], pki.trust_anchors, NOW)
    before = _FINGERPRINTS.hits
    assert verify_chain(pki.ap_certificate, [pki.ap_ca], pki.trust_anchors, NOW)
    assert _FINGERPRINTS.hits - before >= 5  # the certificate, its CA and the root
    with pytest.raises(ChainError, match="expired on"):
        verify_chain(pki.ap_certificate, [pki.ap_ca], pki.trust_anchors, NOW + timedelta(days=800))


def test_fingerprints_are_remembered_by_object_and_at_most_size(pki: TestPki) -> None:
    """Another object of the same bytes has the same fingerprint, computed for it; at most
    ``size`` objects are held, the least recently used dropped first."""
    known = _Fingerprints(2)
    again = x509.load_pem_x509_certificate(pki.ap_certificate_pem.encode())
    assert known.of(pki.ap_certificate) == fingerprint(pki.ap_certificate)
    assert known.of(again) == fingerprint(pki.ap_certificate) and known.hits == 0
    assert known.of(pki.ap_certificate) == fingerprint(pki.ap_certificate) and known.hits == 1
    assert known.of(pki.root) == fingerprint(pki.root) and len(known) == 2
    assert known.of(again) == fingerprint(again) and known.hits == 1  # dropped: computed
    assert known.of(pki.root) == fingerprint(pki.root) and known.hits == 2


# --- inspection: refused --------------------------------------------------------------------


def test_garbage_is_not_a_certificate(pki: TestPki) -> None:
    assert refusal(pki, "hello") == [("$.certPem", "not a PEM certificate")]
    broken = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
    [(field, problem)] = refusal(pki, broken)
    assert field == "$.certPem" and problem.startswith("not a PEM certificate")
    [(field, problem)] = refusal(pki, pki.ap_key_pem)
    assert field == "$.certPem" and "private key" in problem


def test_two_certificates_are_refused(pki: TestPki) -> None:
    [(field, problem)] = refusal(pki, pki.ap_certificate_pem + cert_pem(pki.ap_ca))
    assert field == "$.certPem" and "2 certificates" in problem


def test_an_unparsable_chain_is_refused(pki: TestPki) -> None:
    [(field, problem)] = refusal(pki, pki.ap_certificate_pem, "not pem")
    assert field == "$.caChainPem" and "PEM" in problem
    [(field, problem)] = refusal(pki, pki.ap_certificate_pem, pki.ap_key_pem)
    assert field == "$.caChainPem" and "PRIVATE KEY" in problem


def test_an_expired_certificate_is_refused(pki: TestPki) -> None:
    end = datetime(2025, 1, 1, tzinfo=UTC)
    cert, _ = ec_leaf(pki.ap_ca, pki.ap_ca_key, not_before=end - HOUR, not_after=end)
    assert refusal(pki, cert_pem(cert), pki.ap_chain_pem) == [
        ("$.certPem", "expired on 2025-01-01T00:00:00Z")
    ]


def test_a_certificate_not_yet_valid_is_refused(pki: TestPki) -> None:
    start = (NOW + timedelta(days=3)).replace(microsecond=0)
    cert, _ = ec_leaf(pki.ap_ca, pki.ap_ca_key, not_before=start, not_after=start + HOUR)
    stamp = start.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert refusal(pki, cert_pem(cert), pki.ap_chain_pem) == [
        ("$.certPem", f"not valid before {stamp}")
    ]


def ca_at_now(common_name: str, **options: Any) -> tuple[x509.Certificate, Any]:
    """``new_ca`` valid around this module's NOW (not the wall clock: the suite may reach
    these tests minutes after NOW was taken)."""
    options.setdefault("not_before", NOW - HOUR)
    options.setdefault("not_after", NOW + 24 * HOUR)
    return new_ca(common_name, **options)


def test_a_chain_to_an_untrusted_ca_is_refused(pki: TestPki) -> None:
    stranger, stranger_key = ca_at_now(
        "Someone Else CA", key=ec.generate_private_key(ec.SECP256R1())
    )
    cert, _ = ec_leaf(stranger, stranger_key)
    [(field, problem)] = refusal(pki, cert_pem(cert), cert_pem(stranger))
    assert field == "$.caChainPem" and "not trusted" in problem and "Someone Else CA" in problem
    [(field, problem)] = refusal(pki, cert_pem(cert))
    assert field == "$.caChainPem" and "neither in the chain nor a trusted root" in problem


def test_a_missing_intermediate_is_refused(pki: TestPki) -> None:
    [(field, problem)] = refusal(pki, pki.ap_certificate_pem, cert_pem(pki.root))
    assert field == "$.caChainPem"
    assert "fourcorner TEST ACCESS POINT CA" in problem and "neither in the chain" in problem


def test_an_intermediate_of_another_key_is_refused(pki: TestPki) -> None:
    impostor, _ = ca_at_now(
        "fourcorner TEST ACCESS POINT CA",
        issuer_cert=pki.root,
        issuer_key=pki.root_key,
        key=ec.generate_private_key(ec.SECP256R1()),
    )
    [(field, _)] = refusal(pki, pki.ap_certificate_pem, cert_pem(impostor))
    assert field == "$.caChainPem"


def test_a_leaf_cannot_act_as_a_ca(pki: TestPki) -> None:
    middle, middle_key = ec_leaf(pki.ap_ca, pki.ap_ca_key, "not a CA")
    cert, _ = ec_leaf(middle, middle_key)
    [(field, problem)] = refusal(pki, cert_pem(cert), cert_pem(middle) + pki.ap_chain_pem)
    assert field == "$.caChainPem" and "not a CA certificate" in problem


def test_an_expired_intermediate_is_refused(pki: TestPki) -> None:
    old, old_key = ca_at_now(
        "Old CA",
        issuer_cert=pki.root,
        issuer_key=pki.root_key,
        key=ec.generate_private_key(ec.SECP256R1()),
        not_before=NOW - 2 * HOUR,
        not_after=NOW - HOUR,
    )
    cert, _ = ec_leaf(old, old_key)
    [(field, problem)] = refusal(pki, cert_pem(cert), cert_pem(old))
    assert field == "$.caChainPem" and "Old CA" in problem and "expired on" in problem


def test_a_chain_deeper_than_three_levels_is_refused(pki: TestPki) -> None:
    issuer, issuer_key, chain = pki.root, pki.root_key, ""
    for level in range(3):
        issuer, issuer_key = ca_at_now(
            f"Level {level} CA",
            issuer_cert=issuer,
            issuer_key=issuer_key,
            key=ec.generate_private_key(ec.SECP256R1()),
        )
        chain = cert_pem(issuer) + chain
    cert, _ = ec_leaf(issuer, issuer_key)
    [(field, problem)] = refusal(pki, cert_pem(cert), chain)
    assert field == "$.caChainPem" and "longer than 3 levels" in problem


def test_the_path_length_constraint_is_honoured(pki: TestPki) -> None:
    below, below_key = ca_at_now(
        "Below the AP CA",
        issuer_cert=pki.ap_ca,
        issuer_key=pki.ap_ca_key,
        key=ec.generate_private_key(ec.SECP256R1()),
    )
    cert, _ = ec_leaf(below, below_key)
    [(field, problem)] = refusal(pki, cert_pem(cert), cert_pem(below) + pki.ap_chain_pem)
    assert field == "$.caChainPem" and "pathLenConstraint" in problem


def test_a_ca_certificate_is_not_an_upload(pki: TestPki) -> None:
    [(field, problem)] = refusal(pki, cert_pem(pki.ap_ca), cert_pem(pki.root))
    assert field == "$.certPem" and "CA certificate" in problem


def test_the_key_of_another_certificate_is_refused(pki: TestPki) -> None:
    assert refusal(pki, pki.ap_certificate_pem, pki.ap_chain_pem, pki.smp_key_pem) == [
        ("$.privateKeyPem", "the key does not belong to the certificate")
    ]


def test_an_encrypted_key_is_refused(pki: TestPki) -> None:
    encrypted = pki.ap_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    ).decode()
    [(field, problem)] = refusal(pki, pki.ap_certificate_pem, pki.ap_chain_pem, encrypted)
    assert field == "$.privateKeyPem" and "encrypted" in problem


def test_an_unreadable_key_is_refused(pki: TestPki) -> None:
    [(field, problem)] = refusal(pki, pki.ap_certificate_pem, pki.ap_chain_pem, "nope")
    assert (field, problem) == ("$.privateKeyPem", "not a PEM private key")
    broken = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
    [(field, problem)] = refusal(pki, pki.ap_certificate_pem, pki.ap_chain_pem, broken)
    assert (field, problem) == ("$.privateKeyPem", "not a readable PEM private key")


def test_independent_problems_are_reported_together(pki: TestPki) -> None:
    found = refusal(pki, "garbage", "garbage", "garbage")
    assert [field for field, _ in found] == ["$.certPem", "$.caChainPem", "$.privateKeyPem"]


# --- sealing --------------------------------------------------------------------------------


def legacy_seal(key: bytes, plaintext: bytes, aad: bytes | None = None) -> str:
    """A value as the previous release sealed it: v1, no associated data for stored secrets."""
    nonce = os.urandom(12)
    raw = nonce + AESGCM(key).encrypt(nonce, plaintext, aad)
    return "v1:" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def test_sealing_round_trips() -> None:
    sealer = KeySealer(os.urandom(32))
    sealed = sealer.seal(b"private key bytes", context=b"certificates/1/sealedKey")
    assert sealed.startswith("v2:") and sealer.is_current(sealed)
    assert sealer.open(sealed, context=b"certificates/1/sealedKey") == b"private key bytes"
    assert sealer.seal(b"same", context=b"c") != sealer.seal(b"same", context=b"c")
    with pytest.raises(ValueError, match="copied from another record"):
        sealer.open(sealed, context=b"certificates/2/sealedKey")
    with pytest.raises(ValueError, match="context"):
        sealer.seal(b"unbound", context=b"")


@settings(max_examples=50)
@given(plaintext=st.binary(max_size=256), context=st.binary(min_size=1), other=st.binary())
def test_a_value_opens_with_its_context_only(plaintext: bytes, context: bytes, other: bytes):
    sealer = KeySealer(b"k" * 32)
    sealed = sealer.seal(plaintext, context=context)
    assert sealer.open(sealed, context=context) == plaintext
    if other != context:
        with pytest.raises(ValueError):
            sealer.open(sealed, context=other)


def test_values_sealed_before_binding_still_open_and_are_marked_old() -> None:
    key = os.urandom(32)
    sealer = KeySealer(key)
    old = legacy_seal(key, b"webhook secret")
    assert not sealer.is_current(old)
    # a stored secret's old value had no associated data: it opens whatever the new context
    assert sealer.open(old, context=b"webhooks/1/sealedSecret") == b"webhook secret"
    # an old value sealed with a context of its own (an upload URL) opens with that one
    token = legacy_seal(key, b"grant", b"upload")
    assert sealer.open(token, context=b"upload", legacy_context=b"upload") == b"grant"
    with pytest.raises(ValueError):
        sealer.open(token, context=b"upload")


def test_a_bound_value_relabelled_old_does_not_open() -> None:
    sealer = KeySealer(os.urandom(32))
    sealed = sealer.seal(b"secret", context=b"webhooks/1/sealedSecret")
    relabelled = "v1:" + sealed[3:]
    with pytest.raises(ValueError, match="does not open"):
        sealer.open(relabelled, context=b"webhooks/2/sealedSecret")


def test_a_flipped_byte_does_not_open() -> None:
    sealer = KeySealer(os.urandom(32))
    body = bytearray(base64.urlsafe_b64decode(sealer.seal(b"secret", context=b"c")[3:] + "=="))
    body[-1] ^= 1
    tampered = "v2:" + base64.urlsafe_b64encode(bytes(body)).decode().rstrip("=")
    with pytest.raises(ValueError, match="does not open"):
        sealer.open(tampered, context=b"c")
    with pytest.raises(ValueError, match="too short"):
        sealer.open("v2:abc", context=b"c")
    with pytest.raises(ValueError, match="base64url"):
        sealer.open("v1:!!", context=b"c")
    with pytest.raises(ValueError, match="not a sealed value"):
        sealer.open("v3:abc", context=b"c")


def test_a_wrong_key_does_not_open() -> None:
    sealed = KeySealer(os.urandom(32)).seal(b"secret", context=b"c")
    with pytest.raises(ValueError, match="another at-rest key"):
        KeySealer(os.urandom(32)).open(sealed, context=b"c")


def test_the_key_never_shows() -> None:
    key = os.urandom(32)
    sealer = KeySealer(key)
    text = repr(sealer) + str(sealer)
    assert key.hex() not in text and base64.b64encode(key).decode() not in text
    with pytest.raises(ValueError):
        KeySealer(b"short")


def test_the_at_rest_key_file_is_created_once(tmp_path: Path) -> None:
    first = KeySealer.from_config(None, tmp_path)
    path = tmp_path / "keys" / "at-rest.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    content = path.read_bytes()
    assert len(content) == 32
    second = KeySealer.from_config("", tmp_path)
    assert path.read_bytes() == content
    assert second.open(first.seal(b"secret", context=b"c"), context=b"c") == b"secret"
    assert [p.name for p in path.parent.iterdir()] == ["at-rest.key"]


def test_concurrent_key_file_creation_agrees(tmp_path: Path) -> None:
    start = threading.Barrier(4)
    sealers: list[KeySealer] = []

    def create() -> None:
        start.wait()
        sealers.append(KeySealer.from_config(None, tmp_path))

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sealed = sealers[0].seal(b"x", context=b"c")
    assert all(s.open(sealed, context=b"c") == b"x" for s in sealers)


def test_the_configured_key_is_used(tmp_path: Path) -> None:
    key = os.urandom(32)
    sealer = KeySealer.from_config(base64.b64encode(key).decode(), tmp_path)
    assert KeySealer(key).open(sealer.seal(b"secret", context=b"c"), context=b"c") == b"secret"
    urlsafe = KeySealer.from_config(base64.urlsafe_b64encode(key).decode().rstrip("="), tmp_path)
    assert urlsafe.open(sealer.seal(b"secret", context=b"c"), context=b"c") == b"secret"
    assert not (tmp_path / "keys").exists()
    with pytest.raises(ValueError, match="32 bytes") as caught:
        KeySealer.from_config(base64.b64encode(b"too short").decode(), tmp_path)
    assert "dG9v" not in str(caught.value)
