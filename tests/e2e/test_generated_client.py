"""A client generated from ``/openapi.json`` by a well-kept generator (openapi-python-client)
works against the server without hand-written HTTP: it signs in with a bearer token, creates
two organisations and their participants, sends a BIS Billing 3 invoice and reads the sent
transaction until it is COMPLETED with its MLS. The generator runs on the document the server
serves, so a schema that does not describe what the server really takes or answers fails here
(the generated models parse every answer strictly)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from .test_serve import Server, free_port

pytestmark = pytest.mark.slow
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SENDER, RECEIVER = "0007:2120000787", "0007:5560360793"  # the example SBD's parties
INVOICE_TYPE = (
    "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##"
    "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1"
)
BILLING = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"


def generate(base: str, out: Path) -> Any:
    """Generate the client package ``fourcorner_client`` from the served document; import it."""
    with urllib.request.urlopen(base + "/openapi.json", timeout=10) as answer:
        (out / "openapi.json").write_bytes(answer.read())
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "openapi_python_client",
            "generate",
            "--meta",
            "none",
            "--path",
            str(out / "openapi.json"),
            "--output-path",
            str(out / "fourcorner_client"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=out,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(out))
    importlib.invalidate_caches()
    return importlib.import_module("fourcorner_client")


def fresh_sbd() -> bytes:
    sbd = (EXAMPLES / "invoice.sbd.xml").read_bytes()
    start = sbd.index(b"<", sbd.index(b"DocumentIdentification>"))
    start = sbd.index(b"InstanceIdentifier>", start) + len(b"InstanceIdentifier>")
    end = sbd.index(b"<", start)
    return sbd[:start] + str(uuid.uuid4()).encode() + sbd[end:]


def test_a_generated_client_signs_in_creates_an_organisation_and_sends(tmp_path: Path) -> None:
    server = Server(tmp_path, free_port())
    server.start()
    try:
        client_pkg = generate(server.base, tmp_path)
        models = importlib.import_module("fourcorner_client.models")
        from_mod = lambda name: importlib.import_module(f"fourcorner_client.api.{name}")  # noqa: E731

        def signed_in(email: str) -> Any:
            return client_pkg.AuthenticatedClient(
                base_url=server.base, token=server.token(email), raise_on_unexpected_status=True
            )

        alice, bob = signed_in("alice@example.com"), signed_in("bob@example.com")
        me = from_mod("users.get_users_me").sync(client=alice)
        assert me.email == "alice@example.com"

        orgs = from_mod("organisations.post_orgs")
        acme = orgs.sync(
            client=alice,
            body=models.CreateOrganisation.from_dict(
                {
                    "legalIdentifier": "2120000787",
                    "legalName": "ACME AB",
                    "countryCode": "SE",
                    "legalIdentifierCode": "SE:ORGNR",
                }
            ),
        )
        widgets = orgs.sync(
            client=bob,
            body=models.CreateOrganisation.from_dict(
                {
                    "legalIdentifier": "5560360793",
                    "legalName": "Widgets AB",
                    "countryCode": "SE",
                    "legalIdentifierCode": "SE:ORGNR",
                }
            ),
        )
        assert isinstance(acme, models.Organisation) and acme.legal_name == "ACME AB"

        def test_services(client: Any, org_id: Any) -> tuple[Any, Any]:
            smps = from_mod("participants.get_orgs_org_id_smps_alltouse").sync(
                org_id, client=client
            )
            aps = from_mod("access_points.get_orgs_org_id_aps_alltouse").sync(org_id, client=client)
            smp = next(s.id for s in smps.items if s.environment == "TEST")
            ap = next(a.id for a in aps.items if a.environment == "TEST")
            return smp, ap

        create = from_mod("participants.post_orgs_org_id_participants")
        for client, org, identifier in ((alice, acme, SENDER), (bob, widgets, RECEIVER)):
            smp, ap = test_services(client, org.id)
            made = create.sync(
                org.id,
                client=client,
                body=models.CreateParticipant.from_dict(
                    {
                        "name": org.legal_name,
                        "participantIdentifier": identifier,
                        "smpRef": str(smp),
                        "apRef": str(ap),
                    }
                ),
            )
            assert isinstance(made, models.Participant), made
        receiver = made
        types = from_mod("catalogue.get_document_types").sync(
            client=bob, filter_=[f"value:eq:{INVOICE_TYPE}"]
        )
        (invoice,) = types.items
        from_mod(
            "participants.put_orgs_org_id_participants_participant_id_supported_document_types"
        ).sync(
            widgets.id,
            receiver.id,
            client=bob,
            body=models.SupportedDocumentTypes.from_dict(
                {
                    "supportedDocumentTypes": [
                        {"documentId": invoice.id, "processId": f"cenbii-procid-ubl::{BILLING}"}
                    ]
                }
            ),
        )

        _, ap = test_services(alice, acme.id)
        send = from_mod("transactions.post_orgs_org_id_transactions")
        body_model = next(
            getattr(models, name)
            for name in dir(models)
            if name.startswith("PostOrgsOrgIdTransactions") and name.endswith("Body")
        )
        types_mod = importlib.import_module("fourcorner_client.types")
        sbd = fresh_sbd()
        upload = types_mod.File(
            payload=sbd, file_name="invoice.sbd.xml", mime_type="application/xml"
        )
        accepted = send.sync(acme.id, client=alice, ap=ap, body=body_model(file=upload))
        assert not isinstance(accepted, models.Error), accepted.to_dict()
        assert accepted.transaction_status.value == "UNPROCESSED", accepted

        read = from_mod("transactions.get_orgs_org_id_transactions_transaction_id")
        deadline = time.monotonic() + 120
        while True:
            sent = read.sync(acme.id, accepted.transaction_id, client=alice)
            shown = sent.to_dict()
            if shown["transactionStatus"] == "COMPLETED" and shown.get("mlsResponseCode") == "AB":
                break
            assert time.monotonic() < deadline, json.dumps(shown, default=str)
            time.sleep(0.5)
    finally:
        server.stop()
        sys.path[:] = [p for p in sys.path if p != str(tmp_path)]
        for name in [n for n in sys.modules if n.split(".")[0] == "fourcorner_client"]:
            del sys.modules[name]
