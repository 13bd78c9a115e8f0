"""The request fields whose values are fewer than their type's (the rules refuse the others):
the converter names exactly these when it refuses a value, and the OpenAPI document lists them.
"""

from __future__ import annotations

from fourcorner.domain.events import EVENT_NAMES, WEBHOOK_TEST
from fourcorner.domain.organisation import REQUESTABLE_MODES
from fourcorner.domain.roles import ORG_ROLES

_ORG_ROLES = tuple(r.value for r in ORG_ROLES)
_EVENTS = tuple(EVENT_NAMES)

# (the request class's name, the JSON field) -> the values it takes
BODY_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("CreateMember", "role"): _ORG_ROLES,
    ("UpdateMember", "role"): _ORG_ROLES,
    ("CreateApiKey", "role"): _ORG_ROLES,
    ("UpdateOrganisation", "modeChangeRequest"): tuple(m.value for m in REQUESTABLE_MODES),
    ("CreateWebhook", "events"): _EVENTS,
    ("UpdateWebhook", "events"): _EVENTS,
    ("TriggerEvent", "eventType"): (WEBHOOK_TEST,),  # the one event raised by hand
    ("TriggerEvent", "event"): (WEBHOOK_TEST,),
}
