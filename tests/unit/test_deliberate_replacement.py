"""What the operator's deliberate replacement of a stored certificate checks
(``deliberate_problems``): another subject is allowed, but the new certificate must chain to
the trust anchors, be valid now, match its key and have the key usages its use needs
(``usage_problems``), an AP certificate's CN must be the operator's seat id, and a test PKI's
may not take the network's place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.pki import TestPki, cert_pem, ensure_test_pki, issue_leaf, new_ca
from fourcorner.adapters.pki.renewal import deliberate_problems, usage_problems
from fourcorner.domain.certificates import Service

SEAT, OTHER_SEAT = "PFC000001", "PFC000002"
# Every certificate here is made at NOW, never at the wall clock: in the whole suite the
# module's test PKI is made many minutes after collection, past its five minutes' backdating
NOW = datetime.now(UTC)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPki:
    return ensure_test_pki(tmp_path_factory.mktemp("pki"), seat_id=SEAT, clock=lambda: NOW)


def other_seat(pki: TestPki, *, begin: datetime = NOW, days: float = 365) -> str:
    """An AP certificate of ``pki``'s AP CA for another seat id, on the AP key, valid from
    five minutes before ``begin`` for ``days``."""
    start, end = begin - timedelta(minutes=5), begin + timedelta(days=days)
    cert, _ = issue_leaf(
        pki.ap_ca, pki.ap_ca_key, OTHER_SEAT, not_before=start, not_after=end, key=pki.ap_key
    )
    return cert_pem(cert)


def another_organisation(pki: TestPki) -> str:
    """The AP certificate of ``pki`` with the seat id ``SEAT`` as its CN beside another
    organisation name (another subject), issued again by its AP CA."""
    cert = pki.ap_certificate
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "another organisation"),
            x509.NameAttribute(NameOID.COMMON_NAME, SEAT),
        ]
    )
    again = x509.CertificateBuilder(
        issuer_name=cert.issuer,
        subject_name=subject,
        public_key=cert.public_key(),
        serial_number=x509.random_serial_number(),
        not_valid_before=cert.not_valid_before_utc,
        not_valid_after=cert.not_valid_after_utc,
        extensions=list(cert.extensions),
    )
    return cert_pem(again.sign(pki.ap_ca_key, hashes.SHA256()))


def problems(
    pki: TestPki, new: str, key: str = "", stored: str = "", seat: str = OTHER_SEAT
) -> list[str]:
    files = (new, pki.ap_chain_pem, key or pki.ap_key_pem)
    return deliberate_problems(
        Service.AP, stored or pki.ap_certificate_pem, files, pki.trust_anchors, NOW, seat
    )


def test_another_subject_under_the_trust_anchors_may_replace_it(pki: TestPki) -> None:
    assert problems(pki, other_seat(pki)) == []
    assert problems(pki, another_organisation(pki), seat=SEAT) == []


@given(
    seat=st.sampled_from([SEAT, OTHER_SEAT]) | st.from_regex(r"P[A-Z]{2}[0-9]{6}", fullmatch=True)
)
def test_an_ap_certificate_whose_cn_is_not_the_seat_id_is_refused(pki: TestPki, seat: str) -> None:
    """Peers know the operator's seat by its AP certificate's CN: the process's seat id."""
    found = problems(pki, other_seat(pki), seat=seat)
    wrong = [f"its CN is {OTHER_SEAT!r}, not the seat id {seat}"]
    assert found == ([] if seat == OTHER_SEAT else wrong)


def test_a_certificate_that_does_not_chain_to_the_anchors_is_refused(
    pki: TestPki, tmp_path_factory: pytest.TempPathFactory
) -> None:
    stranger = ensure_test_pki(
        tmp_path_factory.mktemp("stranger"), seat_id=OTHER_SEAT, clock=lambda: NOW
    )
    found = deliberate_problems(
        Service.AP,
        pki.ap_certificate_pem,
        (stranger.ap_certificate_pem, stranger.ap_chain_pem, stranger.ap_key_pem),
        pki.trust_anchors,
        NOW,
        OTHER_SEAT,
    )
    assert len(found) == 1 and found[0].endswith("(its chain)"), found
    assert "not trusted" in found[0] or "neither in the chain" in found[0], found


def test_an_expired_certificate_or_one_of_another_key_is_refused(pki: TestPki) -> None:
    expired = problems(pki, other_seat(pki, begin=NOW - timedelta(days=30), days=10))
    assert any("(the certificate)" in p and "expired" in p for p in expired), expired
    mismatched = problems(pki, other_seat(pki), key=pki.smp_key_pem)
    assert mismatched == ["the key does not belong to the certificate (its key)"]


def test_a_test_pki_certificate_may_not_take_the_networks_place(pki: TestPki) -> None:
    """Any process still holding the network's files would put them back as going live."""
    root, root_key = new_ca("Network Root")
    ca, ca_key = new_ca("Network AP CA", issuer_cert=root, issuer_key=root_key)
    network, _ = issue_leaf(
        ca, ca_key, SEAT, not_before=NOW - timedelta(days=1), not_after=NOW + timedelta(days=9)
    )
    found = problems(pki, other_seat(pki), stored=cert_pem(network))
    assert len(found) == 1 and "a test PKI's and the stored one the network's" in found[0]


# --- key usages ------------------------------------------------------------------------------

KEY = ec.generate_private_key(ec.SECP256R1())
NAME = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SEAT)])
FLAGS = (
    "digital_signature",
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
)


def leaf(usage: dict[str, bool] | None, extended: list[x509.ObjectIdentifier] | None) -> Any:
    builder = (
        x509.CertificateBuilder()
        .subject_name(NAME)
        .issuer_name(NAME)
        .public_key(KEY.public_key())
        .serial_number(1)
        .not_valid_before(NOW)
        .not_valid_after(NOW + timedelta(days=1))
    )
    if usage is not None:
        flags = dict.fromkeys(FLAGS, False) | usage
        builder = builder.add_extension(
            x509.KeyUsage(
                **flags,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    if extended is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
    return builder.sign(KEY, hashes.SHA256())


EXTENDED = [
    ExtendedKeyUsageOID.CLIENT_AUTH,
    ExtendedKeyUsageOID.SERVER_AUTH,
    ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE,
    ExtendedKeyUsageOID.CODE_SIGNING,
]


@given(
    usage=st.none() | st.fixed_dictionaries({flag: st.booleans() for flag in FLAGS}),
    extended=st.none() | st.lists(st.sampled_from(EXTENDED), min_size=1, max_size=3, unique=True),
)
def test_the_smp_certificate_needs_signatures_and_tls_clients_where_it_names_usages(
    usage: dict[str, bool] | None, extended: list[x509.ObjectIdentifier] | None
) -> None:
    found = usage_problems(Service.SMP, leaf(usage, extended))
    signs = usage is None or usage["digital_signature"]
    client = extended is None or bool(
        {ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE}
        & set(extended)
    )
    assert ("its key usage does not allow digital signatures" in found) is not signs
    assert any("TLS client authentication" in p for p in found) is not client
    assert len(found) == (not signs) + (not client)


@given(usage=st.none() | st.fixed_dictionaries({flag: st.booleans() for flag in FLAGS}))
def test_the_ap_certificate_needs_signatures_key_encipherment_and_an_rsa_key(
    usage: dict[str, bool] | None,
) -> None:
    """The EC key of these certificates is always one problem: senders encrypt with RSA."""
    found = usage_problems(Service.AP, leaf(usage, [ExtendedKeyUsageOID.CODE_SIGNING]))
    signs = usage is None or usage["digital_signature"]
    enciphers = usage is None or usage["key_encipherment"]
    assert ("its key usage does not allow digital signatures" in found) is not signs
    assert any("key encipherment" in p for p in found) is not enciphers
    assert any("its key is not RSA" in p for p in found)
    assert len(found) == (not signs) + (not enciphers) + 1


def test_the_test_pki_certificates_have_what_they_need(pki: TestPki) -> None:
    assert usage_problems(Service.AP, pki.ap_certificate) == []
    assert usage_problems(Service.SMP, pki.smp_certificate) == []


@settings(max_examples=25, deadline=None)
@given(offset=st.integers(-3600, 120))
def test_one_of_the_stored_subject_must_be_newer(pki: TestPki, offset: int) -> None:
    """A certificate of the stored one's subject is a renewal, which a start stores, or an
    older one, which would roll a renewal back: refused unless it begins after the stored."""
    begins = pki.ap_certificate.not_valid_before_utc + timedelta(seconds=offset)
    cert, _ = issue_leaf(
        pki.ap_ca,
        pki.ap_ca_key,
        SEAT,
        not_before=begins,
        not_after=NOW + timedelta(days=9),
        key=pki.ap_key,
    )
    found = problems(pki, cert_pem(cert), seat=SEAT)
    older = [p for p in found if p.startswith("it is the stored one's subject and not newer")]
    assert found == older and len(older) == (offset <= 0), found
