"""Handlers of an organisation's certificates and access points, and the access points it
may use."""

from __future__ import annotations

import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application import access_points, certificates, services_to_use
from fourcorner.application.access_points import CreateAccessPoint, UpdateAccessPoint
from fourcorner.application.certificates import CreateCertificate, UpdateCertificate
from fourcorner.application.collections import ACCESS_POINTS, CERTIFICATES
from fourcorner.application.context import Context, Network
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http import responses
from fourcorner.entrypoints.http.handlers import Ids, page
from fourcorner.entrypoints.http.rendering import ListReply
from fourcorner.entrypoints.http.routing import Reply, Req, Route, sorted_list


async def aps_to_use(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await services_to_use.aps_to_use(
        ctx, req.caller, req.path_uuid("orgId"), req.listing()
    )
    return Reply(200, page(conv, responses.ACCESS_POINT, result))


# --- certificates ---------------------------------------------------------------------------


async def create_certificate(
    req: Req,
    ctx: Context = Provide["context"],
    net: Network = Provide["network"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    cert = await certificates.create_certificate(
        ctx, net, req.caller, req.path_uuid("orgId"), req.body
    )
    return Reply(201, responses.CERTIFICATE.dump(conv, cert))


async def list_certificates(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await certificates.list_certificates(
        ctx, req.caller, req.path_uuid("orgId"), req.listing()
    )
    return Reply(200, page(conv, responses.CERTIFICATE, result))


async def get_certificate(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    cert = await certificates.get_certificate(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("certId")
    )
    return Reply(200, responses.CERTIFICATE.dump(conv, cert))


async def update_certificate(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    cert = await certificates.update_certificate(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("certId"), req.body
    )
    return Reply(200, responses.CERTIFICATE.dump(conv, cert))


async def delete_certificates(req: Req, ctx: Context = Provide["context"]) -> Reply:
    done = await certificates.delete_certificates(
        ctx, req.caller, req.path_uuid("orgId"), list(req.body.ids)
    )
    return Reply(200, {"ids": done})


# --- access points --------------------------------------------------------------------------


async def create_ap(
    req: Req,
    ctx: Context = Provide["context"],
    net: Network = Provide["network"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    ap = await access_points.create_ap(ctx, net, req.caller, req.path_uuid("orgId"), req.body)
    return Reply(201, responses.ACCESS_POINT.dump(conv, ap))


async def list_aps(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await access_points.list_aps(ctx, req.caller, req.path_uuid("orgId"), req.listing())
    return Reply(200, page(conv, responses.ACCESS_POINT, result))


async def get_ap(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    ap = await access_points.get_ap(ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("apId"))
    return Reply(200, responses.ACCESS_POINT.dump(conv, ap))


async def update_ap(
    req: Req,
    ctx: Context = Provide["context"],
    net: Network = Provide["network"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    ap = await access_points.update_ap(
        ctx, net, req.caller, req.path_uuid("orgId"), req.path_uuid("apId"), req.body
    )
    return Reply(200, responses.ACCESS_POINT.dump(conv, ap))


async def delete_aps(req: Req, ctx: Context = Provide["context"]) -> Reply:
    done = await access_points.delete_aps(
        ctx, req.caller, req.path_uuid("orgId"), list(req.body.ids)
    )
    return Reply(200, {"ids": done})


# --- routes ---------------------------------------------------------------------------------

M, A = Role.ORGMEMBER, Role.ORGADMIN

ROUTES = (
    Route(
        "GET",
        "/orgs/{orgId}/aps/alltouse",
        aps_to_use,
        "Access points the organisation may use.",
        M,
        "access points",
        response=ListReply(responses.ACCESS_POINT),
        query=sorted_list(ACCESS_POINTS),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/certificates",
        list_certificates,
        "List certificates.",
        A,
        "certificates",
        response=ListReply(responses.CERTIFICATE),
        query=sorted_list(CERTIFICATES),
    ),
    Route(
        "POST",
        "/orgs/{orgId}/certificates",
        create_certificate,
        "Upload a certificate with its chain and private key (whitelabel only).",
        A,
        "certificates",
        body=CreateCertificate,
        response=responses.CERTIFICATE,
        status=201,
        errors=("AT-1001", "AT-1021", "AT-1097"),
    ),
    Route(
        "POST",
        "/orgs/{orgId}/certificates/batch_delete",
        delete_certificates,
        "Delete certificates.",
        A,
        "certificates",
        body=Ids,
        response=responses.IDS,
        errors=("AT-1021", "AT-1095"),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/certificates/{certId}",
        get_certificate,
        "Get a certificate.",
        A,
        "certificates",
        response=responses.CERTIFICATE,
    ),
    Route(
        "PUT",
        "/orgs/{orgId}/certificates/{certId}",
        update_certificate,
        "Rename or describe a certificate.",
        A,
        "certificates",
        body=UpdateCertificate,
        response=responses.CERTIFICATE,
        errors=("AT-1021",),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/aps",
        list_aps,
        "List own access points.",
        A,
        "access points",
        response=ListReply(responses.ACCESS_POINT),
        query=sorted_list(ACCESS_POINTS),
    ),
    Route(
        "POST",
        "/orgs/{orgId}/aps",
        create_ap,
        "Create an access point (whitelabel only).",
        A,
        "access points",
        body=CreateAccessPoint,
        response=responses.ACCESS_POINT,
        status=201,
        errors=("AT-1001", "AT-1021"),
    ),
    Route(
        "POST",
        "/orgs/{orgId}/aps/batch-delete",
        delete_aps,
        "Delete access points.",
        A,
        "access points",
        body=Ids,
        response=responses.IDS,
        errors=("AT-1021", "AT-1095"),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/aps/{apId}",
        get_ap,
        "Get an access point.",
        A,
        "access points",
        response=responses.ACCESS_POINT,
    ),
    Route(
        "PUT",
        "/orgs/{orgId}/aps/{apId}",
        update_ap,
        "Update an access point.",
        A,
        "access points",
        body=UpdateAccessPoint,
        response=responses.ACCESS_POINT,
        errors=("AT-1021",),
    ),
)
