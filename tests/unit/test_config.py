"""Settings: every value that cannot be used is refused in one line that names the setting
(as it was given), what is wrong and what to do; unknown names are refused (file) or warned
about (environment) with the closest known one."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.pki import testpki
from fourcorner.adapters.pki.revocation import Policy
from fourcorner.entrypoints.config import (
    ConfigError,
    Settings,
    setting_names,
    unknown_environment,
)
from fourcorner.entrypoints.container import build_container


def load(tmp_path: Path, toml: str | None = None, **env: str) -> Settings:
    environ = {f"FOURCORNER_{k.upper()}": v for k, v in env.items()}
    if toml is not None:
        file = tmp_path / "fourcorner.toml"
        file.write_text(toml)
        environ["FOURCORNER_CONFIG_FILE"] = str(file)
    return Settings.load(environ)


def test_every_field_of_settings_is_a_known_name_in_the_environment_and_the_file(tmp_path):
    fields = attrs.fields(Settings)
    assert setting_names() == tuple(a.name for a in fields)
    environ = {f"FOURCORNER_{a.name.upper()}": "x" for a in fields}
    assert unknown_environment(environ) == []
    lines = "\n".join(f"{a.name} = {_toml(getattr(Settings(), a.name))}" for a in fields)
    assert load(tmp_path, lines) == Settings()


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return repr(value)
    return f'"{value}"'


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("FOURCORNER_DATABSE_URL", "FOURCORNER_DATABASE_URL"),
        ("FOURCORNER_PROT", "FOURCORNER_PORT"),
        ("FOURCORNER_WEBHOOK_TIMOUT", "FOURCORNER_WEBHOOK_TIMEOUT"),
        ("FOURCORNER_DATA_DIRECTORY", "FOURCORNER_DATA_DIR"),
    ],
)
def test_an_unknown_environment_variable_is_warned_about_with_the_closest_name(typo, meant):
    (line,) = unknown_environment({typo: "x", "PATH": "/bin"})
    assert line == f"{typo} is not a setting and is ignored (did you mean {meant}?)"


def test_the_test_suites_and_the_files_variables_are_not_warned_about():
    environ = {"FOURCORNER_TEST_DATABASE_URL": "x", "FOURCORNER_CONFIG_FILE": "f"}
    assert unknown_environment(environ) == []
    assert unknown_environment({"FOURCORNER_ZZZZZZ": "1"}) == [
        "FOURCORNER_ZZZZZZ is not a setting and is ignored"
    ]


def test_a_typo_in_the_database_url_does_not_pass_silently_and_sqlite_stays_the_default():
    environ = {"FOURCORNER_DATABSE_URL": "postgresql://db.example/fc"}
    assert Settings.load(environ).storage_kind == "sqlite"
    assert "FOURCORNER_DATABASE_URL" in unknown_environment(environ)[0]


@pytest.mark.parametrize(
    ("key", "meant"),
    [("prot", "port"), ("databse_url", "database_url"), ("FOURCORNER_PORT", "port")],
)
def test_an_unknown_key_in_the_file_is_refused_with_the_closest_name(tmp_path, key, meant):
    with pytest.raises(ConfigError) as e:
        load(tmp_path, f"{key} = 1\n")
    assert str(e.value) == (
        f"{tmp_path / 'fourcorner.toml'} has an unknown setting: {key.lower()!r} "
        f"(did you mean {meant}?); correct or remove it (see docs/operations.md)"
    )


@given(st.from_regex(r"[a-z][a-z_]{0,20}", fullmatch=True))
def test_any_key_that_is_not_a_setting_is_refused_by_name(key):
    if key in setting_names():
        return
    import tempfile

    with tempfile.TemporaryDirectory() as d, pytest.raises(ConfigError) as e:
        load(Path(d), f"{key} = 1\n")
    assert f"'{key}'" in str(e.value) and "\n" not in str(e.value)


def test_a_missing_or_unparsable_file_is_named_with_the_line(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=f"{missing} .* does not exist; create it"):
        Settings.load({"FOURCORNER_CONFIG_FILE": str(missing)})
    with pytest.raises(ConfigError) as e:
        load(tmp_path, 'port = 8080\nhost = "127.0.0.1\n')
    assert str(e.value).startswith(f"{tmp_path / 'fourcorner.toml'} is not valid TOML: ")
    assert "line 2" in str(e.value)
    with pytest.raises(ConfigError, match="is a directory"):
        Settings.load({"FOURCORNER_CONFIG_FILE": str(tmp_path)})


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"port": "abc"}, "FOURCORNER_PORT='abc' is not a whole number"),
        ({"port": "8080.5"}, "FOURCORNER_PORT='8080.5' is not a whole number"),
        ({"port": "70000"}, "FOURCORNER_PORT=70000 is not a TCP port; use 1 to 65535"),
        (
            {"worker_port": "-1"},
            "FOURCORNER_WORKER_PORT=-1 is not a TCP port; use 1 to 65535, or 0",
        ),
        ({"log_level": "loud"}, "FOURCORNER_LOG_LEVEL='loud' is not a log level; use one of"),
        ({"workers": "maybe"}, "FOURCORNER_WORKERS='maybe' is not true or false"),
        ({"webhook_timeout": "nan"}, "FOURCORNER_WEBHOOK_TIMEOUT='nan' is not a finite number"),
        ({"webhook_timeout": "0"}, "FOURCORNER_WEBHOOK_TIMEOUT=0 must be more than 0 seconds"),
        ({"db_pool_size": "0"}, "FOURCORNER_DB_POOL_SIZE=0 must be at least 1"),
        ({"directory_attempts": "0"}, "FOURCORNER_DIRECTORY_ATTEMPTS=0 must be at least 1"),
        (
            {"as4_inbound_per_address": "-1"},
            "FOURCORNER_AS4_INBOUND_PER_ADDRESS=-1 must be 0 (no limit) or more",
        ),
        (
            {"webhook_per_host": "-1"},
            "FOURCORNER_WEBHOOK_PER_HOST=-1 must be 0 (half of FOURCORNER_WEBHOOK_CONCURRENCY)",
        ),
        ({"at_rest_key": "c2hvcnQ="}, "FOURCORNER_AT_REST_KEY is not the base64 of 32 bytes"),
        (
            {"at_rest_key_previous": "c2hvcnQ="},
            "FOURCORNER_AT_REST_KEY_PREVIOUS is not the base64 of 32 bytes",
        ),
        ({"metrics_token": "short"}, "FOURCORNER_METRICS_TOKEN must be at least 16 printable"),
        ({"metrics_token": "sixteen chars or more"}, "FOURCORNER_METRICS_TOKEN must be at least"),
        ({"database_url": "mysql://u:pw@h/d"}, "FOURCORNER_DATABASE_URL has an unknown scheme"),
        ({"database_schema": "a b"}, "FOURCORNER_DATABASE_SCHEMA='a b' is not a plain"),
        ({"public_url": "example.com"}, "FOURCORNER_PUBLIC_URL='example.com' is not an absolute"),
        ({"seat_id": "X1"}, "FOURCORNER_SEAT_ID='X1' is not a seat id"),
        ({"webhook_retry_delays": "5"}, "FOURCORNER_WEBHOOK_RETRY_DELAYS='5' is not a comma"),
        ({"directory_retry_delays": "30,inf"}, "FOURCORNER_DIRECTORY_RETRY_DELAYS='30,inf' is not"),
        ({"send_retry_delays": "nan,30"}, "FOURCORNER_SEND_RETRY_DELAYS='nan,30' is not a comma"),
        ({"directory_retry_delays": "30,-1"}, "FOURCORNER_DIRECTORY_RETRY_DELAYS='30,-1' is not"),
        ({"auth_mode": "oidc"}, "FOURCORNER_AUTH_MODE=oidc needs FOURCORNER_OIDC_ISSUER"),
        ({"blob_store": "s3"}, "FOURCORNER_BLOB_STORE='s3' is not a blob store; use filesystem"),
        ({"blob_store": "postgres"}, "FOURCORNER_BLOB_STORE=postgres needs a PostgreSQL"),
        ({"revocation": "strict"}, "FOURCORNER_REVOCATION='strict' is not a revocation policy"),
        ({"revocation_wait_seconds": "90"}, "FOURCORNER_REVOCATION_WAIT_SECONDS=90 is out of"),
        ({"revocation_grace_seconds": "-1"}, "FOURCORNER_REVOCATION_GRACE_SECONDS=-1 is out of"),
        (
            {"revocation_grace_seconds": "1e12"},
            "FOURCORNER_REVOCATION_GRACE_SECONDS=1e+12 is out of range; use 0 to 2592000 seconds",
        ),
        ({"revocation_timeout": "0"}, "FOURCORNER_REVOCATION_TIMEOUT=0 is out of range"),
        (
            {"smp_technical_contact": "ftp://ap.example/contact"},
            "FOURCORNER_SMP_TECHNICAL_CONTACT='ftp://ap.example/contact' is not a contact",
        ),
        (
            {"webhook_hex_signature_header": "bad header"},
            "FOURCORNER_WEBHOOK_HEX_SIGNATURE_HEADER='bad header' is not an HTTP header name",
        ),
        (
            {"webhook_hex_signature_header": ""},
            "FOURCORNER_WEBHOOK_HEX_SIGNATURE_HEADER='' is not an HTTP header name",
        ),
        (
            {"webhook_hex_signature_header": "x-sign:"},
            "FOURCORNER_WEBHOOK_HEX_SIGNATURE_HEADER='x-sign:' is not an HTTP header name",
        ),
        (  # the setting named once, then the entry that is wrong and what to do
            {"dns_nameservers": "10.0.0.2, foo.example"},
            "FOURCORNER_DNS_NAMESERVERS: 'foo.example' is not an IP address; name each DNS "
            "server by its address",
        ),
        (
            {"smp_technical_contact": "mailto:no address"},
            "FOURCORNER_SMP_TECHNICAL_CONTACT='mailto:no address' is not a contact an SMP",
        ),
    ],
)
def test_a_bad_value_is_refused_in_one_line_naming_the_setting(tmp_path, env, says):
    with pytest.raises(ConfigError) as e:
        load(tmp_path, **env)
    assert str(e.value).startswith(says) and "\n" not in str(e.value)
    assert "pw" not in str(e.value)  # no password of a database URL is repeated


def test_a_header_name_of_any_token_character_is_taken(tmp_path):
    name = "X-Sign_v2.1!#$%&'*+^`|~"
    assert load(tmp_path, webhook_hex_signature_header=name).webhook_hex_signature_header == name


def test_a_bad_dns_server_names_the_setting_once(tmp_path):
    with pytest.raises(ConfigError) as e:
        load(tmp_path, dns_nameservers="foo.example")
    assert str(e.value).count("FOURCORNER_DNS_NAMESERVERS") == 1, str(e.value)
    assert str(e.value).count("foo.example") == 1, str(e.value)


def test_a_bad_value_in_the_file_is_named_with_the_file(tmp_path):
    with pytest.raises(ConfigError) as e:
        load(tmp_path, 'port = "abc"\n')
    assert str(e.value).startswith(f"port in {tmp_path / 'fourcorner.toml'}='abc' is not a whole")
    with pytest.raises(ConfigError, match="is not a single value"):
        load(tmp_path, "port = [1, 2]\n")


def test_the_environment_wins_over_the_file(tmp_path):
    assert load(tmp_path, "port = 9000\n", port="9001").port == 9001
    assert load(tmp_path, "port = 9000\n").port == 9000


def test_an_unset_schema_means_the_servers_default():
    url = {"FOURCORNER_DATABASE_URL": "postgresql://db.example/fc"}
    unset = build_container(Settings.load(url)).storage_adapter()
    assert unset.schema is None
    named = Settings.load({**url, "FOURCORNER_DATABASE_SCHEMA": "fc"})
    assert build_container(named).storage_adapter().schema == "fc"


@pytest.mark.parametrize(
    ("database", "chosen", "kind"),
    [
        ("postgresql://db.example/fc", "", "postgres"),  # shared through the database
        ("postgresql://db.example/fc", "filesystem", "filesystem"),
        ("postgresql://db.example/fc", "Postgres", "postgres"),
        ("", "", "filesystem"),  # SQLite: one machine, files beside the database
        ("sqlite:///var/x.db", "filesystem", "filesystem"),
        ("memory://", "", "memory"),
        ("memory://", "filesystem", "filesystem"),
    ],
)
def test_blobs_go_to_the_database_on_postgresql_unless_files_are_chosen(database, chosen, kind):
    env = {"FOURCORNER_DATABASE_URL": database, "FOURCORNER_BLOB_STORE": chosen}
    assert Settings.load(env).blob_kind == kind


def test_a_good_at_rest_key_passes_and_every_problem_is_listed():
    key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="  # 32 bytes
    assert Settings(at_rest_key=key).check().at_rest_key == key
    for previous in (key, "", " "):  # the previous key: as the current one, or none at all
        assert Settings(at_rest_key_previous=previous).check().at_rest_key_previous == previous
    problems = Settings(port=0, log_level="x", db_pool_size=0).problems()
    assert [p.split("=")[0] for p in problems] == [
        "FOURCORNER_PORT",
        "FOURCORNER_LOG_LEVEL",
        "FOURCORNER_DB_POOL_SIZE",
    ]


# --- the directory of each environment ---------------------------------------------------------


@pytest.mark.parametrize("env", ["test", "prod"])
@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("test-directory.example/indexer/1.0/", "is not an absolute http:// or https:// URL"),
        ("ftp://directory.example/indexer/", "is not an absolute http:// or https:// URL"),
        (
            "https://directory.example/indexer/?x=1",
            "has a query or fragment; give the base URL only",
        ),
    ],
)
def test_a_bad_directory_url_of_either_environment_is_refused_at_start(tmp_path, env, url, says):
    name = f"FOURCORNER_DIRECTORY_URL_{env.upper()}"
    with pytest.raises(ConfigError) as e:
        load(tmp_path, **{f"directory_url_{env}": url})
    assert str(e.value) == f"{name}={url!r} {says}"


def test_each_environment_names_its_own_directory(tmp_path):
    test, prod = "https://test-directory.example/indexer/1.0/", "https://directory.example/i/"
    settings = load(tmp_path, f'directory_url_prod = "{prod}"\n', directory_url_test=test)
    assert (settings.directory_url_test, settings.directory_url_prod) == (test, prod)
    assert Settings().directory_url_test == Settings().directory_url_prod == ""


def test_the_former_single_directory_url_is_refused_naming_the_two_settings(tmp_path):
    """One indexer for both environments mixed an identifier's TEST and PROD cards: neither
    read as both nor ignored (a publication would seem to work), it stops the start."""
    url = "https://directory.example/indexer/1.0/"
    with pytest.raises(ConfigError) as e:
        load(tmp_path, directory_url=url)
    said = str(e.value)
    assert said.startswith("FOURCORNER_DIRECTORY_URL is no longer a setting") and "\n" not in said
    assert "FOURCORNER_DIRECTORY_URL_TEST" in said and "FOURCORNER_DIRECTORY_URL_PROD" in said
    with pytest.raises(ConfigError) as e:
        load(tmp_path, f'directory_url = "{url}"\n')
    said = str(e.value)
    assert said.startswith(f"{tmp_path / 'fourcorner.toml'}: 'directory_url' is no longer")
    assert "FOURCORNER_DIRECTORY_URL_TEST" in said and url not in said


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot be read (no such file or directory)"),
        ("", "holds no PEM certificate"),
        ("not a certificate\n", "holds no PEM certificate"),
        (
            "-----BEGIN CERTIFICATE-----\nbm90IERFUg==\n-----END CERTIFICATE-----\n",
            "holds no PEM certificate",
        ),
    ],
)
def test_a_directory_ca_file_that_holds_no_certificate_is_refused_at_start(tmp_path, content, says):
    ca = tmp_path / "directory-ca.pem"
    if content is not None:
        ca.write_text(content)
    with pytest.raises(ConfigError) as e:
        load(tmp_path, directory_ca_file=str(ca))
    said = str(e.value)
    assert said.startswith(f"FOURCORNER_DIRECTORY_CA_FILE={str(ca)!r} {says}"), said
    assert "name a PEM bundle" in said and "\n" not in said


def test_a_directory_ca_file_that_is_a_folder_is_refused_at_start(tmp_path):
    with pytest.raises(ConfigError) as e:
        load(tmp_path, directory_ca_file=str(tmp_path))
    assert str(e.value).startswith(f"FOURCORNER_DIRECTORY_CA_FILE={str(tmp_path)!r} cannot be read")


def test_a_directory_ca_file_of_pem_certificates_is_taken(tmp_path):
    ca = tmp_path / "directory-ca.pem"
    one, _ = testpki.new_ca("directory CA one")
    two, _ = testpki.new_ca("directory CA two")
    ca.write_text(testpki.cert_pem(one) + testpki.cert_pem(two))
    assert load(tmp_path, directory_ca_file=str(ca)).directory_ca_file == str(ca)
    assert Settings().directory_ca_file == ""


@pytest.mark.parametrize("policy", ["off", "soft", "HARD"])
def test_the_revocation_settings_reach_the_checker(policy):
    settings = Settings.load({"FOURCORNER_REVOCATION": policy})
    checker = build_container(settings).revocation()
    assert checker.policy is Policy(policy.lower())
    assert Settings.load({}).revocation == "soft"


@pytest.mark.parametrize(
    "contact", ["", "https://ap.example/support", "mailto:operations@ap.example"]
)
def test_an_smp_technical_contact_is_an_http_url_or_a_mail_address(tmp_path, contact):
    assert load(tmp_path, smp_technical_contact=contact).smp_technical_contact == contact
