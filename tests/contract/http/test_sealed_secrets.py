"""Secrets at rest are bound to the record that holds them (issue 11, item 17).

A certificate's private key or a webhook's signing secret copied into another record does not
open there: that certificate's access point and that webhook refuse, saying why, and nothing
answers 500. Values sealed by the previous release (v1, unbound) still work, and the data
migration at start seals them again, bound.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any
from urllib.parse import quote, urlsplit

import attrs
import pytest
from aiohttp import web
from lxml import etree
from standardwebhooks import Webhook as StandardWebhook

from fourcorner.application.collections import CERTIFICATES, TRANSACTIONS, WEBHOOKS
from fourcorner.application.sealed import CERTIFICATE_KEY, WEBHOOK_SECRET
from fourcorner.domain.certificates import Service
from fourcorner.domain.errors import SecretUnusable
from fourcorner.domain.network_services import OPERATOR_ORG_ID, Environment
from fourcorner.entrypoints.commands.migrate import apply_migrations
from fourcorner.entrypoints.container import build_container, migrate_data, resolve
from sbd_factory import make_sbd

from .conftest import BACKENDS
from .stored import legacy_seal, record, tamper
from .test_as4_endpoint import error_code, message, post
from .test_as4_endpoint import setup as receiving_setup
from .test_certificate_keys import new_certificate, upload
from .test_participants import ALICE, gln, participant, whitelabel
from .test_webhooks import Receiver, hook, wait_for


@pytest.fixture
async def receiver(aiohttp_server: Any) -> Receiver:
    """test_webhooks' receiver: every path but ``/down``, ``/flaky`` and ``/hang`` answers 204."""
    r = Receiver()
    app = web.Application()
    app.router.add_post("/{name}", r.handle)
    server = await aiohttp_server(app)
    r.url = lambda name: str(server.make_url(f"/{name}"))  # type: ignore[attr-defined]
    return r


async def own_access_point(api: Any, org: dict[str, Any], cert_id: str) -> dict[str, Any]:
    status, ap = await api.call(
        "POST",
        f"/orgs/{org['id']}/aps",
        as_=ALICE,
        json={"name": "ours", "certificateRef": cert_id, "environment": "TEST"},
    )
    assert status == 201, ap
    return ap


async def test_a_private_key_copied_to_another_certificate_does_not_open(api, caplog):
    caplog.set_level(logging.INFO)
    org = await whitelabel(api)
    ids = []
    for cn in ("POP000701", "POP000702"):
        cert, key = new_certificate(api, cn=cn)
        status, created = await upload(api, org, ALICE, cert, key)
        assert status == 201, created
        ids.append(created["id"])
    first, second = [await record(api, CERTIFICATES, i) for i in ids]
    ap = await own_access_point(api, org, str(second.id))
    await tamper(api, CERTIFICATES, second.id, sealed_key=first.sealed_key)

    # its AS4 endpoint refuses, saying why
    resp = await api.client.post(
        urlsplit(ap["apUrl"]).path, data=b"x", headers={"Content-Type": "text/plain"}
    )
    answer = await resp.json()
    assert resp.status == 503 and answer["code"] == "AT-1501", answer
    assert f"access point {ap['id']}" in answer["error"]
    assert f"private key of certificate {second.id}" in answer["error"]
    assert "copied from another record" in answer["error"]
    status, _ = await api.call("GET", f"/orgs/{org['id']}/aps/{ap['id']}", as_=ALICE)
    assert status == 200  # the record itself reads as ever

    # sending through it fails with the reason, for good
    sender = f"0088:{gln(301)}"
    status, body = await participant(api, org["id"], sender)
    assert status == 201, body
    status, accepted = await api.call(
        "POST",
        f"/orgs/{org['id']}/transactions?ap={ap['id']}",
        as_=ALICE,
        data=make_sbd(sender=sender, receiver=f"0088:{gln(302)}"),
        headers={"Content-Type": "application/xml"},
    )
    assert status == 202, accepted
    worker = await resolve(api.container.sending_worker)
    assert await worker.run_once() == 1
    tx = await record(api, TRANSACTIONS, accepted["transactionId"])
    assert tx.transaction_status.value == "FAILED"
    assert tx.service_error.code == "TXE-4001" and tx.service_error.action == "CONTACT"
    assert "copied from another record" in tx.service_error.message
    # the failed attempt is logged with its cause
    (failed,) = [r for r in caplog.records if getattr(r, "event", None) == "send.failed"]
    assert failed.transaction_id == accepted["transactionId"] and failed.final
    assert failed.error_code == "TXE-4001" and "copied from another record" in failed.cause

    # the certificate that holds its own key still opens
    sealer = await resolve(api.container.sealer)
    assert CERTIFICATE_KEY.open(sealer, first).startswith("-----BEGIN")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_webhook_secret_copied_to_another_webhook_does_not_open(
    start_api, receiver, backend
):
    api = await start_api(
        backend, workers=True, webhook_allow_private_targets=True, webhook_retry_delays="0.05,0.05"
    )
    org = await api.org(ALICE)
    one = await hook(api, org["id"], receiver.url("one"))
    two = await hook(api, org["id"], receiver.url("two"))
    source = await record(api, WEBHOOKS, one["id"])
    await tamper(api, WEBHOOKS, two["id"], sealed_secret=source.sealed_secret)
    status, event = await api.call(
        "POST",
        f"/orgs/{org['id']}/webhooks/trigger-test-event",
        as_=ALICE,
        json={"eventType": "webhook.test"},
    )
    assert status == 200, event

    async def settled() -> bool:
        _, e = await api.call("GET", f"/orgs/{org['id']}/webhooks/events/{event['id']}", as_=ALICE)
        return e["status"] != "PENDING"

    await wait_for(settled)
    _, e = await api.call("GET", f"/orgs/{org['id']}/webhooks/events/{event['id']}", as_=ALICE)
    by_hook = {d["webhookId"]: d for d in e["deliveries"]}
    assert by_hook[one["id"]]["status"] == "DELIVERED"
    refused = by_hook[two["id"]]
    assert refused["status"] == "FAILED" and len(refused["attempts"]) == 3
    for attempt in refused["attempts"]:
        assert f"webhook {two['id']} cannot be used" in attempt["error"], attempt
        assert (
            "signing secret" in attempt["error"]
            and "copied from another record" in (attempt["error"])
        )
    assert "two" not in receiver.calls  # nothing was sent unsigned or wrongly signed
    StandardWebhook(one["secret"]).verify(
        receiver.calls["one"][0][2], {k.lower(): v for k, v in receiver.calls["one"][0][1].items()}
    )


def verified(received: tuple[float, dict[str, str], bytes], secret: str) -> dict[str, Any]:
    _, headers, body = received
    return StandardWebhook(secret).verify(body, {k.lower(): v for k, v in headers.items()})


@pytest.mark.parametrize("backend", BACKENDS)
async def test_values_sealed_before_binding_still_work_and_are_sealed_again(
    start_api, receiver, backend
):
    api = await start_api(
        backend, workers=True, webhook_allow_private_targets=True, webhook_retry_delays="0.05,0.05"
    )
    sealer = await resolve(api.container.sealer)
    org = await whitelabel(api)
    cert_pem, key_pem = new_certificate(api, cn="POP000703")
    status, created = await upload(api, org, ALICE, cert_pem, key_pem)
    assert status == 201, created
    hooked = await hook(api, org["id"], receiver.url("ok"))
    # the previous release's values: v1, bound to nothing
    await tamper(api, CERTIFICATES, created["id"], sealed_key=legacy_seal(api, key_pem.encode()))
    await tamper(
        api, WEBHOOKS, hooked["id"], sealed_secret=legacy_seal(api, hooked["secret"].encode())
    )
    operator_ap = uuid.uuid5(OPERATOR_ORG_ID, f"certificate:{Service.AP.value}:TEST")
    operator_key = pki_key(api)
    await tamper(api, CERTIFICATES, operator_ap, sealed_key=legacy_seal(api, operator_key))
    _, receiver_id, path = await receiving_setup(api)

    async def exercise(round_: int) -> None:
        """The webhook delivers, signed with its secret; the operator's access point
        receives (it decrypts with its key and signs the receipt)."""
        before = len(receiver.calls.get("ok", []))
        status, _ = await api.call(
            "POST",
            f"/orgs/{org['id']}/webhooks/trigger-test-event",
            as_=ALICE,
            json={"eventType": "webhook.test"},
        )
        assert status == 200

        async def delivered() -> bool:
            return len(receiver.calls.get("ok", [])) > before

        await wait_for(delivered)
        assert verified(receiver.calls["ok"][-1], hooked["secret"])["eventType"] == "webhook.test"
        sender = f"0088:{gln(310 + round_)}"
        sbd = make_sbd(sender=sender, receiver=receiver_id)
        status, answer = await post(
            api, path, message(api, sbd, sender=sender, receiver=receiver_id)
        )
        assert status == 200 and error_code(answer) is None and b"Receipt" in answer

    await exercise(0)  # old values still open
    old = [
        await record(api, CERTIFICATES, created["id"]),
        await record(api, WEBHOOKS, hooked["id"]),
        await record(api, CERTIFICATES, operator_ap),
    ]
    assert [sealer.is_current(v) for v in _sealed(old)] == [False] * 3

    await migrate_data(api.container)  # what the next start (or fourcorner migrate) runs
    new = [
        await record(api, CERTIFICATES, created["id"]),
        await record(api, WEBHOOKS, hooked["id"]),
        await record(api, CERTIFICATES, operator_ap),
    ]
    assert [v[:3] for v in _sealed(new)] == ["v2:"] * 3
    assert CERTIFICATE_KEY.open(sealer, new[0]) == key_pem
    assert WEBHOOK_SECRET.open(sealer, new[1]) == hooked["secret"]
    assert CERTIFICATE_KEY.open(sealer, new[2]).encode() == operator_key
    await exercise(1)  # and the upgraded ones work as well
    await migrate_data(api.container)  # nothing left to do
    assert _sealed([await record(api, WEBHOOKS, hooked["id"])]) == _sealed(new[1:2])
    # an upgraded value copied elsewhere no longer opens there
    prod = uuid.uuid5(OPERATOR_ORG_ID, f"certificate:{Service.AP.value}:{Environment.PROD.value}")
    copied = attrs.evolve(await record(api, CERTIFICATES, prod), sealed_key=new[2].sealed_key)
    with pytest.raises(SecretUnusable, match="copied from another record"):
        CERTIFICATE_KEY.open(sealer, copied)


def _sealed(records: list[Any]) -> list[str]:
    return [getattr(r, "sealed_key", None) or r.sealed_secret for r in records]


def pki_key(api: Any) -> bytes:
    from .test_participants import pki

    return pki(api).ap_key_pem.encode()


async def test_an_smp_key_copied_from_another_certificate_does_not_sign(api):
    _, receiver_id, _ = await receiving_setup(api)
    smp_cert = uuid.uuid5(OPERATOR_ORG_ID, f"certificate:{Service.SMP.value}:TEST")
    ap_cert = await record(api, CERTIFICATES, uuid.uuid5(OPERATOR_ORG_ID, "certificate:AP:TEST"))
    await tamper(api, CERTIFICATES, smp_cert, sealed_key=ap_cert.sealed_key)
    pid = quote(f"iso6523-actorid-upis::{receiver_id}", safe="")
    resp = await api.client.get(f"/smp/test/{pid}")
    assert resp.status == 200  # the service group needs no signature
    group = etree.fromstring(await resp.read())
    (href,) = [e.get("href") for e in group.iter() if e.get("href")]
    resp = await api.client.get(urlsplit(href).path)
    answer = await resp.json()
    assert resp.status == 503 and answer["code"] == "AT-1501", answer
    assert f"private key of certificate {smp_cert}" in answer["error"]


async def test_two_processes_upgrading_at_once_agree(two_servers):
    """Two servers starting on one database both run the data migration: every old value
    ends up sealed once more, bound, and opens; every certificate's key is recorded."""
    first, second = two_servers
    org = await whitelabel(first)
    secrets: dict[str, str] = {}
    for n in range(5):
        hooked = await hook(first, org["id"], f"https://hooks.example.com/{n}")
        secrets[hooked["id"]] = hooked["secret"]
        await tamper(
            first,
            WEBHOOKS,
            hooked["id"],
            sealed_secret=legacy_seal(first, hooked["secret"].encode()),
        )
        cert, key = new_certificate(first, cn=f"POP00080{n}")
        status, created = await upload(first, org, ALICE, cert, key)
        assert status == 201, created
        secrets[created["id"]] = key
        await tamper(
            first,
            CERTIFICATES,
            created["id"],
            sealed_key=legacy_seal(first, key.encode()),
            public_key_sha256="",
            holds_key=False,
        )
    await asyncio.gather(migrate_data(first.container), migrate_data(second.container))
    sealer = await resolve(second.container.sealer)
    for ident, secret in secrets.items():
        hooked = await record(second, WEBHOOKS, ident)
        if hooked is not None:
            assert hooked.sealed_secret.startswith("v2:")
            assert WEBHOOK_SECRET.open(sealer, hooked) == secret
            continue
        cert = await record(second, CERTIFICATES, ident)
        assert cert.sealed_key.startswith("v2:") and cert.holds_key and cert.public_key_sha256
        assert CERTIFICATE_KEY.open(sealer, cert) == secret


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_fourcorner_migrate_runs_the_data_migration(start_api, backend):
    api = await start_api(backend)
    org = await api.org(ALICE)
    hooked = await hook(api, org["id"], "https://hooks.example.com/in")
    await tamper(
        api, WEBHOOKS, hooked["id"], sealed_secret=legacy_seal(api, hooked["secret"].encode())
    )
    await apply_migrations(build_container(api.container.settings()))
    upgraded = await record(api, WEBHOOKS, hooked["id"])
    assert upgraded.sealed_secret.startswith("v2:")
    sealer = await resolve(api.container.sealer)
    assert WEBHOOK_SECRET.open(sealer, upgraded) == hooked["secret"]
