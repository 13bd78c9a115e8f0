"""The validation rules, the SchXslt compiler and the rules' test data are the published bytes,
and every rule file is shipped as package data."""

from __future__ import annotations

import fnmatch
import hashlib
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from fourcorner.adapters.validation.rules import DATA_PACKAGE, RULES
from validation_cases import DATA

SHA256 = {
    "schematron/CEN-EN16931-CII.sch": "0c61f2cba3c79281384a0a8bec0b261cd0e28c0d8b44ea5175252eaf21bf8a50",
    "schematron/CEN-EN16931-UBL.sch": "3c4d9d9161eca5f0a7e02d8a83975a90838439364d7c34007e8e4a32f342be1e",
    "schematron/PEPPOL-EN16931-CII.sch": "78dcef8d4a2d502e16affbb342f319aaea985da5b1154d529c8627fb628e7a89",
    "schematron/PEPPOL-EN16931-UBL.sch": "2840f5158f7bbdbf3b3f5d2ea391b9ac9e649e1fdbba8502bd8c15ec52924f23",
    "schxslt/LICENSE": "74a1f0e7dcb8d2d4a619180c331e1ed5692850cc278866fc21f460e1252f2f42",
    "schxslt/compile-for-svrl.xsl": "9f64f1ea1164094f1b6dd20d67b40af8b124f3a3579fa2dec07c64359cc108b3",
    "schxslt/compile/api-2.0.xsl": "d4df046564af3ba3d9f10976e29cbea1a6c45c746e3e53efcea8377c42c3c8e9",
    "schxslt/compile/compile-2.0.xsl": "5f24b8b28be50d650542c5113185ed55983beeaad061eddc4b966ca354751a57",
    "schxslt/compile/functions.xsl": "e7d96717677ac768a72edda3b9f45e67c40476525247906271c42b652cf3b397",
    "schxslt/compile/templates.xsl": "afd07c44eeb70b8e9daf0feb1319ca655468f06543437c8ecf0e5a232b3038c8",
    "schxslt/expand.xsl": "97bc8bee61b23592fe4937f261b47cb0e3725c25516084a9788d33e102cbba79",
    "schxslt/include.xsl": "ab6f9359c7a1a17a589568d91bab766f53fc98064beb8cc976e6e3319afb2b24",
    "schxslt/pipeline-for-svrl.xsl": "64a535e6d0f0baa809f987d27d9e5b825d420e9ebda7344ef53edf136cdd42fa",
    "schxslt/pipeline.xsl": "d0189741f5e6119b76b6914413e1a7c92427efef6f2ecb9b2c34e833c533ec1f",
    "schxslt/svrl.xsl": "d2d8ea16cdbb6b0d0efd6d39955459ebcdf511000c24dda38220961f1d7e2611",
    "schxslt/util/normalize-svrl.xsl": "37a75ed72e61a820a29e583e483ac9f32bb9d0615513f27f944ac9b2b1e5ed68",
    "schxslt/version.xsl": "58e1b29b21df2be5233739fa9787fe2316b0438d03cad380e17acd3af4481582",
}
# over "<path> <sha256>\n" of every file of tests/data/validation but its README, sorted by path
TEST_DATA_DIGEST = "e920da92e80ba7cf535066b6fb12b8b239e9218691c0175822f4bf35b941086e"
ROOT = Path(__file__).resolve().parents[2]


def _data_files() -> list[str]:
    base = Path(str(resources.files(DATA_PACKAGE)))
    return sorted(
        p.relative_to(base).as_posix()
        for p in base.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and p.name != "README.md"
    )


@pytest.mark.parametrize(("name", "digest"), SHA256.items())
def test_rule_files_are_the_published_bytes(name, digest):
    data = (resources.files(DATA_PACKAGE) / name).read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest


def test_no_other_file_is_in_the_data_folder():
    assert _data_files() == sorted(SHA256)


def test_every_rule_set_names_a_shipped_file():
    assert {r.file for rule_sets in RULES.values() for r in rule_sets} <= set(SHA256)


def test_package_data_ships_every_rule_file():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"][DATA_PACKAGE]
    assert "README.md" in patterns
    for name in _data_files():
        assert any(
            fnmatch.fnmatch(name, p) and name.count("/") == p.count("/") for p in patterns
        ), name


def test_the_test_data_are_the_published_bytes():
    files = sorted(p for p in DATA.rglob("*") if p.is_file() and p.name != "README.md")
    digest = hashlib.sha256()
    for p in files:
        line = f"{p.relative_to(DATA).as_posix()} {hashlib.sha256(p.read_bytes()).hexdigest()}\n"
        digest.update(line.encode())
    assert digest.hexdigest() == TEST_DATA_DIGEST
