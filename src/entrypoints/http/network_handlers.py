"""Handlers of participants, access points, certificates and the SMPs/APs to use."""

from __future__ import annotations

import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application import (
    access_points,
    certificates,
    participants,
    reachability,
    services_to_use,
)
from fourcorner.application.context import Context
from fourcorner.application.ports import ParticipantLookup
from fourcorner.entrypoints.http import views
from fourcorner.entrypoints.http.handlers import page
from fourcorner.entrypoints.http.routing import Reply, Req


def _items(conv: cattrs.Converter, view: views.View, items: list[object]) -> dict[str, object]:
    return {"items": [view.dump(conv, i) for i in items], "nextCursor": None}


async def smps_to_use(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    smps = await services_to_use.smps_to_use(ctx, req.caller, req.path_uuid("orgId"))
    return Reply(200, _items(conv, views.SMP, list(smps)))


async def aps_to_use(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    aps = await services_to_use.aps_to_use(ctx, req.caller, req.path_uuid("orgId"))
    return Reply(200, _items(conv, views.ACCESS_POINT, list(aps)))


# --- certificates ---------------------------------------------------------------------------


async def create_certificate(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    cert = await certificates.create_certificate(ctx, req.caller, req.path_uuid("orgId"), req.body)
    return Reply(201, views.CERTIFICATE.dump(conv, cert))


async def list_certificates(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await certificates.list_certificates(
        ctx, req.caller, req.path_uuid("orgId"), req.listing()
    )
    return Reply(200, page(conv, views.CERTIFICATE, result))


async def get_certificate(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    cert = await certificates.get_certificate(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("certId")
    )
    return Reply(200, views.CERTIFICATE.dump(conv, cert))


async def update_certificate(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    cert = await certificates.update_certificate(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("certId"), req.body
    )
    return Reply(200, views.CERTIFICATE.dump(conv, cert))


async def delete_certificates(req: Req, ctx: Context = Provide["context"]) -> Reply:
    done = await certificates.delete_certificates(
        ctx, req.caller, req.path_uuid("orgId"), list(req.body.ids)
    )
    return Reply(200, {"ids": done})


# --- access points --------------------------------------------------------------------------


async def create_ap(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    ap = await access_points.create_ap(ctx, req.caller, req.path_uuid("orgId"), req.body)
    return Reply(201, views.ACCESS_POINT.dump(conv, ap))


async def list_aps(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await access_points.list_aps(ctx, req.caller, req.path_uuid("orgId"), req.listing())
    return Reply(200, page(conv, views.ACCESS_POINT, result))


async def get_ap(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    ap = await access_points.get_ap(ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("apId"))
    return Reply(200, views.ACCESS_POINT.dump(conv, ap))


async def update_ap(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    ap = await access_points.update_ap(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("apId"), req.body
    )
    return Reply(200, views.ACCESS_POINT.dump(conv, ap))


async def delete_aps(req: Req, ctx: Context = Provide["context"]) -> Reply:
    done = await access_points.delete_aps(
        ctx, req.caller, req.path_uuid("orgId"), list(req.body.ids)
    )
    return Reply(200, {"ids": done})


# --- participants ---------------------------------------------------------------------------


async def create_participant(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    p = await participants.create(ctx, req.caller, req.path_uuid("orgId"), req.body)
    return Reply(201, views.PARTICIPANT.dump(conv, p))


async def list_participants(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await participants.list_participants(
        ctx, req.caller, req.path_uuid("orgId"), req.listing()
    )
    return Reply(200, page(conv, views.PARTICIPANT, result))


async def get_participant(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    p = await participants.get(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("participantId")
    )
    return Reply(200, views.PARTICIPANT.dump(conv, p))


async def update_participant(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    p = await participants.update(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("participantId"), req.body
    )
    return Reply(200, views.PARTICIPANT.dump(conv, p))


async def delete_participants(req: Req, ctx: Context = Provide["context"]) -> Reply:
    done = await participants.delete_many(
        ctx, req.caller, req.path_uuid("orgId"), list(req.body.ids)
    )
    return Reply(200, {"ids": done})


async def request_publication(req: Req, ctx: Context = Provide["context"]) -> Reply:
    done = await participants.request_publication(
        ctx, req.caller, req.path_uuid("orgId"), list(req.body.ids)
    )
    return Reply(200, {"ids": done})


async def get_supported(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    entries = await participants.supported(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("participantId")
    )
    return Reply(200, [views.SUPPORTED.dump(conv, e) for e in entries])


async def set_supported(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    entries = await participants.set_supported(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("participantId"), req.body
    )
    return Reply(200, [views.SUPPORTED.dump(conv, e) for e in entries])


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
    return Reply(200, views.RECEIVER_LOOKUP.dump(conv, found))
