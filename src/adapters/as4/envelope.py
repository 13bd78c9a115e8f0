"""The SOAP 1.2 envelope every AS4 message and signal shares: ``S12:Header`` holding
``wsse:Security`` and ``eb:Messaging`` (both ``mustUnderstand``), and an empty ``S12:Body``
with a ``wsu:Id`` so the signature can cover it."""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from lxml import etree

from fourcorner.adapters.as4.constants import EB, MUST_UNDERSTAND, S12, WSSE, WSU_ID, q
from fourcorner.adapters.as4.errors import INVALID_HEADER, POLICY_NONCOMPLIANCE, As4Error
from fourcorner.adapters.as4.xml import Element, children, one, parse_untrusted, sub

MESSAGING_ID = "id-messaging"
BODY_ID = "id-body"
SIGNER_TOKEN_ID = "id-signer-token"  # noqa: S105 (an element id)
RECEIVER_TOKEN_ID = "id-receiver-token"  # noqa: S105 (an element id)
# An envelope of the profile is a few kilobytes (headers, tokens, one signature); a larger one
# is refused before it is parsed, so no one builds a huge tree in memory.
MAX_ENVELOPE_BYTES = 1024 * 1024


@attrs.frozen
class SoapEnvelope:
    """A SOAP envelope's root and the parts of it the profile fills or reads."""

    root: Element
    header: Element
    security: Element
    messaging: Element
    body: Element


def new_envelope(nsmap: Mapping[str, str]) -> SoapEnvelope:
    """An envelope with an empty Security header, an empty Messaging header and the Body."""
    root = etree.Element(q(S12, "Envelope"), nsmap=dict(nsmap))
    header = sub(root, q(S12, "Header"))
    security = sub(header, q(WSSE, "Security"), None, {MUST_UNDERSTAND: "true"})
    messaging = sub(
        header, q(EB, "Messaging"), None, {WSU_ID: MESSAGING_ID, MUST_UNDERSTAND: "true"}
    )
    body = sub(root, q(S12, "Body"), None, {WSU_ID: BODY_ID})
    return SoapEnvelope(root, header, security, messaging, body)


def parse_envelope(soap: bytes | memoryview) -> SoapEnvelope:
    """The parts of a received envelope: ``EBMS:0009`` unless it is SOAP 1.2 with one Header,
    one Body and one ``eb:Messaging``; ``EBMS:0103`` without exactly one ``wsse:Security``.
    An envelope larger than ``MAX_ENVELOPE_BYTES`` is ``EBMS:0009`` unparsed."""
    if len(soap) > MAX_ENVELOPE_BYTES:
        raise As4Error.of(
            INVALID_HEADER, f"the SOAP envelope is larger than {MAX_ENVELOPE_BYTES} bytes"
        )
    root = parse_untrusted(bytes(soap), "SOAP envelope")
    if root.tag != q(S12, "Envelope"):
        raise As4Error.of(INVALID_HEADER, "the root element is not a SOAP 1.2 Envelope")
    header = one(root, q(S12, "Header"))
    body = one(root, q(S12, "Body"))
    securities = children(header, q(WSSE, "Security"))
    if len(securities) != 1:
        problem = "no" if not securities else "more than one"
        raise As4Error.of(POLICY_NONCOMPLIANCE, f"the message has {problem} Security header")
    messaging = one(header, q(EB, "Messaging"))
    return SoapEnvelope(root, header, securities[0], messaging, body)
