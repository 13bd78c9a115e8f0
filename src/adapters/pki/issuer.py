"""What the revocation check derives from the CA certificate that issued a peer's certificate
(``Issuer``): worked out once per CA (``issuer_of``, the 64 CAs most recently asked about are
kept per process), not at each check."""

from __future__ import annotations

import functools
import hashlib

import attrs
from cryptography import x509

from fourcorner.adapters.pki.certificates import public_key_sha256


@attrs.frozen
class Issuer:
    """A CA certificate, and what identifies it to a revocation list and an OCSP responder."""

    cert: x509.Certificate = attrs.field(repr=False)
    key_sha256: str  # of its SubjectPublicKeyInfo (``certificates.public_key_sha256``)
    name_sha1: bytes = attrs.field(repr=False)  # of its DER subject: a CertID's issuerNameHash
    key_sha1: bytes = attrs.field(repr=False)  # of its subjectPublicKey: a CertID's issuerKeyHash

    @property
    def cert_id(self) -> str:
        """The issuer's part of the OCSP CertID of its certificates (SHA-1), as text."""
        return f"{self.name_sha1.hex()}:{self.key_sha1.hex()}"


@functools.lru_cache(maxsize=64)
def issuer_of(cert: x509.Certificate) -> Issuer:
    """The ``Issuer`` of the CA certificate ``cert``, worked out once while it is kept."""
    key = cert.public_key()
    return Issuer(
        cert=cert,
        key_sha256=public_key_sha256(cert),
        name_sha1=hashlib.sha1(cert.subject.public_bytes(), usedforsecurity=False).digest(),
        # RFC 5280's first key identifier method is RFC 6960's issuerKeyHash: the SHA-1 of
        # the subjectPublicKey bit string
        key_sha1=x509.SubjectKeyIdentifier.from_public_key(key).digest,
    )
