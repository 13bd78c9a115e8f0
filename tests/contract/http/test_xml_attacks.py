"""The XML attack corpus against every XML entry point: SBD upload, the pre-signed upload URL,
and the AS4 endpoint. Each is refused quickly (4xx; the AS4 endpoint answers as its protocol
requires, with a signed ebMS error) and nothing is stored."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest

from sbd_factory import make_sbd

from .test_as4_endpoint import error_code, setup
from .test_participants import ALICE, gln, whitelabel
from .test_transactions import receiving_participant

_SBD = make_sbd(sender="0088:7300010000001")
_AT = _SBD.index(b"StandardBusinessDocumentHeader>")
_HEAD, _TAIL = _SBD[:_AT], _SBD[_AT + len(b"StandardBusinessDocumentHeader>") :]
CORPUS = {
    "billion laughs": b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        b'<!ENTITY lol%d "%s">' % (i, b"&lol%d;" % (i - 1) * 10 if i > 1 else b"&lol;" * 10)
        for i in range(1, 10)
    )
    + b"]><lolz>&lol9;</lolz>",
    "quadratic blowup": b'<?xml version="1.0"?><!DOCTYPE kaboom [<!ENTITY a "'
    + b"x" * 50_000
    + b'">]><kaboom>'
    + b"&a;" * 2_000
    + b"</kaboom>",
    "external entity": b'<?xml version="1.0"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><foo>&xxe;</foo>',
    "external DTD": b'<?xml version="1.0"?><!DOCTYPE foo SYSTEM "http://127.0.0.1:9/evil.dtd"><foo/>',
    "deep nesting": b"<a>" * 100_000 + b"</a>" * 100_000,
    "huge attribute": _HEAD
    + b'<StandardBusinessDocumentHeader x="'
    + b"y" * 5_000_000
    + b'">'
    + _TAIL,
    "invalid UTF-8": _SBD.replace(b"HeaderVersion>1.0", b"HeaderVersion>\xff\xfe1.0", 1),
}


@pytest.mark.parametrize("attack", sorted(CORPUS))
async def test_sbd_entry_points_refuse_the_corpus(api, attack):
    org = await api.org(ALICE)
    await receiving_participant(api, org, f"0088:{gln(50)}", ALICE)
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=ALICE)
    ap = aps["items"][0]["id"]
    xml = {"Content-Type": "application/xml"}
    started = time.monotonic()
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/transactions?ap={ap}",
        as_=ALICE,
        data=CORPUS[attack],
        headers=xml,
    )
    assert 400 <= status < 500, body
    _, grant = await api.call(
        "GET", f"/orgs/{org['id']}/transactions/upload_url?ap={ap}", as_=ALICE
    )
    status, body = await api.call(
        "PUT", urlsplit(grant["uploadUrl"]).path, data=CORPUS[attack], headers=xml
    )
    assert 400 <= status < 500, body
    assert time.monotonic() - started < 10
    _, listed = await api.call("GET", f"/orgs/{org['id']}/transactions/to_network", as_=ALICE)
    assert listed["items"] == []


@pytest.mark.parametrize("attack", sorted(CORPUS))
async def test_the_as4_endpoint_refuses_the_corpus(api, attack):
    b, _, path = await setup(api)
    boundary = "x0"
    body = (
        f"--{boundary}\r\nContent-Type: application/soap+xml; charset=UTF-8\r\n\r\n".encode()
        + CORPUS[attack]
        + f"\r\n--{boundary}--\r\n".encode()
    )
    ctype = f'multipart/related; type="application/soap+xml"; boundary="{boundary}"'
    resp = await api.client.post(path, data=body, headers={"Content-Type": ctype})
    assert resp.status == 200 and error_code(await resp.read()) is not None
    _, page = await api.call(
        "GET", f"/orgs/{b['id']}/transactions/from_network", as_="bob@example.com"
    )
    assert page["items"] == []


@pytest.mark.parametrize("attack", sorted(CORPUS))
async def test_certificate_uploads_refuse_the_corpus(api, attack):
    org = await whitelabel(api)
    text = CORPUS[attack][:200_000].decode("utf-8", errors="replace")
    for field in ("certPem", "caChainPem", "privateKeyPem"):
        body = {
            "name": "x",
            "service": "AP",
            "environment": "test",
            "certPem": "-",
            "privateKeyPem": "-",
        }
        body[field] = text
        status, answer = await api.call(
            "POST", f"/orgs/{org['id']}/certificates", as_=ALICE, json=body
        )
        assert status == 400 and f"$.{field}" in [d["field"] for d in answer["details"]], (
            field,
            answer,
        )
    _, listed = await api.call("GET", f"/orgs/{org['id']}/certificates", as_=ALICE)
    assert listed["items"] == []
