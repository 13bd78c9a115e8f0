"""What an SMP lookup answers, and how the parts of a question and an answer are read.

``VerifiedMetadata`` is a ServiceMetadata whose signature and signer were checked;
``LookupResult`` the endpoint chosen from it. The identifiers asked about are read in the
network's spelling (``wire``: the JSON interface's ``net-`` aliases; ``participant_of``:
``0088:…`` or ``scheme::value``); an endpoint's certificate is read from its base64 DER
(``published_certificate``); a signer's subject is compared with a redirect's
``CertificateUID`` in either RDN order (``subject_forms``, ``normalise_dn``). The client that
asks is ``adapters.smp.client``.
"""

from __future__ import annotations

import base64
import binascii
import functools
from datetime import datetime

import attrs
from cryptography import x509

from fourcorner.adapters.smp.errors import Problem, SmpLookupError
from fourcorner.adapters.smp.xml import ParsedEndpoint, ParsedMetadata, split_identifier
from fourcorner.domain.network_services import Environment
from fourcorner.domain.smp import PARTICIPANT_SCHEME

DEFAULT_TRANSPORT_PROFILE = "peppol-transport-as4-v2_0"

# The JSON interface's ``net`` spellings, accepted on input (NETWORK.md, "The net alias").
_WIRE_ALIASES = {
    "net-transport-as4-v2_0": "peppol-transport-as4-v2_0",
    "net-doctype-wildcard": "peppol-doctype-wildcard",
}


@attrs.frozen
class LookupResult:
    url: str
    certificate: x509.Certificate  # the access point's certificate, as published
    transport_profile: str
    activation: datetime | None
    expiration: datetime | None
    technical_contact_url: str
    description: str
    smp_certificate: x509.Certificate  # the certificate that signed the answer


@attrs.frozen
class VerifiedMetadata:
    """A ServiceMetadata whose signature and signer were checked, for the participant and
    document type asked about."""

    smp_url: str
    metadata: ParsedMetadata
    signer: x509.Certificate
    environment: Environment


def wire(value: str) -> str:
    """The wire spelling of a transport profile or document scheme (``net`` → the network)."""
    return _WIRE_ALIASES.get(value, value)


def subject_forms(certificate: x509.Certificate) -> set[str]:
    """The signer's subject in both RDN orders, normalised (``CN=a,O=b`` / ``O=b,CN=a``)."""
    rdns = [rdn.rfc4514_string() for rdn in certificate.subject.rdns]
    return {normalise_dn(",".join(reversed(rdns))), normalise_dn(",".join(rdns))}


def normalise_dn(text: str) -> str:
    """A distinguished name as compared: its parts stripped, case folded."""
    return ",".join(part.strip() for part in text.split(",")).casefold()


def published_certificate(endpoint: ParsedEndpoint) -> x509.Certificate | None:
    """The certificate an endpoint publishes (base64 DER), or None when it cannot be read."""
    return _certificate(endpoint.certificate)


@functools.lru_cache(maxsize=256)
def _certificate(text: str) -> x509.Certificate | None:
    """The certificate of the base64 ``text``, read once for the same text: every send to an
    endpoint reads the one its SMP publishes, and checks its chain, faster for the same
    object (``pki.certificates``); the object is immutable."""
    try:
        return x509.load_der_x509_certificate(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        return None


def participant_of(participant: str) -> tuple[str, str]:
    """``(scheme, value)``, lower-cased, of ``0088:…`` or ``scheme::value``."""
    try:
        scheme, value = (
            split_identifier(participant)
            if "::" in participant
            else (PARTICIPANT_SCHEME, participant)
        )
    except ValueError as e:
        raise SmpLookupError(
            f"malformed participant identifier: {e}", Problem.NOT_REGISTERED
        ) from e
    return scheme.strip().lower(), value.strip().lower()
