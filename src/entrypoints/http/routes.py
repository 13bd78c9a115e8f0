"""The route table: every endpoint, its role, body, answer and errors — served and documented
from this one list (the OpenAPI document and the tenant-isolation suite read it too)."""

from __future__ import annotations

from application.api_keys import CreateApiKey
from application.members import CreateMember, UpdateMember
from application.organisations import CreateOrganisation, UpdateOrganisation
from application.users import UpdateUser
from domain.roles import Role
from entrypoints.http import catalogue_handlers as c
from entrypoints.http import handlers as h
from entrypoints.http import views
from entrypoints.http.routing import LIST_PARAMS, Envelope, QueryParam, Route

_IDS = {
    "type": "object",
    "properties": {"ids": {"type": "array", "items": {"type": "string"}}},
    "required": ["ids"],
}
_ANY_LIST = {
    "type": "object",
    "properties": {
        "items": {"type": "array", "items": {"type": "object"}},
        "nextCursor": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["items", "nextCursor"],
}
_DOCUMENT_TYPE = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "scheme": {"type": "string"},
        "value": {"type": "string"},
        "category": {"type": "string"},
        "state": {"type": "string"},
        "version": {"type": "string"},
        "abstract": {"type": "boolean"},
        "issued-by-opennet": {"type": "boolean"},
        "process-ids": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"scheme": {"type": "string"}, "value": {"type": "string"}},
            },
        },
    },
    "required": ["id", "name", "scheme", "value", "category", "state", "version", "process-ids"],
}
_DOCUMENT_TYPES = {
    **_ANY_LIST,
    "properties": {**_ANY_LIST["properties"], "items": {"type": "array", "items": _DOCUMENT_TYPE}},
}
_CONSTANTS = {
    "type": "object",
    "properties": {
        "key": {"type": "string"},
        "values": {"type": "array"},
        "keys": {"type": "array", "items": {"type": "string"}},
    },
}
_EXACT = tuple(
    QueryParam(name, {"type": "string"}, description=f"exact {name}")
    for name in ("category", "state", "scheme", "version")
)
_STATUS = {"type": "object", "properties": {"status": {"type": "string"}}, "required": ["status"]}

U, M, A, S = Role.USER, Role.ORGMEMBER, Role.ORGADMIN, Role.SUPERADMIN


def routes() -> list[Route]:
    r: list[Route] = [
        Route("GET", "/healthz", h.healthz, "The process is up.", None, "health", response=_STATUS),
        Route(
            "GET",
            "/readyz",
            h.readyz,
            "The database is reachable.",
            None,
            "health",
            response=_STATUS,
            errors=("AT-1500",),
        ),
        # organisations
        Route(
            "POST",
            "/orgs",
            h.create_org,
            "Create an organisation; the caller becomes orgadmin.",
            U,
            "organisations",
            body=CreateOrganisation,
            response=views.ORGANISATION,
            status=201,
            errors=("AT-1001", "AT-1006", "AT-1091"),
        ),
        Route(
            "GET",
            "/orgs",
            h.list_orgs,
            "List every organisation (superadmin).",
            S,
            "organisations",
            response=Envelope(views.ORGANISATION),
            query=LIST_PARAMS,
            errors=("AT-1004", "AT-1005"),
        ),
        Route(
            "GET",
            "/orgs/{orgId}",
            h.get_org,
            "Get an organisation.",
            A,
            "organisations",
            response=views.ORGANISATION,
        ),
        Route(
            "PUT",
            "/orgs/{orgId}",
            h.update_org,
            "Update an organisation; modeChangeRequest requests a mode change, a superadmin "
            "sets organisationMode.",
            A,
            "organisations",
            body=UpdateOrganisation,
            response=views.ORGANISATION,
            errors=("AT-1001", "AT-1006", "AT-1019", "AT-1091", "AT-1094", "AT-1120", "AT-1121"),
        ),
        # users
        Route(
            "GET",
            "/users/me",
            h.get_me,
            "The caller, with memberships.",
            U,
            "users",
            response=views.ME,
        ),
        Route(
            "PUT",
            "/users/{uid}",
            h.update_user,
            "Update one's own details.",
            U,
            "users",
            body=UpdateUser,
            response=views.ME,
            errors=("AT-1022",),
        ),
        Route(
            "POST",
            "/users/batch-delete",
            h.delete_users,
            "Delete users (superadmin).",
            S,
            "users",
            body=h.Ids,
            response=_IDS,
        ),
        Route(
            "POST",
            "/users/{uid}/join_org",
            h.join_org,
            "Ask to join an organisation.",
            U,
            "users",
            body=h.OrgRef,
            response=views.MEMBER,
            status=201,
            errors=("AT-1092",),
        ),
        Route(
            "POST",
            "/users/{uid}/leave_org",
            h.leave_org,
            "Leave an organisation at once.",
            U,
            "users",
            body=h.OrgRef,
            response=_IDS,
            errors=("AT-1093",),
        ),
        # members
        Route(
            "GET",
            "/orgs/{orgId}/members/pending",
            h.list_pending,
            "Users asking to join.",
            A,
            "members",
            response=Envelope(views.MEMBER),
            query=LIST_PARAMS,
        ),
        Route(
            "GET",
            "/orgs/{orgId}/members",
            h.list_members,
            "All members.",
            A,
            "members",
            response=Envelope(views.MEMBER),
            query=LIST_PARAMS,
        ),
        Route(
            "POST",
            "/orgs/{orgId}/members",
            h.create_member,
            "Make a user a member.",
            A,
            "members",
            body=CreateMember,
            response=views.MEMBER,
            status=201,
            errors=("AT-1092",),
        ),
        Route(
            "PUT",
            "/orgs/{orgId}/members/approve",
            h.approve_members,
            "Approve pending members.",
            A,
            "members",
            body=h.Ids,
            response=_IDS,
            errors=("AT-1096",),
        ),
        Route(
            "PUT",
            "/orgs/{orgId}/members/reject",
            h.reject_members,
            "Reject pending members.",
            A,
            "members",
            body=h.Ids,
            response=_IDS,
            errors=("AT-1096",),
        ),
        Route(
            "GET",
            "/orgs/{orgId}/members/{memberId}",
            h.get_member,
            "Get a member.",
            A,
            "members",
            response=views.MEMBER,
        ),
        Route(
            "PUT",
            "/orgs/{orgId}/members/{memberId}",
            h.update_member,
            "Change a member's role.",
            A,
            "members",
            body=UpdateMember,
            response=views.MEMBER,
            errors=("AT-1093",),
        ),
        Route(
            "DELETE",
            "/orgs/{orgId}/members/{memberId}",
            h.delete_member,
            "Remove a member.",
            A,
            "members",
            response=_IDS,
            errors=("AT-1093",),
        ),
        # API keys
        Route(
            "POST",
            "/orgs/{orgId}/api_keys",
            h.create_api_key,
            "Create an API key; the key is in the answer, this once only.",
            A,
            "api keys",
            body=CreateApiKey,
            response=views.NEW_API_KEY,
            status=201,
            errors=("AT-1122", "AT-1123"),
        ),
        Route(
            "GET",
            "/orgs/{orgId}/api_keys",
            h.list_api_keys,
            "List API keys (never the key).",
            A,
            "api keys",
            response=Envelope(views.API_KEY),
            query=LIST_PARAMS,
        ),
        Route(
            "DELETE",
            "/orgs/{orgId}/api_keys/{keyId}",
            h.delete_api_key,
            "Revoke an API key.",
            A,
            "api keys",
            response=_IDS,
        ),
        # catalogue
        Route(
            "GET",
            "/document_types",
            c.list_document_types,
            "List document types (the whole list unless limit is given).",
            U,
            "catalogue",
            response=_DOCUMENT_TYPES,
            query=(*_EXACT, *LIST_PARAMS),
            errors=("AT-1004", "AT-1005"),
        ),
        Route(
            "GET",
            "/document_types/{id}",
            c.get_document_type,
            "Get a document type.",
            U,
            "catalogue",
            response=_DOCUMENT_TYPE,
        ),
        Route(
            "GET",
            "/participant_identifiers",
            c.list_schemes,
            "List participant identifier schemes (e.g. filter=country:eq:SE).",
            U,
            "catalogue",
            response=_ANY_LIST,
            query=LIST_PARAMS,
            errors=("AT-1004", "AT-1005"),
        ),
        Route(
            "GET",
            "/constants",
            c.get_constants,
            "Constants by key; without a key, the list of keys.",
            U,
            "catalogue",
            response=_CONSTANTS,
            query=(QueryParam("key", {"type": "string"}),),
        ),
    ]
    return r
