"""The network's AS4 message layer (NETWORK.md §4): build and read signed, encrypted ebMS 3
UserMessages, their non-repudiation receipts and error signals. Pure functions over bytes,
built with lxml and cryptography; no HTTP and no storage.

Sender (corner 2): ``build_user_message`` → POST ``body`` with ``http_headers`` →
``read_signal`` on the answer. Receiver (corner 3): ``read_user_message`` → deliver →
``build_receipt`` (or ``build_error`` for an ``As4Error``) → answer with HTTP 200 and
``SIGNAL_CONTENT_TYPE``.
"""

from fourcorner.adapters.as4.constants import SIGNAL_CONTENT_TYPE
from fourcorner.adapters.as4.errors import As4Error
from fourcorner.adapters.as4.messages import CertificateCheck, build_user_message, read_user_message
from fourcorner.adapters.as4.model import (
    ErrorSignal,
    InboundMessage,
    OutboundMessage,
    Receipt,
    SignedReference,
)
from fourcorner.adapters.as4.signals import build_error, build_receipt, read_signal

__all__ = [
    "SIGNAL_CONTENT_TYPE",
    "As4Error",
    "CertificateCheck",
    "ErrorSignal",
    "InboundMessage",
    "OutboundMessage",
    "Receipt",
    "SignedReference",
    "build_error",
    "build_receipt",
    "build_user_message",
    "read_signal",
    "read_user_message",
]
