"""Why sending a document failed: the TXE catalogue, each entry with what the sender can do
about it, and the service error a failed transaction carries."""

from __future__ import annotations

import attrs

from fourcorner.domain.text import cut

DETAIL_LENGTH = 1000
"""Characters of a failure's detail a transaction keeps, at most: much of it is what the
receiving side said (an error signal's description and detail, an HTTP answer's text), whose
size is the receiver's choice up to the answer's limit of megabytes; it is stored on the
transaction, shown by the API, sent in its events and logged."""


@attrs.frozen
class ServiceError:
    code: str
    message: str
    category: str
    action: str


@attrs.frozen
class TransportFailure:
    """One entry of the TXE catalogue; ``busy``: the receiver could not take the message now
    (``RetryPolicy.after_busy`` decides whether that counts as an attempt)."""

    code: str
    title: str
    category: str
    action: str
    retryable: bool
    busy: bool = False

    def error(self, detail: str, *, lead: str = "") -> ServiceError:
        """The service error a transaction carries, ``detail`` cut at ``DETAIL_LENGTH``;
        ``lead``: what this service says about the failure (when the next attempt is), put
        before it whole, the detail in parentheses after it. The lead is this service's own
        words, of a size of its own, so cutting only the detail never loses its end."""
        said = cut(detail, DETAIL_LENGTH)
        if lead:
            said = f"{lead} ({said})"
        return ServiceError(self.code, f"{self.title}: {said}", self.category, self.action)


# The TXE catalogue: why sending failed, and what the sender can do about it.
RECEIVER_NOT_FOUND = TransportFailure(
    "TXE-1001",
    "The receiver is not registered in the network",
    "ROUTING_ERROR",
    "FIX_AND_RETRY",
    False,
)
DOCUMENT_NOT_ACCEPTED = TransportFailure(
    "TXE-1006",
    "The receiver does not accept this document type and process",
    "ROUTING_ERROR",
    "FIX_AND_RETRY",
    False,
)
SMP_UNTRUSTED = TransportFailure(
    "TXE-1002",
    "The receiver's SMP answer could not be verified",
    "SECURITY_ERROR",
    "CONTACT",
    False,
)
SMP_UNREACHABLE = TransportFailure(
    "TXE-1003", "The receiver's SMP could not be reached", "TRANSPORT_ERROR", "RETRY", True
)
ENDPOINT_UNTRUSTED = TransportFailure(
    "TXE-1004",
    "The receiver's access point certificate is not trusted; nothing was sent",
    "SECURITY_ERROR",
    "CONTACT",
    False,
)
PEER_NOT_HTTPS = TransportFailure(
    "TXE-1005",
    "The receiver's SMP or access point is not reached over https; nothing was sent",
    "SECURITY_ERROR",
    "CONTACT",
    False,
)
REVOCATION_UNKNOWN = TransportFailure(
    "TXE-1007",
    "Whether the receiver's SMP or access point certificate is revoked could not be checked "
    "yet; nothing was sent",
    "SECURITY_ERROR",
    "RETRY",
    True,
)
AP_UNREACHABLE = TransportFailure(
    "TXE-2001", "The receiving access point could not be reached", "TRANSPORT_ERROR", "RETRY", True
)
AP_HTTP_ERROR = TransportFailure(
    "TXE-2002",
    "The receiving access point answered with an error",
    "TRANSPORT_ERROR",
    "RETRY",
    True,
)
AP_REFUSED = TransportFailure(
    "TXE-2003",
    "The receiving access point refused the message",
    "DELIVERY_ERROR",
    "DO_NOT_RETRY",
    False,
)
NOT_SERVICED = TransportFailure(
    "TXE-2004",
    "The receiving access point does not serve this receiver, document type or process",
    "VALIDATION_ERROR",
    "FIX_AND_RETRY",
    False,
)
RECEIPT_INVALID = TransportFailure(
    "TXE-2005", "The receipt could not be verified", "SECURITY_ERROR", "CONTACT", False
)
# HTTP 503 or 429: the receiver could not take the message now and asks to come back later
AP_BUSY = TransportFailure(
    "TXE-2006",
    "The receiving access point is busy",
    "TRANSPORT_ERROR",
    "RETRY",
    True,
    busy=True,
)
REJECTED_BY_RECEIVER = TransportFailure(
    "TXE-3001", "The receiver rejected the document", "VALIDATION_ERROR", "FIX_AND_RETRY", False
)
SENDER_UNUSABLE = TransportFailure(
    "TXE-4001",
    "The sending access point cannot be used",
    "CONFIGURATION_ERROR",
    "CONTACT",
    False,
)
TXE_CATALOGUE = (
    RECEIVER_NOT_FOUND,
    SMP_UNTRUSTED,
    SMP_UNREACHABLE,
    ENDPOINT_UNTRUSTED,
    PEER_NOT_HTTPS,
    DOCUMENT_NOT_ACCEPTED,
    REVOCATION_UNKNOWN,
    AP_UNREACHABLE,
    AP_HTTP_ERROR,
    AP_REFUSED,
    NOT_SERVICED,
    RECEIPT_INVALID,
    AP_BUSY,
    REJECTED_BY_RECEIVER,
    SENDER_UNUSABLE,
)
