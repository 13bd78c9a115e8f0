"""Use cases of an organisation's own access points: create, list, read, change, delete.

An access point of an organisation in whitelabel mode uses one of its AP certificates of the
same environment; changing its certificate or name republishes the participants it serves. An
access point that serves a participant is not deleted.
"""

from __future__ import annotations

import uuid

import attrs

from fourcorner.application import participants as participant_cases
from fourcorner.application.access import Principal, authorise
from fourcorner.application.certificates import check_transport_profile
from fourcorner.application.collections import ACCESS_POINTS, CERTIFICATES
from fourcorner.application.context import Context, Network
from fourcorner.application.repositories import Participants
from fourcorner.application.scoped import InOrg, owned, remove_owned
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.catalogue import neutral
from fourcorner.domain.certificates import Certificate, Service
from fourcorner.domain.errors import Detail, InUse, InvalidInput
from fourcorner.domain.network_services import AccessPoint, Environment, ap_url, require_whitelabel
from fourcorner.domain.roles import Role

# the readers of an organisation's access points
_ACCESS_POINTS = InOrg(ACCESS_POINTS, "access point")
list_aps, get_ap = _ACCESS_POINTS.list, _ACCESS_POINTS.get


@attrs.frozen
class CreateAccessPoint:
    name: str
    certificate_ref: uuid.UUID
    environment: Environment
    transport_profile: str = attrs.field(default="net-transport-as4-v2_0", converter=neutral)
    description: str = ""


@attrs.frozen
class UpdateAccessPoint:
    name: str | None = None
    description: str | None = None
    certificate_ref: uuid.UUID | None = None


async def _ap_certificate(
    uow: UnitOfWork, org_id: uuid.UUID, cert_id: uuid.UUID, environment: Environment
) -> Certificate:
    cert = await uow.repository(CERTIFICATES).get(cert_id)
    if cert is None or cert.org_id != org_id:
        raise InvalidInput.one("$.certificateRef", "not a certificate of this organisation")
    problems = []
    if cert.service is not Service.AP:
        problems.append(Detail("$.certificateRef", "the certificate is not for an access point"))
    if cert.environment.environment is not environment:
        problems.append(
            Detail(
                "$.certificateRef",
                f"the certificate is not for the {environment.value} environment",
            )
        )
    if problems:
        raise InvalidInput(problems)
    return cert


async def create_ap(
    ctx: Context, net: Network, principal: Principal, org_id: uuid.UUID, cmd: CreateAccessPoint
) -> AccessPoint:
    check_transport_profile(ctx, cmd.transport_profile)
    now = ctx.clock()
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        require_whitelabel(access.org, "create access points")
        await _ap_certificate(uow, org_id, cmd.certificate_ref, cmd.environment)
        ap_id = ctx.new_id()
        ap = AccessPoint(
            id=ap_id,
            org_id=org_id,
            name=cmd.name,
            description=cmd.description,
            ap_url=ap_url(net.ap_host, org_id, ap_id),
            certificate_ref=cmd.certificate_ref,
            transport_profile=cmd.transport_profile,
            environment=cmd.environment,
            created_at=now,
            created_by=principal.actor,
            last_modified_at=now,
            last_modified_by=principal.actor,
        )
        await uow.repository(ACCESS_POINTS).add(ap)
        await uow.commit()
    return ap


async def update_ap(
    ctx: Context,
    net: Network,
    principal: Principal,
    org_id: uuid.UUID,
    ap_id: uuid.UUID,
    cmd: UpdateAccessPoint,
) -> AccessPoint:
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        require_whitelabel(access.org, "change access points")
        ap: AccessPoint = await owned(uow, ACCESS_POINTS, org_id, ap_id, "access point")
        if cmd.certificate_ref is not None:
            await _ap_certificate(uow, org_id, cmd.certificate_ref, ap.environment)
        changes = {k: v for k, v in attrs.asdict(cmd, recurse=False).items() if v is not None}
        ap = attrs.evolve(
            ap, **changes, last_modified_at=ctx.clock(), last_modified_by=principal.actor
        )
        await uow.repository(ACCESS_POINTS).update(ap)
        # the participants it serves publish the new certificate or name
        await participant_cases.republish_served(ctx, net, uow, ap.id)
        await uow.commit()
    return ap


async def delete_aps(
    ctx: Context, principal: Principal, org_id: uuid.UUID, ids: list[uuid.UUID]
) -> list[str]:
    # Under the organisation's lock, as every change that makes or drops a reference between
    # its certificates, access points and participants: a record is not deleted while
    # another is made on it (each checks the other under the same lock).
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        require_whitelabel(access.org, "delete access points")
        done = []
        for aid in dict.fromkeys(ids):
            await owned(uow, ACCESS_POINTS, org_id, aid, "access point")
            user = await Participants(uow).first_served_by(aid)
            if user is not None:
                raise InUse(
                    resource="access point", ident=str(aid), used_by=f"participant {user.id}"
                )
            await remove_owned(uow, ACCESS_POINTS, aid, "access point")
            done.append(str(aid))
        await uow.commit()
    return done
