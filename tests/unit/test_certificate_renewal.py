"""Which certificate may take the place of the operator's stored one (``replacement_problem``):
the same one, a renewal (same subject and key usages, issued later, under the same test PKI),
the network's certificate after the test PKI's; not an older one, another subject's, or one of
another test PKI (a data dir that made its own)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.x509.oid import ExtendedKeyUsageOID

from fourcorner.adapters.pki import TestPki, cert_pem, ensure_test_pki, issue_leaf, new_ca
from fourcorner.adapters.pki.renewal import replacement_problem
from fourcorner.adapters.pki.testpki import AP_CA_NAME, ROOT_CA_NAME

SEAT = "PFC000001"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPki:
    return ensure_test_pki(tmp_path_factory.mktemp("first"), seat_id=SEAT)


def renewed(pki: TestPki, *, starts: timedelta, name: str = SEAT, usages: Any = ()) -> str:
    """An AP certificate of ``pki``'s AP CA, valid from ``starts`` after the stored one."""
    begin = pki.ap_certificate.not_valid_before_utc + starts
    end = begin + timedelta(days=365)
    cert, _ = issue_leaf(
        pki.ap_ca, pki.ap_ca_key, name, not_before=begin, not_after=end, usages=usages
    )
    return cert_pem(cert)


def problem(pki: TestPki, new: str, anchors: TestPki | None = None) -> str | None:
    trusted = (anchors or pki).trust_anchors
    return replacement_problem(pki.ap_certificate_pem, pki.ap_chain_pem, new, trusted)


def test_the_same_certificate_replaces_itself_even_written_otherwise(pki: TestPki) -> None:
    assert problem(pki, pki.ap_certificate_pem) is None
    assert problem(pki, "\n" + pki.ap_certificate_pem.replace("\n", "\r\n")) is None


def test_a_renewal_by_the_same_test_ca_replaces_the_stored_one(pki: TestPki) -> None:
    assert problem(pki, renewed(pki, starts=timedelta(days=300))) is None


def test_an_older_or_equally_old_certificate_is_refused(pki: TestPki) -> None:
    older = problem(pki, renewed(pki, starts=-timedelta(days=1)))
    assert older is not None and older.startswith("it is not newer (valid from ")
    assert problem(pki, renewed(pki, starts=timedelta(0))) is not None


def test_another_subject_or_other_key_usages_are_refused(pki: TestPki) -> None:
    other = problem(pki, renewed(pki, starts=timedelta(days=1), name="PFC000002"))
    assert other is not None and "another subject" in other and "PFC000002" in other
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    widened = problem(pki, renewed(pki, starts=timedelta(days=1), usages=usages))
    assert widened == "its key usages are not the stored certificate's"


def test_a_newer_certificate_of_another_test_pki_is_refused(pki: TestPki, tmp_path: Path) -> None:
    """A data dir that made a test PKI of its own: the same names, a later start, but its
    root does not verify the stored certificate."""
    other = ensure_test_pki(tmp_path, seat_id=SEAT)
    later = renewed(other, starts=timedelta(days=1))
    found = problem(pki, later, anchors=other)
    assert found is not None and "another test PKI" in found


def test_the_networks_certificate_replaces_the_test_pkis(pki: TestPki) -> None:
    """Going live: configured certificates of the network's CA take the test PKI's place."""
    root, root_key = new_ca("Network Root")
    ca, ca_key = new_ca("Network AP CA", issuer_cert=root, issuer_key=root_key)
    now = datetime.now(UTC)
    cert, _ = issue_leaf(ca, ca_key, SEAT, not_before=now, not_after=now + timedelta(days=9))
    assert problem(pki, cert_pem(cert), anchors=None) is None
    # and back: the test PKI's does not replace the network's
    back = replacement_problem(cert_pem(cert), cert_pem(ca), pki.ap_certificate_pem, [root])
    assert back is not None


def test_an_expired_stored_certificate_is_renewed() -> None:
    """The stored one is checked as of when it was issued: expired, it may still be renewed."""
    start = datetime.now(UTC) - timedelta(days=400)
    root, root_key = new_ca(ROOT_CA_NAME, not_before=start)
    ca, ca_key = new_ca(AP_CA_NAME, not_before=start, issuer_cert=root, issuer_key=root_key)
    old, _ = issue_leaf(ca, ca_key, SEAT, not_before=start, not_after=start + timedelta(days=30))
    begin = datetime.now(UTC)
    new, _ = issue_leaf(ca, ca_key, SEAT, not_before=begin, not_after=begin + timedelta(days=9))
    chain = cert_pem(ca) + cert_pem(root)
    assert replacement_problem(cert_pem(old), chain, cert_pem(new), [root]) is None
