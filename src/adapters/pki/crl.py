"""A certificate revocation list (RFC 5280 §5): read from DER or PEM, verified against the CA
that issued the certificates it is asked about, and what it says of a serial number; and the
HTTP(S) CRL distribution points a certificate names (RFC 5280 §4.2.1.13).

A list counts only when it is complete and its own issuer's: issued under the certificate's
issuer's name, signed by that CA's key (a CA whose key usage is stated must allow cRLSign),
neither a delta list nor one an issuingDistributionPoint narrows (indirect, some reasons only,
CA or attribute certificates only), and not issued in the future. Anything else is
``CrlRefused``, and the list is not used.
"""

from __future__ import annotations

from datetime import datetime

import attrs
from cryptography import exceptions, x509

from fourcorner.adapters.pki.certificates import instant, public_key_sha256
from fourcorner.adapters.pki.freshness import (
    CLOCK_SKEW,
    REFRESH_EVERY,
    REFRESH_LEAST,
    Fresh,
    Unusable,
)
from fourcorner.domain.clock import utc

__all__ = [
    "MAX_POINTS",
    "NO_NEXT_UPDATE",
    "REFRESH_EVERY",
    "REFRESH_LEAST",
    "CrlRefused",
    "KnownCrl",
    "distribution_points",
    "read_crl",
]

MAX_POINTS = 4
"""At most this many distribution point URLs of one certificate are used (a certificate that
names more is checked against its first ones)."""
NO_NEXT_UPDATE = REFRESH_EVERY
"""A list that names no nextUpdate counts as if it named one this long after it was fetched
(so it is fetched again halfway there, and counts no longer than the grace past that)."""


class CrlRefused(Unusable):
    """A revocation list that cannot be fetched or used; the message says why."""


@attrs.frozen
class KnownCrl(Fresh):
    """A revocation list that verified against its issuer, and what it revokes."""

    issuer: x509.Name
    issuer_key: str  # the sha256 of the SubjectPublicKeyInfo that verified its signature
    serials: frozenset[int] = attrs.field(repr=False)
    crl: x509.CertificateRevocationList = attrs.field(repr=False, eq=False)

    def older_than(self, kept: Fresh) -> bool:
        return (
            isinstance(kept, KnownCrl) and kept.issuer == self.issuer and super().older_than(kept)
        )

    def logged(self) -> dict[str, object]:
        return {"revoked": len(self.serials)}

    def covers(self, cert: x509.Certificate, issuer_key: str) -> bool:
        """Whether this list is the one of ``cert``'s issuer, verified by ``issuer_key``."""
        return self.issuer == cert.issuer and self.issuer_key == issuer_key

    def revoked_on(self, serial: int) -> datetime | None:
        """When the certificate of ``serial`` was revoked, or None when it is not."""
        if serial not in self.serials:
            return None
        entry = self.crl.get_revoked_certificate_by_serial_number(serial)
        return entry.revocation_date_utc if entry is not None else self.this_update


def read_crl(data: bytes, issuer: x509.Certificate, now: datetime) -> KnownCrl:
    """The list ``data`` holds (DER or PEM), once it checks out as ``issuer``'s complete list
    at ``now``; ``CrlRefused`` says why it does not."""
    now = utc(now)
    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            crl = x509.load_pem_x509_crl(data)
        else:
            crl = x509.load_der_x509_crl(data)
    except ValueError:
        raise CrlRefused("not a revocation list (neither DER nor PEM)") from None
    if crl.issuer != issuer.subject:
        raise CrlRefused(
            f'issued by "{crl.issuer.rfc4514_string()}", not by the certificate\'s issuer '
            f'"{issuer.subject.rfc4514_string()}"'
        )
    if not _may_sign_lists(issuer):
        raise CrlRefused("its issuer's key usage does not allow signing revocation lists")
    try:
        signed = crl.is_signature_valid(issuer.public_key())  # type: ignore[arg-type]
    except (TypeError, ValueError, exceptions.UnsupportedAlgorithm):
        signed = False
    if not signed:
        raise CrlRefused("its signature is not made by the issuer's key")
    _complete(crl)
    this_update = crl.last_update_utc
    if this_update > now + CLOCK_SKEW:
        raise CrlRefused(f"issued in the future (thisUpdate {instant(this_update)})")
    next_update = crl.next_update_utc or now + NO_NEXT_UPDATE
    if next_update <= this_update:
        raise CrlRefused("its nextUpdate is not after its thisUpdate")
    return KnownCrl(
        issuer=crl.issuer,
        issuer_key=public_key_sha256(issuer),
        this_update=this_update,
        next_update=next_update,
        fetched_at=now,
        serials=frozenset(entry.serial_number for entry in crl),
        crl=crl,
    )


def distribution_points(cert: x509.Certificate) -> tuple[str, ...]:
    """The http and https URLs of ``cert``'s CRL distribution points where its issuer's
    complete list is published (a point naming another CRL issuer, or some reasons only, is
    passed over), at most ``MAX_POINTS``; empty when it names none."""
    try:
        points = cert.extensions.get_extension_for_class(x509.CRLDistributionPoints).value
    except (x509.ExtensionNotFound, ValueError):
        return ()
    urls: list[str] = []
    for point in points:
        if point.crl_issuer or point.reasons:
            continue
        for name in point.full_name or ():
            url = name.value if isinstance(name, x509.UniformResourceIdentifier) else ""
            if url.lower().startswith(("http://", "https://")) and url not in urls:
                urls.append(url)
    return tuple(urls[:MAX_POINTS])


def _may_sign_lists(issuer: x509.Certificate) -> bool:
    try:
        usage = issuer.extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        return True
    except ValueError:
        return False
    return usage.crl_sign


def _complete(crl: x509.CertificateRevocationList) -> None:
    """``CrlRefused`` unless ``crl`` is a complete list of its issuer's certificates."""
    try:
        extensions = list(crl.extensions)
    except ValueError:
        raise CrlRefused("its extensions cannot be read") from None
    for extension in extensions:
        value = extension.value
        if isinstance(value, x509.DeltaCRLIndicator):
            raise CrlRefused("a delta list, not a complete one")
        if isinstance(value, x509.IssuingDistributionPoint) and (
            value.indirect_crl
            or value.only_some_reasons
            or value.only_contains_ca_certs
            or value.only_contains_attribute_certs
        ):
            raise CrlRefused("a partial list (its issuingDistributionPoint narrows it)")
