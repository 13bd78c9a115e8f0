"""``As4Error``: every refusal of the AS4 layer, carrying the ebMS error it maps to.

The codes are those of ebMS 3 Core §6.7 and the AS4 profile (NETWORK.md §4 "Errors"). The
receiving side turns an ``As4Error`` into a signed error signal with ``build_error``; the
sending side raises one when an answer cannot be trusted.
"""

from __future__ import annotations

from typing import Final

import attrs

from fourcorner.adapters.as4.constants import NOT_SERVICED

VALUE_NOT_RECOGNIZED: Final = "EBMS:0001"
FEATURE_NOT_SUPPORTED: Final = "EBMS:0002"
VALUE_INCONSISTENT: Final = "EBMS:0003"
OTHER: Final = "EBMS:0004"
MIME_INCONSISTENCY: Final = "EBMS:0007"
INVALID_HEADER: Final = "EBMS:0009"
PROCESSING_MODE_MISMATCH: Final = "EBMS:0010"
FAILED_AUTHENTICATION: Final = "EBMS:0101"
FAILED_DECRYPTION: Final = "EBMS:0102"
POLICY_NONCOMPLIANCE: Final = "EBMS:0103"
DELIVERY_FAILURE: Final = "EBMS:0202"
INVALID_RECEIPT: Final = "EBMS:0302"
DECOMPRESSION_FAILURE: Final = "EBMS:0303"


@attrs.frozen
class ErrorKind:
    short_description: str
    category: str
    severity: str
    description: str


KINDS: Final[dict[str, ErrorKind]] = {
    VALUE_NOT_RECOGNIZED: ErrorKind(
        "ValueNotRecognized",
        "Content",
        "failure",
        "Although the message document is well "
        "formed and schema valid, some element/attribute contains a value that could not be "
        "recognized and therefore could not be used by the MSH.",
    ),
    FEATURE_NOT_SUPPORTED: ErrorKind(
        "FeatureNotSupported",
        "Content",
        "warning",
        "Although the message document is well "
        "formed and schema valid, some element/attribute value cannot be processed as expected "
        "because the related feature is not supported by the MSH.",
    ),
    VALUE_INCONSISTENT: ErrorKind(
        "ValueInconsistent",
        "Content",
        "failure",
        "Although the message document is well "
        "formed and schema valid, some element/attribute value is inconsistent either with the "
        "content of other element/attribute, or with the processing mode of the MSH, or with "
        "the normative requirements of the ebMS specification.",
    ),
    OTHER: ErrorKind("Other", "Content", "failure", "An error occurred."),
    MIME_INCONSISTENCY: ErrorKind(
        "MimeInconsistency",
        "Unpackaging",
        "failure",
        "The use of MIME is not consistent with the required usage in this specification.",
    ),
    INVALID_HEADER: ErrorKind(
        "InvalidHeader",
        "Unpackaging",
        "failure",
        "The ebMS header is either not valid as an "
        "ebMS header, or not consistent with the processing mode of the MSH.",
    ),
    PROCESSING_MODE_MISMATCH: ErrorKind(
        "ProcessingModeMismatch",
        "Processing",
        "failure",
        "The ebMS header or another header "
        "(e.g. reliability, security) expected by the MSH is not compatible with the expected "
        "content, based on the associated P-Mode.",
    ),
    FAILED_AUTHENTICATION: ErrorKind(
        "FailedAuthentication",
        "Processing",
        "failure",
        "The signature in the Security "
        'header intended for the "ebms" SOAP actor could not be validated by the Security '
        "module.",
    ),
    FAILED_DECRYPTION: ErrorKind(
        "FailedDecryption",
        "Processing",
        "failure",
        "The encrypted data reference the "
        'Security header intended for the "ebms" SOAP actor could not be decrypted by the '
        "Security Module.",
    ),
    POLICY_NONCOMPLIANCE: ErrorKind(
        "PolicyNoncompliance",
        "Processing",
        "failure",
        "The processor determined that the "
        "message's security methods, parameters, scope or other security policy-level "
        "requirements or agreements were not satisfied.",
    ),
    DELIVERY_FAILURE: ErrorKind(
        "DeliveryFailure",
        "Communication",
        "failure",
        "Although the message was sent under "
        "Guaranteed delivery requirement, the Reliability module could not get assurance that "
        "the message was properly delivered, in spite of resending efforts.",
    ),
    INVALID_RECEIPT: ErrorKind(
        "InvalidReceipt",
        "Communication",
        "failure",
        "A Receipt has been received for a "
        "message that was previously sent by the MSH generating this error, but it is invalid.",
    ),
    DECOMPRESSION_FAILURE: ErrorKind(
        "DecompressionFailure",
        "Communication",
        "failure",
        "An error occurred during the decompression.",
    ),
}
UNKNOWN_KIND: Final = ErrorKind("Other", "Content", "failure", "An error occurred.")


@attrs.define(eq=False, slots=False)
class As4Error(Exception):
    """A refusal, as the ebMS error ``code`` (``EBMS:0101``) with its ``short_description``
    (``FailedAuthentication``) and a ``detail`` for the other side's operators.

    ``ref_to_message_id`` is the MessageId of the message in error when it was read before the
    refusal (the receiving side puts it in the error signal's ``RefToMessageId``).
    """

    code: str
    short_description: str
    detail: str
    ref_to_message_id: str | None = None

    @classmethod
    def of(cls, code: str, detail: str, ref_to_message_id: str | None = None) -> As4Error:
        """The error ``code`` with its standard short description."""
        return cls(code, kind_of(code).short_description, detail, ref_to_message_id)

    @classmethod
    def not_serviced(cls, ref_to_message_id: str | None = None) -> As4Error:
        """``EBMS:0004`` with the detail ``PEPPOL:NOT_SERVICED``: the receiver, document type
        or process is not served here."""
        return cls.of(OTHER, NOT_SERVICED, ref_to_message_id)

    @property
    def severity(self) -> str:
        return kind_of(self.code).severity

    @property
    def category(self) -> str:
        return kind_of(self.code).category

    @property
    def description(self) -> str:
        return kind_of(self.code).description

    def __str__(self) -> str:
        return f"{self.code} {self.short_description}: {self.detail}"


def kind_of(code: str) -> ErrorKind:
    return KINDS.get(code, UNKNOWN_KIND)
