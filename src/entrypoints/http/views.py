"""How records look on the wire: a ``View`` per resource (type tag, hidden fields, extras)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

from fourcorner.application.ports import ReceiverLookup
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.certificates import Certificate
from fourcorner.domain.member import Member
from fourcorner.domain.network_services import AccessPoint, Smp
from fourcorner.domain.organisation import Organisation
from fourcorner.domain.participant import Participant, SupportedDocumentType
from fourcorner.domain.user import User
from fourcorner.domain.webhook import Event, Webhook
from fourcorner.entrypoints.http.converter import camel, object_schema

_MEMO_SIZE = 1024


@attrs.frozen
class View:
    """A domain record as the interface shows it.

    ``omit`` hides internal attributes (hashes, keys); ``extra`` declares fields a handler adds
    (their JSON Schema), so the OpenAPI document lists them too.
    """

    cls: type
    name: str
    tag: str | None = None
    omit: frozenset[str] = frozenset()
    extra: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    # the last records dumped, by identity: records are immutable, and the storage adapters'
    # caches hand out the same record objects request after request
    _memo: dict[int, tuple[Any, dict[str, Any]]] = attrs.field(
        factory=dict, init=False, eq=False, repr=False
    )

    def dump(self, conv: cattrs.Converter, obj: Any, **extra: Any) -> dict[str, Any]:
        memo = self._memo
        known = memo.get(id(obj))
        if known is not None and known[0] is obj:
            return {**known[1], **extra}
        data: dict[str, Any] = conv.unstructure(obj)
        for hidden in self.omit:
            data.pop(camel(hidden), None)
        if self.tag is not None:
            data["type"] = self.tag
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        memo[id(obj)] = (obj, data)  # holding obj keeps its id from being reused
        return {**data, **extra}

    def fields(self) -> frozenset[str]:
        """The JSON names of the fields this view shows."""
        shown = {camel(a.name) for a in attrs.fields(self.cls) if a.name not in self.omit}
        return frozenset({*shown, *self.extra, *(("type",) if self.tag is not None else ())})

    def schema(self, components: dict[str, Any]) -> dict[str, Any]:
        if self.name not in components:
            body = object_schema(self.cls, components, omit=self.omit)
            props = body["properties"]
            if self.tag is not None:
                props["type"] = {"type": "string", "const": self.tag}
            props.update({k: dict(v) for k, v in self.extra.items()})
            body["required"] = sorted(props)
            components[self.name] = body
        return {"$ref": f"#/components/schemas/{self.name}"}


_ref = {"type": "object", "properties": {"userId": {"type": "string"}}, "required": ["userId"]}
_cert = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "type": {"type": "string", "enum": ["TEST", "PRODUCTION"]},
        "id": {"type": "string"},
    },
}

ORGANISATION = View(
    Organisation,
    "Organisation",
    tag="ORGANISATION",
    omit=frozenset({"legal_key"}),
    extra={"certificates": {"type": "array", "items": _cert}},
)
# the identity binding is the service's own business
USER = View(User, "User", tag="USER", omit=frozenset({"issuer", "subject", "tokens_not_before"}))
MEMBER = View(Member, "Member", tag="MEMBER")
API_KEY = View(ApiKey, "ApiKey", tag="API_KEY", omit=frozenset({"key_hash"}))
NEW_API_KEY = attrs.evolve(
    API_KEY,
    name="NewApiKey",
    extra={"key": {"type": "string", "description": "The key itself, shown this once only."}},
)
_membership = {
    "type": "object",
    "properties": {
        "orgId": {"type": "string", "format": "uuid"},
        "role": {"type": "string", "enum": ["orgadmin", "orgmember"]},
        "legalName": {"type": "string"},
        "legalIdentifier": {"type": "string"},
        "memberSince": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
        "memberRef": {"type": "string", "format": "uuid"},
    },
    "required": ["orgId", "role", "legalName", "legalIdentifier", "memberSince", "memberRef"],
}
ME = attrs.evolve(
    USER, name="UserWithMemberships", extra={"memberships": {"type": "array", "items": _membership}}
)

PARTICIPANT = View(
    Participant, "Participant", tag="PARTICIPANT", omit=frozenset({"identifier_key"})
)
ACCESS_POINT = View(AccessPoint, "AccessPoint", tag="AP")
CERTIFICATE = View(
    Certificate,
    "Certificate",
    tag="CERTIFICATE",
    omit=frozenset({"sealed_key", "public_key_sha256", "holds_key"}),
)
SMP = View(Smp, "Smp", tag="SMP", omit=frozenset({"org_id", "certificate_ref"}))
SUPPORTED = View(SupportedDocumentType, "SupportedDocumentType")

WEBHOOK = View(Webhook, "Webhook", tag="WEBHOOK", omit=frozenset({"sealed_secret"}))
NEW_WEBHOOK = attrs.evolve(
    WEBHOOK,
    name="NewWebhook",
    extra={"secret": {"type": "string", "description": "whsec_... signing secret, shown once"}},
)
EVENT = View(Event, "WebhookEvent", tag="WEBHOOK_EVENT")
RECEIVER_LOOKUP = View(ReceiverLookup, "ReceiverLookup")
