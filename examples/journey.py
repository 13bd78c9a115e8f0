#!/usr/bin/env python3
"""The whole journey against a running server, from a token to a delivered invoice.

Start the server with webhooks to this machine allowed (the receiver below listens on
127.0.0.1), then run this script from the repository's folder:

    FOURCORNER_WEBHOOK_ALLOW_PRIVATE_TARGETS=true make serve     # in one terminal
    python3 examples/journey.py                                  # in another

It uses the standard library only. Step by step it:

1. gets two bearer tokens with `.venv/bin/fourcorner token` (Alice and Bob; the command signs
   with the key of the server on the same data dir, FOURCORNER_DATA_DIR);
2. creates two organisations, ACME AB (Alice's) and Widgets AB (Bob's) — or finds them, when
   the journey ran before against the same server;
3. registers a participant for each, on the TEST SMP and access point the organisations may
   use, and announces that Widgets AB receives BIS Billing 3 invoices;
4. starts a webhook receiver on 127.0.0.1 and registers a webhook for each organisation,
   checking the signature of every delivery (docs/api.md, "Verifying a delivery");
5. sends examples/invoice.sbd.xml from ACME AB to Widgets AB (with a fresh instance
   identifier, as every document sent needs one of its own);
6. waits for Widgets AB's `transaction.received`, ACME AB's `transaction.sent` and the
   message level status (`mls.received`, code AB), and for the transaction to be COMPLETED;
7. downloads the document Widgets AB received and checks it is byte for byte the one sent.

It prints what it does and exits 0, or says what went wrong and exits 1.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import http.server
import json
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
INVOICE = (
    "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##"
    "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1"
)
BILLING = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
ALICE = ("alice@example.com", "Alice Admin")
BOB = ("bob@example.com", "Bob Builder")
ACME = {
    "legalIdentifier": "2120000787",
    "legalName": "ACME AB",
    "countryCode": "SE",
    "legalIdentifierCode": "SE:ORGNR",
}
WIDGETS = {
    "legalIdentifier": "5560360793",
    "legalName": "Widgets AB",
    "countryCode": "SE",
    "legalIdentifierCode": "SE:ORGNR",
}
SENDER, RECEIVER = "0007:2120000787", "0007:5560360793"  # the SBD's Sender and Receiver


class JourneyError(Exception):
    """A step did not go as it should; the message says which and why."""


# --- verifying a webhook delivery (the same code as in docs/api.md) --------------------------


def verify_delivery(
    secret: str, headers: dict[str, str], body: bytes, tolerance: int = 300
) -> bool:
    """Whether a delivery is signed with ``secret`` (``whsec_...``) and fresh."""
    message_id = headers["webhook-id"]
    timestamp = headers["webhook-timestamp"]
    if abs(time.time() - int(timestamp)) > tolerance:
        return False  # too old or from the future: a replay
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{message_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(
        hmac.compare_digest(expected, candidate.partition(",")[2])
        for candidate in headers["webhook-signature"].split()
        if candidate.startswith("v1,")
    )


# --- the API --------------------------------------------------------------------------------


class Api:
    def __init__(self, base_url: str, token: str) -> None:
        self.base = base_url.rstrip("/")
        self.token = token

    def call(
        self, method: str, path: str, body: Any = None, *, xml: bytes | None = None
    ) -> tuple[int, Any]:
        data, kind = None, None
        if body is not None:
            data, kind = json.dumps(body).encode(), "application/json"
        if xml is not None:
            data, kind = xml, "application/xml"
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if kind:
            request.add_header("Content-Type", kind)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, _decode(answer.read(), answer.headers.get_content_type())
        except urllib.error.HTTPError as e:
            return e.code, _decode(e.read(), e.headers.get_content_type())

    def ok(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        status, answer = self.call(method, path, body, **kw)
        if status >= 300:
            raise JourneyError(f"{method} {path} answered {status}: {answer}")
        return answer


def _decode(raw: bytes, content_type: str) -> Any:
    return json.loads(raw) if content_type == "application/json" else raw


def token(fourcorner: str, email: str, name: str) -> str:
    run = subprocess.run(
        [fourcorner, "token", "--email", email, "--name", name],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise JourneyError(f"`{fourcorner} token` failed: {run.stderr.strip()}")
    return run.stdout.strip()


def organisation(api: Api, body: dict[str, str]) -> dict[str, Any]:
    status, org = api.call("POST", "/orgs", body)
    if status == 201:
        print(f"  created organisation {org['legalName']} ({org['id']})")
        return org
    if status == 409 and org.get("code") == "AT-1091":  # the journey ran before
        for membership in api.ok("GET", "/users/me")["memberships"]:
            found = api.ok("GET", f"/orgs/{membership['orgId']}")
            if found["legalIdentifier"] == body["legalIdentifier"]:
                print(f"  found organisation {found['legalName']} ({found['id']})")
                return found
    raise JourneyError(f"POST /orgs answered {status}: {org}")


def test_services(api: Api, org_id: str) -> tuple[str, str]:
    """The ids of the TEST SMP and access point the organisation may use."""
    smps = api.ok("GET", f"/orgs/{org_id}/smps/alltouse")["items"]
    aps = api.ok("GET", f"/orgs/{org_id}/aps/alltouse")["items"]
    smp = next(s["id"] for s in smps if s["environment"] == "TEST")
    ap = next(a["id"] for a in aps if a["environment"] == "TEST")
    return smp, ap


def participant(api: Api, org_id: str, identifier: str, name: str) -> dict[str, Any]:
    smp, ap = test_services(api, org_id)
    body = {"name": name, "participantIdentifier": identifier, "smpRef": smp, "apRef": ap}
    status, created = api.call("POST", f"/orgs/{org_id}/participants", body)
    if status == 201:
        print(f"  registered participant {identifier} for {name}")
        return created
    query = urllib.parse.urlencode({"filter": f"participantIdentifier:eq:{identifier}"})
    found = api.ok("GET", f"/orgs/{org_id}/participants?{query}")["items"]
    if status == 409 and found:
        print(f"  found participant {identifier}")
        return found[0]
    raise JourneyError(f"POST participants answered {status}: {created}")


def receives_invoices(api: Api, org_id: str, participant_id: str) -> None:
    query = urllib.parse.urlencode({"filter": f"value:eq:{INVOICE}"})
    found = api.ok("GET", f"/document_types?{query}")["items"]
    if len(found) != 1:
        raise JourneyError(f"the catalogue has {len(found)} document types {INVOICE}")
    doc = found[0]
    entry = {"documentId": doc["id"], "processId": f"cenbii-procid-ubl::{BILLING}"}
    path = f"/orgs/{org_id}/participants/{participant_id}/supported_document_types"
    api.ok("PUT", path, {"supportedDocumentTypes": [entry]})
    print(f"  it receives {doc['name']}")


# --- the webhook receiver -------------------------------------------------------------------


class Receiver:
    """Webhook deliveries to ``http://127.0.0.1:<port>/<org id>``, verified on arrival."""

    def __init__(self) -> None:
        self.secrets: dict[str, str] = {}
        self.events: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        self.problems: list[str] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                org_id = self.path.strip("/")
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                secret = receiver.secrets.get(org_id)
                if secret is None or not verify_delivery(secret, headers, body):
                    receiver.problems.append(f"a delivery to {self.path} is not signed right")
                    self.send_response(401)
                else:
                    receiver.events.put((org_id, json.loads(body)))
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def subscribe(self, api: Api, org_id: str, events: list[str]) -> None:
        """A webhook for ``events`` of the organisation, in place of an earlier journey's."""
        earlier = api.ok("GET", f"/orgs/{org_id}/webhooks")["items"]
        ids = [hook["id"] for hook in earlier if hook.get("description") == "journey"]
        if ids:
            api.ok("POST", f"/orgs/{org_id}/webhooks/batch-delete", {"ids": ids})
        body = {"url": f"{self.url}/{org_id}", "events": events, "description": "journey"}
        status, hook = api.call("POST", f"/orgs/{org_id}/webhooks", body)
        if status == 400 and "loopback" in hook.get("error", ""):
            raise JourneyError(
                "the server refuses webhook URLs on 127.0.0.1: start it with "
                "FOURCORNER_WEBHOOK_ALLOW_PRIVATE_TARGETS=true (e.g. "
                "FOURCORNER_WEBHOOK_ALLOW_PRIVATE_TARGETS=true make serve)"
            )
        if status != 201:
            raise JourneyError(f"POST webhooks answered {status}: {hook}")
        self.secrets[org_id] = hook["secret"]
        print(f"  webhook {hook['id']} -> {body['url']} for {', '.join(events)}")

    def wait_for(self, wanted: set[tuple[str, str]], within: float) -> dict[str, Any]:
        """The events ``(org id, event type)`` in ``wanted``, by type, once all arrived."""
        seen: dict[str, Any] = {}
        deadline = time.monotonic() + within
        while wanted - {(e["orgId"], e["eventType"]) for e in seen.values()}:
            if self.problems:
                raise JourneyError("; ".join(self.problems))
            try:
                org_id, event = self.events.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                missing = wanted - {(e["orgId"], e["eventType"]) for e in seen.values()}
                raise JourneyError(f"no webhook within {within:g} s for {missing}") from None
            print(f"  webhook: {event['eventType']} for {org_id} (signature verified)")
            if event["eventType"] == "transaction.send_failed":
                raise JourneyError(f"sending failed: {event['payload']}")
            seen[event["eventType"]] = event
        return seen


# --- the journey ----------------------------------------------------------------------------


def fresh_instance(sbd: bytes) -> tuple[bytes, str]:
    """``sbd`` with a new DocumentIdentification/InstanceIdentifier, and that identifier."""
    instance = str(uuid.uuid4())
    pattern = rb"(<(?:\w+:)?DocumentIdentification>.*?<(?:\w+:)?InstanceIdentifier>)[^<]*"
    renewed, count = re.subn(pattern, rb"\g<1>" + instance.encode(), sbd, count=1, flags=re.S)
    if count != 1:
        raise JourneyError("the SBD has no DocumentIdentification/InstanceIdentifier")
    return renewed, instance


def journey(base_url: str, fourcorner: str, sbd_file: Path, within: float) -> None:
    print(f"1. tokens from {fourcorner} token")
    alice = Api(base_url, token(fourcorner, *ALICE))
    bob = Api(base_url, token(fourcorner, *BOB))
    print("2. organisations")
    acme = organisation(alice, ACME)
    widgets = organisation(bob, WIDGETS)
    print("3. participants")
    participant(alice, acme["id"], SENDER, "ACME AB")
    receiver = participant(bob, widgets["id"], RECEIVER, "Widgets AB")
    receives_invoices(bob, widgets["id"], receiver["id"])
    print("4. webhooks")
    hooks = Receiver()
    try:
        hooks.subscribe(
            alice, acme["id"], ["transaction.sent", "transaction.send_failed", "mls.received"]
        )
        hooks.subscribe(bob, widgets["id"], ["transaction.received"])
        print(f"5. send {sbd_file.name}")
        sbd, instance = fresh_instance(sbd_file.read_bytes())
        _, ap = test_services(alice, acme["id"])
        accepted = alice.ok("POST", f"/orgs/{acme['id']}/transactions?ap={ap}", xml=sbd)
        tx_id = accepted["transactionId"]
        print(f"  accepted: transaction {tx_id}, {accepted['transactionStatus']}")
        print("6. see it arrive")
        events = hooks.wait_for(
            {
                (widgets["id"], "transaction.received"),
                (acme["id"], "transaction.sent"),
                (acme["id"], "mls.received"),
            },
            within,
        )
        sent = alice.ok("GET", f"/orgs/{acme['id']}/transactions/{tx_id}")
        print(f"  sent: {sent['transactionStatus']}, MLS {sent.get('mlsResponseCode')}")
        if sent["transactionStatus"] != "COMPLETED" or sent.get("mlsResponseCode") != "AB":
            raise JourneyError(f"the sent transaction is not COMPLETED with MLS AB: {sent}")
    finally:
        hooks.server.shutdown()
    print("7. download what arrived")
    received_id = events["transaction.received"]["payload"]["id"]
    received = bob.ok("GET", f"/orgs/{widgets['id']}/transactions/{received_id}")
    if received["docInstanceId"] != instance:
        raise JourneyError(f"received {received['docInstanceId']}, sent {instance}")
    path = f"/orgs/{widgets['id']}/transactions/{received_id}/business_document"
    document = bob.ok("GET", path)
    if document != sbd:
        raise JourneyError("the received document differs from the one sent")
    artefacts = alice.ok("GET", f"/orgs/{acme['id']}/transactions/{tx_id}/artefacts")["items"]
    print(f"  Widgets AB downloaded {len(document)} bytes, the very document ACME AB sent")
    print(f"  ACME AB's artefacts: {', '.join(sorted(a['type'] for a in artefacts))}")
    print("done: the invoice went from corner 1 to corner 4")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8080", help="the server")
    parser.add_argument(
        "--fourcorner",
        default=str(HERE.parent / ".venv" / "bin" / "fourcorner"),
        help="the fourcorner command (default: the repository's .venv)",
    )
    parser.add_argument("--sbd", type=Path, default=HERE / "invoice.sbd.xml")
    parser.add_argument("--within", type=float, default=60.0, help="seconds to wait for events")
    args = parser.parse_args(argv)
    try:
        journey(args.base_url, args.fourcorner, args.sbd, args.within)
    except (JourneyError, OSError) as e:
        print(f"journey: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
