"""`passkey init`, `passkey list` from the credential identity index without the passphrase, and runtime errors
printed without the usage text (Docs/Store.md, "The credential identity index"). A missing or damaged index, its
message and its rebuild are PasskeyCatalogTests (Swift), in process."""

import json
import os
import stat
import subprocess

from fido2.ctap2 import Ctap2

from conftest import PASSKEY_BIN, PASSPHRASE, Server
from test_cli import populated_store, run  # noqa: F401 (populated_store is a fixture)
from test_interop import RP_ID


def index_path(store_path):
    return os.path.join(os.path.dirname(store_path), "passkeys.index.json")


def test_list_needs_no_passphrase_and_shows_the_last_use(populated_store):
    path, alice = populated_store
    index = index_path(path)
    assert stat.S_IMODE(os.stat(index).st_mode) == 0o600

    listed = run("list", "--store", path, "--json", passphrase=None)
    assert listed.returncode == 0, listed.stderr
    entries = json.loads(listed.stdout)
    assert sorted(entry["userName"] for entry in entries) == ["alice", "bob"]
    for entry in entries:
        assert entry["rpId"] == "example.com" and entry["discoverable"] and entry["rank"] == 0
        assert "lastUsed" not in entry and not entry["damaged"]
    # The same passkeys as the checked listing, by credential ID.
    verified = json.loads(run("list", "--store", path, "--json", "--verify").stdout)
    assert {entry["credentialId"] for entry in entries} == {entry["credentialId"] for entry in verified}

    # Signing in with alice alone records her last use: she is listed first from then on.
    server = Server(path)
    try:
        Ctap2(server.device()).get_assertion(
            RP_ID, b"\x01" * 32, allow_list=[{"type": "public-key", "id": alice.credential_id}]
        )
    finally:
        server.stop()
    entries = json.loads(run("list", "--store", path, "--json", passphrase=None).stdout)
    assert [entry["userName"] for entry in entries] == ["alice", "bob"]
    assert "lastUsed" in entries[0] and "lastUsed" not in entries[1]
    table = run("list", "--store", path, passphrase=None)
    assert table.returncode == 0, table.stderr
    assert "alice" in table.stdout and "last used 20" in table.stdout and "never used" in table.stdout

    # Nothing secret: no key, no sealed blob, no passphrase.
    with open(index) as file:
        text = file.read()
    assert PASSPHRASE not in text and "privateKey" not in text and "sealed" not in text


def test_init_creates_a_store_once_and_never_replaces_it(store_dir):
    path = os.path.join(store_dir, "new", "passkeys.sqlite")
    created = run("init", "--store", path)
    assert created.returncode == 0, created.stderr
    assert f"Created an empty passkey store at {path}." in created.stdout
    assert PASSPHRASE not in created.stdout + created.stderr
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(run("list", "--store", path, "--json", passphrase=None).stdout) == []
    assert json.loads(run("info", "--store", path, "--json").stdout)["passkeys"] == 0

    # A second init is refused on standard error without the usage. The store left byte for byte as it was and
    # still opened by the first passphrase, and nothing made without a passphrase: StoreAccessTests (Swift).
    again = run("init", "--store", path, passphrase="another passphrase")
    assert again.returncode == 1
    assert again.stderr.startswith(f"passkey: a passkey store already exists at {path}; not replacing it (")
    assert "Usage" not in again.stderr

    # A weak passphrase is refused in one line with the rule; the flag for tests waives it (StoreAccessTests).
    weak_path = os.path.join(store_dir, "weak", "passkeys.sqlite")
    weak = run("init", "--store", weak_path, passphrase="abc")
    assert weak.returncode == 1 and not os.path.exists(weak_path)
    assert weak.stderr.startswith(
        "passkey: a new store's passphrase needs at least 12 characters (this one has 3); nothing was created (")
    assert "abc" not in weak.stdout + weak.stderr
    waived = run("init", "--store", weak_path, "--allow-weak-passphrase", passphrase="abc")
    assert waived.returncode == 0, waived.stderr


def test_runtime_errors_print_the_error_and_a_hint_without_the_usage():
    result = run("info", "--store", "/nonexistent/x.sqlite")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "passkey: no passkey store at /nonexistent/x.sqlite "
        "(create one with `passkey init`, or choose another with --store or PASSKEY_STORE)\n"
    )
    listed = run("list", "--store", "/nonexistent/x.sqlite", passphrase=None)
    assert listed.returncode == 1 and "passkey init" in listed.stderr and "Usage" not in listed.stderr
    # An argument problem is one line too, naming the command's help instead of printing the usage.
    usage = run("delete", "--store", "/nonexistent/x.sqlite", "not*an*id")
    assert usage.returncode == 64 and usage.stderr.count("\n") == 1, usage.stderr
    assert usage.stderr.startswith("passkey: ") and "`passkey delete --help`" in usage.stderr


def test_the_overview_is_prose_wrapped_to_the_terminal():
    result = subprocess.run(
        [PASSKEY_BIN, "--help"], capture_output=True, text=True, timeout=60, env=dict(os.environ, COLUMNS="80")
    )
    assert result.returncode == 0
    overview = result.stdout.split("USAGE:")[0]
    assert overview != result.stdout
    assert all(len(line) <= 80 for line in overview.splitlines()), overview
    prose = " ".join(overview.split())
    assert "`passkey serve` exposes the passkeys as a CTAP2 security key" in prose
    for command in ("init", "serve", "scan", "client", "list", "delete", "info"):
        assert f"`{command}`" in prose or f"`passkey {command}`" in prose, command
    assert "  init " in result.stdout  # in the subcommand list
