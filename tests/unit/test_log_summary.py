"""The configuration summary of the start line names what an operator needs and no secret."""

import base64
import json
import logging

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from fourcorner.entrypoints.commands import serve
from fourcorner.entrypoints.commands.serve import configuration_summary
from fourcorner.entrypoints.config import Settings

KEY = base64.b64encode(bytes(range(32))).decode()
SAFE = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=8, max_size=20)


@given(password=SAFE, user=SAFE)
def test_the_database_password_and_the_at_rest_key_never_appear(password: str, user: str) -> None:
    # a value the summary shows anyway (a port, an id, "database") is no leak: only values
    # that the summary without them does not contain tell
    plain = json.dumps(
        configuration_summary(Settings(database_url="postgresql://db.example:5433/fc")),
        default=str,
    )
    assume(password not in plain and user not in plain)
    token = f"metrics-{password}"
    for url in (
        f"postgresql://{user}:{password}@db.example:5433/fc",
        f"postgresql://{user}@db.example:5433/fc?password={password}",
    ):
        settings = Settings(
            database_url=url,
            at_rest_key=KEY,
            oidc_issuer="https://idp.example",
            metrics_token=token,
        )
        text = json.dumps(configuration_summary(settings), default=str)
        assert password not in text and KEY not in text and user not in text
        summary = configuration_summary(settings)
        assert summary["database"] == "postgresql://db.example:5433/fc (the default schema)"
        assert summary["oidc_issuer"] == "https://idp.example" and summary["port"] == 8080
        assert "database_url" not in summary and "at_rest_key" not in summary
        assert "metrics_token" not in summary


def test_the_start_line_logs_the_values_in_effect_not_the_empty_defaults(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="fourcorner"):
        serve._started("worker", Settings(public_url="https://ap.example.com"))
    [start] = [r for r in caplog.records if r.__dict__.get("event") == "service.start"]
    summary = start.__dict__["configuration"]
    assert summary["discovery"] == "fixed"  # the test PKI's one SMP
    assert summary["ap_host"] == "https://ap.example.com/as4"
    assert summary["blob_store"] == "filesystem"  # on SQLite
    certs = configuration_summary(
        Settings(operator_certs_dir="/etc/certs", database_url="postgresql://db/fc")
    )
    assert (certs["discovery"], certs["blob_store"]) == ("sml", "postgres")
    chosen = Settings(
        discovery="fixed", ap_host="https://as4.example.com/in", blob_store="postgres"
    )
    assert configuration_summary(chosen)["ap_host"] == "https://as4.example.com/in"
