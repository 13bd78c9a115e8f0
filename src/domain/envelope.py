"""What the Standard Business Document Header of a document says (the network's envelope)."""

from __future__ import annotations

import enum
import re
from datetime import datetime

import attrs


class MlsType(enum.Enum):
    FAILURE_ONLY = "FAILURE_ONLY"
    ALWAYS_SEND = "ALWAYS_SEND"


@attrs.frozen
class Identifier:
    """An identifier with its scheme: ``iso6523-actorid-upis`` + ``0088:5790000435975``."""

    scheme: str
    value: str

    def __str__(self) -> str:
        return f"{self.scheme}::{self.value}"


@attrs.frozen
class Sbdh:
    """What a document's Standard Business Document Header says: who sends it to whom, which
    document and process it is, and where message level statuses about it go."""

    sender: Identifier
    receiver: Identifier
    instance_identifier: str
    standard: str
    type_version: str
    type: str
    created_at: datetime
    document_type: Identifier  # DOCUMENTID scope
    process: Identifier  # PROCESSID scope
    country_c1: str
    mls_to: Identifier | None = None
    mls_type: MlsType | None = None
    # not of the header: the buyer's country in the business document (UBL
    # AccountingCustomerParty's postal address), "" when it gives none
    receiver_country: str = ""


@attrs.frozen
class Addressing:
    """Who sends a document to whom, and which document and process it is: what an AS4
    message's headers say of the SBD it carries, as its header says it."""

    sender: Identifier
    receiver: Identifier
    document_type: Identifier
    process: Identifier

    @classmethod
    def of(cls, envelope: Sbdh) -> Addressing:
        return cls(envelope.sender, envelope.receiver, envelope.document_type, envelope.process)


@attrs.frozen
class MessageLevelStatus:
    """A message level status (MLS) about one received document."""

    response_code: str  # AP, AB or RE
    original_instance_id: str  # the SBDH InstanceIdentifier of the document it is about
    id: str
    issued_at: datetime
    sender_spid: str  # C3
    receiver_spid: str  # C2
    description: str = ""
    reasons: tuple[tuple[str, str, str], ...] = ()  # (line id, status reason code, description)


MLS_STANDARD = "urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2"
MLS_CUSTOMIZATION_ID = "urn:peppol:edec:mls:1.0"
MLS_PROFILE_ID = "urn:peppol:edec:mls"
MLS_DOCUMENT_TYPE = Identifier(
    "busdox-docid-qns", f"{MLS_STANDARD}::ApplicationResponse##{MLS_CUSTOMIZATION_ID}::2.1"
)
MLS_PROCESS = Identifier("cenbii-procid-ubl", MLS_PROFILE_ID)
PARTICIPANT_SCHEME = "iso6523-actorid-upis"
SPID_SCHEME = "0242"
# a service provider id: the 6-digit main id, then optionally a use case id and a suffix
SPID = re.compile(r"[0-9]{6}(-[0-9A-Z_]{3,12}(\.[0-9A-Z\-._~]{3,24})?)?", re.IGNORECASE)


def spid_participant(spid: str) -> Identifier:
    """A service provider's own participant, ``0242:<SPID>``, where it receives MLS."""
    return Identifier(PARTICIPANT_SCHEME, f"{SPID_SCHEME}:{spid}")


def seat_spid(seat_id: str) -> str:
    """The SPID digits of an access point's seat id (``POP987654`` → ``987654``)."""
    return seat_id[3:] if len(seat_id) == 9 and seat_id[:1].upper() == "P" else seat_id


def mls_envelope(
    status: MessageLevelStatus,
    *,
    receiver: Identifier,
    instance_id: str,
    created_at: datetime,
    country_c1: str,
) -> Sbdh:
    """The SBDH of an MLS: from ``0242:<sender SPID>`` to ``receiver`` (the original
    document's MLS_TO, or ``0242:<C2 SPID>``), with no MLS_TO or MLS_TYPE of its own."""
    return Sbdh(
        sender=spid_participant(status.sender_spid),
        receiver=receiver,
        instance_identifier=instance_id,
        standard=MLS_STANDARD,
        type_version="2.1",
        type="ApplicationResponse",
        created_at=created_at,
        document_type=MLS_DOCUMENT_TYPE,
        process=MLS_PROCESS,
        country_c1=country_c1,
    )
