"""Handlers of health, organisations and users (spec section 4), and what the other handler
modules share: id lists, the page of a list.

Handlers name what they need from the container as ``Provide`` defaults (bound once when the
app is built, ``routing.bind``) and pass the ports to the use cases, so ``application`` never
sees the container. Each handler module ends with its part of the route table (``ROUTES``),
which ``routes`` assembles.
"""

from __future__ import annotations

import uuid
from typing import Any

import attrs
import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application import organisations, users
from fourcorner.application.collections import ORGANISATIONS
from fourcorner.application.context import Context, Network
from fourcorner.application.organisations import CreateOrganisation, UpdateOrganisation
from fourcorner.application.storage import Page, Storage
from fourcorner.application.users import UpdateUser
from fourcorner.domain.certificates import CertificateEnvironment
from fourcorner.domain.errors import ServiceUnavailable
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http import docs, metrics, responses
from fourcorner.entrypoints.http.rendering import Answer, ListReply, Text
from fourcorner.entrypoints.http.responses import Membership, OrganisationCertificate
from fourcorner.entrypoints.http.routing import Reply, Req, Route, sorted_list
from fourcorner.entrypoints.worker_loops import WorkerLoops


@attrs.frozen
class Ids:
    """``{"ids": [...]}`` of resources (UUIDs); a bad one is reported at ``$.ids[i]``."""

    ids: tuple[uuid.UUID, ...]


@attrs.frozen
class UserIds:
    """``{"ids": [...]}`` of users (their ids are the tokens' subjects, any string)."""

    ids: tuple[str, ...]


@attrs.frozen
class OrgRef:
    org_id: uuid.UUID


def page(conv: cattrs.Converter, answer: Answer, result: Page[Any]) -> dict[str, Any]:
    return {
        "items": [answer.dump(conv, item) for item in result.items],
        "nextCursor": result.next_cursor,
    }


def org_view(conv: cattrs.Converter, view: organisations.OrganisationView) -> dict[str, Any]:
    certificates = [
        OrganisationCertificate(
            c.name, "TEST" if c.environment is CertificateEnvironment.TEST else "PRODUCTION", c.id
        )
        for c in view.certificates
    ]
    return responses.ORGANISATION.dump(conv, view.org, certificates=certificates)


# --- health --------------------------------------------------------------------------------


async def healthz(req: Req) -> Reply:
    return Reply(200, {"status": "ok"})


async def readyz(
    req: Req, storage: Storage = Provide["storage"], loops: WorkerLoops = Provide["worker_loops"]
) -> Reply:
    """Ready: the database answers (within ``PING_WAIT`` on PostgreSQL), the process's worker
    loops wait for nothing before they start, and none of them has ended (``worker_loops``)."""
    await storage.ping()
    if loops.waiting is not None:
        raise ServiceUnavailable(reason=loops.waiting)
    if loops.ended():
        raise ServiceUnavailable(reason="a worker loop of this process has ended (see its log)")
    return Reply(200, {"status": "ready"})


# --- organisations -------------------------------------------------------------------------


async def create_org(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    org = await organisations.create(ctx, req.caller, req.body)
    return Reply(201, org_view(conv, organisations.OrganisationView(org, [])))


async def list_orgs(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await organisations.list_all(ctx, req.caller, req.listing())
    items = [org_view(conv, v) for v in result.items]
    return Reply(200, {"items": items, "nextCursor": result.next_cursor})


async def get_org(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    org = await organisations.get(ctx, req.caller, req.path_uuid("orgId"))
    return Reply(200, org_view(conv, org))


async def update_org(
    req: Req,
    ctx: Context = Provide["context"],
    net: Network = Provide["network"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    org = await organisations.update(ctx, net, req.caller, req.path_uuid("orgId"), req.body)
    return Reply(200, org_view(conv, org))


# --- users ---------------------------------------------------------------------------------


def me_view(conv: cattrs.Converter, me: users.Me) -> dict[str, Any]:
    memberships = [
        Membership(
            m.org.id,
            m.member.role,
            m.org.legal_name,
            m.org.legal_identifier,
            m.member.member_since,
            m.member.id,
        )
        for m in me.memberships
    ]
    return responses.ME.dump(conv, me.user, memberships=memberships)


async def get_me(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    return Reply(200, me_view(conv, await users.me(ctx, req.caller)))


async def update_user(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    await users.update(ctx, req.caller, req.path("uid"), req.body)
    return Reply(200, me_view(conv, await users.me(ctx, req.caller)))


async def delete_users(req: Req, ctx: Context = Provide["context"]) -> Reply:
    done = await users.delete_many(ctx, req.caller, list(req.body.ids))
    return Reply(200, {"ids": done})


async def join_org(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    member = await users.join(ctx, req.caller, req.path("uid"), req.body.org_id)
    return Reply(201, responses.MEMBER.dump(conv, member))


async def leave_org(req: Req, ctx: Context = Provide["context"]) -> Reply:
    member = await users.leave(ctx, req.caller, req.path("uid"), req.body.org_id)
    return Reply(200, {"ids": [str(member.id)]})


# --- routes ---------------------------------------------------------------------------------

U, A, S = Role.USER, Role.ORGADMIN, Role.SUPERADMIN

ROUTES = (
    Route(
        "GET", "/healthz", healthz, "The process is up.", None, "health", response=responses.STATUS
    ),
    Route(
        "GET",
        "/docs",
        docs.page,
        "This API's documentation (Swagger UI over /openapi.json).",
        None,
        "health",
        response=Text(),
        content_type="text/html",
    ),
    Route(
        "GET",
        "/docs/static/{name}",
        docs.asset,
        "The documentation page's scripts and styles.",
        None,
        "health",
        response=Text(),
        content_type="application/octet-stream",
    ),
    Route(
        "GET",
        "/metrics",
        metrics.scrape,
        "Prometheus metrics: requests, latency, transactions, deliveries, queue depths.",
        None,
        "health",
        response=Text(),
        content_type="text/plain",
    ),
    Route(
        "GET",
        "/readyz",
        readyz,
        "The database is reachable, and the process's worker loops run.",
        None,
        "health",
        response=responses.STATUS,
        errors=("AT-1500",),
    ),
    Route(
        "POST",
        "/orgs",
        create_org,
        "Create an organisation; the caller becomes orgadmin.",
        U,
        "organisations",
        body=CreateOrganisation,
        response=responses.ORGANISATION,
        status=201,
        # AT-1040: the caller's user was deleted while this request ran
        errors=("AT-1001", "AT-1006", "AT-1040", "AT-1091"),
        user_only=True,  # an API key never creates an organisation
    ),
    Route(
        "GET",
        "/orgs",
        list_orgs,
        "List every organisation (superadmin).",
        S,
        "organisations",
        response=ListReply(responses.ORGANISATION),
        query=sorted_list(ORGANISATIONS),
        errors=("AT-1004", "AT-1005"),
    ),
    Route(
        "GET",
        "/orgs/{orgId}",
        get_org,
        "Get an organisation.",
        A,
        "organisations",
        response=responses.ORGANISATION,
        memo=True,
    ),
    Route(
        "PUT",
        "/orgs/{orgId}",
        update_org,
        "Update an organisation; modeChangeRequest requests a mode change, a superadmin "
        "sets organisationMode.",
        A,
        "organisations",
        body=UpdateOrganisation,
        response=responses.ORGANISATION,
        errors=("AT-1001", "AT-1006", "AT-1019", "AT-1091", "AT-1094", "AT-1120", "AT-1121"),
    ),
    Route(
        "GET",
        "/users/me",
        get_me,
        "The caller, with memberships.",
        U,
        "users",
        response=responses.ME,
        memo=True,
    ),
    Route(
        "PUT",
        "/users/{uid}",
        update_user,
        "Update one's own details.",
        U,
        "users",
        body=UpdateUser,
        response=responses.ME,
        reads="/users/me",  # uid is the caller's own
        errors=("AT-1022",),
    ),
    Route(
        "POST",
        "/users/batch-delete",
        delete_users,
        "Delete users (superadmin).",
        S,
        "users",
        body=UserIds,
        response=responses.IDS,
    ),
    Route(
        "POST",
        "/users/{uid}/join_org",
        join_org,
        "Ask to join an organisation.",
        U,
        "users",
        body=OrgRef,
        response=responses.MEMBER,
        status=201,
        errors=("AT-1092",),
    ),
    Route(
        "POST",
        "/users/{uid}/leave_org",
        leave_org,
        "Leave an organisation at once.",
        U,
        "users",
        body=OrgRef,
        response=responses.IDS,
        errors=("AT-1093",),
    ),
)

# what ``fourcorner worker`` serves on FOURCORNER_WORKER_PORT (``container.worker_app``)
WORKER_ROUTES = tuple(r for r in ROUTES if r.path in ("/healthz", "/readyz", "/metrics"))
