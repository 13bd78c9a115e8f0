"""Start-up problems, each with the real ``fourcorner`` command as a subprocess: every one is
reported in one line (what is wrong, which setting, what to do) with a non-zero exit status
and no traceback; typos in setting names are named with the closest known name; the help,
``--version``, ``migrate``'s report and ``token``'s refusal without server state."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import pg
from fourcorner.entrypoints import cli

from .test_serve import free_port

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent / "fourcorner"
COMMANDS = ("serve", "worker", "migrate", "replace-operator-certificate", "token", "check")


def run(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FOURCORNER_")}
    environ |= {"FOURCORNER_DATA_DIR": str(data_dir), "FOURCORNER_PORT": str(free_port())}
    environ |= {f"FOURCORNER_{k.upper()}": v for k, v in env.items()}
    return subprocess.run(
        [str(BIN), *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def refused(proc: subprocess.CompletedProcess[str], status: int, *says: str) -> str:
    """The one error line of a refused command, checked to say each of ``says``."""
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("fourcorner: error:")]
    assert len(errors) == 1, proc.stderr
    for text in says:
        assert text in errors[0], (text, errors[0])
    return errors[0]


@pytest.mark.parametrize(("command", "setting"), [("serve", "port"), ("worker", "worker_port")])
def test_a_port_in_use_is_named_with_the_setting(tmp_path, command, setting):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run(tmp_path, command, **{setting: str(port)})
    named = f"FOURCORNER_{setting.upper()}"
    refused(proc, 1, f"cannot listen on 127.0.0.1:{port}", "in use", f"set {named} to a free")


def test_an_unreachable_database_is_waited_for_with_progress_then_named_with_the_reason(
    tmp_path,
):
    port = free_port()  # nothing listens there
    url = f"postgresql://app@127.0.0.1:{port}/fourcorner"
    for command in ("serve", "migrate", "worker"):
        proc = run(tmp_path, command, "--db-wait", "2", database_url=url)
        line = refused(
            proc,
            1,
            f"connection refused at 127.0.0.1:{port}",
            "(waited 2 s)",
            "FOURCORNER_DATABASE_URL",
        )
        assert "app" not in line.split("cannot be used")[0]  # the address, not the user
        assert "fourcorner: waiting for the database" in proc.stderr  # progress was shown


@pytest.mark.postgres
def test_a_database_that_refuses_the_role_is_named_at_once(tmp_path):
    pg.require()
    role = f"fc_nobody_{uuid.uuid4().hex[:8]}"
    url = re.sub(r"//[^@/]*@", f"//{role}@", pg.URL)
    proc = run(tmp_path, "migrate", database_url=url)
    refused(proc, 1, f'role "{role}" does not exist', "create the role")
    assert "waiting for the database" not in proc.stderr  # waiting would not cure it


def test_a_data_dir_that_is_a_file_is_refused(tmp_path):
    file = tmp_path / "var"
    file.write_text("not a folder")
    for command in ("serve", "migrate"):
        refused(run(file, command), 1, "FOURCORNER_DATA_DIR", "is a file, not a folder")


@contextmanager
def unwritable_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder this process's user cannot write in. Root writes through file modes, so as
    root the folder is made immutable (``chattr +i``), or else sysfs is used."""
    folder = tmp_path / "var"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        return
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False).returncode:
        if not Path("/sys/kernel").is_dir():
            pytest.skip("no way to make a folder unwritable for root here")
        yield Path("/sys/kernel")
        return
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_data_dir_that_cannot_be_written_is_refused(tmp_path):
    with unwritable_folder(tmp_path) as data:
        proc = run(data, "migrate")
    refused(proc, 1, f"FOURCORNER_DATA_DIR: {data} is not writable", "write access")


def test_a_bad_at_rest_key_is_refused(tmp_path):
    refused(run(tmp_path, "serve", at_rest_key="c2hvcnQ="), 2, "FOURCORNER_AT_REST_KEY")
    damaged = tmp_path / "keys" / "at-rest.key"
    damaged.parent.mkdir()
    damaged.write_bytes(b"12345")
    refused(run(tmp_path, "serve"), 1, str(damaged), "holds 5 bytes, not 32", "backup")


def test_a_bad_previous_at_rest_key_is_refused(tmp_path):
    for command in ("serve", "worker", "reseal"):
        proc = run(tmp_path, command, at_rest_key_previous="not a key")
        refused(proc, 2, "FOURCORNER_AT_REST_KEY_PREVIOUS is not the base64 of 32 bytes")


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (("serve",), {"port": "abc"}, "FOURCORNER_PORT='abc' is not a whole number"),
        (("serve",), {"log_level": "loud"}, "FOURCORNER_LOG_LEVEL='loud' is not a log level"),
        (("worker",), {"workers": "perhaps"}, "FOURCORNER_WORKERS='perhaps' is not true"),
        (("migrate",), {"database_url": "mysql://db/x"}, "unknown scheme 'mysql'"),
        (("token", "--email", "a@example.com", "--hours", "-1"), {}, "--hours: -1 is not"),
        (("token", "--email", "a@example.com", "--hours", "x"), {}, "'x' is not a number"),
        (("serve", "--db-wait", "-5"), {}, "--db-wait: -5 is not between"),
    ],
)
def test_a_bad_value_is_refused_in_one_line(tmp_path, args, env, says):
    proc = run(tmp_path, *args, **env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert says in proc.stderr.strip().splitlines()[-1], proc.stderr


def test_a_missing_or_unparsable_config_file_is_named_with_the_line(tmp_path):
    missing = tmp_path / "missing.toml"
    refused(run(tmp_path, "serve", config_file=str(missing)), 2, str(missing), "does not exist")
    broken = tmp_path / "broken.toml"
    broken.write_text('port = 8080\nhost = "127.0.0.1\n')
    refused(
        run(tmp_path, "serve", config_file=str(broken)), 2, str(broken), "not valid TOML", "line 2"
    )


def test_an_unknown_key_in_the_config_file_is_refused_with_the_closest_name(tmp_path):
    file = tmp_path / "fourcorner.toml"
    file.write_text('databse_url = "postgresql://db.example/fc"\n')
    refused(
        run(tmp_path, "migrate", config_file=str(file)),
        2,
        str(file),
        "'databse_url' (did you mean database_url?)",
    )


def test_an_unknown_environment_variable_is_warned_about_with_the_closest_name(tmp_path):
    proc = run(tmp_path, "migrate", databse_url="postgresql://db.example/fc")
    assert proc.returncode == 0, proc.stderr
    assert (
        "fourcorner: warning: FOURCORNER_DATABSE_URL is not a setting and is ignored "
        "(did you mean FOURCORNER_DATABASE_URL?)"
    ) in proc.stderr
    assert "sqlite" in proc.stdout  # it said where it went instead


def test_migrate_says_what_it_applied(tmp_path):
    first = run(tmp_path, "migrate")
    assert first.returncode == 0, first.stderr
    assert not (tmp_path / "pki").exists()  # the database only: serve makes the test PKI
    assert re.fullmatch(
        rf"applied \d+ migrations to sqlite:///{tmp_path}/fourcorner\.db: 0001_initial, .*\n",
        first.stdout,
    ), first.stdout
    again = run(tmp_path, "migrate")
    assert (
        again.stdout == f"sqlite:///{tmp_path}/fourcorner.db is up to date: no migration to apply\n"
    )
    memory = run(tmp_path, "migrate", database_url="memory://")
    assert "nothing to migrate" in memory.stdout


def test_token_without_server_state_says_so_and_creates_nothing(tmp_path):
    proc = run(tmp_path, "token", "--email", "a@example.com")
    refused(proc, 1, "no server state", "token-signing-key.pem does not exist", "fourcorner serve")
    assert proc.stdout == ""
    assert not (tmp_path / "keys").exists()
    oidc = run(
        tmp_path,
        "token",
        "--email",
        "a@example.com",
        auth_mode="oidc",
        oidc_issuer="https://id.example.com",
        oidc_audience="fc",
        oidc_jwks_url="https://id.example.com/jwks",
    )
    refused(oidc, 2, "FOURCORNER_AUTH_MODE=local")


def test_help_and_version(tmp_path, capsys):
    top = run(tmp_path, "--help")
    assert top.returncode == 0
    for command in COMMANDS:
        assert re.search(rf"^\s+{command}\s+\w", top.stdout, re.M), top.stdout
    assert "FOURCORNER_CONFIG_FILE" in top.stdout and "docs/operations.md" in top.stdout
    version = run(tmp_path, "--version")
    assert re.fullmatch(r"fourcorner \d+\.\d+\.\d+\S*\n", version.stdout), version.stdout
    options = {
        "serve": ["--db-wait"],
        "worker": ["--db-wait"],
        "migrate": ["--db-wait"],
        "replace-operator-certificate": ["--db-wait"],
        "token": ["--email", "--name", "--superadmin", "--hours"],
        "check": ["--timeout"],
    }
    for command, flags in options.items():  # each page, in process: the same parser
        with pytest.raises(SystemExit) as exit_:
            cli.main([command, "--help"])
        assert exit_.value.code == 0
        page = capsys.readouterr().out
        description = page.split("\n\n")[1]
        assert len(description) > 60, page  # it says what the command does
        for flag in flags:
            assert re.search(rf"^\s+{flag}\b.*\S", page, re.M), (command, flag)
