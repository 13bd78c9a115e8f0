"""The ebMS 3 headers of the profile (NETWORK.md §4): writing and reading the ``eb:Messaging``
of a UserMessage, and reading the ``eb:SignalMessage`` of a receipt or an error.

Reading checks the structure and the profile's fixed values; it trusts nothing yet (the
signature is checked afterwards over the very elements read here).
"""

from __future__ import annotations

from datetime import datetime

import attrs

from fourcorner.adapters.as4.constants import (
    AGREEMENT,
    DEFAULT_MPC,
    EB,
    FINAL_RECIPIENT,
    GZIP,
    INITIATOR,
    ORIGINAL_SENDER,
    PARTY_TYPE,
    PAYLOAD_MIME_TYPE,
    RESPONDER,
    q,
)
from fourcorner.adapters.as4.errors import (
    INVALID_HEADER,
    PROCESSING_MODE_MISMATCH,
    VALUE_INCONSISTENT,
    As4Error,
)
from fourcorner.adapters.as4.mime import cid_of
from fourcorner.adapters.as4.xml import (
    Element,
    attribute,
    children,
    format_timestamp,
    one,
    optional,
    parse_timestamp,
    required_text,
    sub,
    text,
)

_INCONSISTENT = VALUE_INCONSISTENT

MAX_MESSAGE_ID = 255
"""Characters of a UserMessage's MessageId, at most (ebMS sets no bound): it is stored and
indexed with the transaction, and a PostgreSQL index entry holds at most 2704 bytes."""


def _eb(local: str) -> str:
    return q(EB, local)


# --- UserMessage ---------------------------------------------------------------------------


@attrs.frozen
class UserMessageHeader:
    message_id: str
    timestamp: datetime
    from_party: str
    from_type: str | None
    to_party: str
    to_type: str | None
    service: str
    service_type: str
    action: str
    conversation_id: str
    original_sender: tuple[str, str]
    final_recipient: tuple[str, str]
    payload_cid: str


def append_user_message(
    messaging: Element,
    *,
    message_id: str,
    timestamp: datetime,
    from_party: str,
    to_party: str,
    service: str,
    service_type: str,
    action: str,
    conversation_id: str,
    original_sender: tuple[str, str],
    final_recipient: tuple[str, str],
    payload_cid: str,
) -> None:
    user_message = sub(messaging, _eb("UserMessage"))
    info = sub(user_message, _eb("MessageInfo"))
    sub(info, _eb("Timestamp"), format_timestamp(timestamp))
    sub(info, _eb("MessageId"), message_id)
    parties = sub(user_message, _eb("PartyInfo"))
    for side, party, role in (("From", from_party, INITIATOR), ("To", to_party, RESPONDER)):
        element = sub(parties, _eb(side))
        sub(element, _eb("PartyId"), party, {"type": PARTY_TYPE})
        sub(element, _eb("Role"), role)
    collaboration = sub(user_message, _eb("CollaborationInfo"))
    sub(collaboration, _eb("AgreementRef"), AGREEMENT)
    sub(collaboration, _eb("Service"), service, {"type": service_type})
    sub(collaboration, _eb("Action"), action)
    sub(collaboration, _eb("ConversationId"), conversation_id)
    properties = sub(user_message, _eb("MessageProperties"))
    for name, (scheme, value) in (
        (ORIGINAL_SENDER, original_sender),
        (FINAL_RECIPIENT, final_recipient),
    ):
        sub(properties, _eb("Property"), value, {"name": name, "type": scheme})
    payloads = sub(user_message, _eb("PayloadInfo"))
    part = sub(payloads, _eb("PartInfo"), None, {"href": f"cid:{payload_cid}"})
    part_properties = sub(part, _eb("PartProperties"))
    sub(part_properties, _eb("Property"), PAYLOAD_MIME_TYPE, {"name": "MimeType"})
    sub(part_properties, _eb("Property"), GZIP, {"name": "CompressionType"})


def peek_message_id(messaging: Element) -> str | None:
    """The MessageId of a UserMessage or SignalMessage, for an error signal to refer to: only
    one a UserMessage may carry (text of at most ``MAX_MESSAGE_ID`` characters). Any other is
    the sender's text of any length, and is not echoed back: the error then goes without a
    RefToMessageId, which ebMS 3 allows (an error about a message that cannot be read)."""
    for kind in ("UserMessage", "SignalMessage"):
        for element in messaging.iterfind(f"{{{EB}}}{kind}/{{{EB}}}MessageInfo/{{{EB}}}MessageId"):
            try:
                value = text(element)
            except As4Error:  # it holds elements
                continue
            if value and len(value) <= MAX_MESSAGE_ID:
                return value
    return None


def read_user_message(messaging: Element) -> UserMessageHeader:
    """The values of the one UserMessage in ``messaging``: ``EBMS:0009`` if an element is
    missing or repeated (or the MessageId longer than ``MAX_MESSAGE_ID``), ``EBMS:0003`` if a
    value breaks the profile."""
    if children(messaging, _eb("SignalMessage")):
        raise As4Error.of(INVALID_HEADER, "a user message cannot carry a SignalMessage")
    user_message = one(messaging, _eb("UserMessage"))
    if user_message.get("mpc", DEFAULT_MPC) != DEFAULT_MPC:
        raise As4Error.of(PROCESSING_MODE_MISMATCH, f"the profile uses only the MPC {DEFAULT_MPC}")
    info = one(user_message, _eb("MessageInfo"))
    if children(info, _eb("RefToMessageId")):
        raise As4Error.of(_INCONSISTENT, "a UserMessage must not carry a RefToMessageId")
    message_id = required_text(info, _eb("MessageId"))
    if len(message_id) > MAX_MESSAGE_ID:
        raise As4Error.of(INVALID_HEADER, f"MessageId is longer than {MAX_MESSAGE_ID} characters")
    timestamp = parse_timestamp(required_text(info, _eb("Timestamp")))
    parties = one(user_message, _eb("PartyInfo"))
    from_party, from_type = _party(one(parties, _eb("From")))
    to_party, to_type = _party(one(parties, _eb("To")))
    collaboration = one(user_message, _eb("CollaborationInfo"))
    agreement = optional(collaboration, _eb("AgreementRef"))
    if agreement is None or text(agreement) != AGREEMENT:
        raise As4Error.of(_INCONSISTENT, f"the AgreementRef must be {AGREEMENT}")
    if agreement.get("type") is not None or agreement.get("pmode") is not None:
        raise As4Error.of(_INCONSISTENT, "the AgreementRef must have no type or pmode")
    service_element = one(collaboration, _eb("Service"))
    service = text(service_element)
    service_type = attribute(service_element, "type", _INCONSISTENT)
    if not service:
        raise As4Error.of(INVALID_HEADER, "Service is empty")
    properties = one(user_message, _eb("MessageProperties"))
    original_sender = _property(properties, ORIGINAL_SENDER)
    final_recipient = _property(properties, FINAL_RECIPIENT)
    return UserMessageHeader(
        message_id=message_id,
        timestamp=timestamp,
        from_party=from_party,
        from_type=from_type,
        to_party=to_party,
        to_type=to_type,
        service=service,
        service_type=service_type,
        action=required_text(collaboration, _eb("Action")),
        conversation_id=required_text(collaboration, _eb("ConversationId")),
        original_sender=original_sender,
        final_recipient=final_recipient,
        payload_cid=_payload(one(user_message, _eb("PayloadInfo"))),
    )


def _party(side: Element) -> tuple[str, str | None]:
    party_ids = children(side, _eb("PartyId"))
    if len(party_ids) != 1:
        raise As4Error.of(_INCONSISTENT, "each side must have exactly one PartyId")
    value = text(party_ids[0])
    if not value:
        raise As4Error.of(INVALID_HEADER, "a PartyId is empty")
    required_text(side, _eb("Role"))
    return value, party_ids[0].get("type")


def _property(properties: Element, name: str) -> tuple[str, str]:
    found = [p for p in children(properties, _eb("Property")) if p.get("name") == name]
    if len(found) != 1:
        raise As4Error.of(_INCONSISTENT, f"the message must have exactly one {name} property")
    scheme = attribute(found[0], "type", _INCONSISTENT)
    value = text(found[0])
    if not value:
        raise As4Error.of(_INCONSISTENT, f"the {name} property is empty")
    return scheme, value


def _payload(payload_info: Element) -> str:
    parts = children(payload_info, _eb("PartInfo"))
    if len(parts) != 1:
        raise As4Error.of(_INCONSISTENT, "the message must carry exactly one payload")
    cid = cid_of(attribute(parts[0], "href", _INCONSISTENT))
    if not cid:
        raise As4Error.of(_INCONSISTENT, "the payload must be a MIME attachment (cid:)")
    part_properties = optional(parts[0], _eb("PartProperties"))
    compression = [
        text(p)
        for p in ([] if part_properties is None else children(part_properties, _eb("Property")))
        if p.get("name") == "CompressionType"
    ]
    if compression != [GZIP]:
        raise As4Error.of(_INCONSISTENT, f"the payload must be compressed ({GZIP})")
    return cid


# --- SignalMessage -------------------------------------------------------------------------


@attrs.frozen
class SignalHeader:
    message_id: str
    timestamp: datetime
    ref_to_message_id: str | None
    receipt: Element | None
    errors: tuple[Element, ...]


def append_signal_info(
    messaging: Element, *, message_id: str, timestamp: datetime, ref_to_message_id: str | None
) -> Element:
    """A SignalMessage with its MessageInfo; the caller adds the Receipt or the Error."""
    signal = sub(messaging, _eb("SignalMessage"))
    info = sub(signal, _eb("MessageInfo"))
    sub(info, _eb("Timestamp"), format_timestamp(timestamp))
    sub(info, _eb("MessageId"), message_id)
    if ref_to_message_id is not None:
        sub(info, _eb("RefToMessageId"), ref_to_message_id)
    return signal


def read_signal(messaging: Element) -> SignalHeader:
    if children(messaging, _eb("UserMessage")):
        raise As4Error.of(INVALID_HEADER, "the answer carries a UserMessage")
    signal = one(messaging, _eb("SignalMessage"))
    info = one(signal, _eb("MessageInfo"))
    ref = optional(info, _eb("RefToMessageId"))
    return SignalHeader(
        message_id=required_text(info, _eb("MessageId")),
        timestamp=parse_timestamp(required_text(info, _eb("Timestamp"))),
        ref_to_message_id=None if ref is None else (text(ref) or None),
        receipt=optional(signal, _eb("Receipt")),
        errors=tuple(children(signal, _eb("Error"))),
    )
