"""A public key is registered once.

An organisation may register a certificate only with its private key (the inspection checks
that it belongs to the certificate), and only when no other certificate record holds the
same public key: not the operator's own access point and SMP certificates, not another
organisation's, not one it registered itself. Were it otherwise, an organisation could claim
the operator's access point certificate as its own.

Every uploaded certificate holds its key (``Certificate.holds_key``; its ``heldKey`` column
is UNIQUE), so of two uploads of one key at once exactly one commits, whatever the storage.
The operator's certificates hold none, since the operator may use one key for several
environments and services; they are written only at start, from configuration, so reading
them is enough to refuse their keys.

``record_all`` is the data migration of the records stored before keys were kept: it fills
in each one's public key, oldest first; a record whose key the operator or an earlier record
has already does not hold it, and is logged for an operator to resolve.
"""

from __future__ import annotations

import logging
import uuid

import attrs

from fourcorner.application.context import Context
from fourcorner.application.ports import CertificateInspector
from fourcorner.application.repositories import Certificates
from fourcorner.application.storage import Cursor, Query, UnitOfWork
from fourcorner.domain.certificates import Certificate
from fourcorner.domain.errors import CertificateKeyInUse, Conflict, InvalidInput
from fourcorner.domain.network_services import OPERATOR_ORG_ID

log = logging.getLogger("fourcorner.certificates")

PAGE = 200


async def _holder(repo: Certificates, org_id: uuid.UUID, key: str) -> str | None:
    """Who registered the public key ``key`` already, as the refusal names them; None if no
    one did."""
    for own in await repo.of_org(OPERATOR_ORG_ID):
        if own.public_key_sha256 == key:
            return "the service operator"
    held = await repo.holding(key)
    if held is None:
        return None
    if held.org_id == org_id:
        return f"this organisation's certificate {held.id}"
    return "another organisation"


async def add(uow: UnitOfWork, cert: Certificate) -> None:
    """Store an uploaded certificate (it holds its key: ``holds_key``); ``CertificateKeyInUse``
    when the key is registered already (also when another upload of it commits first)."""
    repo = Certificates(uow)
    holder = await _holder(repo, cert.org_id, cert.public_key_sha256)
    if holder is not None:
        raise CertificateKeyInUse(holder=holder)
    try:
        await repo.add(cert)
    except Conflict:
        holder = await _holder(repo, cert.org_id, cert.public_key_sha256)
        raise CertificateKeyInUse(holder=holder or "another certificate") from None


async def record_all(ctx: Context, inspector: CertificateInspector) -> int:
    """Fill in the public key of every certificate stored before keys were kept (see the
    module's docstring): the operator's first, then the others oldest first; returns how
    many. Safe to run again, and beside other processes."""
    done = 0
    async with ctx.uow() as uow:
        operators = await Certificates(uow).of_org(OPERATOR_ORG_ID)
    for cert in operators:
        if not cert.public_key_sha256:
            done += await _record_one(ctx, inspector, cert.id)
    query = Query(limit=PAGE)
    while True:
        async with ctx.uow() as uow:
            page = await Certificates(uow).list(query)
        for cert in page.items:
            if not cert.public_key_sha256:
                done += await _record_one(ctx, inspector, cert.id)
        if page.next_cursor is None:
            break
        query = attrs.evolve(query, after=Cursor.decode(page.next_cursor))
    if done:
        log.info("public keys of stored certificates recorded", extra={"certificates": done})
    return done


async def _record_one(ctx: Context, inspector: CertificateInspector, ident: uuid.UUID) -> int:
    async with ctx.uow() as uow:
        repo = Certificates(uow)
        cert = await repo.lock(ident)
        if cert is None or cert.public_key_sha256:
            return 0
        try:
            key = inspector.public_key_sha256(cert.cert_pem)
        except InvalidInput as e:
            log.error(
                "a stored certificate does not parse",
                extra={"certificate_id": str(ident), "problem": e.message()},
            )
            return 0
        cert = attrs.evolve(cert, public_key_sha256=key)
        operator = cert.org_id == OPERATOR_ORG_ID
        holder = None if operator else await _holder(repo, cert.org_id, key)
        if not operator and holder is None:
            try:
                await repo.update(attrs.evolve(cert, holds_key=True))
            except Conflict:  # another process recorded the key for an earlier record
                holder = "another certificate"
        if operator or holder is not None:
            await repo.update(cert)  # recorded, not held
        if holder is not None:
            log.warning(
                "a certificate registered before keys were held once has a key registered "
                "already; it stays as it is, but one of them should be deleted",
                extra={"certificate_id": str(ident), "org_id": str(cert.org_id), "by": holder},
            )
        await uow.commit()
    return 1
