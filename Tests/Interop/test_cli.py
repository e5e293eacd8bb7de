"""The command-line tool, run as a user would: outputs, exit codes, standard output and error.

What the commands decide (bad stores refused and left untouched, the serving lock, a missing index) is proved in
process by Tests/PasskeyProviderTests (PasskeyCatalogTests, StoreAccessTests)."""

import hashlib
import json
import os
import subprocess

import pytest

from conftest import PASSKEY_BIN, PASSPHRASE, Server
from test_interop import register


def run(*args, passphrase=PASSPHRASE, **kwargs):
    env = dict(os.environ)
    env.pop("PASSKEY_PASSPHRASE", None)
    if passphrase is not None:
        env["PASSKEY_PASSPHRASE"] = passphrase
    if "input" not in kwargs:
        kwargs["stdin"] = subprocess.DEVNULL
    return subprocess.run([PASSKEY_BIN, *args], capture_output=True, text=True, env=env, timeout=60, **kwargs)


def digest(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


@pytest.fixture
def populated_store(store_dir):
    path = os.path.join(store_dir, "passkeys.sqlite")
    server = Server(path)
    try:
        device = server.device()
        alice, _ = register(device, "alice", b"user-alice")
        register(device, "bob", b"user-bob")
    finally:
        server.stop()
    return path, alice


def test_demo_registers_and_signs_in_across_devices():
    result = run("demo", passphrase=None)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "relay listening on ws://127.0.0.1:" in out
    assert "FIDO:/" in out
    assert out.count("relying party: response verified") == 2
    assert "registered: credential" in out
    assert "signed in as alice: signature verified, user verified true" in out
    assert 'auto-approved: example.com: create a passkey for "alice"?' in out
    assert "computer: NotAllowedError: the authenticator could not be reached: no nearby authenticator answered within 2 s" in out
    assert "relay_tunnels_paired_total 2" in out
    # No private key material or passphrase is ever printed.
    assert "privateKey" not in out and "passphrase" not in out.lower()


def test_list_delete_and_info(populated_store):
    path, alice = populated_store
    listed = json.loads(run("list", "--store", path, "--json").stdout)
    assert sorted(entry["userName"] for entry in listed) == ["alice", "bob"]
    assert all(entry["rpId"] == "example.com" and entry["discoverable"] for entry in listed)
    assert all("privateKey" not in entry for entry in listed)

    table = run("list", "--store", path, "--rp", "example.com")
    assert table.returncode == 0 and "alice" in table.stdout and "bob" in table.stdout
    assert "No passkeys for other.example." in run("list", "--store", path, "--rp", "other.example").stdout

    alice_id = next(entry["credentialId"] for entry in listed if entry["userName"] == "alice")
    # Without a terminal to ask and without --yes, nothing is deleted.
    unasked = run("delete", "--store", path, "--", alice_id)
    assert unasked.returncode == 1 and "this needs your confirmation" in unasked.stderr, unasked.stderr
    deleted = run("delete", "--store", path, "--yes", "--", alice_id)
    assert deleted.returncode == 0, deleted.stderr
    assert "Deleted the passkey for example.com (alice)." in deleted.stdout
    assert 'auto-approved: Delete the passkey for "alice" at example.com?' in deleted.stderr, deleted.stderr
    assert [entry["userName"] for entry in json.loads(run("list", "--store", path, "--json").stdout)] == ["bob"]

    again = run("delete", "--store", path, "--yes", "--", alice_id)
    assert again.returncode != 0 and "no passkey with credential ID" in again.stderr
    garbage = run("delete", "--store", path, "not*an*id")
    assert garbage.returncode != 0 and "is not a base64url or hex credential ID" in garbage.stderr

    info = json.loads(run("info", "--store", path, "--json").stdout)
    assert info["aaguid"] == "8391e378-32c7-4aa5-ad16-6f0cf4ad7b23"
    assert info["passkeys"] == 1
    assert info["kdf"].startswith("scrypt(")
    # The modes, their getInfo options and the text layout: AuthenticatorReportTests (Swift).
    assert [mode["command"] for mode in info["modes"]] == ["serve", "serve --pin-only", "scan"]
    text = run("info", "--store", path).stdout
    assert "  passkeys    1\n" in text


def test_note_reads_a_pipe_or_a_file_and_list_shows_it(populated_store, store_dir):
    """`passkey note`'s I/O contract: the note from a pipe (all of it) or --file, --show prints it, `list --notes`
    and its JSON carry it, --clear removes it; a bad note is one line and changes nothing. The store file never
    holds the note in clear text. The rules themselves: NoteText and NoteTests (Swift)."""
    path, _ = populated_store
    listed = json.loads(run("list", "--store", path, "--json").stdout)
    alice = next(entry["credentialId"] for entry in listed if entry["userName"] == "alice")
    saved = run("note", "--store", path, "--", alice, input="codes in the red folder\nsecond line\n")
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout == 'Saved the note of the passkey for example.com "alice".\n'
    shown = run("note", "--store", path, "--show", "--", alice)
    assert shown.stdout == "codes in the red folder\nsecond line\n"
    table = run("list", "--store", path, "--notes").stdout
    assert "    note  codes in the red folder\n          second line\n" in table
    notes = {entry["userName"]: entry.get("note") for entry in json.loads(run("list", "--store", path, "--notes", "--json").stdout)}
    assert notes == {"alice": "codes in the red folder\nsecond line", "bob": None}
    # Without --notes, list reads the index only and shows no note.
    assert "note" not in run("list", "--store", path).stdout
    for name in os.listdir(store_dir):
        with open(os.path.join(store_dir, name), "rb") as file:
            assert b"red folder" not in file.read(), name

    note_file = os.path.join(store_dir, "note.txt")
    with open(note_file, "w") as file:
        file.write("from a file")
    assert run("note", "--store", path, "--file", note_file, "--", alice).returncode == 0
    assert run("note", "--store", path, "--show", "--", alice).stdout == "from a file\n"

    before = digest(path)
    bad = run("note", "--store", path, "--", alice, input="bell \x07 here")
    assert bad.returncode == 1 and bad.stderr == "passkey: the note holds a control or format character\n"
    empty = run("note", "--store", path, "--", alice, input="\n")
    assert empty.returncode == 1 and "the note is empty" in empty.stderr and "--clear" in empty.stderr
    assert digest(path) == before
    assert run("note", "--store", path, "--show", "--", alice).stdout == "from a file\n"

    cleared = run("note", "--store", path, "--clear", "--", alice)
    assert cleared.stdout == 'Removed the note of the passkey for example.com "alice".\n'
    missing = run("note", "--store", path, "--show", "--", alice)
    assert missing.returncode == 1
    assert missing.stderr == 'passkey: the passkey for example.com "alice" has no note\n'


def test_serve_arguments_unattended_mode_and_a_store_it_cannot_use(populated_store, store_dir):
    """serve's I/O contract: bad arguments fail before any store is made (64 without exactly one transport), --yes
    is announced on standard error with each approval, and a store serve cannot use is an error before "listening",
    never after (issue 10, defect 9). The serving lock (a second serve refused naming the first, `list` meanwhile):
    StoreAccessTests.theServingLockNamesItsHolderLeavesListingFreeAndGoesWithIt (Swift)."""
    import sqlite3

    path = os.path.join(store_dir, "serve.sqlite")
    bad = run("serve", "--udp", "no-port", "--store", path)
    assert bad.returncode != 0 and "passkey: expected HOST:PORT" in bad.stderr
    public = run("serve", "--udp", "0.0.0.0:0", "--store", path, "--yes")
    assert public.returncode != 0 and "0.0.0.0 is not a loopback address" in public.stderr
    neither = run("serve", "--store", path)
    both = run("serve", "--udp", "127.0.0.1:0", "--uhid", "--store", path)
    for result in (neither, both):
        assert result.returncode == 64 and result.stderr == (
            "passkey: give exactly one of --udp HOST:PORT and --uhid (see `passkey serve --help`)\n")
    assert not os.path.exists(path)

    server = Server(path)
    try:
        register(server.device(), "alice", b"user-alice")
    finally:
        stderr = server.stop()
    assert "unattended approval is ON (--yes)" in stderr
    assert 'auto-approved: example.com: create a passkey for "alice"?' in stderr
    assert PASSPHRASE not in stderr

    populated, _ = populated_store
    db = sqlite3.connect(populated)
    db.execute("UPDATE authenticator_settings SET pin_retries = 3")  # settings changed without the passphrase
    db.commit()
    db.close()
    result = run("serve", "--udp", "127.0.0.1:0", "--store", populated, "--yes")
    assert result.returncode != 0
    assert "listening" not in result.stdout
    assert "integrity check" in result.stderr


def uhid_open_errno():
    """What a plain open of /dev/uhid does here: None if it opens."""
    try:
        os.close(os.open("/dev/uhid", os.O_RDWR))
        return None
    except OSError as error:
        return error.errno


@pytest.mark.skipif(uhid_open_errno() not in (2, 6, 19), reason="this kernel has uhid")
def test_serve_uhid_explains_a_kernel_without_uhid(store_dir):
    path = os.path.join(store_dir, "serve.sqlite")
    result = run("serve", "--uhid", "--store", path, "--yes")
    assert result.returncode == 1
    assert "passkey: this kernel has no uhid support (/dev/uhid missing or without a driver)" in result.stderr
    assert "sudo modprobe uhid" in result.stderr
    assert result.stdout == ""
    assert not os.path.exists(path)  # Checked before the store is created.


def test_info_shows_pin_state_but_never_the_pin(store_dir):
    from fido2.ctap2 import Ctap2
    from fido2.ctap2.config import Config
    from fido2.ctap2.pin import ClientPin

    path = os.path.join(store_dir, "pin.sqlite")
    server = Server(path)
    try:
        ctap = Ctap2(server.device())
        client_pin = ClientPin(ctap)
        client_pin.set_pin("24681357")
        token = client_pin.get_pin_token("24681357", ClientPin.PERMISSION.AUTHENTICATOR_CFG)
        Config(ctap, client_pin.protocol, token).set_min_pin_length(min_pin_length=6)
        Config(ctap, client_pin.protocol, token).toggle_always_uv()
        try:
            client_pin.get_pin_token("00000000", ClientPin.PERMISSION.GET_ASSERTION)
        except Exception:
            pass
    finally:
        server.stop()
    info = json.loads(run("info", "--store", path, "--json").stdout)
    assert info["pinSet"] is True and info["pinRetries"] == 7 and info["uvRetries"] == 8
    assert info["minPINLength"] == 6 and info["alwaysUv"] is True and info["forcePINChange"] is False
    assert info["pinUvAuthProtocols"] == [2, 1]
    text = run("info", "--store", path)
    assert text.returncode == 0, text.stderr
    assert "PIN         set" in text.stdout and "PIN retries 7 of 8" in text.stdout
    assert "alwaysUv    on" in text.stdout and "min PIN     6 code points" in text.stdout
    for output in (text.stdout, text.stderr, json.dumps(info)):
        assert "24681357" not in output


HOSTILE_NAME = 'x\r\x1b[2Kbank.example: create a passkey for "alice"\u202e'


def test_site_chosen_names_reach_the_terminal_escaped(store_dir):
    """A user name with a carriage return, an erase-line sequence and a bidi override must not rewrite the
    consent line (issue 10, defect 5): the auto-approved line and `passkey list` show the control characters as
    \\u{…} escapes."""
    path = os.path.join(store_dir, "passkeys.sqlite")
    server = Server(path)
    try:
        register(server.device(), HOSTILE_NAME, b"user-hostile")
    finally:
        stderr = server.stop()
    approved = [line for line in stderr.splitlines() if "auto-approved: example.com: create a passkey" in line]
    assert approved, stderr
    assert "\x1b" not in stderr and "\r" not in stderr and "\u202e" not in stderr
    # The RP ID leads the line; the site's name stays inside its quotes, its own quote escaped.
    assert (
        'auto-approved: example.com: create a passkey for '
        '"x\\u{D}\\u{1B}[2Kbank.example: create a passkey for \\"alice\\"\\u{202E}"?' in approved[0]
    ), approved[0]
    listed = run("list", "--store", path)
    assert listed.returncode == 0, listed.stderr
    assert "\x1b" not in listed.stdout and "\r" not in listed.stdout and "\\u{1B}[2K" in listed.stdout
    # --json escapes the same name the JSON way, unchanged.
    assert json.loads(run("list", "--store", path, "--json").stdout)[0]["userName"] == HOSTILE_NAME


def flip_sealed_key(path, user_name):
    import sqlite3

    db = sqlite3.connect(path)
    (key,) = db.execute("SELECT sealed_private_key FROM credentials WHERE user_name = ?", (user_name,)).fetchone()
    db.execute("UPDATE credentials SET sealed_private_key = ? WHERE user_name = ?", (bytes([key[0] ^ 1]) + key[1:], user_name))
    db.commit()
    db.close()


def test_one_damaged_passkey_is_listed_skipped_and_deletable(populated_store):
    """Issue 10, defect 9: one flipped byte must not take every passkey offline."""
    path, _ = populated_store
    flip_sealed_key(path, "bob")

    table = run("list", "--verify", "--store", path)
    assert table.returncode == 0, table.stderr
    assert "alice" in table.stdout and "DAMAGED" in table.stdout
    listed = json.loads(run("list", "--verify", "--store", path, "--json").stdout)
    damaged = [entry for entry in listed if entry["damaged"]]
    assert [entry.get("userName") for entry in damaged] == ["bob"]
    assert [entry["userName"] for entry in listed if not entry["damaged"]] == ["alice"]

    info = run("info", "--store", path, "--json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["passkeys"] == 1 and json.loads(info.stdout)["damagedPasskeys"] == 1

    server = Server(path)  # serves the intact passkey
    stderr = server.stop()
    assert "fails its integrity check" in stderr and "skipped" in stderr
    assert "serving 1 passkey from" in stderr

    # "--": a base64url ID may begin with "-", and "-h…" would be read as --help (1 ID in 4,096).
    deleted = run("delete", "--store", path, "--yes", "--", damaged[0]["credentialId"])
    assert deleted.returncode == 0, deleted.stderr
    assert "Deleted the damaged passkey" in deleted.stdout
    assert not any(entry["damaged"] for entry in json.loads(run("list", "--verify", "--store", path, "--json").stdout))
