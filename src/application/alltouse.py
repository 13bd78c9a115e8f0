"""Which SMPs and access points an organisation may use (spec section 1)."""

from __future__ import annotations

from fourcorner.application.repositories import AccessPoints, Smps
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain import infrastructure as infra
from fourcorner.domain.infrastructure import OPERATOR_ORG_ID, AccessPoint, Smp
from fourcorner.domain.organisation import Mode, Organisation


async def usable(uow: UnitOfWork, org: Organisation) -> tuple[list[Smp], list[AccessPoint]]:
    smps, aps = Smps(uow), AccessPoints(uow)
    operator_smps = await smps.of_org(OPERATOR_ORG_ID)
    operator_aps = await aps.of_org(OPERATOR_ORG_ID)
    own_smps = await smps.of_org(org.id) if org.organisation_mode is Mode.WHITELABEL else []
    own_aps = await aps.of_org(org.id) if org.organisation_mode is Mode.WHITELABEL else []
    return (
        infra.all_to_use(org, operator_smps, own_smps),
        infra.all_to_use(org, operator_aps, own_aps),
    )
