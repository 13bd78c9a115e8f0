"""The operator's set-up, made at every start from its configuration: the operator
organisation, and per environment its certificates, its SMP and its access point (which every
organisation may use, by its mode), and the operator's own participant ``0242:<spid>`` where
message level statuses reach it. Running it again changes only what the configuration
changed; a renewed AP certificate is published again for the participants its access point
serves.

The certificates are shared by every process on the database, each starting with its own
copy of the files: a stored certificate is replaced only by its successor (the certificate
inspector's ``replacement_problem``: a renewal, or the network's certificate after the test
PKI's), decided while its record is held, so that of processes starting at once with
different files one stores its own and the others refuse (``CertificateKept``) instead of
overwriting what the others sign with. Only the operator's deliberate replacement
(``replace_certificates``) stores a certificate that is no successor, once the entrypoint has
checked it."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

import attrs

from fourcorner.application import participants as participant_cases
from fourcorner.application.collections import (
    ACCESS_POINTS,
    CERTIFICATES,
    ORGANISATIONS,
    SMPS,
)
from fourcorner.application.context import Context, Network
from fourcorner.application.ports import InspectedCertificate
from fourcorner.application.repositories import Participants
from fourcorner.application.sealed import CERTIFICATE_KEY
from fourcorner.application.storage import UnitOfWork, again_on_clash
from fourcorner.domain.certificates import Certificate, CertificateEnvironment, Service
from fourcorner.domain.envelope import MLS_DOCUMENT_TYPE, MLS_PROCESS, spid_participant
from fourcorner.domain.network_services import (
    OPERATOR_ORG_ID,
    AccessPoint,
    Environment,
    Smp,
    ap_url,
)
from fourcorner.domain.organisation import Mode, Organisation, UserRef
from fourcorner.domain.participant import Participant, SupportedDocumentType

OPERATOR = UserRef("operator")

log = logging.getLogger("fourcorner.certificates")


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


class CertificateKept(Exception):
    """The database holds a certificate of the operator that the one this process starts
    with may not replace (``problem`` says why): the process has other or older files than
    the process that stored it."""

    def __init__(
        self, environment: Environment, service: Service, stored: Certificate, problem: str
    ) -> None:
        self.environment = environment
        self.service = service
        self.stored = stored
        self.problem = problem
        super().__init__(
            f"the database holds the operator's {environment.value} {service.value} "
            f'certificate "{stored.subject}", which the one this process starts with may not '
            f"replace: {problem}"
        )


class SeatChanged(Exception):
    """The database's operator receives message level statuses as ``held`` in
    ``environment`` (its seat's participant), and this process would as ``wanted``: another
    seat id. A provider's seat is its identity in the network; its participant is not moved."""

    def __init__(self, environment: Environment, held: str, wanted: str) -> None:
        super().__init__(
            f"the database's operator is the participant {held} in {environment.value}, "
            f"this process's seat id makes it {wanted}"
        )
        self.environment, self.held, self.wanted = environment, held, wanted


# the problem of a deliberate replacement whose stored certificate is no longer the one the
# new one was checked against
CHANGED_SINCE_CHECKED = "another process stored it after the files were checked"


@attrs.frozen
class Replacement:
    """The operator's ``service`` certificate of ``environment``, ``stored`` until ``new``
    took its place."""

    environment: Environment
    service: Service
    stored: Certificate
    new: Certificate


def _operator_id(kind: str, env: Environment) -> uuid.UUID:
    return uuid.uuid5(OPERATOR_ORG_ID, f"{kind}:{env.value}")


def certificate_id(service: Service, env: Environment) -> uuid.UUID:
    """The id of the operator's ``service`` certificate of ``env`` (the same in every process)."""
    return _operator_id(f"certificate:{service.value}", env)


async def ensure_operator(
    ctx: Context, net: Network, environments: list[OperatorEnvironment], spid: str | None = None
) -> None:
    """At start: the operator organisation, its certificates, SMPs and access points, and its
    own participant ``0242:<spid>`` where message level statuses reach it. Processes starting
    together on a new database race to add them: the loser finds them there and goes on."""
    await again_on_clash(lambda: _ensure_operator(ctx, net, environments, spid, None, {}))


async def replace_certificates(
    ctx: Context,
    net: Network,
    environments: list[OperatorEnvironment],
    checked: Mapping[tuple[Environment, Service], str],
    spid: str | None = None,
) -> list[Replacement]:
    """The operator's deliberate replacement: ``ensure_operator``, each stored certificate
    that differs from the one of ``environments`` replaced by it whether or not it is its
    successor (another subject too), once it passes the inspection; which were replaced,
    each logged (``operator.certificate_replaced``). The caller has checked that the new
    certificates may serve (``adapters.pki.renewal.deliberate_problems``) in place of the
    stored ones it read, ``checked`` (PEM by environment and service): ``CertificateKept``,
    and nothing replaced, when one stored now is another (a process stored it since)."""
    replaced: list[Replacement] = []

    async def attempt() -> None:
        replaced.clear()
        await _ensure_operator(ctx, net, environments, spid, replaced, checked)

    await again_on_clash(attempt)
    for one in replaced:
        log.warning(
            "the operator's certificate was replaced by the operator's command",
            extra={
                "event": "operator.certificate_replaced",
                "environment": one.environment.value,
                "service": one.service.value,
                "replaced_subject": one.stored.subject,
                "replaced_fingerprint": one.stored.fingerprint,
                "subject": one.new.subject,
                "fingerprint": one.new.fingerprint,
            },
        )
    return replaced


async def _ensure_operator(
    ctx: Context,
    net: Network,
    environments: list[OperatorEnvironment],
    spid: str | None,
    replaced: list[Replacement] | None,
    checked: Mapping[tuple[Environment, Service], str],
) -> None:
    """``ensure_operator``; with ``replaced``, a deliberate replacement (recorded there) of
    the certificates ``checked``."""
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
            await _ensure_environment(ctx, net, uow, env, now, inspected, replaced, checked)
        if spid is not None:
            # one in each environment: an identifier is unique per environment (each has its
            # own SML), and a status goes back in the environment of the document it is about
            for env in environments:
                await _ensure_spid_participant(ctx, net, uow, spid, env.environment, now)
        await uow.commit()


async def _ensure_spid_participant(
    ctx: Context, net: Network, uow: UnitOfWork, spid: str, env: Environment, now: Any
) -> None:
    ident = spid_participant(spid).value
    mls = ctx.catalogue.document_type_by_value(MLS_DOCUMENT_TYPE.scheme, MLS_DOCUMENT_TYPE.value)
    participants = Participants(uow)
    if mls is None or await participants.by_identifier(ident, env) is not None:
        return
    pid = _operator_id("participant:spid", env)
    held = await participants.get(pid)
    if held is not None:  # another seat's: the certificates written before are undone
        raise SeatChanged(env, held.participant_identifier, ident)
    p = Participant(
        id=pid,
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
    await participant_cases.republish(ctx, net, uow, p)


async def _ensure_environment(
    ctx: Context,
    net: Network,
    uow: UnitOfWork,
    env: OperatorEnvironment,
    now: Any,
    inspected: dict[str, InspectedCertificate],
    replaced: list[Replacement] | None,
    checked: Mapping[tuple[Environment, Service], str],
) -> None:
    certs = uow.repository(CERTIFICATES)
    ids = {}
    ap_renewed = False
    cert_env = (
        CertificateEnvironment.TEST
        if env.environment is Environment.TEST
        else CertificateEnvironment.PRODUCTION
    )
    for service, pem, chain, key in (
        (Service.AP, env.ap_cert_pem, env.ap_chain_pem, env.ap_key_pem),
        (Service.SMP, env.smp_cert_pem, env.smp_chain_pem, env.smp_key_pem),
    ):
        cid = certificate_id(service, env.environment)
        ids[service] = cid
        # held until the commit: of processes starting at once, each decides on what the
        # one before it stored
        existing = await certs.lock(cid)
        if existing is not None and existing.cert_pem == pem:
            continue
        if existing is not None and replaced is None:
            problem = net.certificates.replacement_problem(
                existing.cert_pem, existing.ca_chain_pem, pem
            )
            if problem is not None:
                raise CertificateKept(env.environment, service, existing, problem)
        elif existing is not None and existing.cert_pem != checked.get((env.environment, service)):
            raise CertificateKept(env.environment, service, existing, CHANGED_SINCE_CHECKED)
        info = inspected.get(pem) or net.certificates.inspect(pem, chain, key, now)
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
            sealed_key=CERTIFICATE_KEY.seal(net.sealer, cid, key),
            created_at=now,
            created_by=OPERATOR,
            last_modified_at=now,
            last_modified_by=OPERATOR,
        )
        if existing is None:
            await certs.add(cert)
        else:
            await certs.update(cert)
            ap_renewed = ap_renewed or service is Service.AP
            if replaced is not None:
                replaced.append(Replacement(env.environment, service, existing, cert))
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
        ap_url=ap_url(net.ap_host, OPERATOR_ORG_ID, ap_id),
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
        return
    moved = (old_ap.ap_url, old_ap.certificate_ref) != (ap.ap_url, ap.certificate_ref)
    if moved:
        await aps.update(ap)
    # the SMP publishes the endpoint's certificate: a renewed (or replaced) one must be what
    # senders encrypt for from now on, not the one the registrations were made with
    if moved or ap_renewed:
        await participant_cases.republish_served(ctx, net, uow, ap.id)
