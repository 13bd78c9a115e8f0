"""The pre-signed upload URL: a refused upload leaves it unspent; it is spent once only."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from sbd_factory import make_sbd

from .test_flow_validation import sending_org
from .test_participants import ALICE, gln

XML = {"Content-Type": "application/xml"}


async def _sender(api, number: int) -> tuple[str, str, str]:
    """An organisation with a sending participant: its id, the participant and an AP id."""
    org, sender, ap_id = await sending_org(api, number)
    return org["id"], sender, ap_id


async def _url(api, org_id: str, ap_id: str) -> str:
    path = f"/orgs/{org_id}/transactions/upload_url?ap={ap_id}"
    status, grant = await api.call("GET", path, as_=ALICE)
    assert status == 200, grant
    return urlsplit(grant["uploadUrl"]).path


async def _sent(api, org_id: str) -> list[str]:
    _, listed = await api.call("GET", f"/orgs/{org_id}/transactions/to_network", as_=ALICE)
    return [t["id"] for t in listed["items"]]


async def test_a_refused_upload_does_not_spend_the_url(api):
    org_id, sender, ap_id = await _sender(api, 61)
    path = await _url(api, org_id, ap_id)
    refusals = [
        (b"<x/>", XML, 400),  # neither an SBD nor a bare UBL document
        (make_sbd(sender="0088:" + gln(62)), XML, 400),  # not a participant of the org
        (b'{"a": 1}', {"Content-Type": "application/json"}, 415),
        (b"", XML, 400),
    ]
    for body, headers, expected in refusals:
        status, answer = await api.call("PUT", path, data=body, headers=headers)
        assert (status, answer["code"]) != (403, "AT-1022"), answer
        assert status == expected, answer
    assert await _sent(api, org_id) == []
    # the URL still takes a document, once
    status, answer = await api.call("PUT", path, data=make_sbd(sender=sender), headers=XML)
    assert status == 202, answer
    status, again = await api.call("PUT", path, data=make_sbd(sender=sender), headers=XML)
    assert status == 403 and again["code"] == "AT-1022", again
    assert await _sent(api, org_id) == [answer["transactionId"]]


async def test_concurrent_uploads_to_one_url_send_one_document(api):
    """However many PUTs race on one URL (each a different document), one is taken."""
    org_id, sender, ap_id = await _sender(api, 63)
    rounds = 5
    for _ in range(rounds):
        path = await _url(api, org_id, ap_id)
        answers = await asyncio.gather(
            *(api.call("PUT", path, data=make_sbd(sender=sender), headers=XML) for _ in range(6))
        )
        assert sorted(status for status, _ in answers) == [202] + [403] * 5, answers
    assert len(await _sent(api, org_id)) == rounds
