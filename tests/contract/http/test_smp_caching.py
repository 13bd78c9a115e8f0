"""The built-in SMP's answers and caches: every answer is ``Cache-Control: no-cache`` with an
``ETag``; ``If-None-Match`` naming it (or ``*``) is answered ``304`` without a body while the
answer is unchanged, and with the new answer once a change altered it."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import make_mocked_request
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.entrypoints.http.routing import Req
from fourcorner.entrypoints.http.smp_handlers import CACHE_CONTROL, _xml, entity_tag

from .test_participants import ALICE, gln, receiving_invoices


async def published(api: Any) -> tuple[dict[str, Any], dict[str, Any], list[str], str]:
    """An organisation, its TEST participant given an invoice, the paths of its ServiceGroup,
    SignedServiceMetadata and business card, and of its supported document types."""
    org = await api.org(ALICE)
    made, types, group, metadata = await receiving_invoices(api, org["id"], f"0088:{gln(70)}")
    card = group.replace("/smp/test/", "/smp/test/businesscard/")
    return org, made, [group, metadata, card], types


async def get(api: Any, path: str, method: str = "GET", **headers: str) -> tuple[int, Any, bytes]:
    resp = await api.client.request(method, path, headers=headers)
    return resp.status, resp.headers, await resp.read()


async def test_an_unchanged_answer_is_not_sent_again(api: Any) -> None:
    _, _, paths, _ = await published(api)
    for path in paths:
        status, headers, body = await get(api, path)
        assert status == 200 and body, path
        assert headers["Cache-Control"] == CACHE_CONTROL == "no-cache"
        tag = headers["ETag"]
        assert tag == f'"{entity_tag(body)}"'
        for asked in (tag, f"W/{tag}", "*", f'"other", {tag}'):
            for method in ("GET", "HEAD"):
                status, again, empty = await get(api, path, method, **{"If-None-Match": asked})
                assert (status, empty) == (304, b""), (path, asked, method)
                assert again["ETag"] == tag and again["Cache-Control"] == "no-cache"
        status, again, same = await get(api, path, **{"If-None-Match": '"other"'})
        assert (status, same, again["ETag"]) == (200, body, tag)


async def test_a_changed_answer_is_sent_with_its_new_tag(api: Any) -> None:
    org, made, paths, types = await published(api)
    group = paths[0]
    _, headers, before = await get(api, group)
    status, _ = await api.call("PUT", types, as_=ALICE, json={"supportedDocumentTypes": []})
    assert status == 200
    status, after, body = await get(api, group, **{"If-None-Match": headers["ETag"]})
    assert status == 200 and body != before
    assert after["ETag"] == f'"{entity_tag(body)}"' != headers["ETag"]
    # gone: no answer to keep, none to revalidate
    path = f"/orgs/{org['id']}/participants/batch-delete"
    status, _ = await api.call("POST", path, as_=ALICE, json={"ids": [made["id"]]})
    assert status == 200
    status, _, _ = await get(api, group, **{"If-None-Match": after["ETag"]})
    assert status == 404


async def test_an_answer_to_a_request_with_credentials_is_not_stored(api: Any) -> None:
    """A request with credentials is answered ``no-store`` (as every one with them), also by
    the SMP, which needs none."""
    _, _, paths, _ = await published(api)
    status, headers, _ = await get(api, paths[0], Authorization="Bearer nothing")
    assert status == 200 and headers["Cache-Control"] == "no-store"


TAGS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=22)


@given(
    st.binary(max_size=64),
    st.lists(st.tuples(TAGS | st.just("*"), st.booleans()), max_size=4),
    st.data(),
)
def test_if_none_match_holds_the_tag_or_not(body: bytes, others: Any, data: Any) -> None:
    """``304`` exactly when ``If-None-Match`` names the answer's tag, weak or strong, or is
    ``*``, bare; any other list of tags gets the answer (``"*"`` quoted is a tag, not the
    wildcard)."""
    tag = entity_tag(body)
    listed = [(t, weak) for t, weak in others if t != tag]
    named = data.draw(st.booleans(), label="named")
    if named:
        listed.insert(data.draw(st.integers(0, len(listed))), (tag, data.draw(st.booleans())))
    header = ", ".join(f'{"W/" if weak else ""}"{t}"' for t, weak in listed)
    if data.draw(st.booleans(), label="any") and not listed:
        header, named = "*", True
    request = make_mocked_request("GET", "/smp/test/x", headers={"If-None-Match": header})
    reply = _xml(Req(request, None, None), body)
    assert reply.body.status == (304 if named else 200)
    assert reply.body.headers["ETag"] == f'"{tag}"'


async def test_the_api_document_tells_the_smps_headers_and_304(api: Any) -> None:
    resp = await api.client.get("/openapi.json")
    document = await resp.json()
    smp = {p: ops["get"] for p, ops in document["paths"].items() if p.startswith("/smp/")}
    assert len(smp) == 3
    for operation in smp.values():
        answers = operation["responses"]
        assert set(answers["200"]["headers"]) == {"Cache-Control", "ETag"}
        assert answers["304"]["headers"]["Cache-Control"]["schema"]["const"] == "no-cache"
