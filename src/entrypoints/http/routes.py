"""The route table: every endpoint, its role, body, answer and errors — served and documented
from this one list (the OpenAPI document and the tenant-isolation suite read it too)."""

from __future__ import annotations

from collections.abc import Mapping

from fourcorner.application.access_points import CreateAccessPoint, UpdateAccessPoint
from fourcorner.application.api_keys import CreateApiKey
from fourcorner.application.catalogue import DOCUMENT_TYPE_FIELDS, SCHEME_FIELDS
from fourcorner.application.certificates import CreateCertificate, UpdateCertificate
from fourcorner.application.collections import (
    ACCESS_POINTS,
    API_KEYS,
    CERTIFICATES,
    EVENTS,
    MEMBERS,
    ORGANISATIONS,
    PARTICIPANTS,
    TRANSACTIONS,
    WEBHOOKS,
)
from fourcorner.application.members import CreateMember, UpdateMember
from fourcorner.application.organisations import CreateOrganisation, UpdateOrganisation
from fourcorner.application.participants import (
    CreateParticipant,
    SupportedDocumentTypes,
    UpdateParticipant,
)
from fourcorner.application.users import UpdateUser
from fourcorner.application.webhooks import CreateWebhook, TriggerEvent, UpdateWebhook
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http import catalogue_handlers as c
from fourcorner.entrypoints.http import docs as d
from fourcorner.entrypoints.http import handlers as h
from fourcorner.entrypoints.http import metrics, views
from fourcorner.entrypoints.http import network_handlers as n
from fourcorner.entrypoints.http import sml_handlers as sml
from fourcorner.entrypoints.http import smp_handlers as s
from fourcorner.entrypoints.http import transaction_handlers as t
from fourcorner.entrypoints.http import validation_handlers as v
from fourcorner.entrypoints.http import webhook_handlers as w
from fourcorner.entrypoints.http.routing import (
    LIST_PARAMS,
    ListReply,
    QueryParam,
    Route,
    sorted_list,
)

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
_XML = {"type": "string", "description": "an XML document"}


def _catalogue_sort(fields: Mapping[str, object]) -> QueryParam:
    choices = [v for f in fields for v in (f, f"-{f}")]
    return QueryParam(
        "sort",
        {"type": "string", "enum": choices},
        description="the field to sort by, descending with a leading '-'; without it, the "
        "published order. A nextCursor is valid only with the sort it was made for",
    )


_AP = QueryParam(
    "ap", {"type": "string", "format": "uuid"}, required=True, description="access point id"
)
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
_IDEMPOTENCY_KEY = QueryParam(
    "Idempotency-Key",
    {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]+$"},
    description="names the request: the same key with the same access point and document "
    "within 24 hours answers as the first time (status and body) and sends nothing again; "
    "with another request, 409 AT-1101. Keys belong to the organisation.",
    where="header",
)
_ACCEPTED = {
    "type": "object",
    "properties": {"transactionId": {"type": "string"}, "transactionStatus": {"type": "string"}},
    "required": ["transactionId", "transactionStatus"],
}
_UPLOAD_URL = {
    "type": "object",
    "properties": {
        "uploadUrl": {"type": "string"},
        "expiresAt": {"type": "string", "format": "date-time"},
        "method": {"type": "string", "const": "PUT"},
    },
    "required": ["uploadUrl", "expiresAt", "method"],
}
_SERVICE_ERROR = {
    "type": "object",
    "properties": {k: {"type": "string"} for k in ("code", "message", "category", "action")},
}
_TRANSACTION = {
    "type": "object",
    "properties": {
        **{
            k: {"type": "string"}
            for k in (
                "id",
                "transportProfile",
                "senderId",
                "receiverId",
                "docTypeId",
                "processId",
                "senderCountry",
                "receiverCountry",
                "senderSP",
                "receiverSP",
                "docInstanceId",
                "transactionStatus",
                "createdAt",
                "apId",
                "direction",
                "mlsResponseCode",
            )
        },
        "serviceError": _SERVICE_ERROR,
    },
    "required": ["id", "transactionStatus", "createdAt", "docInstanceId", "apId"],
}
_TX_LIST = {
    "type": "object",
    "properties": {
        "items": {"type": "array", "items": _TRANSACTION},
        "nextCursor": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["items", "nextCursor"],
}
_ARTEFACTS = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "type": {"type": "string"},
                    "contentType": {"type": "string"},
                    "size": {"type": "integer"},
                    "createdAt": {"type": "string"},
                },
            },
        },
        "nextCursor": {"type": "null"},
    },
}
_STATUS = {"type": "object", "properties": {"status": {"type": "string"}}, "required": ["status"]}

U, M, A, S = Role.USER, Role.ORGMEMBER, Role.ORGADMIN, Role.SUPERADMIN


def routes(smp_prefix: str = "/smp", as4_prefix: str = "/as4") -> list[Route]:
    r: list[Route] = [
        Route("GET", "/healthz", h.healthz, "The process is up.", None, "health", response=_STATUS),
        Route(
            "GET",
            "/docs",
            d.page,
            "This API's documentation (Swagger UI over /openapi.json).",
            None,
            "health",
            response={"type": "string"},
            content_type="text/html",
        ),
        Route(
            "GET",
            "/docs/static/{name}",
            d.asset,
            "The documentation page's scripts and styles.",
            None,
            "health",
            response={"type": "string"},
            content_type="application/octet-stream",
        ),
        Route(
            "GET",
            "/metrics",
            metrics.scrape,
            "Prometheus metrics: requests, latency, transactions, deliveries, queue depths.",
            None,
            "health",
            response={"type": "string"},
            content_type="text/plain",
        ),
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
            response=ListReply(views.ORGANISATION),
            query=sorted_list(ORGANISATIONS),
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
            body=h.UserIds,
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
            "Users asking to join (PENDING), and invited addresses (INVITED, with their email).",
            A,
            "members",
            response=ListReply(views.MEMBER),
            query=sorted_list(MEMBERS),
        ),
        Route(
            "GET",
            "/orgs/{orgId}/members",
            h.list_members,
            "All members.",
            A,
            "members",
            response=ListReply(views.MEMBER),
            query=sorted_list(MEMBERS),
        ),
        Route(
            "POST",
            "/orgs/{orgId}/members",
            h.create_member,
            "Make a user a member ({userId, role}), or invite an email address ({email, "
            "role}): the first user who signs in with that address, verified, becomes a member "
            "with the role. The answer to an invitation is the same whether or not an account "
            "exists for the address.",
            A,
            "members",
            body=CreateMember,
            response=views.MEMBER,
            status=201,
            errors=("AT-1001", "AT-1092"),
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
            response=ListReply(views.API_KEY),
            query=sorted_list(API_KEYS),
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
        # SMPs and access points to use
        Route(
            "GET",
            "/orgs/{orgId}/smps/alltouse",
            n.smps_to_use,
            "SMPs the organisation may use (by mode: DEMO test only; SHARED test and "
            "production; WHITELABEL also its own).",
            M,
            "participants",
            response=ListReply(views.SMP),
        ),
        Route(
            "GET",
            "/orgs/{orgId}/aps/alltouse",
            n.aps_to_use,
            "Access points the organisation may use.",
            M,
            "access points",
            response=ListReply(views.ACCESS_POINT),
        ),
        Route(
            "GET",
            "/orgs/{orgId}/lookup",
            n.lookup_receiver,
            "Can they receive this? What a send to the participant would meet: found through "
            "the network's SML (or the fixed SMP), its SMP's signed answer, the endpoints "
            "and whether one is usable now (the same checks as a send).",
            M,
            "participants",
            response=views.RECEIVER_LOOKUP,
            query=_LOOKUP,
            errors=("AT-1001", "AT-1006", "AT-1502"),
        ),
        # certificates
        Route(
            "GET",
            "/orgs/{orgId}/certificates",
            n.list_certificates,
            "List certificates.",
            A,
            "certificates",
            response=ListReply(views.CERTIFICATE),
            query=sorted_list(CERTIFICATES),
        ),
        Route(
            "POST",
            "/orgs/{orgId}/certificates",
            n.create_certificate,
            "Upload a certificate with its chain and private key (whitelabel only).",
            A,
            "certificates",
            body=CreateCertificate,
            response=views.CERTIFICATE,
            status=201,
            errors=("AT-1001", "AT-1021", "AT-1097"),
        ),
        Route(
            "POST",
            "/orgs/{orgId}/certificates/batch_delete",
            n.delete_certificates,
            "Delete certificates.",
            A,
            "certificates",
            body=h.Ids,
            response=_IDS,
            errors=("AT-1021", "AT-1095"),
        ),
        Route(
            "GET",
            "/orgs/{orgId}/certificates/{certId}",
            n.get_certificate,
            "Get a certificate.",
            A,
            "certificates",
            response=views.CERTIFICATE,
        ),
        Route(
            "PUT",
            "/orgs/{orgId}/certificates/{certId}",
            n.update_certificate,
            "Rename or describe a certificate.",
            A,
            "certificates",
            body=UpdateCertificate,
            response=views.CERTIFICATE,
            errors=("AT-1021",),
        ),
        # access points
        Route(
            "GET",
            "/orgs/{orgId}/aps",
            n.list_aps,
            "List own access points.",
            A,
            "access points",
            response=ListReply(views.ACCESS_POINT),
            query=sorted_list(ACCESS_POINTS),
        ),
        Route(
            "POST",
            "/orgs/{orgId}/aps",
            n.create_ap,
            "Create an access point (whitelabel only).",
            A,
            "access points",
            body=CreateAccessPoint,
            response=views.ACCESS_POINT,
            status=201,
            errors=("AT-1001", "AT-1021"),
        ),
        Route(
            "POST",
            "/orgs/{orgId}/aps/batch-delete",
            n.delete_aps,
            "Delete access points.",
            A,
            "access points",
            body=h.Ids,
            response=_IDS,
            errors=("AT-1021", "AT-1095"),
        ),
        Route(
            "GET",
            "/orgs/{orgId}/aps/{apId}",
            n.get_ap,
            "Get an access point.",
            A,
            "access points",
            response=views.ACCESS_POINT,
        ),
        Route(
            "PUT",
            "/orgs/{orgId}/aps/{apId}",
            n.update_ap,
            "Update an access point.",
            A,
            "access points",
            body=UpdateAccessPoint,
            response=views.ACCESS_POINT,
            errors=("AT-1021",),
        ),
        # participants
        Route(
            "GET",
            "/orgs/{orgId}/participants",
            n.list_participants,
            "List the organisation's participants.",
            A,
            "participants",
            response=ListReply(views.PARTICIPANT),
            query=sorted_list(PARTICIPANTS),
        ),
        Route(
            "POST",
            "/orgs/{orgId}/participants",
            n.create_participant,
            "Create a participant, registered in the chosen SMP.",
            A,
            "participants",
            body=CreateParticipant,
            response=views.PARTICIPANT,
            status=201,
            errors=("AT-1001", "AT-1006", "AT-1090", "AT-1103", "AT-1104"),
        ),
        Route(
            "POST",
            "/orgs/{orgId}/participants/{participantId}/migration_key",
            sml.prepare_migration,
            "Prepare the participant's move to another SMP in the network's SML; the "
            "migration key is in the answer, this once only.",
            A,
            "participants",
            response=sml.MIGRATION_KEY,
            status=201,
            errors=("AT-1090", "AT-1104", "AT-1503"),
        ),
        Route(
            "POST",
            "/orgs/{orgId}/participants/batch-delete",
            n.delete_participants,
            "Delete participants (and their SMP registrations).",
            A,
            "participants",
            body=h.Ids,
            response=_IDS,
        ),
        Route(
            "POST",
            "/orgs/{orgId}/participants/request-pd-publish",
            n.request_publication,
            "Publish participants' business cards in the directory.",
            A,
            "participants",
            body=h.Ids,
            response=_IDS,
        ),
        Route(
            "GET",
            "/orgs/{orgId}/participants/{participantId}",
            n.get_participant,
            "Get a participant.",
            A,
            "participants",
            response=views.PARTICIPANT,
        ),
        Route(
            "PUT",
            "/orgs/{orgId}/participants/{participantId}",
            n.update_participant,
            "Update a participant (name, business card, access point).",
            A,
            "participants",
            body=UpdateParticipant,
            response=views.PARTICIPANT,
        ),
        Route(
            "GET",
            "/orgs/{orgId}/participants/{participantId}/supported_document_types",
            n.get_supported,
            "Document types the participant receives.",
            A,
            "participants",
            response={"type": "array", "items": {"type": "object"}},
        ),
        Route(
            "PUT",
            "/orgs/{orgId}/participants/{participantId}/supported_document_types",
            n.set_supported,
            "Set the document types the participant receives.",
            A,
            "participants",
            body=SupportedDocumentTypes,
            response={"type": "array", "items": {"type": "object"}},
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
            query=(*_EXACT, *LIST_PARAMS, _catalogue_sort(DOCUMENT_TYPE_FIELDS)),
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
            query=(*LIST_PARAMS, _catalogue_sort(SCHEME_FIELDS)),
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
        # transactions
        Route(
            "POST",
            "/orgs/{orgId}/transactions",
            t.post_transaction,
            "Upload an SBD file (raw XML, or multipart part 'file') and send it; 202 before any "
            "network I/O. A document sent already is 409 AT-1100 with its transactionId. With "
            "an Idempotency-Key, the same request (access point and document bytes) within 24 "
            "hours gets the same answer; another request with the key is 409 AT-1101.",
            M,
            "transactions",
            response=_ACCEPTED,
            status=202,
            query=(_AP, _IDEMPOTENCY_KEY),
            errors=("AT-1001", "AT-1002", "AT-1003", "AT-1090", "AT-1100", "AT-1101"),
            content_type="application/json",
        ),
        Route(
            "GET",
            "/orgs/{orgId}/transactions/upload_url",
            t.upload_url,
            "A pre-signed, single-use URL (30 minutes) to PUT an SBD file to; it is sent as a "
            "POST would send it.",
            M,
            "transactions",
            response=_UPLOAD_URL,
            query=(_AP,),
        ),
        Route(
            "GET",
            "/orgs/{orgId}/transactions/from_network",
            t.from_network,
            "Received transactions.",
            M,
            "transactions",
            response=_TX_LIST,
            query=sorted_list(TRANSACTIONS),
        ),
        Route(
            "GET",
            "/orgs/{orgId}/transactions/to_network",
            t.to_network,
            "Sent transactions.",
            M,
            "transactions",
            response=_TX_LIST,
            query=sorted_list(TRANSACTIONS),
        ),
        Route(
            "GET",
            "/orgs/{orgId}/transactions/{transactionId}",
            t.get_transaction,
            "Get a transaction.",
            M,
            "transactions",
            response=_TRANSACTION,
        ),
        Route(
            "GET",
            "/orgs/{orgId}/transactions/{transactionId}/artefacts",
            t.list_artefacts,
            "The transaction's artefacts.",
            M,
            "transactions",
            response=_ARTEFACTS,
        ),
        Route(
            "GET",
            "/orgs/{orgId}/transactions/{transactionId}/artefacts/{artefactId}",
            t.artefact_content,
            "An artefact's content.",
            M,
            "transactions",
            response=_XML,
            content_type="application/xml",
        ),
        Route(
            "GET",
            "/orgs/{orgId}/transactions/{transactionId}/business_document",
            t.business_document,
            "The stored SBD file.",
            M,
            "transactions",
            response=_XML,
            content_type="application/xml",
        ),
        Route(
            "POST",
            "/orgs/{orgId}/transactions/{transactionId}/confirm",
            t.confirm,
            "Confirm a received document: its pending positive MLS is sent as AP (accepted "
            "with confirmation) instead of AB.",
            M,
            "transactions",
            response={
                "type": "object",
                "properties": {
                    "transactionId": {"type": "string"},
                    "mlsResponseCode": {"type": "string"},
                },
            },
            errors=("AT-1090",),
        ),
        Route(
            "PUT",
            "/uploads/{token}",
            t.put_upload,
            "The pre-signed upload: PUT the raw SBD (the URL is the credential).",
            None,
            "transactions",
            response=_ACCEPTED,
            status=202,
            errors=("AT-1022",),
        ),
        Route(
            "POST",
            as4_prefix + "/{orgId}/{apId}",
            t.as4_inbound,
            "The access point's AS4 endpoint (multipart/related ebMS 3 user messages); answers "
            "a signed receipt or a signed ebMS error.",
            None,
            "as4",
            response=_XML,
            content_type="application/soap+xml",
            errors=("AT-1501",),
        ),
        # validation
        Route(
            "POST",
            "/validation",
            v.validate,
            "Check a billing document (raw XML, or multipart part 'file'): a UBL Invoice or "
            "CreditNote, a CII CrossIndustryInvoice, or an SBD holding one, against the EN 16931 "
            "and BIS Billing 3.0 rules of its syntax; any other document is answered as not "
            "checked.",
            U,
            "validation",
            response=v.RESPONSE,
            errors=("AT-1000", "AT-1001", "AT-1002", "AT-1003", "AT-1130", "AT-1500"),
        ),
        # webhooks
        Route(
            "GET",
            "/orgs/{orgId}/webhooks",
            w.list_webhooks,
            "List webhooks.",
            A,
            "webhooks",
            response=ListReply(views.WEBHOOK),
            query=sorted_list(WEBHOOKS),
        ),
        Route(
            "POST",
            "/orgs/{orgId}/webhooks",
            w.create_webhook,
            "Register a webhook; the answer carries its signing secret, this once only.",
            A,
            "webhooks",
            body=CreateWebhook,
            response=views.NEW_WEBHOOK,
            status=201,
        ),
        Route(
            "POST",
            "/orgs/{orgId}/webhooks/batch-delete",
            w.delete_webhooks,
            "Delete webhooks.",
            A,
            "webhooks",
            body=h.Ids,
            response=_IDS,
        ),
        Route(
            "POST",
            "/orgs/{orgId}/webhooks/trigger-test-event",
            w.trigger_test_event,
            "Raise a webhook.test event to the webhooks subscribed to it.",
            A,
            "webhooks",
            body=TriggerEvent,
            response=views.EVENT,
        ),
        Route(
            "GET",
            "/orgs/{orgId}/webhooks/events",
            w.list_events,
            "Stored events (14 days) with their delivery status.",
            A,
            "webhooks",
            response=ListReply(views.EVENT),
            query=sorted_list(EVENTS),
        ),
        Route(
            "GET",
            "/orgs/{orgId}/webhooks/events/{id}",
            w.get_event,
            "One stored event with its delivery attempts.",
            A,
            "webhooks",
            response=views.EVENT,
        ),
        *(
            Route(
                "POST",
                path,
                w.redeliver_event,
                "Queue a new delivery of a stored event to the webhooks it was delivered to "
                "before that still exist and are enabled (not to webhooks subscribed since); "
                "each gets three attempts of its own, recorded on the event beside the earlier "
                "ones (status code or error, the first KiB of the answer, duration).",
                A,
                "webhooks",
                response=views.EVENT,
                status=202,
                errors=("AT-1102",),
            )
            for path in (
                "/orgs/{orgId}/events/{eventId}/redeliver",
                "/orgs/{orgId}/webhooks/events/{id}/redeliver",
            )
        ),
        Route(
            "GET",
            "/orgs/{orgId}/webhooks/{id}",
            w.get_webhook,
            "Get a webhook.",
            A,
            "webhooks",
            response=views.WEBHOOK,
        ),
        Route(
            "PUT",
            "/orgs/{orgId}/webhooks/{id}",
            w.update_webhook,
            "Update a webhook.",
            A,
            "webhooks",
            body=UpdateWebhook,
            response=views.WEBHOOK,
        ),
        # the built-in SMP (standard SMP read interface, XML)
        Route(
            "GET",
            smp_prefix + "/businesscard/{participant}",
            s.business_card,
            "The participant's directory business card (v3).",
            None,
            "smp",
            response=_XML,
            content_type="text/xml",
        ),
        Route(
            "GET",
            smp_prefix + "/{participant}",
            s.service_group,
            "ServiceGroup: the participant's service metadata references.",
            None,
            "smp",
            response=_XML,
            content_type="text/xml",
        ),
        Route(
            "GET",
            smp_prefix + "/{participant}/services/{documentType}",
            s.service_metadata,
            "SignedServiceMetadata of one document type, signed by the SMP certificate.",
            None,
            "smp",
            response=_XML,
            content_type="text/xml",
            errors=("AT-1501",),
        ),
    ]
    return r
