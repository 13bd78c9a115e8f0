"""A certificate is registered only with its private key, and each public key once (issue 11,
item 11): not the operator's own certificates, not another organisation's, not twice.
Two uploads of one certificate at once: exactly one is stored, on every backend."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from fourcorner.adapters.pki import cert_pem, issue_leaf, key_pem
from fourcorner.application import certificate_keys
from fourcorner.application.collections import CERTIFICATES
from fourcorner.domain.certificates import Certificate, CertificateEnvironment, Service
from fourcorner.domain.network_services import OPERATOR_ORG_ID
from fourcorner.domain.organisation import UserRef
from fourcorner.entrypoints.container import migrate_data, resolve

from .stored import legacy_seal
from .test_participants import ALICE, BOB, pki, whitelabel


def new_certificate(api: Any, *, key: Any = None, cn: str = "POP000777") -> tuple[str, str]:
    """A certificate under the test PKI's AP CA (an EC key unless one is given), and its key,
    as PEM."""
    t = pki(api)
    now = datetime.now(UTC)
    cert, private = issue_leaf(
        t.ap_ca,
        t.ap_ca_key,
        cn,
        not_before=now - timedelta(hours=1),
        not_after=now + timedelta(days=30),
        key=key or ec.generate_private_key(ec.SECP256R1()),
    )
    return cert_pem(cert), key_pem(private)


def body(api: Any, cert: str, key: str | None, chain: str | None = None) -> dict[str, Any]:
    out = {
        "name": "ours",
        "service": "AP",
        "environment": "test",
        "certPem": cert,
        "caChainPem": pki(api).ap_chain_pem if chain is None else chain,
    }
    if key is not None:
        out["privateKeyPem"] = key
    return out


async def upload(
    api: Any, org: dict[str, Any], who: str, cert: str, key: str | None, chain: str | None = None
) -> tuple[int, Any]:
    return await api.call(
        "POST", f"/orgs/{org['id']}/certificates", as_=who, json=body(api, cert, key, chain)
    )


async def stored(api: Any) -> list[Any]:
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        return [c for c in await uow.repository(CERTIFICATES).all() if c.org_id != OPERATOR_ORG_ID]


async def test_a_certificate_needs_its_private_key(api):
    org = await whitelabel(api)
    cert, _ = new_certificate(api)
    for key in (None, "", "  \n"):
        status, answer = await upload(api, org, ALICE, cert, key)
        assert status == 400, (key, answer)
        assert answer["code"] in ("AT-1000", "AT-1001"), answer
        assert "$.privateKeyPem" in [d["field"] for d in answer["details"]], answer
    assert await stored(api) == []


async def test_the_operators_certificates_cannot_be_registered(api):
    org = await whitelabel(api)
    t = pki(api)
    for cert, key, chain in (
        (t.ap_certificate_pem, t.ap_key_pem, t.ap_chain_pem),
        (t.smp_certificate_pem, t.smp_key_pem, t.smp_chain_pem),
    ):
        status, answer = await upload(api, org, ALICE, cert, key, chain)
        assert status == 409, answer
        assert answer["code"] == "AT-1097" and "the service operator" in answer["error"]
        assert answer["details"][0]["field"] == "$.certPem"
    # nor a new certificate for the operator's AP key
    again, _ = new_certificate(api, key=t.ap_key, cn="POP000778")
    status, answer = await upload(api, org, ALICE, again, t.ap_key_pem)
    assert status == 409 and "the service operator" in answer["error"], answer
    assert await stored(api) == []


async def test_a_public_key_is_registered_once(api):
    a = await whitelabel(api)
    b = await whitelabel(api, BOB, legal_id="5560360793")
    cert, key = new_certificate(api)
    status, first = await upload(api, a, ALICE, cert, key)
    assert status == 201, first
    status, answer = await upload(api, a, ALICE, cert, key)
    assert status == 409 and answer["code"] == "AT-1097", answer
    assert first["id"] in answer["error"]  # the organisation's own certificate is named
    status, answer = await upload(api, b, BOB, cert, key)
    assert status == 409 and "another organisation" in answer["error"], answer
    assert first["id"] not in str(answer)  # another organisation's record is not named
    status, _ = await api.call(
        "POST",
        f"/orgs/{a['id']}/certificates/batch_delete",
        as_=ALICE,
        json={"ids": [first["id"]]},
    )
    assert status == 200
    # deleted, the key is free again
    status, answer = await upload(api, b, BOB, cert, key)
    assert status == 201, answer
    assert [c.org_id for c in await stored(api)] == [uuid.UUID(b["id"])]


async def test_a_reissued_certificate_of_a_registered_key_is_refused(api):
    org = await whitelabel(api)
    private = ec.generate_private_key(ec.SECP256R1())
    cert, key = new_certificate(api, key=private)
    reissued, _ = new_certificate(api, key=private, cn="POP000779")
    assert reissued != cert
    status, _ = await upload(api, org, ALICE, cert, key)
    assert status == 201
    status, answer = await upload(api, org, ALICE, reissued, key)
    assert status == 409 and answer["code"] == "AT-1097", answer


async def _race(apis: list[Any], orgs: list[tuple[dict[str, Any], str]], rounds: int) -> None:
    """``rounds`` times, the same new certificate uploaded by every (organisation, user) at
    once, each through its own server: exactly one upload is stored, the others are 409."""
    for n in range(rounds):
        cert, key = new_certificate(apis[0], cn=f"POP{n:06d}")
        answers = await asyncio.gather(
            *(upload(apis[i % len(apis)], org, who, cert, key) for i, (org, who) in enumerate(orgs))
        )
        statuses = sorted(status for status, _ in answers)
        assert statuses == [201] + [409] * (len(orgs) - 1), (n, answers)
        assert all(a["code"] == "AT-1097" for s, a in answers if s == 409), answers
    held = await stored(apis[0])
    assert len(held) == rounds
    assert len({c.public_key_sha256 for c in held}) == rounds


async def test_concurrent_uploads_of_one_certificate_store_exactly_one(api):
    a = await whitelabel(api)
    b = await whitelabel(api, BOB, legal_id="5560360793")
    await _race([api], [(a, ALICE), (b, BOB), (a, ALICE)], rounds=20)


async def test_concurrent_uploads_through_two_servers_store_exactly_one(two_servers):
    first, second = two_servers
    a = await whitelabel(first)
    b = await whitelabel(first, BOB, legal_id="5560360793")
    await _race([first, second], [(a, ALICE), (b, BOB)], rounds=20)


def spki_sha256(pem: str) -> str:
    public = x509.load_pem_x509_certificate(pem.encode()).public_key()
    der = public.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


async def add_legacy_certificate(
    api: Any, org: dict[str, Any], cert: str, key: str, at: datetime
) -> Certificate:
    """A certificate as the previous release stored it: no public key recorded, holding none,
    its private key sealed v1 (an empty one, as an upload without a key left it)."""
    who = UserRef("legacy")
    legacy = Certificate(
        id=uuid.uuid4(),
        org_id=uuid.UUID(org["id"]),
        name="legacy",
        service=Service.AP,
        environment=CertificateEnvironment.TEST,
        transport_profile="net-transport-as4-v2_0",
        cert_pem=cert,
        ca_chain_pem=pki(api).ap_chain_pem,
        valid_from=at - timedelta(days=1),
        valid_until=at + timedelta(days=30),
        subject="CN=legacy",
        fingerprint="00" * 32,
        sealed_key=legacy_seal(api, key.encode()),
        created_at=at,
        created_by=who,
        last_modified_at=at,
        last_modified_by=who,
    )
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        await uow.repository(CERTIFICATES).add(legacy)
        await uow.commit()
    return legacy


async def test_certificates_stored_before_keys_were_held_get_them_at_start(api, caplog):
    a = await whitelabel(api)
    b = await whitelabel(api, BOB, legal_id="5560360793")
    t = pki(api)
    cert, key = new_certificate(api)
    now = datetime.now(UTC)
    held = await add_legacy_certificate(api, a, cert, key, now - timedelta(days=3))
    again = await add_legacy_certificate(api, b, cert, key, now - timedelta(days=2))
    # the attack the previous release let through: the operator's AP certificate, no key
    stolen = await add_legacy_certificate(api, b, t.ap_certificate_pem, "", now - timedelta(days=1))
    status, ap = await api.call(
        "POST",
        f"/orgs/{b['id']}/aps",
        as_=BOB,
        json={"name": "theirs", "certificateRef": str(stolen.id), "environment": "TEST"},
    )
    assert status == 201, ap
    as4_path = urlsplit(ap["apUrl"]).path

    async def endpoint_refuses() -> None:  # it answered 500 before
        resp = await api.client.post(as4_path, data=b"x", headers={"Content-Type": "text/plain"})
        answer = await resp.json()
        assert resp.status == 503 and answer["code"] == "AT-1501", answer
        assert "none was stored" in answer["error"], answer

    await endpoint_refuses()
    with caplog.at_level(logging.WARNING):
        await migrate_data(api.container)  # what the next start (or fourcorner migrate) runs
    by_id = {c.id: c for c in await stored(api)}
    assert by_id[held.id].public_key_sha256 == spki_sha256(cert) and by_id[held.id].holds_key
    assert by_id[again.id].public_key_sha256 == spki_sha256(cert)
    assert not by_id[again.id].holds_key  # an earlier record holds it
    assert by_id[stolen.id].public_key_sha256 == spki_sha256(t.ap_certificate_pem)
    assert not by_id[stolen.id].holds_key  # the operator's key
    warned = [r for r in caplog.records if "registered already" in r.getMessage()]
    assert sorted(getattr(r, "certificate_id", "") for r in warned) == sorted(
        [str(again.id), str(stolen.id)]
    )
    assert by_id[held.id].sealed_key.startswith("v2:")  # sealed again, bound
    await endpoint_refuses()  # an empty key stays unusable, and says so
    # the recorded keys are refused from now on
    status, answer = await upload(api, b, BOB, cert, key)
    assert status == 409 and "another organisation" in answer["error"], answer
    status, answer = await upload(api, a, ALICE, cert, key)
    assert status == 409 and str(held.id) in answer["error"], answer
    ctx = await resolve(api.container.context)
    inspector = await resolve(api.container.certificate_inspector)
    assert await certificate_keys.record_all(ctx, inspector) == 0  # nothing left to do
