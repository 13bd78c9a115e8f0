""" "Can they receive this?": what a send to a participant would meet on the network, asked
through the same lookup port (discovery, the SMP's signed answer, the trust checks) that the
sending worker uses."""

from __future__ import annotations

import uuid

from fourcorner.application.access import Principal, authorise
from fourcorner.application.context import Context
from fourcorner.application.ports import LookupFailed, ParticipantLookup, ReceiverLookup
from fourcorner.domain.envelope import Identifier
from fourcorner.domain.errors import InvalidIdentifier, InvalidInput, LookupUnavailable
from fourcorner.domain.identifier import PARTICIPANT_SCHEME
from fourcorner.domain.network_services import Environment, usable_environments
from fourcorner.domain.roles import Role

MAX_DOCUMENT_TYPE = 600  # scheme, "::" and a value of at most 500 characters


def document_identifier(ctx: Context, text: str) -> Identifier:
    """``scheme::value``, or the id of a document type of the catalogue."""
    scheme, separator, value = text.partition("::")
    if separator:
        if not scheme or not value or len(text) > MAX_DOCUMENT_TYPE or scheme != scheme.strip():
            raise InvalidInput.one(
                "docTypeId", "a document type is scheme::value, e.g. busdox-docid-qns::urn:…"
            )
        return Identifier(scheme, value)
    known = ctx.catalogue.document_type(text)
    if known is None:
        raise InvalidInput.one(
            "docTypeId", "neither scheme::value nor the id of a document type of the catalogue"
        )
    return Identifier(known.scheme, known.value)


async def can_receive(
    ctx: Context,
    lookup: ParticipantLookup,
    principal: Principal,
    org_id: uuid.UUID,
    participant: str | None,
    document: str | None = None,
    environment: str | None = None,
) -> ReceiverLookup:
    """What a send of ``document`` (or of anything) to ``participant`` would meet in
    ``environment`` (by default the organisation's production environment when its mode
    allows one, else the test environment)."""
    async with ctx.reads() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGMEMBER)
    if not participant:
        raise InvalidInput.one("participantId", "the participant to look up is required")
    try:
        validated = ctx.catalogue.validate_participant_identifier(
            participant, for_registration=False, field="participantId"
        )
    except InvalidIdentifier as e:
        e.in_query = True  # the query parameter participantId
        raise
    if environment is None:
        allowed = usable_environments(access.org.organisation_mode)
        env = Environment.PROD if Environment.PROD in allowed else Environment.TEST
    else:
        try:
            env = Environment(environment)
        except ValueError:
            raise InvalidInput.one("environment", "TEST or PROD") from None
    doc = document_identifier(ctx, document) if document else None
    receiver = Identifier(PARTICIPANT_SCHEME, validated.identifier.canonical)
    try:
        return await lookup.receiver(receiver, doc, env)
    except LookupFailed as e:
        raise LookupUnavailable(reason=e.reason) from None
