"""Whether a certificate may take the place of one the operator has stored.

Processes of one deployment share the operator's certificates through their database, and
each brings its own copy of the files at start. A file that differs from the stored
certificate replaces it only when it is that certificate's successor: the same certificate
(its text aside), the network's certificate that replaces the embedded test PKI's (going
live), or a renewal — the same subject, the same key usages, a later start of validity and,
for a test PKI certificate, issued under the same test PKI (which is this data dir's own
trust anchor). Anything else is a process with other or older files, whose start would
leave the other processes signing with keys the published certificates no longer match.
Whether the new certificate itself chains to the trust anchors, is valid now and matches its
key is ``inspect_certificate``'s part, checked before it is stored.

A certificate that is no successor (another subject: another SMP name, another organisation
beside the seat id) takes the place of the stored one only by the operator's deliberate
replacement (``fourcorner replace-operator-certificate``), and only when
``deliberate_problems`` finds nothing: the checks above, the key usages the service's own
certificates need (``usage_problems``), and not a test PKI's certificate in place of the
network's, which any process still holding the network's files would put back as going live.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from fourcorner.adapters.pki.certificates import (
    CERT_FIELD,
    CHAIN_FIELD,
    KEY_FIELD,
    ChainError,
    common_name,
    inspect_certificate,
    instant,
    verify_chain,
)
from fourcorner.adapters.pki.testpki import issued_by_test_ca
from fourcorner.domain.certificates import Service
from fourcorner.domain.errors import InvalidInput

# how the problem of a certificate with another subject starts: no renewal, but what the
# operator may put in place deliberately
ANOTHER_SUBJECT = "it names another subject"


def _usages(cert: x509.Certificate) -> tuple[object, object]:
    """The certificate's key usage and extended key usage (None when it names none)."""
    found: list[object] = []
    for kind in (x509.KeyUsage, x509.ExtendedKeyUsage):
        try:
            found.append(cert.extensions.get_extension_for_class(kind).value)
        except x509.ExtensionNotFound:
            found.append(None)
    return found[0], found[1]


def _chain(text: str) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(text.encode()) if text.strip() else []


def _not_newer(new: x509.Certificate, stored: x509.Certificate) -> str | None:
    """Why ``new`` does not succeed ``stored`` in time, or None when it was issued later."""
    if new.not_valid_before_utc > stored.not_valid_before_utc:
        return None
    return (
        f"it is not newer (valid from {instant(new.not_valid_before_utc)}, the stored one "
        f"from {instant(stored.not_valid_before_utc)})"
    )


def replacement_problem(
    stored_pem: str,
    stored_chain_pem: str,
    new_pem: str,
    trust_anchors: Sequence[x509.Certificate],
) -> str | None:
    """Why ``new_pem`` may not replace the stored certificate ``stored_pem`` (issued under
    ``stored_chain_pem``), in a few words; None when it may. ``trust_anchors`` are this
    process's: for a test PKI they are its own root."""
    try:
        new = x509.load_pem_x509_certificate(new_pem.encode())
    except ValueError:
        return "it does not read as a PEM certificate"
    try:
        stored = x509.load_pem_x509_certificate(stored_pem.encode())
    except ValueError:
        return None  # nothing usable is kept: any certificate that passes the checks will do
    if new == stored:
        return None
    test_pki = issued_by_test_ca(stored)
    if test_pki and not issued_by_test_ca(new):
        return None  # the network's own certificates replace the test PKI's: going live
    if new.subject != stored.subject:
        return (
            f'{ANOTHER_SUBJECT} ("{new.subject.rfc4514_string()}", the stored one '
            f'"{stored.subject.rfc4514_string()}")'
        )
    if _usages(new) != _usages(stored):
        return "its key usages are not the stored certificate's"
    if (older := _not_newer(new, stored)) is not None:
        return older
    if test_pki:
        try:
            # when it was issued: an expired stored certificate may be renewed too
            verify_chain(
                stored, _chain(stored_chain_pem), trust_anchors, stored.not_valid_before_utc
            )
        except (ChainError, ValueError):  # not under this PKI, or its stored chain unreadable
            return (
                "the stored one was issued under another test PKI than this data dir's "
                "(its root does not verify it)"
            )
    return None


def usage_problems(service: Service, cert: x509.Certificate) -> list[str]:
    """What the operator's ``service`` certificate lacks for its use, in a few words each:
    both sign (AS4 messages, SMP answers), so a key usage they name allows digital
    signatures; senders encrypt for the AP certificate with RSA-OAEP, so it holds an RSA key
    and a key usage it names allows key encipherment; the SMP certificate is the TLS client
    certificate at the SML and the directory, so an extended key usage it names allows
    client authentication. A certificate that names no (extended) key usage allows every
    one."""
    problems: list[str] = []
    usage, extended = _usages(cert)
    if isinstance(usage, x509.KeyUsage):
        if not usage.digital_signature:
            problems.append("its key usage does not allow digital signatures")
        if service is Service.AP and not usage.key_encipherment:
            problems.append("its key usage does not allow key encipherment (AS4 encryption)")
    if service is Service.AP and not isinstance(cert.public_key(), rsa.RSAPublicKey):
        problems.append("its key is not RSA (AS4 encrypts for the AP certificate with RSA-OAEP)")
    client = {ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE}
    named = set(extended) if isinstance(extended, x509.ExtendedKeyUsage) else client
    if service is Service.SMP and not client & named:
        problems.append("its extended key usage does not allow TLS client authentication (the SML)")
    return problems


def deliberate_problems(
    service: Service,
    stored_pem: str,
    new: tuple[str, str, str],
    trust_anchors: Sequence[x509.Certificate],
    now: datetime,
    seat_id: str,
) -> list[str]:
    """Why the operator may not replace the stored ``service`` certificate ``stored_pem``
    with ``new`` (its certificate, chain and private key, PEM) even deliberately; empty when
    it may: it chains to ``trust_anchors``, is valid at ``now`` and matches its key
    (``inspect_certificate``), has the key usages its use needs (``usage_problems``), an AP
    certificate names the operator's ``seat_id`` as its CN (peers know the seat by it), it
    is not a test PKI's in place of the network's, and one of the stored one's subject is
    newer (no rollback). Its subject may be another."""
    cert_pem, chain_pem, key_pem = new
    try:
        inspect_certificate(cert_pem, chain_pem, key_pem, trust_anchors, now)
    except InvalidInput as e:
        return [f"{d.problem} ({_FIELDS.get(d.field, d.field)})" for d in e.details()]
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    problems = usage_problems(service, cert)
    if service is Service.AP and (name := common_name(cert)) != seat_id:
        problems.append(
            f"its CN is {'none' if name is None else repr(name)}, not the seat id {seat_id}"
        )
    try:
        stored = x509.load_pem_x509_certificate(stored_pem.encode())
    except ValueError:
        return problems  # nothing usable is kept
    if cert.subject == stored.subject and (older := _not_newer(cert, stored)) is not None:
        problems.append(
            f"it is the stored one's subject and {older.removeprefix('it is ')}: an older "
            "certificate is not put back, and a renewal is what a start stores"
        )
    if issued_by_test_ca(cert) and not issued_by_test_ca(stored):
        problems.append(
            "it is a test PKI's and the stored one the network's (a process with the "
            "network's files would put that back)"
        )
    return problems


# the files of a certificate, as inspect_certificate's fields name them
_FIELDS = {CERT_FIELD: "the certificate", CHAIN_FIELD: "its chain", KEY_FIELD: "its key"}
