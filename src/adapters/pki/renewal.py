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
"""

from __future__ import annotations

from collections.abc import Sequence

from cryptography import x509

from fourcorner.adapters.pki.certificates import ChainError, instant, verify_chain
from fourcorner.adapters.pki.testpki import issued_by_test_ca


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
            f'it names another subject ("{new.subject.rfc4514_string()}", the stored one '
            f'"{stored.subject.rfc4514_string()}")'
        )
    if _usages(new) != _usages(stored):
        return "its key usages are not the stored certificate's"
    if new.not_valid_before_utc <= stored.not_valid_before_utc:
        return (
            f"it is not newer (valid from {instant(new.not_valid_before_utc)}, the stored one "
            f"from {instant(stored.not_valid_before_utc)})"
        )
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
