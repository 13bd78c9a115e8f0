"""Handlers of participants, the SMPs an organisation may use, and the look-up of a receiver
("can they receive this?")."""

from __future__ import annotations

import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application import participants, reachability, services_to_use
from fourcorner.application.collections import PARTICIPANTS, SMPS
from fourcorner.application.context import Context, Network
from fourcorner.application.participants import (
    CreateParticipant,
    SupportedDocumentTypes,
    UpdateParticipant,
)
from fourcorner.application.ports import ParticipantLookup
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http import responses
from fourcorner.entrypoints.http.handlers import Ids, page
from fourcorner.entrypoints.http.rendering import ListOf, ListReply
from fourcorner.entrypoints.http.routing import QueryParam, Reply, Req, Route, sorted_list


async def smps_to_use(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await services_to_use.smps_to_use(
        ctx, req.caller, req.path_uuid("orgId"), req.listing()
    )
    return Reply(200, page(conv, responses.SMP, result))


# --- participants ---------------------------------------------------------------------------


async def create_participant(
    req: Req,
    ctx: Context = Provide["context"],
    net: Network = Provide["network"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    p = await participants.create(ctx, net, req.caller, req.path_uuid("orgId"), req.body)
    return Reply(201, responses.PARTICIPANT.dump(conv, p))


async def list_participants(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await participants.list_participants(
        ctx, req.caller, req.path_uuid("orgId"), req.listing()
    )
    return Reply(200, page(conv, responses.PARTICIPANT, result))


async def get_participant(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    p = await participants.get(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("participantId")
    )
    return Reply(200, responses.PARTICIPANT.dump(conv, p))


async def update_participant(
    req: Req,
    ctx: Context = Provide["context"],
    net: Network = Provide["network"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    p = await participants.update(
        ctx, net, req.caller, req.path_uuid("orgId"), req.path_uuid("participantId"), req.body
    )
    return Reply(200, responses.PARTICIPANT.dump(conv, p))


async def delete_participants(
    req: Req, ctx: Context = Provide["context"], net: Network = Provide["network"]
) -> Reply:
    done = await participants.delete_many(
        ctx, net, req.caller, req.path_uuid("orgId"), list(req.body.ids)
    )
    return Reply(200, {"ids": done})


async def request_publication(
    req: Req, ctx: Context = Provide["context"], net: Network = Provide["network"]
) -> Reply:
    done = await participants.request_publication(
        ctx, net, req.caller, req.path_uuid("orgId"), list(req.body.ids)
    )
    return Reply(200, {"ids": done})


async def get_supported(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    entries = await participants.supported(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("participantId")
    )
    return Reply(200, [responses.SUPPORTED.dump(conv, e) for e in entries])


async def set_supported(
    req: Req,
    ctx: Context = Provide["context"],
    net: Network = Provide["network"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    entries = await participants.set_supported(
        ctx, net, req.caller, req.path_uuid("orgId"), req.path_uuid("participantId"), req.body
    )
    return Reply(200, [responses.SUPPORTED.dump(conv, e) for e in entries])


# --- can they receive this? -----------------------------------------------------------------


async def lookup_receiver(
    req: Req,
    ctx: Context = Provide["context"],
    lookup: ParticipantLookup = Provide["participant_lookup"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    q = req.raw.query
    found = await reachability.can_receive(
        ctx,
        lookup,
        req.caller,
        req.path_uuid("orgId"),
        q.get("participantId"),
        q.get("docTypeId") or None,
        q.get("environment"),
    )
    return Reply(200, responses.RECEIVER_LOOKUP.dump(conv, found))


# --- routes ---------------------------------------------------------------------------------

_LOOKUP = (
    QueryParam(
        "participantId",
        {"type": "string", "maxLength": 160},
        required=True,
        description="the participant, 0088:… (check digits are checked)",
    ),
    QueryParam(
        "docTypeId",
        {"type": "string", "maxLength": 600},
        description="a document type, scheme::value or a catalogue id; without it, only "
        "registration and the listed document types are looked up",
    ),
    QueryParam(
        "environment",
        {"type": "string", "enum": ["TEST", "PROD"]},
        description="default: PROD where the organisation's mode allows it, else TEST",
    ),
)
M, A = Role.ORGMEMBER, Role.ORGADMIN

ROUTES = (
    Route(
        "GET",
        "/orgs/{orgId}/smps/alltouse",
        smps_to_use,
        "SMPs the organisation may use (by mode: DEMO test only; SHARED test and "
        "production; WHITELABEL also its own).",
        M,
        "participants",
        response=ListReply(responses.SMP),
        query=sorted_list(SMPS),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/lookup",
        lookup_receiver,
        "Can they receive this? What a send to the participant would meet: found through "
        "the network's SML (or the fixed SMP), its SMP's signed answer, the endpoints "
        "and whether one is usable now (the same checks as a send).",
        M,
        "participants",
        response=responses.RECEIVER_LOOKUP,
        query=_LOOKUP,
        errors=("AT-1001", "AT-1006", "AT-1502"),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/participants",
        list_participants,
        "List the organisation's participants.",
        A,
        "participants",
        response=ListReply(responses.PARTICIPANT),
        query=sorted_list(PARTICIPANTS),
    ),
    Route(
        "POST",
        "/orgs/{orgId}/participants",
        create_participant,
        "Create a participant, registered in the chosen SMP.",
        A,
        "participants",
        body=CreateParticipant,
        response=responses.PARTICIPANT,
        status=201,
        errors=("AT-1001", "AT-1006", "AT-1090", "AT-1104", "AT-1105"),
    ),
    Route(
        "POST",
        "/orgs/{orgId}/participants/batch-delete",
        delete_participants,
        "Delete participants (their SMP registrations, and their business cards in their "
        "environment's directory).",
        A,
        "participants",
        body=Ids,
        response=responses.IDS,
    ),
    Route(
        "POST",
        "/orgs/{orgId}/participants/request-pd-publish",
        request_publication,
        "Publish participants' business cards, each in its environment's directory.",
        A,
        "participants",
        body=Ids,
        response=responses.IDS,
    ),
    Route(
        "GET",
        "/orgs/{orgId}/participants/{participantId}",
        get_participant,
        "Get a participant.",
        A,
        "participants",
        response=responses.PARTICIPANT,
    ),
    Route(
        "PUT",
        "/orgs/{orgId}/participants/{participantId}",
        update_participant,
        "Update a participant (name, business card, access point).",
        A,
        "participants",
        body=UpdateParticipant,
        response=responses.PARTICIPANT,
    ),
    Route(
        "GET",
        "/orgs/{orgId}/participants/{participantId}/supported_document_types",
        get_supported,
        "Document types the participant receives.",
        A,
        "participants",
        response=ListOf(responses.SUPPORTED),
    ),
    Route(
        "PUT",
        "/orgs/{orgId}/participants/{participantId}/supported_document_types",
        set_supported,
        "Set the document types the participant receives.",
        A,
        "participants",
        body=SupportedDocumentTypes,
        response=ListOf(responses.SUPPORTED),
    ),
)
