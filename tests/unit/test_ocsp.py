"""An OCSP answer as the revocation check reads it (``adapters.pki.ocsp``): the request it
sends, the responder a certificate names, and which answers count: signed by the CA or a
responder it authorised, for the certificate asked about, current."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509 import ocsp
from cryptography.x509.oid import AuthorityInformationAccessOID
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.pki.issuer import issuer_of
from fourcorner.adapters.pki.ocsp import (
    MAX_RESPONDERS,
    NO_NEXT_UPDATE,
    NONCE_BYTES,
    KnownOcsp,
    OcspRefused,
    read_ocsp,
    request_for,
    responders,
)
from fourcorner.adapters.pki.testpki import (
    PrivateKey,
    issue_leaf,
    issue_ocsp_signer,
    new_ca,
    sign_ocsp,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY, HOUR = timedelta(days=1), timedelta(hours=1)


def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())  # fast to make and to sign with


CA, CA_KEY = new_ca("NET TEST AP CA", key=ec_key(), not_before=NOW - DAY, not_after=NOW + DAY)
OTHER_CA, OTHER_CA_KEY = new_ca("NET TEST SMP CA", key=ec_key())
ISSUER = issuer_of(CA)
LEAF, _ = issue_leaf(CA, CA_KEY, "POP000001", not_before=NOW - DAY, not_after=NOW + DAY, key=CA_KEY)
DELEGATE = issue_ocsp_signer(
    CA, CA_KEY, "NET TEST OCSP", not_before=NOW - DAY, not_after=NOW + DAY, key=ec_key()
)
UNCHECKED = issue_ocsp_signer(
    CA, CA_KEY, "NET TEST OCSP", not_before=NOW - DAY, not_after=NOW + DAY, no_check=True
)
NONCE = bytes(range(NONCE_BYTES))


def asked(cert: x509.Certificate = LEAF) -> ocsp.OCSPRequest:
    return ocsp.load_der_ocsp_request(request_for(cert, ISSUER, NONCE))


def read(data: bytes, nonce: bytes = NONCE, **over: bool) -> KnownOcsp:
    return read_ocsp(data, LEAF, ISSUER, NOW, nonce=nonce, **over)


def answer(
    signer: tuple[x509.Certificate, PrivateKey] = (CA, CA_KEY),
    *,
    delegated: bool = False,
    **over: object,
) -> bytes:
    values: dict[str, object] = {"this_update": NOW - HOUR, "next_update": NOW + DAY} | over
    signed = sign_ocsp(asked(), *signer, delegated=delegated, **values)  # type: ignore[arg-type]
    return signed.public_bytes(serialization.Encoding.DER)


def test_the_request_names_the_certificate_by_a_sha1_cert_id() -> None:
    """What the request carries is what an answer's CertID is matched against, worked out
    once per CA (``issuer_of``)."""
    request = asked()
    assert isinstance(request.hash_algorithm, hashes.SHA1)
    assert request.serial_number == LEAF.serial_number
    assert request.issuer_name_hash == ISSUER.name_sha1
    assert request.issuer_key_hash == ISSUER.key_sha1
    [nonce] = request.extensions
    assert nonce.critical is False and nonce.value == x509.OCSPNonce(NONCE)
    assert issuer_of(CA) is issuer_of(CA) == ISSUER


@pytest.mark.parametrize("delegated", [False, True], ids=["by the CA", "by a delegate"])
def test_good_and_revoked_answers_count(delegated: bool) -> None:
    signer = DELEGATE if delegated else (CA, CA_KEY)
    good = read(answer(signer, delegated=delegated))
    assert good == KnownOcsp(
        this_update=NOW - HOUR, next_update=NOW + DAY, fetched_at=NOW, revoked_on=None
    )
    revoked = read(answer(signer, delegated=delegated, revoked_on=NOW - DAY))
    assert revoked.revoked_on == NOW - DAY


def test_an_answer_without_next_update_counts_a_short_time_from_its_making() -> None:
    made = NOW - timedelta(minutes=1)
    known = read(answer(this_update=made, next_update=None))
    assert known.next_update == made + NO_NEXT_UPDATE == NOW + timedelta(minutes=4)
    # made longer ago than that (a captured answer replayed): not taken
    with pytest.raises(OcspRefused, match="names no nextUpdate and was made more than"):
        read(answer(next_update=None))


def test_an_answer_with_the_requests_nonce_or_none_is_taken() -> None:
    """RFC 8954: a responder may echo the nonce, or answer with one it signed ahead of time
    (no nonce): both count."""
    assert read(answer(nonce=NONCE)).revoked_on is None
    assert read(answer()).revoked_on is None


@given(ours=st.binary(min_size=1, max_size=32), theirs=st.binary(min_size=1, max_size=32))
def test_an_answer_counts_only_with_the_nonce_of_its_request(ours: bytes, theirs: bytes) -> None:
    """A nonce other than the request's (an answer to another request, replayed) is refused,
    whatever the bytes."""
    data = answer(nonce=theirs)
    if ours == theirs:
        assert read(data, ours).revoked_on is None
    else:
        with pytest.raises(OcspRefused, match="its nonce is not the one the request carried"):
            read(data, ours)


def test_a_delegate_is_left_to_check_unless_it_says_no_check() -> None:
    """The answer names the delegate whose revocation is to be checked; one carrying
    id-pkix-ocsp-nocheck is not (RFC 6960 §4.2.2.2.1), nor is the CA itself."""
    assert read(answer(DELEGATE, delegated=True)).delegate == DELEGATE[0]
    assert read(answer(UNCHECKED, delegated=True)).delegate is None
    assert read(answer()).delegate is None
    # where its revocation can be checked no further: only a delegate that says no check
    assert read(answer(UNCHECKED, delegated=True), delegates=False).revoked_on is None
    with pytest.raises(OcspRefused, match="one level too deep"):
        read(answer(DELEGATE, delegated=True), delegates=False)


OTHER_SIGNER = issue_ocsp_signer(
    OTHER_CA, OTHER_CA_KEY, "NET TEST OCSP", not_before=NOW - DAY, not_after=NOW + DAY
)
NO_EKU = issue_ocsp_signer(
    CA, CA_KEY, "NET TEST OCSP", not_before=NOW - DAY, not_after=NOW + DAY, ocsp_signing=False
)
EXPIRED = issue_ocsp_signer(
    CA, CA_KEY, "NET TEST OCSP", not_before=NOW - 3 * DAY, not_after=NOW - DAY
)
NOT_YET_VALID = issue_ocsp_signer(
    CA, CA_KEY, "NET TEST OCSP", not_before=NOW + HOUR, not_after=NOW + DAY
)
IMPOSTOR = new_ca("NET TEST AP CA", key=ec_key())  # the CA's name, another key


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x30\x03\x0a\x01\x00", "not a readable OCSP answer"),
        (
            ocsp.OCSPResponseBuilder.build_unsuccessful(
                ocsp.OCSPResponseStatus.TRY_LATER
            ).public_bytes(serialization.Encoding.DER),
            "the responder answered try_later",
        ),
        (answer(unknown=True), "does not know the certificate"),
        (answer(serial=LEAF.serial_number + 1), "does not answer for this certificate"),
        (answer(this_update=NOW + HOUR), "issued in the future"),
        (answer(next_update=NOW - 2 * HOUR), "nextUpdate is not after its thisUpdate"),
        (answer(NO_EKU, delegated=True), "not authorised to sign OCSP answers"),
        (answer(OTHER_SIGNER, delegated=True), "is not issued by the certificate's CA"),
        (answer(EXPIRED, delegated=True), "is not valid at 2026-03-01T12:00:00Z"),
        (answer(NOT_YET_VALID, delegated=True), "is not valid at 2026-03-01T12:00:00Z"),
        (answer(DELEGATE), "signed neither by the certificate's CA nor by a responder"),
        (answer(IMPOSTOR, by_name=True), "signed neither by the certificate's CA nor by a"),
        (answer(by_name=True), None),
        (answer((OTHER_CA, OTHER_CA_KEY)), "signed neither by the certificate's CA"),
    ],
    ids=[
        "garbage",
        "unsuccessful",
        "unknown",
        "another serial",
        "future",
        "next before this",
        "delegate without the EKU",
        "delegate of another CA",
        "expired delegate",
        "delegate not valid yet",
        "delegate not carried",
        "the CA's name, another key",
        "the CA by name",
        "another CA",
    ],
)
def test_answers_that_do_not_count(data: bytes, why: str | None) -> None:
    if why is None:  # the CA named by its name: the answer counts
        assert read(data).revoked_on is None
        return
    with pytest.raises(OcspRefused, match=why):
        read(data)


def test_a_delegate_signed_by_another_key_under_the_cas_name_does_not_count() -> None:
    """A responder certificate naming the CA as its issuer, signed by another key."""
    forged = issue_ocsp_signer(
        IMPOSTOR[0], IMPOSTOR[1], "NET TEST OCSP", not_before=NOW - DAY, not_after=NOW + DAY
    )
    with pytest.raises(OcspRefused, match="is not signed by the certificate's CA"):
        read(answer(forged, delegated=True))


@given(data=st.binary(max_size=512))
def test_garbage_is_never_more_than_no_answer(data: bytes) -> None:
    with pytest.raises(OcspRefused):
        read(data)


@given(cut=st.integers(min_value=0), flip=st.integers(min_value=0), bit=st.integers(0, 7))
def test_a_damaged_answer_is_never_more_than_no_answer(cut: int, flip: int, bit: int) -> None:
    """A real answer cut short or with one bit flipped: refused, or (a bit that changes
    nothing signed or read) still the same answer; never any other exception."""
    data = bytearray(answer(DELEGATE, delegated=True))
    data[flip % len(data)] ^= 1 << bit
    damaged = bytes(data[: len(data) - cut % len(data)])
    try:
        known = read(damaged)
    except OcspRefused:
        return
    assert known.revoked_on is None and known.next_update == NOW + DAY


@given(serial=st.integers(min_value=1, max_value=2**159 - 1))
def test_an_answer_counts_only_for_the_serial_it_names(serial: int) -> None:
    data = answer(serial=serial)
    if serial == LEAF.serial_number:
        assert read(data).revoked_on is None
    else:
        with pytest.raises(OcspRefused, match="does not answer for this certificate"):
            read(data)


def naming(*locations: tuple[x509.ObjectIdentifier, str]) -> x509.Certificate:
    access = [
        x509.AccessDescription(method, x509.UniformResourceIdentifier(url))
        for method, url in locations
    ]
    return (
        x509.CertificateBuilder()
        .subject_name(LEAF.subject)
        .issuer_name(LEAF.issuer)
        .public_key(LEAF.public_key())
        .serial_number(LEAF.serial_number)
        .not_valid_before(LEAF.not_valid_before_utc)
        .not_valid_after(LEAF.not_valid_after_utc)
        .add_extension(x509.AuthorityInformationAccess(access), critical=False)
        .sign(CA_KEY, hashes.SHA256())
    )


def test_the_http_responders_are_asked_in_their_order() -> None:
    OCSP, ISSUERS = AuthorityInformationAccessOID.OCSP, AuthorityInformationAccessOID.CA_ISSUERS
    assert responders(LEAF) == ()
    assert responders(naming((ISSUERS, "http://ca.example/ca.cer"))) == ()
    assert responders(naming((OCSP, "https://ocsp.example/"), (OCSP, "ldap://x"))) == ()
    cert = naming(
        (ISSUERS, "http://ca.example/ca.cer"),
        (OCSP, "https://ocsp.example/"),
        (OCSP, "http://ocsp.example/b"),
        (OCSP, "http://ocsp.example/a"),
        (OCSP, "http://ocsp.example/b"),
    )
    assert responders(cert) == ("http://ocsp.example/b", "http://ocsp.example/a")
    many = naming(*[(OCSP, f"http://ocsp.example/{n}") for n in range(MAX_RESPONDERS + 2)])
    assert responders(many) == tuple(f"http://ocsp.example/{n}" for n in range(MAX_RESPONDERS))
