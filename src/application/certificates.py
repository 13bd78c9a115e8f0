"""Use cases of an organisation's own certificates: upload, list, read, rename, delete.

An organisation in whitelabel mode uploads the certificates of its own access points and
SMPs with their private keys (sealed at rest, ``application.sealed``); a public key is
registered once (``application.certificate_keys``). A certificate in use by an access point
is not deleted.
"""

from __future__ import annotations

import uuid

import attrs

from fourcorner.application import certificate_keys
from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import CERTIFICATES
from fourcorner.application.context import Context, Network
from fourcorner.application.repositories import AccessPoints
from fourcorner.application.scoped import InOrg, owned, remove_owned
from fourcorner.application.sealed import CERTIFICATE_KEY
from fourcorner.domain.catalogue import neutral
from fourcorner.domain.certificates import Certificate, CertificateEnvironment, Service
from fourcorner.domain.errors import InUse, InvalidInput
from fourcorner.domain.network_services import require_whitelabel
from fourcorner.domain.roles import Role

# the readers of an organisation's certificates
_CERTIFICATES = InOrg(CERTIFICATES, "certificate")
list_certificates, get_certificate = _CERTIFICATES.list, _CERTIFICATES.get


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


async def create_certificate(
    ctx: Context, net: Network, principal: Principal, org_id: uuid.UUID, cmd: CreateCertificate
) -> Certificate:
    now = ctx.clock()
    check_transport_profile(ctx, cmd.transport_profile)
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGADMIN)
        require_whitelabel(access.org, "upload certificates")
    info = net.certificates.inspect(cmd.cert_pem, cmd.ca_chain_pem, cmd.private_key_pem, now)
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
        sealed_key=CERTIFICATE_KEY.seal(net.sealer, cert_id, cmd.private_key_pem),
        created_at=now,
        created_by=principal.actor,
        last_modified_at=now,
        last_modified_by=principal.actor,
        holds_key=True,
    )
    async with ctx.uow() as uow:
        # again, with the organisation held until the certificate is stored: one moved out of
        # whitelabel since the check above (or while this runs) gets no certificate
        access = await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        require_whitelabel(access.org, "upload certificates")
        await certificate_keys.add(uow, cert)
        await uow.commit()
    return cert


def check_transport_profile(ctx: Context, profile: str) -> None:
    """``profile`` is a transport profile of the catalogue still in use (certificates and
    access points name one)."""
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
        # the organisation, then the record, held until the commit (as access points and
        # participants are): a concurrent change of another field (or a key sealed again)
        # is read, not overwritten with what was read before it
        access = await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        require_whitelabel(access.org, "change certificates")
        cert: Certificate = await owned(
            uow, CERTIFICATES, org_id, cert_id, "certificate", lock=True
        )
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
        # the organisation's lock: no access point is made on it meanwhile (``delete_aps``)
        access = await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        require_whitelabel(access.org, "delete certificates")
        aps = AccessPoints(uow)
        done = []
        for cid in dict.fromkeys(ids):
            await owned(uow, CERTIFICATES, org_id, cid, "certificate")
            user = await aps.first_using(cid)
            if user is not None:
                raise InUse(
                    resource="certificate", ident=str(cid), used_by=f"access point {user.id}"
                )
            await remove_owned(uow, CERTIFICATES, cid, "certificate")
            done.append(str(cid))
        await uow.commit()
    return done
