"""What the Standard Business Document Header of a document says (the network's envelope)."""

from __future__ import annotations

import enum
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
class Envelope:
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
