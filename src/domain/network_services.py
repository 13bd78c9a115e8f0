"""The network services an organisation sends and receives through: SMPs and access points,
the environment (test or production) each serves, and which of them an organisation may use
by its mode (spec section 1). The operator's own organisation owns the shared ones."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import TypeVar

import attrs

from fourcorner.domain.errors import ModeNotPermitted
from fourcorner.domain.organisation import Mode, Organisation, UserRef

# The operator's own organisation owns the shared SMPs and access points.
OPERATOR_ORG_ID = uuid.UUID("00000000-0000-4000-8000-000000000001")


class Environment(enum.Enum):
    TEST = "TEST"
    PROD = "PROD"


@attrs.frozen
class Smp:
    id: uuid.UUID
    org_id: uuid.UUID
    name: str
    environment: Environment
    url: str
    created_at: datetime
    certificate_ref: uuid.UUID | None = None


@attrs.frozen
class AccessPoint:
    id: uuid.UUID
    org_id: uuid.UUID
    name: str
    ap_url: str
    certificate_ref: uuid.UUID
    transport_profile: str
    environment: Environment
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    description: str = ""


def require_whitelabel(org: Organisation, action: str) -> None:
    """Own certificates and access points are for organisations in whitelabel mode only."""
    if org.organisation_mode is not Mode.WHITELABEL:
        raise ModeNotPermitted(mode=org.organisation_mode.value, action=action)


def usable_environments(mode: Mode) -> frozenset[Environment]:
    """DEMO: the operator's test services only; SHARED and WHITELABEL: test and production."""
    if mode is Mode.DEMO:
        return frozenset({Environment.TEST})
    return frozenset(Environment)


T = TypeVar("T", Smp, AccessPoint)


def all_to_use(org: Organisation, operator: Iterable[T], own: Iterable[T]) -> list[T]:
    """What ``org`` may use: the operator's items of its environments, and in whitelabel mode
    also its own."""
    allowed = usable_environments(org.organisation_mode)
    items = [i for i in operator if i.environment in allowed]
    if org.organisation_mode is Mode.WHITELABEL and org.id != OPERATOR_ORG_ID:
        items += list(own)
    return items


def ap_url(ap_host: str, org_id: uuid.UUID, ap_id: uuid.UUID) -> str:
    return f"{ap_host.rstrip('/')}/{org_id}/{ap_id}"


def smp_url(smp_root: str, environment: Environment) -> str:
    """The base URL of the built-in SMP of ``environment``: one per environment under the SMP
    root (``<base>/smp/test``, ``<base>/smp/prod``), each serving only that environment's
    participants."""
    return f"{smp_root.rstrip('/')}/{environment.value.lower()}"


def environment_of_segment(segment: str) -> Environment | None:
    """The environment named by a path segment of the SMP (``test`` or ``prod``), or None."""
    for environment in Environment:
        if segment == environment.value.lower():
            return environment
    return None
