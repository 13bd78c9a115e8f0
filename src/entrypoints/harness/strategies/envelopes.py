"""Standard Business Documents around generated invoices and credit notes, and Message Level
Statuses (MLS) alone or as SBDs."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from hypothesis import strategies as st

from fourcorner.adapters.sbdh.mls import write_mls
from fourcorner.adapters.sbdh.writer import write_sbd
from fourcorner.domain.envelope import (
    MLS_DOCUMENT_TYPE,
    MLS_PROCESS,
    Identifier,
    MessageLevelStatus,
    MlsType,
    Sbdh,
    spid_participant,
)
from fourcorner.entrypoints.harness.strategies.documents import (
    BILLING_PROCESS,
    BillingDocument,
    billing_documents,
)
from fourcorner.entrypoints.harness.strategies.identifiers import (
    DIGITS,
    PARTICIPANT_SCHEME,
    PROCESS_SCHEME,
    participant_identifiers,
)


@st.composite
def sbds(
    draw: st.DrawFn,
    *,
    senders: st.SearchStrategy[str] | None = None,
    receivers: st.SearchStrategy[str] | None = None,
    documents: st.SearchStrategy[BillingDocument] | None = None,
    mls_to: str | None = None,
) -> bytes:
    """A Standard Business Document around a valid invoice or credit note; its header names
    the document's type, the billing process and a fresh instance identifier."""
    doc = draw(documents or billing_documents())
    created = draw(st.datetimes(datetime(2024, 1, 1), datetime(2030, 1, 1), timezones=st.just(UTC)))
    standard, _, rest = doc.document_type.value.partition("::")
    envelope = Sbdh(
        sender=Identifier(
            PARTICIPANT_SCHEME, draw(senders or participant_identifiers(("0088", "0007")))
        ),
        receiver=Identifier(
            PARTICIPANT_SCHEME, draw(receivers or participant_identifiers(("0088", "0007")))
        ),
        instance_identifier=str(uuid.UUID(int=draw(st.integers(0, 2**128 - 1)), version=4)),
        standard=standard,
        type_version="2.1",
        type=rest.partition("##")[0],
        created_at=created.replace(microsecond=0),
        document_type=doc.document_type,
        process=Identifier(PROCESS_SCHEME, BILLING_PROCESS),
        country_c1=doc.seller[1],
        mls_to=None if mls_to is None else Identifier(PARTICIPANT_SCHEME, mls_to),
        mls_type=None if mls_to is None else MlsType.ALWAYS_SEND,
    )
    return write_sbd(envelope, doc.xml().split(b"?>", 1)[1].strip())


_SPID = st.text(DIGITS, min_size=6, max_size=6)


@st.composite
def message_level_statuses(
    draw: st.DrawFn, *, about: str | None = None, response_code: str | None = None
) -> MessageLevelStatus:
    """An MLS about the document whose SBDH instance identifier is ``about``."""
    code = response_code or draw(st.sampled_from(["AP", "AB", "RE"]))
    reasons: tuple[tuple[str, str, str], ...] = ()
    description = ""
    if code == "RE":
        reasons = (("NA", draw(st.sampled_from(["SV", "BV", "FD"])), "refused"),)
        description = "Rejected"
    elif draw(st.booleans()):
        reasons = (("NA", "BW", "a warning"),)
    return MessageLevelStatus(
        response_code=code,
        original_instance_id=about or str(draw(st.uuids())),
        id=str(draw(st.uuids())),
        issued_at=draw(
            st.datetimes(datetime(2024, 1, 1), datetime(2030, 1, 1), timezones=st.just(UTC))
        ).replace(microsecond=0),
        sender_spid=draw(_SPID),
        receiver_spid=draw(_SPID),
        description=description,
        reasons=reasons,
    )


@st.composite
def mls_documents(draw: st.DrawFn, *, about: str | None = None) -> bytes:
    """An MLS as an SBD, from the receiver's service provider to the sender's ``0242:``."""
    status = draw(message_level_statuses(about=about))
    envelope = Sbdh(
        sender=spid_participant(status.sender_spid),
        receiver=spid_participant(status.receiver_spid),
        instance_identifier=str(draw(st.uuids())),
        standard=MLS_DOCUMENT_TYPE.value.partition("::")[0],
        type_version="2.1",
        type="ApplicationResponse",
        created_at=status.issued_at,
        document_type=MLS_DOCUMENT_TYPE,
        process=MLS_PROCESS,
        country_c1="BE",
    )
    return write_sbd(envelope, write_mls(status).split(b"?>", 1)[-1].strip())
