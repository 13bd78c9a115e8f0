"""What an SMP publishes for a participant: per document type, the processes and endpoints.

Values here are wire values (``peppol-transport-as4-v2_0``, ``busdox-docid-qns``), because
this is what SMP clients read; the JSON interface's ``net`` spelling is translated before a
registration is built.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import attrs

PARTICIPANT_SCHEME = "iso6523-actorid-upis"
# Registrations are keyed by (SMP, participant): uuid5 of both under this namespace.
REGISTRATION_NAMESPACE = uuid.UUID("3f0b8c52-8c0e-4a51-9a4e-2f0a7d0c9e41")


@attrs.frozen
class Endpoint:
    transport_profile: str
    url: str
    certificate: str  # base64 DER of the access point's certificate
    description: str = ""
    technical_contact_url: str = ""
    activation: datetime | None = None
    expiration: datetime | None = None


@attrs.frozen
class ProcessEntry:
    scheme: str
    value: str
    endpoints: tuple[Endpoint, ...]


@attrs.frozen
class ServiceEntry:
    document_scheme: str
    document_value: str
    processes: tuple[ProcessEntry, ...]

    @property
    def document_id(self) -> str:
        return f"{self.document_scheme}::{self.document_value}"


@attrs.frozen
class ContactCard:
    type: str = ""
    name: str = ""
    phone: str = ""
    email: str = ""


@attrs.frozen
class EntityCard:
    """One BusinessEntity of a directory business card."""

    name: str
    country_code: str
    geographical_information: str = ""
    identifiers: tuple[tuple[str, str], ...] = ()  # (scheme, value)
    websites: tuple[str, ...] = ()
    contacts: tuple[ContactCard, ...] = ()
    additional_information: str = ""
    registration_date: str = ""  # YYYY-MM-DD


@attrs.frozen
class SmpRegistration:
    id: uuid.UUID
    smp_id: uuid.UUID
    participant: str  # canonical (lower-case) "0088:5790000435975", scheme iso6523-actorid-upis
    services: tuple[ServiceEntry, ...]
    created_at: datetime
    last_modified_at: datetime
    business_card: EntityCard | None = None

    @staticmethod
    def id_for(smp_id: uuid.UUID, participant: str) -> uuid.UUID:
        return uuid.uuid5(REGISTRATION_NAMESPACE, f"{smp_id}|{participant.lower()}")

    def service(self, document_scheme: str, document_value: str) -> ServiceEntry | None:
        for s in self.services:
            if s.document_scheme == document_scheme and s.document_value == document_value:
                return s
        return None
