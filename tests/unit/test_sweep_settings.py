"""The blob sweep's settings: read from the environment, with documented defaults, and a grace
period or interval that could not work refused at start."""

from __future__ import annotations

import pytest

from fourcorner.entrypoints.config import Settings


def test_the_sweep_settings_default_to_an_hour_and_ten_minutes() -> None:
    settings = Settings.load({})
    assert settings.blob_sweep_grace_seconds == 3600
    assert settings.blob_sweep_interval_seconds == 600


def test_the_sweep_settings_are_read_from_the_environment() -> None:
    settings = Settings.load(
        {
            "FOURCORNER_BLOB_SWEEP_GRACE_SECONDS": "7200",
            "FOURCORNER_BLOB_SWEEP_INTERVAL_SECONDS": "30",
        }
    )
    assert (settings.blob_sweep_grace_seconds, settings.blob_sweep_interval_seconds) == (7200, 30)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FOURCORNER_BLOB_SWEEP_GRACE_SECONDS", "0"),
        ("FOURCORNER_BLOB_SWEEP_GRACE_SECONDS", "-5"),
        ("FOURCORNER_BLOB_SWEEP_GRACE_SECONDS", "an hour"),
        ("FOURCORNER_BLOB_SWEEP_INTERVAL_SECONDS", "0"),
    ],
)
def test_a_sweep_setting_that_cannot_work_is_refused(name: str, value: str) -> None:
    with pytest.raises(ValueError, match="FOURCORNER_BLOB_SWEEP"):
        Settings.load({name: value})
