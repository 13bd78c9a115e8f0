"""Handlers of the organisation, user, member and API key endpoints (spec sections 4 and 5).

The only module that pulls from the container (``Provide``): handlers pass the ports to the
use cases, so ``application`` never sees the container.
"""

from __future__ import annotations

import uuid
from typing import Any

import attrs
import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application import api_keys, members, organisations, users
from fourcorner.application.context import Context
from fourcorner.application.storage import Page, Storage
from fourcorner.domain.certificates import CertificateEnvironment
from fourcorner.domain.member import MemberStatus
from fourcorner.entrypoints.http import views
from fourcorner.entrypoints.http.routing import Reply, Req
from fourcorner.entrypoints.http.views import View


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


def page(conv: cattrs.Converter, view: View, result: Page[Any]) -> dict[str, Any]:
    return {
        "items": [view.dump(conv, item) for item in result.items],
        "nextCursor": result.next_cursor,
    }


def org_view(conv: cattrs.Converter, view: organisations.OrganisationView) -> dict[str, Any]:
    certificates = [
        {
            "name": c.name,
            "type": "TEST" if c.environment is CertificateEnvironment.TEST else "PRODUCTION",
            "id": str(c.id),
        }
        for c in view.certificates
    ]
    return views.ORGANISATION.dump(conv, view.org, certificates=certificates)


# --- health --------------------------------------------------------------------------------


async def healthz(req: Req) -> Reply:
    return Reply(200, {"status": "ok"})


async def readyz(req: Req, storage: Storage = Provide["storage"]) -> Reply:
    await storage.ping()
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
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    org = await organisations.update(ctx, req.caller, req.path_uuid("orgId"), req.body)
    return Reply(200, org_view(conv, org))


# --- users ---------------------------------------------------------------------------------


def me_view(conv: cattrs.Converter, me: users.Me) -> dict[str, Any]:
    memberships = [
        {
            "orgId": str(m.org.id),
            "role": m.member.role.value,
            "legalName": m.org.legal_name,
            "legalIdentifier": m.org.legal_identifier,
            "memberSince": conv.unstructure(m.member.member_since),
            "memberRef": str(m.member.id),
        }
        for m in me.memberships
    ]
    return views.ME.dump(conv, me.user, memberships=memberships)


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
    return Reply(201, views.MEMBER.dump(conv, member))


async def leave_org(req: Req, ctx: Context = Provide["context"]) -> Reply:
    member = await users.leave(ctx, req.caller, req.path("uid"), req.body.org_id)
    return Reply(200, {"ids": [str(member.id)]})


# --- members -------------------------------------------------------------------------------


async def _list_members(
    req: Req, ctx: Context, conv: cattrs.Converter, status: MemberStatus | tuple[MemberStatus, ...]
) -> Reply:
    result = await members.list_members(
        ctx, req.caller, req.path_uuid("orgId"), req.listing(), status
    )
    return Reply(200, page(conv, views.MEMBER, result))


async def list_members(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    return await _list_members(req, ctx, conv, MemberStatus.ACTIVE)


async def list_pending(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    # users asking to join, and invited addresses no one has signed in with yet
    return await _list_members(req, ctx, conv, (MemberStatus.PENDING, MemberStatus.INVITED))


async def create_member(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    member = await members.create(ctx, req.caller, req.path_uuid("orgId"), req.body)
    return Reply(201, views.MEMBER.dump(conv, member))


async def _decide(req: Req, ctx: Context, approve: bool) -> Reply:
    ids = list(req.body.ids)
    done = await members.decide(ctx, req.caller, req.path_uuid("orgId"), ids, approve)
    return Reply(200, {"ids": [str(m.id) for m in done]})


async def approve_members(req: Req, ctx: Context = Provide["context"]) -> Reply:
    return await _decide(req, ctx, True)


async def reject_members(req: Req, ctx: Context = Provide["context"]) -> Reply:
    return await _decide(req, ctx, False)


async def get_member(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    member = await members.get(ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("memberId"))
    return Reply(200, views.MEMBER.dump(conv, member))


async def update_member(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    member = await members.update(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("memberId"), req.body
    )
    return Reply(200, views.MEMBER.dump(conv, member))


async def delete_member(req: Req, ctx: Context = Provide["context"]) -> Reply:
    member = await members.delete(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("memberId")
    )
    return Reply(200, {"ids": [str(member.id)]})


# --- API keys ------------------------------------------------------------------------------


async def create_api_key(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    new = await api_keys.create(ctx, req.caller, req.path_uuid("orgId"), req.body)
    return Reply(201, views.NEW_API_KEY.dump(conv, new.record, key=new.key))


async def list_api_keys(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await api_keys.list_keys(ctx, req.caller, req.path_uuid("orgId"), req.listing())
    return Reply(200, page(conv, views.API_KEY, result))


async def delete_api_key(req: Req, ctx: Context = Provide["context"]) -> Reply:
    record = await api_keys.revoke(ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("keyId"))
    return Reply(200, {"ids": [str(record.id)]})
