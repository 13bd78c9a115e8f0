"""The webhook verification code of docs/api.md, run as written against deliveries the
service's own worker signs: genuine ones pass, altered, foreign, stale or unsigned ones do
not; and examples/journey.py uses that same code."""

from __future__ import annotations

import ast
import re
import time
from pathlib import Path
from typing import Any

from .test_webhooks import ALICE, hook, receiver, wait_for  # noqa: F401 - receiver: a fixture

ROOT = Path(__file__).resolve().parents[3]


def guide_snippet() -> str:
    """The Python block under "Verifying a delivery" in docs/api.md."""
    text = (ROOT / "docs" / "api.md").read_text()
    section = text.split("### Verifying a delivery", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None, "docs/api.md has no verification snippet"
    return block.group(1)


def functions(source: str) -> dict[str, str]:
    return {
        node.name: ast.dump(node)
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef)
    }


async def test_the_guides_snippet_verifies_what_the_service_signs(start_api, receiver):  # noqa: F811
    api = await start_api("memory", workers=True, webhook_allow_private_targets=True)
    org = await api.org(ALICE)
    created = await hook(api, org["id"], receiver.url("ok"))
    status, _ = await api.call(
        "POST",
        f"/orgs/{org['id']}/webhooks/trigger-test-event",
        as_=ALICE,
        json={"eventType": "webhook.test"},
    )
    assert status == 200

    async def arrived() -> bool:
        return bool(receiver.calls.get("ok"))

    await wait_for(arrived)
    _, raw_headers, body = receiver.calls["ok"][0]
    headers = {k.lower(): v for k, v in raw_headers.items()}
    namespace: dict[str, Any] = {}
    exec(compile(guide_snippet(), "docs/api.md", "exec"), namespace)  # noqa: S102 - the guide's own code
    verify, verify_hex = namespace["verify_delivery"], namespace["verify_hex"]
    secret = created["secret"]

    assert verify(secret, headers, body) is True
    assert verify_hex(secret, headers, body) is True
    altered = body.replace(b"webhook.test", b"webhook.tesT")
    assert verify(secret, headers, altered) is False
    assert verify_hex(secret, headers, altered) is False
    other = "whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="
    assert verify(other, headers, body) is False
    assert verify_hex(other, headers, body) is False
    stale = {**headers, "webhook-timestamp": str(int(time.time()) - 3600)}
    assert verify(secret, stale, body) is False  # the signature no longer matches, and is old
    resigned_id = {**headers, "webhook-id": "msg_other"}
    assert verify(secret, resigned_id, body) is False
    assert verify(secret, {**headers, "webhook-signature": "v2,abc"}, body) is False


def test_the_journey_uses_the_guides_code():
    journey = functions((ROOT / "examples" / "journey.py").read_text())
    assert journey["verify_delivery"] == functions(guide_snippet())["verify_delivery"]
