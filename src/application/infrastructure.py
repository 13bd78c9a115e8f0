"""Use cases of SMPs, access points and certificates, and the operator's shared services."""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from fourcorner.application import certificate_keys
from fourcorner.application import participants as participant_cases
from fourcorner.application.access import Principal, authorise
from fourcorner.application.alltouse import usable
from fourcorner.application.collections import (
    ACCESS_POINTS,
    CERTIFICATES,
    ORGANISATIONS,
    SMPS,
)
from fourcorner.application.context import Context
from fourcorner.application.ports import InspectedCertificate
from fourcorner.application.repositories import AccessPoints, Participants
from fourcorner.application.scoped import InOrg, owned
from fourcorner.application.sealed import CERTIFICATE_KEY
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain import infrastructure as infra
from fourcorner.domain.catalogue import neutral
from fourcorner.domain.envelope import MLS_DOCUMENT_TYPE, MLS_PROCESS, spid_participant
from fourcorner.domain.errors import Detail, InUse, InvalidInput
from fourcorner.domain.infrastructure import (
    OPERATOR_ORG_ID,
    AccessPoint,
    Certificate,
    CertificateEnvironment,
    Environment,
    Service,
    Smp,
)
from fourcorner.domain.organisation import Mode, Organisation, UserRef
from fourcorner.domain.participant import Participant, SupportedDocumentType
from fourcorner.domain.roles import Role

OPERATOR = UserRef("operator")

# the readers of an organisation's certificates and access points
_CERTIFICATES = InOrg(CERTIFICATES, "certificate")
_ACCESS_POINTS = InOrg(ACCESS_POINTS, "access point")
list_certificates, get_certificate = _CERTIFICATES.list, _CERTIFICATES.get
list_aps, get_ap = _ACCESS_POINTS.list, _ACCESS_POINTS.get


@attrs.frozen
class CreateCertificate:
    name: str
    service: Service
    environment: CertificateEnvironment
    cert_pem: str
    private_key_pem: str
    # either spelling is taken; the neutral one is kept (domain.catalogue.neutral)
    transport_profile: str = attrs.field(default="net-transport-as4-v2_0", converter=neutral)
    ca_chain_pem: str = ""
    description: str = ""


@attrs.frozen
class UpdateCertificate:
    name: str | None = None
    description: str | None = None


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


# --- what an organisation may use ----------------------------------------------------------


async def smps_to_use(ctx: Context, principal: Principal, org_id: uuid.UUID) -> list[Smp]:
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGMEMBER)
        return (await usable(uow, access.org))[0]


async def aps_to_use(ctx: Context, principal: Principal, org_id: uuid.UUID) -> list[AccessPoint]:
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGMEMBER)
        return (await usable(uow, access.org))[1]


# --- certificates ---------------------------------------------------------------------------


async def create_certificate(
    ctx: Context, principal: Principal, org_id: uuid.UUID, cmd: CreateCertificate
) -> Certificate:
    now = ctx.clock()
    _check_profile(ctx, cmd.transport_profile)
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGADMIN)
        infra.require_whitelabel(access.org, "upload certificates")
    info = ctx.net.certificates.inspect(cmd.cert_pem, cmd.ca_chain_pem, cmd.private_key_pem, now)
    cert_id = ctx.new_id()
    cert = Certificate(
        id=cert_id,
        org_id=org_id,
        name=cmd.name,
        description=cmd.description,
        service=cmd.service,
        environment=cmd.environment,
        transport_profile=cmd.transport_profile,
        cert_pem=cmd.cert_pem.strip() + "\n",
        ca_chain_pem=cmd.ca_chain_pem.strip() + "\n" if cmd.ca_chain_pem.strip() else "",
        valid_from=info.valid_from,
        valid_until=info.valid_until,
        subject=info.subject,
        fingerprint=info.fingerprint_sha256,
        public_key_sha256=info.public_key_sha256,
        sealed_key=CERTIFICATE_KEY.seal(ctx.net.sealer, cert_id, cmd.private_key_pem),
        created_at=now,
        created_by=principal.actor,
        last_modified_at=now,
        last_modified_by=principal.actor,
        holds_key=True,
    )
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN)
        await certificate_keys.add(uow, cert)
        await uow.commit()
    return cert


def _check_profile(ctx: Context, profile: str) -> None:
    found = ctx.catalogue.transport_profile(profile)
    if found is None:
        known = ", ".join(sorted(ctx.catalogue.transport_profile_ids()))
        raise InvalidInput.one("$.transportProfile", f"one of {known}")
    if found.state != "active":
        raise InvalidInput.one("$.transportProfile", f"{profile} is no longer in use")


async def update_certificate(
    ctx: Context,
    principal: Principal,
    org_id: uuid.UUID,
    cert_id: uuid.UUID,
    cmd: UpdateCertificate,
) -> Certificate:
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGADMIN)
        infra.require_whitelabel(access.org, "change certificates")
        cert: Certificate = await owned(uow, CERTIFICATES, org_id, cert_id, "certificate")
        changes = {k: v for k, v in attrs.asdict(cmd).items() if v is not None}
        cert = attrs.evolve(
            cert, **changes, last_modified_at=ctx.clock(), last_modified_by=principal.actor
        )
        await uow.repository(CERTIFICATES).update(cert)
        await uow.commit()
    return cert


async def delete_certificates(
    ctx: Context, principal: Principal, org_id: uuid.UUID, ids: list[uuid.UUID]
) -> list[str]:
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGADMIN)
        infra.require_whitelabel(access.org, "delete certificates")
        certs, aps = uow.repository(CERTIFICATES), AccessPoints(uow)
        done = []
        for cid in dict.fromkeys(ids):
            await owned(uow, CERTIFICATES, org_id, cid, "certificate")
            user = await aps.first_using(cid)
            if user is not None:
                raise InUse(
                    resource="certificate", ident=str(cid), used_by=f"access point {user.id}"
                )
            await certs.remove(cid)
            done.append(str(cid))
        await uow.commit()
    return done


# --- access points --------------------------------------------------------------------------


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
    ctx: Context, principal: Principal, org_id: uuid.UUID, cmd: CreateAccessPoint
) -> AccessPoint:
    _check_profile(ctx, cmd.transport_profile)
    now = ctx.clock()
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGADMIN)
        infra.require_whitelabel(access.org, "create access points")
        await _ap_certificate(uow, org_id, cmd.certificate_ref, cmd.environment)
        ap_id = ctx.new_id()
        ap = AccessPoint(
            id=ap_id,
            org_id=org_id,
            name=cmd.name,
            description=cmd.description,
            ap_url=infra.ap_url(ctx.net.ap_host, org_id, ap_id),
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
    ctx: Context, principal: Principal, org_id: uuid.UUID, ap_id: uuid.UUID, cmd: UpdateAccessPoint
) -> AccessPoint:
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGADMIN)
        infra.require_whitelabel(access.org, "change access points")
        ap: AccessPoint = await owned(uow, ACCESS_POINTS, org_id, ap_id, "access point")
        if cmd.certificate_ref is not None:
            await _ap_certificate(uow, org_id, cmd.certificate_ref, ap.environment)
        changes = {k: v for k, v in attrs.asdict(cmd, recurse=False).items() if v is not None}
        ap = attrs.evolve(
            ap, **changes, last_modified_at=ctx.clock(), last_modified_by=principal.actor
        )
        await uow.repository(ACCESS_POINTS).update(ap)
        # the participants it serves publish the new certificate or name
        for p in await Participants(uow).served_by(ap.id):
            await participant_cases.republish(ctx, uow, p)
        await uow.commit()
    return ap


async def delete_aps(
    ctx: Context, principal: Principal, org_id: uuid.UUID, ids: list[uuid.UUID]
) -> list[str]:
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGADMIN)
        infra.require_whitelabel(access.org, "delete access points")
        done = []
        for aid in dict.fromkeys(ids):
            await owned(uow, ACCESS_POINTS, org_id, aid, "access point")
            user = await Participants(uow).first_served_by(aid)
            if user is not None:
                raise InUse(
                    resource="access point", ident=str(aid), used_by=f"participant {user.id}"
                )
            await uow.repository(ACCESS_POINTS).remove(aid)
            done.append(str(aid))
        await uow.commit()
    return done


# --- the operator's shared services ---------------------------------------------------------


@attrs.frozen
class OperatorEnvironment:
    """One environment of the operator: its SMP and its access point, with their certificates."""

    environment: Environment
    smp_url: str
    ap_cert_pem: str
    ap_chain_pem: str
    ap_key_pem: str
    smp_cert_pem: str
    smp_chain_pem: str
    smp_key_pem: str


def _operator_id(kind: str, env: Environment) -> uuid.UUID:
    return uuid.uuid5(OPERATOR_ORG_ID, f"{kind}:{env.value}")


async def ensure_operator(
    ctx: Context, environments: list[OperatorEnvironment], spid: str | None = None
) -> None:
    """At start: the operator organisation, its certificates, SMPs and access points, and its
    own participant ``0242:<spid>`` where message level statuses reach it."""
    now = ctx.clock()
    async with ctx.uow() as uow:
        orgs = uow.repository(ORGANISATIONS)
        if await orgs.get(OPERATOR_ORG_ID) is None:
            await orgs.add(
                Organisation(
                    id=OPERATOR_ORG_ID,
                    legal_name="fourcorner operator",
                    short_name="operator",
                    country_code="",
                    legal_identifier="",
                    legal_identifier_code="",
                    legal_key="operator",
                    organisation_mode=Mode.WHITELABEL,
                    created_at=now,
                    created_by=OPERATOR,
                    last_modified_at=now,
                    last_modified_by=OPERATOR,
                )
            )
        inspected: dict[str, InspectedCertificate] = {}
        for env in environments:
            await _ensure_environment(ctx, uow, env, now, inspected)
        if spid is not None and environments:
            await _ensure_spid_participant(ctx, uow, spid, environments[0].environment, now)
        await uow.commit()


async def _ensure_spid_participant(
    ctx: Context, uow: UnitOfWork, spid: str, env: Environment, now: Any
) -> None:
    ident = spid_participant(spid).value
    mls = ctx.catalogue.document_type_by_value(MLS_DOCUMENT_TYPE.scheme, MLS_DOCUMENT_TYPE.value)
    participants = Participants(uow)
    if mls is None or await participants.by_identifier(ident) is not None:
        return
    p = Participant(
        id=_operator_id("participant:spid", env),
        org_id=OPERATOR_ORG_ID,
        name="operator (message level status)",
        participant_identifier=ident,
        identifier_key=ident.lower(),
        smp_ref=_operator_id("smp", env),
        ap_ref=_operator_id("ap", env),
        environment=env,
        transport_profile="net-transport-as4-v2_0",
        supported_document_types=(SupportedDocumentType(mls.id, str(MLS_PROCESS)),),
        created_at=now,
        created_by=OPERATOR,
        last_modified_at=now,
        last_modified_by=OPERATOR,
    )
    await participants.add(p)
    await participant_cases.republish(ctx, uow, p)


async def _ensure_environment(
    ctx: Context,
    uow: UnitOfWork,
    env: OperatorEnvironment,
    now: Any,
    inspected: dict[str, InspectedCertificate],
) -> None:
    certs = uow.repository(CERTIFICATES)
    ids = {}
    cert_env = (
        CertificateEnvironment.TEST
        if env.environment is Environment.TEST
        else CertificateEnvironment.PRODUCTION
    )
    for service, pem, chain, key in (
        (Service.AP, env.ap_cert_pem, env.ap_chain_pem, env.ap_key_pem),
        (Service.SMP, env.smp_cert_pem, env.smp_chain_pem, env.smp_key_pem),
    ):
        cid = _operator_id(f"certificate:{service.value}", env.environment)
        ids[service] = cid
        existing = await certs.get(cid)
        if existing is not None and existing.cert_pem == pem:
            continue
        info = inspected.get(pem) or ctx.net.certificates.inspect(pem, chain, key, now)
        inspected[pem] = info
        cert = Certificate(
            id=cid,
            org_id=OPERATOR_ORG_ID,
            name=f"operator {service.value} {env.environment.value}",
            service=service,
            environment=cert_env,
            transport_profile="net-transport-as4-v2_0",
            cert_pem=pem,
            ca_chain_pem=chain,
            valid_from=info.valid_from,
            valid_until=info.valid_until,
            subject=info.subject,
            fingerprint=info.fingerprint_sha256,
            public_key_sha256=info.public_key_sha256,
            sealed_key=CERTIFICATE_KEY.seal(ctx.net.sealer, cid, key),
            created_at=now,
            created_by=OPERATOR,
            last_modified_at=now,
            last_modified_by=OPERATOR,
        )
        await (certs.add(cert) if existing is None else certs.update(cert))
    smp = Smp(
        id=_operator_id("smp", env.environment),
        org_id=OPERATOR_ORG_ID,
        name=f"operator SMP ({env.environment.value})",
        environment=env.environment,
        url=env.smp_url,
        certificate_ref=ids[Service.SMP],
        created_at=now,
    )
    smps = uow.repository(SMPS)
    old_smp = await smps.get(smp.id)
    if old_smp is None:
        await smps.add(smp)
    elif (old_smp.url, old_smp.certificate_ref) != (smp.url, smp.certificate_ref):
        await smps.update(attrs.evolve(smp, created_at=old_smp.created_at))
    ap_id = _operator_id("ap", env.environment)
    aps = uow.repository(ACCESS_POINTS)
    old_ap = await aps.get(ap_id)
    ap = AccessPoint(
        id=ap_id,
        org_id=OPERATOR_ORG_ID,
        name=f"operator access point ({env.environment.value})",
        ap_url=infra.ap_url(ctx.net.ap_host, OPERATOR_ORG_ID, ap_id),
        certificate_ref=ids[Service.AP],
        transport_profile="net-transport-as4-v2_0",
        environment=env.environment,
        created_at=old_ap.created_at if old_ap else now,
        created_by=OPERATOR,
        last_modified_at=now,
        last_modified_by=OPERATOR,
    )
    if old_ap is None:
        await aps.add(ap)
    elif (old_ap.ap_url, old_ap.certificate_ref) != (ap.ap_url, ap.certificate_ref):
        await aps.update(ap)
        for p in await Participants(uow).served_by(ap.id):
            await participant_cases.republish(ctx, uow, p)
