"""A certificate revocation list as the revocation check reads it (``adapters.pki.crl``): what
it revokes, whose it must be, and the distribution points a certificate names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.pki.crl import (
    MAX_POINTS,
    NO_NEXT_UPDATE,
    REFRESH_EVERY,
    REFRESH_LEAST,
    CrlRefused,
    KnownCrl,
    distribution_points,
    read_crl,
)
from fourcorner.adapters.pki.testpki import issue_leaf, new_ca, sign_crl

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())  # fast to make and to sign with


CA, CA_KEY = new_ca("NET TEST AP CA", key=ec_key(), not_before=NOW - DAY, not_after=NOW + DAY)
OTHER_KEY = ec_key()

serials = st.integers(min_value=1, max_value=2**159 - 1)  # what a certificate may carry
dates = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2026, 2, 28), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=0))  # a list holds whole seconds


def encoded(crl: x509.CertificateRevocationList, pem: bool) -> bytes:
    return crl.public_bytes(serialization.Encoding.PEM if pem else serialization.Encoding.DER)


def a_list(revoked: dict[int, datetime] | None = None, **over: object) -> bytes:
    values: dict[str, object] = {"this_update": NOW - DAY, "next_update": NOW + DAY} | over
    return encoded(sign_crl(CA, CA_KEY, revoked or {}, **values), pem=False)  # type: ignore[arg-type]


@given(revoked=st.dictionaries(serials, dates, max_size=12), asked=serials, pem=st.booleans())
def test_a_list_revokes_exactly_its_serial_numbers(
    revoked: dict[int, datetime], asked: int, pem: bool
) -> None:
    crl = sign_crl(CA, CA_KEY, revoked, this_update=NOW - DAY, next_update=NOW + DAY)
    known = read_crl(encoded(crl, pem), CA, NOW)
    assert known.serials == frozenset(revoked)
    assert known.revoked_on(asked) == revoked.get(asked)
    for serial, when in revoked.items():
        assert known.revoked_on(serial) == when


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x30\x03\x02\x01\x00", "not a revocation list"),
        (b"-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n", "not a revocation list"),
        (
            encoded(
                sign_crl(CA, OTHER_KEY, {5: NOW}, this_update=NOW, next_update=NOW + DAY), False
            ),
            "signature is not made by the issuer's key",
        ),
        (
            a_list(issuer_name=x509.Name.from_rfc4514_string("CN=SOMEONE ELSE")),
            "not by the certificate's issuer",
        ),
        (a_list(this_update=NOW + timedelta(hours=1)), "issued in the future"),
        (a_list(this_update=NOW - DAY, next_update=NOW - DAY), "nextUpdate is not after"),
    ],
    ids=["garbage", "pem garbage", "another key", "another issuer", "future", "no window"],
)
def test_a_list_that_is_not_the_issuers_is_refused(data: bytes, why: str) -> None:
    with pytest.raises(CrlRefused, match=why):
        read_crl(data, CA, NOW)


def test_a_delta_or_partial_list_is_refused() -> None:
    def extended(extension: x509.ExtensionType) -> bytes:
        builder = (
            x509.CertificateRevocationListBuilder()
            .issuer_name(CA.subject)
            .last_update(NOW - DAY)
            .next_update(NOW + DAY)
            .add_extension(extension, critical=True)
        )
        return encoded(builder.sign(CA_KEY, hashes.SHA256()), pem=False)

    with pytest.raises(CrlRefused, match="delta"):
        read_crl(extended(x509.DeltaCRLIndicator(1)), CA, NOW)
    narrowed = x509.IssuingDistributionPoint(
        full_name=None,
        relative_name=None,
        only_contains_user_certs=False,
        only_contains_ca_certs=True,
        only_some_reasons=None,
        indirect_crl=False,
        only_contains_attribute_certs=False,
    )
    with pytest.raises(CrlRefused, match="partial"):
        read_crl(extended(narrowed), CA, NOW)


def known_crl(next_update: datetime, fetched_at: datetime = NOW) -> KnownCrl:
    return KnownCrl(
        issuer=CA.subject,
        issuer_key="",
        this_update=NOW - DAY,
        next_update=next_update,
        fetched_at=fetched_at,
        serials=frozenset(),
        crl=x509.load_der_x509_crl(a_list()),
    )


@given(lifetime=st.integers(min_value=-30 * 86_400, max_value=30 * 86_400).filter(bool))
def test_a_list_is_fetched_again_before_its_next_update_but_never_at_once(lifetime: int) -> None:
    """At most ``REFRESH_EVERY`` after it was fetched, and halfway to its nextUpdate when
    that is sooner: before the list runs out, unless that is sooner than ``REFRESH_LEAST``
    after it was fetched. A list fetched past its nextUpdate (its CA is late publishing the
    next one) is not due again at once, nor at every check after."""
    known = known_crl(NOW + timedelta(seconds=lifetime))
    assert NOW + REFRESH_LEAST <= known.refresh_at <= NOW + REFRESH_EVERY
    if lifetime >= 2 * REFRESH_LEAST.total_seconds():
        assert known.refresh_at < known.next_update


@given(
    grace=st.integers(min_value=0, max_value=30 * 86_400).map(lambda s: timedelta(seconds=s)),
    late=st.integers(min_value=-86_400, max_value=86_400).map(lambda s: timedelta(seconds=s)),
)
def test_a_list_lapses_its_grace_past_its_next_update(grace: timedelta, late: timedelta) -> None:
    known = known_crl(NOW)
    assert known.lapsed(NOW + grace + late, grace) is (late >= timedelta(0))


def test_a_list_due_at_the_end_of_time_never_lapses() -> None:
    """A nextUpdate of 9999-12-31 (as far as the format goes) plus the grace is no date: the
    list counts, rather than the check failing."""
    end = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    known = read_crl(a_list(next_update=end), CA, NOW)
    assert known.next_update == end
    assert not known.lapsed(NOW, timedelta(days=30))


def leaf_naming(*points: x509.DistributionPoint) -> x509.Certificate:
    cert, _ = issue_leaf(CA, CA_KEY, "POP000001", not_before=NOW - DAY, not_after=NOW + DAY)
    if not points:
        return cert
    builder = (
        x509.CertificateBuilder()
        .subject_name(cert.subject)
        .issuer_name(cert.issuer)
        .public_key(cert.public_key())
        .serial_number(cert.serial_number)
        .not_valid_before(cert.not_valid_before_utc)
        .not_valid_after(cert.not_valid_after_utc)
        .add_extension(x509.CRLDistributionPoints(list(points)), critical=False)
    )
    return builder.sign(CA_KEY, hashes.SHA256())


def point(*urls: str, **over: object) -> x509.DistributionPoint:
    values: dict[str, object] = {
        "full_name": [x509.UniformResourceIdentifier(u) for u in urls],
        "relative_name": None,
        "reasons": None,
        "crl_issuer": None,
    } | over
    return x509.DistributionPoint(**values)  # type: ignore[arg-type]


def test_the_http_distribution_points_of_a_certificate() -> None:
    assert distribution_points(leaf_naming()) == ()
    cert = leaf_naming(
        point("ldap://ldap.example/cn=CA?certificateRevocationList", "http://crl.example/ca.crl"),
        point("HTTPS://crl.example/ca.crl", "http://crl.example/ca.crl"),
        point("http://crl.example/keys.crl", reasons=frozenset({x509.ReasonFlags.key_compromise})),
        point(
            "http://crl.example/other.crl",
            crl_issuer=[x509.DirectoryName(x509.Name.from_rfc4514_string("CN=OTHER"))],
        ),
    )
    assert distribution_points(cert) == (
        "http://crl.example/ca.crl",
        "HTTPS://crl.example/ca.crl",
    )
    many = leaf_naming(point(*(f"http://crl.example/{n}.crl" for n in range(MAX_POINTS + 3))))
    assert len(distribution_points(many)) == MAX_POINTS


def test_a_list_naming_no_next_update_counts_as_if_due_an_hour_after_its_fetch() -> None:
    """RFC 5280 lets a list name no nextUpdate: it counts as one due ``NO_NEXT_UPDATE`` (an
    hour, the refetch interval) after it was fetched, so it is fetched again halfway there
    and counts no longer than the grace past that."""
    known = read_crl(a_list(next_update=None), CA, NOW)
    assert known.crl.next_update_utc is None
    assert known.next_update == NOW + NO_NEXT_UPDATE == NOW + REFRESH_EVERY
    assert known.refresh_at == NOW + NO_NEXT_UPDATE / 2
    assert not known.lapsed(NOW + NO_NEXT_UPDATE, timedelta(minutes=1))
    assert known.lapsed(NOW + NO_NEXT_UPDATE + timedelta(minutes=1), timedelta(minutes=1))
