"""OCSP (RFC 6960) as the revocation check (``adapters.pki.revocation``) asks it: the http
responders a certificate names (Authority Information Access, id-ad-ocsp), the request for
that one certificate, and the responder's answer, read and verified.

The request names the certificate by a SHA-1 CertID, as responders expect, and carries a
nonce (RFC 8954: ``NONCE_BYTES`` random bytes, non-critical). An answer that carries a nonce
counts only when it is the request's; one without a nonce (many responders sign their
answers ahead) is taken, fresh by its times alone. An answer counts only when it is a
successful OCSP answer whose SingleResponse names that CertID (the issuer's name and key
hashes, the serial number), signed either by the issuing CA's own key or by a responder
certificate the CA issued (its signature verified by the CA's key) that carries the
id-kp-OCSPSigning extended key usage and is valid at the time, not issued in the future
(``CLOCK_SKEW``), with a nextUpdate after its thisUpdate. Such a delegated responder's own
revocation is left to the caller (``KnownOcsp.delegate``) unless its certificate carries
id-pkix-ocsp-nocheck; where the caller can check it no further (``delegates=False``), an
answer it signed without that extension is refused. An answer that names no nextUpdate
counts as if it named one ``NO_NEXT_UPDATE`` after its thisUpdate, and is refused once that
has passed (a captured answer replayed later is not taken as new). A certificate the
responder says it does not know (``unknown``) has no answer. Anything else is
``OcspRefused``, and the answer is not used.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs
from cryptography import exceptions, x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, padding, rsa
from cryptography.x509 import ocsp
from cryptography.x509.oid import AuthorityInformationAccessOID, ExtendedKeyUsageOID

from fourcorner.adapters.pki.certificates import instant
from fourcorner.adapters.pki.freshness import CLOCK_SKEW, Fresh, Unusable
from fourcorner.adapters.pki.issuer import Issuer
from fourcorner.domain.clock import utc

MAX_OCSP_BYTES = 64 * 1024
MAX_RESPONDERS = 4
"""At most this many OCSP responder URLs of one certificate are asked (the first ones)."""
NONCE_BYTES = 32  # RFC 8954 §2.1: 32 octets is what a client should send
NO_NEXT_UPDATE = timedelta(minutes=5)  # how long an answer that names no nextUpdate counts


class OcspRefused(Unusable):
    """An OCSP answer that cannot be fetched or used; the message says why."""


@attrs.frozen
class KnownOcsp(Fresh):
    """A responder's answer for one certificate that verified: good, or revoked since
    ``revoked_on``."""

    revoked_on: datetime | None = None
    responder: str = ""  # the URL of the responder that gave it
    delegate: x509.Certificate | None = attrs.field(default=None, eq=False, repr=False)
    """The delegated responder that signed it, when that one's own revocation is still to be
    checked (its certificate carries no id-pkix-ocsp-nocheck)."""

    def logged(self) -> dict[str, object]:
        status = "good" if self.revoked_on is None else "revoked"
        return {"status": status, "responder": self.responder}


def responders(cert: x509.Certificate) -> tuple[str, ...]:
    """The http OCSP responder URLs ``cert`` names, in its order, at most ``MAX_RESPONDERS``;
    empty when it names none (https is not used for OCSP: the answers are signed, and a
    responder's TLS would want its own revocation check)."""
    try:
        access = cert.extensions.get_extension_for_class(x509.AuthorityInformationAccess).value
    except (x509.ExtensionNotFound, ValueError):
        return ()
    urls: list[str] = []
    for description in access:
        name = description.access_location
        if (
            description.access_method == AuthorityInformationAccessOID.OCSP
            and isinstance(name, x509.UniformResourceIdentifier)
            and name.value.lower().startswith("http://")
            and name.value not in urls
        ):
            urls.append(name.value)
    return tuple(urls[:MAX_RESPONDERS])


def request_for(cert: x509.Certificate, issuer: Issuer, nonce: bytes) -> bytes:
    """The DER OCSP request for ``cert`` (SHA-1 CertID) carrying ``nonce``."""
    # SHA-1 names the certificate here (RFC 5019 §2.1.1), it signs nothing
    sha1 = hashes.SHA1()  # noqa: S303
    builder = (
        ocsp.OCSPRequestBuilder()
        .add_certificate(cert, issuer.cert, sha1)
        .add_extension(x509.OCSPNonce(nonce), critical=False)
    )
    return builder.build().public_bytes(serialization.Encoding.DER)


def read_ocsp(
    data: bytes,
    cert: x509.Certificate,
    issuer: Issuer,
    now: datetime,
    *,
    nonce: bytes,
    delegates: bool = True,
) -> KnownOcsp:
    """The answer ``data`` holds for ``cert``, issued by ``issuer``, to the request that
    carried ``nonce``, once it checks out at ``now``; ``OcspRefused`` says why it does not.
    Without ``delegates``, an answer signed by a delegated responder counts only when that
    one's certificate carries id-pkix-ocsp-nocheck."""
    now = utc(now)
    try:
        response = ocsp.load_der_ocsp_response(data)
        status = response.response_status
        if status is not ocsp.OCSPResponseStatus.SUCCESSFUL:
            raise OcspRefused(f"the responder answered {status.name.lower()}")
        _nonce_matches(response, nonce)
        single = _single(response, cert, issuer)
        delegate = _signed(response, issuer, now)
        this_update, next_update = single.this_update_utc, single.next_update_utc
        certificate_status = single.certificate_status
        revoked_on = single.revocation_time_utc
    except (ValueError, TypeError, exceptions.UnsupportedAlgorithm):
        raise OcspRefused("not a readable OCSP answer") from None
    if this_update > now + CLOCK_SKEW:
        raise OcspRefused(f"issued in the future (thisUpdate {instant(this_update)})")
    if next_update is None:  # fresh for a short time from when it was made, not fetched
        next_update = this_update + NO_NEXT_UPDATE
        if next_update <= now:  # an old answer replayed would otherwise pass as new
            raise OcspRefused(
                f"it names no nextUpdate and was made more than {NO_NEXT_UPDATE} ago "
                f"(thisUpdate {instant(this_update)})"
            )
    if next_update <= this_update:
        raise OcspRefused("its nextUpdate is not after its thisUpdate")
    if certificate_status is ocsp.OCSPCertStatus.UNKNOWN:
        raise OcspRefused("the responder does not know the certificate")
    if certificate_status is not ocsp.OCSPCertStatus.REVOKED:
        revoked_on = None
    elif revoked_on is None:  # pragma: no cover - a revoked status always carries its time
        revoked_on = this_update
    if delegate is not None and _no_check(delegate):
        delegate = None
    if delegate is not None and not delegates:
        raise OcspRefused(
            f"its signer {delegate.subject.rfc4514_string()!r} is a delegated responder whose "
            "own revocation would need checking (no id-pkix-ocsp-nocheck), one level too deep"
        )
    return KnownOcsp(
        this_update=this_update,
        next_update=next_update,
        fetched_at=now,
        revoked_on=revoked_on,
        delegate=delegate,
    )


def _nonce_matches(response: ocsp.OCSPResponse, nonce: bytes) -> None:
    """``OcspRefused`` when ``response`` carries a nonce other than ``nonce`` (RFC 8954 §2.1;
    carrying none is allowed)."""
    try:
        echoed = response.extensions.get_extension_for_class(x509.OCSPNonce).value.nonce
    except x509.ExtensionNotFound:
        return
    if echoed != nonce:
        raise OcspRefused("its nonce is not the one the request carried")


def _no_check(cert: x509.Certificate) -> bool:
    """Whether ``cert`` carries id-pkix-ocsp-nocheck (RFC 6960 §4.2.2.2.1)."""
    try:
        cert.extensions.get_extension_for_class(x509.OCSPNoCheck)
    except (x509.ExtensionNotFound, ValueError):
        return False
    return True


def _single(
    response: ocsp.OCSPResponse, cert: x509.Certificate, issuer: Issuer
) -> ocsp.OCSPSingleResponse:
    """The SingleResponse of ``response`` for ``cert``'s CertID; ``OcspRefused`` when there is
    none."""
    for single in response.responses:
        if (
            isinstance(single.hash_algorithm, hashes.SHA1)
            and single.serial_number == cert.serial_number
            and single.issuer_name_hash == issuer.name_sha1
            and single.issuer_key_hash == issuer.key_sha1
        ):
            return single
    raise OcspRefused("it does not answer for this certificate (no SingleResponse of its CertID)")


def _signed(response: ocsp.OCSPResponse, issuer: Issuer, now: datetime) -> x509.Certificate | None:
    """The delegated responder that signed ``response``, authorised by ``issuer`` and valid
    at ``now``, or None when ``issuer`` signed it; ``OcspRefused`` when neither did."""
    if _names(response, issuer.cert, issuer.key_sha1) and _verifies(
        response, issuer.cert.public_key()
    ):
        return None
    why = "it is signed neither by the certificate's CA nor by a responder the CA authorised"
    for signer in response.certificates:
        if not _names(response, signer):
            continue
        problem = _delegation_problem(signer, issuer, now)
        if problem:
            why = f"its signer {signer.subject.rfc4514_string()!r} {problem}"
        elif _verifies(response, signer.public_key()):
            return signer
    raise OcspRefused(why)


def _names(
    response: ocsp.OCSPResponse, cert: x509.Certificate, key_sha1: bytes | None = None
) -> bool:
    """Whether the ResponderID of ``response`` names ``cert`` (``key_sha1``: the SHA-1 of its
    subjectPublicKey, when known already)."""
    if response.responder_name is not None:
        return response.responder_name == cert.subject
    if key_sha1 is None:
        key_sha1 = x509.SubjectKeyIdentifier.from_public_key(cert.public_key()).digest
    return response.responder_key_hash == key_sha1


def _delegation_problem(signer: x509.Certificate, issuer: Issuer, now: datetime) -> str:
    """What keeps ``signer`` from answering for ``issuer``'s certificates at ``now`` (RFC
    6960 §4.2.2.2): empty when nothing does."""
    if signer.issuer != issuer.cert.subject:
        return "is not issued by the certificate's CA"
    try:
        signer.verify_directly_issued_by(issuer.cert)
    except (ValueError, TypeError, exceptions.InvalidSignature, exceptions.UnsupportedAlgorithm):
        return "is not signed by the certificate's CA"
    try:
        usages = signer.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except (x509.ExtensionNotFound, ValueError):
        usages = x509.ExtendedKeyUsage([])
    if ExtendedKeyUsageOID.OCSP_SIGNING not in usages:
        return "is not authorised to sign OCSP answers (no id-kp-OCSPSigning)"
    with_key = _key_usage(signer)
    if with_key is not None and not with_key.digital_signature:
        return "may not sign (its key usage)"
    if not signer.not_valid_before_utc - CLOCK_SKEW <= now <= signer.not_valid_after_utc:
        return f"is not valid at {instant(now)}"
    return ""


def _key_usage(cert: x509.Certificate) -> x509.KeyUsage | None:
    try:
        return cert.extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        return None


def _verifies(response: ocsp.OCSPResponse, key: object) -> bool:
    """Whether ``key`` made the signature of ``response`` (RSA PKCS #1 v1.5, ECDSA, EdDSA)."""
    algorithm, data, signature = (
        response.signature_hash_algorithm,
        response.tbs_response_bytes,
        response.signature,
    )
    try:
        if isinstance(key, rsa.RSAPublicKey) and algorithm is not None:
            key.verify(signature, data, padding.PKCS1v15(), algorithm)
        elif isinstance(key, ec.EllipticCurvePublicKey) and algorithm is not None:
            key.verify(signature, data, ec.ECDSA(algorithm))
        elif isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey) and not algorithm:
            key.verify(signature, data)
        else:
            return False
    except (exceptions.InvalidSignature, ValueError, TypeError, exceptions.UnsupportedAlgorithm):
        return False
    return True
