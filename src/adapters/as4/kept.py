"""A built UserMessage as the sender keeps it between the attempts of one send
(``ApTransport.prepare``): the HTTP body exactly as posted, its content type, the signed
references the receipt must echo, the receiving access point's certificate the receipt must be
signed with, and the two parties.

A retry posts these very bytes. Building again would not do: the Timestamp in ``eb:Messaging``
changes its digest, and a receiver that has the first attempt answers the MessageId with the
receipt it stored, which acknowledges the first attempt's digests only (NETWORK.md §4: "a
retry reuses the same MessageId and digests"). The AES key and IV are random, so the only way
to post the same bytes is to keep them.

Form: one line of JSON, a newline, then the body. The blob store is the service's own, but the
line is still read with a bound and checked field by field; anything unreadable is "not kept"
and the message is built anew.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import attrs

from fourcorner.adapters.as4.model import OutboundMessage, SignedReference

VERSION = 1
_MAX_HEADER = 64 * 1024


@attrs.frozen
class KeptMessage:
    message: OutboundMessage
    receiver_certificate: bytes = attrs.field(repr=False)  # DER, as the SMP published it
    sender_party: str
    receiver_party: str


def dump(kept: KeptMessage) -> bytes:
    m = kept.message
    header = {
        "v": VERSION,
        "contentType": m.content_type,
        "messageId": m.message_id,
        "references": [
            [r.uri, list(r.transforms), r.digest_method, r.digest_value] for r in m.references
        ],
        "receiverCertificate": base64.b64encode(kept.receiver_certificate).decode("ascii"),
        "senderParty": kept.sender_party,
        "receiverParty": kept.receiver_party,
    }
    line = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    return line + b"\n" + m.body


def load(data: bytes) -> KeptMessage | None:
    """The message ``dump`` wrote, or None when ``data`` is not one."""
    end = data.find(b"\n", 0, _MAX_HEADER)
    if end < 0:
        return None
    try:
        header = json.loads(data[:end])
        if not isinstance(header, dict) or header.get("v") != VERSION:
            return None
        references = tuple(_reference(r) for r in _list(header["references"]))
        message = OutboundMessage(
            content_type=_text(header["contentType"]),
            body=data[end + 1 :],
            message_id=_text(header["messageId"]),
            references=references,
        )
        return KeptMessage(
            message=message,
            receiver_certificate=base64.b64decode(
                _text(header["receiverCertificate"]), validate=True
            ),
            sender_party=_text(header["senderParty"]),
            receiver_party=_text(header["receiverParty"]),
        )
    except (ValueError, KeyError, TypeError, binascii.Error):
        return None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not text")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("not a list")
    return value


def _reference(value: Any) -> SignedReference:
    uri, transforms, method, digest = _list(value)
    return SignedReference(
        _text(uri), tuple(_text(t) for t in _list(transforms)), _text(method), _text(digest)
    )
