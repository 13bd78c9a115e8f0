"""What the built-in SMP publishes, when a change of an access point races a change of a
participant it serves (``asyncio.gather``, many rounds; on PostgreSQL in overlapping
transactions). Whatever the interleaving, the SMP must serve what the participants hold now:
no entry for a participant that is gone, and the document types the participant lists.
``access_points.update_ap`` holds the participants it republishes (in id order), as
``participants.delete_many`` and ``set_supported`` hold the participant they change.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from fourcorner.adapters.pki.testpki import current_leaf_pem, load_test_pki
from fourcorner.application import operator_setup
from fourcorner.application.collections import SMP_REGISTRATIONS
from fourcorner.domain.envelope import seat_spid
from fourcorner.domain.network_services import Environment
from fourcorner.domain.smp import SmpRegistration
from fourcorner.entrypoints.container import resolve

from .stored import record
from .test_participants import ALICE, ap_certificate, gln, whitelabel

ROUNDS = 30


# on PostgreSQL only: the race needs overlapping transactions, and the other stores run their
# units of work one at a time
ON_POSTGRES = pytest.mark.parametrize(
    "api", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


@pytest.fixture
async def own_ap(api: Any) -> tuple[str, str, str]:
    """A whitelabel organisation, its own TEST access point, and the operator's TEST SMP:
    (organisation id, access point id, SMP id)."""
    org = await whitelabel(api)
    base = f"/orgs/{org['id']}"
    body, _, _ = ap_certificate(api, "ours", "POP000970", 30)
    status, cert = await api.call("POST", f"{base}/certificates", as_=ALICE, json=body)
    assert status == 201, cert
    ap = {"name": "ours", "certificateRef": cert["id"], "environment": "TEST"}
    status, made_ap = await api.call("POST", f"{base}/aps", as_=ALICE, json=ap)
    assert status == 201, made_ap
    _, smps = await api.call("GET", f"{base}/smps/alltouse?filter=environment:eq:TEST", as_=ALICE)
    return org["id"], made_ap["id"], smps["items"][0]["id"]


async def _participant(api: Any, org_id: str, ap_id: str, smp_id: str, n: int) -> dict[str, Any]:
    receiver = {
        "name": "raced",
        "participantIdentifier": f"0088:{gln(970 + n)}",
        "smpRef": smp_id,
        "apRef": ap_id,
    }
    status, made = await api.call("POST", f"/orgs/{org_id}/participants", as_=ALICE, json=receiver)
    assert status == 201, made
    result: dict[str, Any] = made
    return result


async def _registration(api: Any, smp_id: str, identifier: str) -> SmpRegistration | None:
    found: SmpRegistration | None = await record(
        api, SMP_REGISTRATIONS, SmpRegistration.id_for(uuid.UUID(smp_id), identifier.lower())
    )
    return found


async def _document_types(api: Any, count: int) -> list[dict[str, str]]:
    """``count`` supported-document-type entries of distinct active billing document types."""
    _, docs = await api.call(
        "GET", "/document_types?category=Invoice&filter=state:eq:active&limit=50", as_=ALICE
    )
    entries = []
    for doc in docs["items"]:
        proc = doc["process-ids"][0]
        entries.append({"documentId": doc["id"], "processId": f"{proc['scheme']}::{proc['value']}"})
        if len(entries) == count:
            return entries
    raise AssertionError(f"fewer than {count} document types")


@ON_POSTGRES
async def test_a_participant_deleted_while_its_access_point_changes_has_no_smp_entry(
    api: Any, own_ap: tuple[str, str, str]
) -> None:
    org_id, ap_id, smp_id = own_ap
    base = f"/orgs/{org_id}"
    problems = []
    for n in range(ROUNDS):
        p = await _participant(api, org_id, ap_id, smp_id, n)
        (changed, body), (deleted, gone) = await asyncio.gather(
            api.call("PUT", f"{base}/aps/{ap_id}", as_=ALICE, json={"name": f"renamed {n}"}),
            api.call(
                "POST", f"{base}/participants/batch-delete", as_=ALICE, json={"ids": [p["id"]]}
            ),
        )
        assert deleted == 200, (n, gone)
        if changed != 200:  # 404: the SMP entry it was republishing went meanwhile
            problems.append((n, f"the access point's change answered {changed} {body['code']}"))
        if await _registration(api, smp_id, p["participantIdentifier"]) is not None:
            problems.append((n, "the SMP still serves the deleted participant"))
    assert not problems, problems


@ON_POSTGRES
async def test_document_types_set_while_the_access_point_changes_are_what_the_smp_serves(
    api: Any, own_ap: tuple[str, str, str]
) -> None:
    p = await _participant(api, *own_ap, 0)
    org_id, ap_id, smp_id = own_ap
    base = f"/orgs/{org_id}"
    entries = await _document_types(api, 2)
    path = f"{base}/participants/{p['id']}/supported_document_types"
    problems = []
    for n in range(ROUNDS):
        wanted = entries[: 1 + n % 2]
        (changed, body), (set_, types) = await asyncio.gather(
            api.call("PUT", f"{base}/aps/{ap_id}", as_=ALICE, json={"name": f"renamed {n}"}),
            api.call("PUT", path, as_=ALICE, json={"supportedDocumentTypes": wanted}),
        )
        assert (changed, set_) == (200, 200), (n, body, types)
        reg = await _registration(api, smp_id, p["participantIdentifier"])
        assert reg is not None, n
        if len(reg.services) != len(wanted):
            problems.append((n, len(wanted), len(reg.services)))
    assert not problems, f"(round, document types set, served by the SMP): {problems}"


async def _shared(api: Any) -> dict[str, Any]:
    """Alice's organisation, SHARED: it may use the operator's access points."""
    org = await api.org(ALICE)
    base = f"/orgs/{org['id']}"
    contact = {"name": "B", "email": "b@example.com", "contactType": "BUSINESS"}
    asked = {"contacts": [contact], "modeChangeRequest": "SHARED"}
    status, body = await api.call("PUT", base, as_=ALICE, json=asked)
    assert status == 200, body
    status, body = await api.call(
        "PUT", base, as_="root@example.com", superadmin=True, json={"organisationMode": "SHARED"}
    )
    assert status == 200, body
    result: dict[str, Any] = org
    return result


@ON_POSTGRES
async def test_document_types_set_while_a_start_renews_the_operators_certificate(
    api: Any,
) -> None:
    """A process starting with a renewed certificate of the operator's access point
    republishes the participants that access point serves (of any organisation), holding
    each, while another organisation sets a participant's document types there (which holds
    the participant): whichever comes first, the SMP serves the renewed certificate and the
    document types just set."""
    org = await _shared(api)
    base = f"/orgs/{org['id']}"
    _, aps = await api.call("GET", f"{base}/aps/alltouse?filter=environment:eq:TEST", as_=ALICE)
    _, smps = await api.call("GET", f"{base}/smps/alltouse?filter=environment:eq:TEST", as_=ALICE)
    [ap_id] = [a["id"] for a in aps["items"] if a["orgId"] != org["id"]]
    smp_id = smps["items"][0]["id"]
    p = await _participant(api, org["id"], ap_id, smp_id, 100)
    path = f"{base}/participants/{p['id']}/supported_document_types"
    entries = await _document_types(api, 2)
    settings = api.container.settings()
    ctx = await resolve(api.container.context)
    net = await resolve(api.container.network)
    pki = load_test_pki(Path(settings.data_dir) / "pki")
    environments = api.container.operator_environments()
    problems = []
    for n in range(ROUNDS // 3):
        # a renewal: a later start than the stored certificate's, two seconds a round (whole
        # seconds in a certificate; backdated five minutes, so valid at once)
        later = datetime.now(UTC) + timedelta(seconds=2 * (n + 1))
        renewed, key = current_leaf_pem(
            pki.ap_ca, pki.ap_ca_key, settings.seat_id, days=30, now=later
        )
        changed = [
            attrs.evolve(e, ap_cert_pem=renewed, ap_key_pem=key)
            if e.environment is Environment.TEST
            else e
            for e in environments
        ]
        (status, body), _ = await asyncio.gather(
            api.call("PUT", path, as_=ALICE, json={"supportedDocumentTypes": entries[: 1 + n % 2]}),
            operator_setup.ensure_operator(ctx, net, changed, seat_spid(settings.seat_id)),
        )
        assert status == 200, body
        reg = await _registration(api, smp_id, p["participantIdentifier"])
        assert reg is not None and reg.services, n
        served = {e.certificate for s in reg.services for q in s.processes for e in q.endpoints}
        if served != {base64.b64encode(_der(renewed)).decode()}:
            problems.append((n, "an older certificate"))
        if len(reg.services) != 1 + n % 2:
            problems.append((n, f"{len(reg.services)} document types, not {1 + n % 2}"))
    assert not problems, f"what the SMP serves after a round: {problems}"


def _der(pem: str) -> bytes:
    return x509.load_pem_x509_certificate(pem.encode()).public_bytes(Encoding.DER)
