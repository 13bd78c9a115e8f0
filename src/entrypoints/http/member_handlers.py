"""Handlers of members and API keys (spec section 5)."""

from __future__ import annotations

import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application import api_keys, members
from fourcorner.application.api_keys import CreateApiKey
from fourcorner.application.collections import API_KEYS, MEMBERS
from fourcorner.application.context import Context
from fourcorner.application.members import CreateMember, UpdateMember
from fourcorner.domain.member import MemberStatus
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http import responses
from fourcorner.entrypoints.http.handlers import Ids, page
from fourcorner.entrypoints.http.rendering import ListReply
from fourcorner.entrypoints.http.routing import Reply, Req, Route, sorted_list

# --- members -------------------------------------------------------------------------------


async def _list_members(
    req: Req, ctx: Context, conv: cattrs.Converter, status: MemberStatus | tuple[MemberStatus, ...]
) -> Reply:
    result = await members.list_members(
        ctx, req.caller, req.path_uuid("orgId"), req.listing(), status
    )
    return Reply(200, page(conv, responses.MEMBER, result))


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
    return Reply(201, responses.MEMBER.dump(conv, member))


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
    return Reply(200, responses.MEMBER.dump(conv, member))


async def update_member(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    member = await members.update(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("memberId"), req.body
    )
    return Reply(200, responses.MEMBER.dump(conv, member))


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
    return Reply(201, responses.NEW_API_KEY.dump(conv, new.record, key=new.key))


async def list_api_keys(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await api_keys.list_keys(ctx, req.caller, req.path_uuid("orgId"), req.listing())
    return Reply(200, page(conv, responses.API_KEY, result))


async def delete_api_key(req: Req, ctx: Context = Provide["context"]) -> Reply:
    record = await api_keys.revoke(ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("keyId"))
    return Reply(200, {"ids": [str(record.id)]})


# --- routes ---------------------------------------------------------------------------------

A = Role.ORGADMIN

ROUTES = (
    Route(
        "GET",
        "/orgs/{orgId}/members/pending",
        list_pending,
        "Users asking to join (PENDING), and invited addresses (INVITED, with their email).",
        A,
        "members",
        response=ListReply(responses.MEMBER),
        query=sorted_list(MEMBERS),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/members",
        list_members,
        "All members.",
        A,
        "members",
        response=ListReply(responses.MEMBER),
        query=sorted_list(MEMBERS),
    ),
    Route(
        "POST",
        "/orgs/{orgId}/members",
        create_member,
        "Make a user a member ({userId, role}), or invite an email address ({email, "
        "role}): the first user who signs in with that address, verified, becomes a member "
        "with the role. The answer to an invitation is the same whether or not an account "
        "exists for the address.",
        A,
        "members",
        body=CreateMember,
        response=responses.MEMBER,
        status=201,
        errors=("AT-1001", "AT-1092"),
        user_only=True,  # a person grants access, never a key: none outlives the key
    ),
    Route(
        "PUT",
        "/orgs/{orgId}/members/approve",
        approve_members,
        "Approve pending members.",
        A,
        "members",
        body=Ids,
        response=responses.IDS,
        errors=("AT-1096",),
        user_only=True,  # a person grants access, never a key: none outlives the key
    ),
    Route(
        "PUT",
        "/orgs/{orgId}/members/reject",
        reject_members,
        "Reject pending members.",
        A,
        "members",
        body=Ids,
        response=responses.IDS,
        errors=("AT-1096",),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/members/{memberId}",
        get_member,
        "Get a member.",
        A,
        "members",
        response=responses.MEMBER,
    ),
    Route(
        "PUT",
        "/orgs/{orgId}/members/{memberId}",
        update_member,
        "Change a member's role.",
        A,
        "members",
        body=UpdateMember,
        response=responses.MEMBER,
        errors=("AT-1093",),
        user_only=True,  # a person grants access, never a key: none outlives the key
    ),
    Route(
        "DELETE",
        "/orgs/{orgId}/members/{memberId}",
        delete_member,
        "Remove a member.",
        A,
        "members",
        response=responses.IDS,
        errors=("AT-1093",),
    ),
    Route(
        "POST",
        "/orgs/{orgId}/api_keys",
        create_api_key,
        "Create an API key; the key is in the answer, this once only.",
        A,
        "api keys",
        body=CreateApiKey,
        response=responses.NEW_API_KEY,
        status=201,
        errors=("AT-1122", "AT-1123"),
        user_only=True,  # a person makes a key, never a key: not one outliving its maker
    ),
    Route(
        "GET",
        "/orgs/{orgId}/api_keys",
        list_api_keys,
        "List API keys (never the key).",
        A,
        "api keys",
        response=ListReply(responses.API_KEY),
        query=sorted_list(API_KEYS),
    ),
    Route(
        "DELETE",
        "/orgs/{orgId}/api_keys/{keyId}",
        delete_api_key,
        "Revoke an API key.",
        A,
        "api keys",
        response=responses.IDS,
    ),
)
