"""`passkey password` and `client get --password` driven from the command line.

The vault round trip (add, get, list, delete) and its promises: the password is never in the store's files and is
printed only by `get`; each sealed password opens with Python's own scrypt and AES-GCM (the `cryptography` package)
under the documented associated data, so the format is what Docs/Passwords.md says (a wrong passphrase changing
nothing is StoreAccessTests.aWrongPassphraseOpensNothingAndChangesNoFile, in Swift). Then shared web credentials (`password request`, `password add --app`) over an approval table written as the
documented JSON, and the combined chooser of `client get --password`, whose passkey answer py_webauthn verifies.
"""

import hashlib
import json
import os
import re
import signal
import sqlite3
import struct
import subprocess
import time
import unicodedata

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers.structs import AuthenticatorSelectionCriteria, ResidentKeyRequirement

import conftest
from conftest import PASSKEY_BIN, PASSPHRASE

SECRET = "uFA-T9C-aRD-cDP-secret"
APP = "ABCDE12345.com.example.app"


run = conftest.run_with_store


def files_of(store):
    directory = os.path.dirname(store)
    return [os.path.join(directory, name) for name in sorted(os.listdir(directory))]


def digests(store):
    """The store's files as they matter: SQLite's shared-memory file, and an empty WAL, which opening the store
    read-only may leave, hold no data."""
    result = {}
    for path in files_of(store):
        if path.endswith((".lock", "-shm")) or path.endswith("-wal") and os.path.getsize(path) == 0:
            continue
        with open(path, "rb") as file:
            result[os.path.basename(path)] = hashlib.sha256(file.read()).hexdigest()
    return result


def assert_nowhere_on_disk(store, secret):
    for path in files_of(store):
        with open(path, "rb") as file:
            assert secret.encode() not in file.read(), f"{path} holds the password"


def encode(values):
    """RowAuthentication.encode: a type byte, then 8 big-endian bytes or a 4-byte length and the bytes."""
    out = b""
    for value in values:
        if value is None:
            out += b"\x00"
        elif isinstance(value, int):
            out += b"\x01" + struct.pack(">q", value)
        elif isinstance(value, str):
            out += b"\x02" + struct.pack(">I", len(value.encode())) + value.encode()
        else:
            out += b"\x03" + struct.pack(">I", len(value)) + bytes(value)
    return out


def open_sealed_passwords(store, passphrase=PASSPHRASE):
    """Every saved password, opened independently: scrypt from the meta row, AES-256-GCM with the row as AAD."""
    db = sqlite3.connect(store)
    n, r, p, salt = db.execute("SELECT kdf_rounds, kdf_block_size, kdf_parallelism, kdf_salt FROM meta").fetchone()
    key = hashlib.scrypt(unicodedata.normalize("NFC", passphrase).encode(), salt=salt, n=n, r=r, p=p,
                         maxmem=2 * 128 * n * r * p + (1 << 20), dklen=32)
    opened = {}
    rows = db.execute("SELECT password_id, service, user_name, created_ms, modified_ms, rank, sealed_password "
                      "FROM passwords").fetchall()
    for password_id, service, user, created, modified, rank, sealed in rows:
        aad = b"passkey-store-password v4\x00" + encode([password_id, service, user, created, modified, rank])
        opened[(service, user)] = AESGCM(key).decrypt(sealed[:12], sealed[12:], aad).decode()
    db.close()
    return opened


# MARK: The vault


def test_add_get_list_delete_and_the_password_is_never_on_disk(store):
    added = run(store, "password", "add", "Example.com", "alice", password=SECRET)
    assert added.returncode == 0, added.stderr
    assert SECRET not in added.stdout + added.stderr
    assert run(store, "password", "add", "https://example.com:8443", "bob", password="bob-Secret-2").returncode == 0

    got = run(store, "password", "get", "example.com")
    assert got.returncode == 0, got.stderr
    assert got.stdout == SECRET + "\n"
    assert run(store, "password", "get", "example.com", "--user", "alice").stdout == SECRET + "\n"
    missing = run(store, "password", "get", "example.com", "--user", "nobody")
    assert missing.returncode == 1 and missing.stdout == ""

    # list reads the index: no passphrase, and never a password.
    listed = run(store, "password", "list", "--json", passphrase=None)
    assert listed.returncode == 0, listed.stderr
    assert SECRET not in listed.stdout and "bob-Secret-2" not in listed.stdout
    logins = json.loads(listed.stdout)
    assert {(login["service"], login["user"]) for login in logins} == {
        ("example.com", "alice"), ("https://example.com:8443", "bob")}
    table = run(store, "password", "list", "--service", "example.com", passphrase=None)
    assert "alice" in table.stdout and "bob" not in table.stdout and SECRET not in table.stdout
    verified = run(store, "password", "list", "--verify", "--json")
    assert [login["damaged"] for login in json.loads(verified.stdout)] == [False, False]
    # `passkey list` lists passkeys only.
    assert "alice" not in run(store, "list", passphrase=None).stdout

    # Sealed as documented: Python opens each one.
    assert open_sealed_passwords(store) == {("example.com", "alice"): SECRET,
                                            ("https://example.com:8443", "bob"): "bob-Secret-2"}
    assert_nowhere_on_disk(store, SECRET)

    # Changing asks; without a terminal or --yes nothing changes.
    before = digests(store)
    refused = run(store, "password", "add", "example.com", "alice", password="changed-Secret-3")
    assert refused.returncode == 1 and "confirmation" in refused.stderr
    assert digests(store) == before
    changed = run(store, "password", "add", "example.com", "alice", "--yes", password="changed-Secret-3")
    assert changed.returncode == 0, changed.stderr
    assert run(store, "password", "get", "example.com").stdout == "changed-Secret-3\n"
    assert_nowhere_on_disk(store, "changed-Secret-3")

    # Deleting asks too.
    assert run(store, "password", "delete", "example.com", "alice").returncode == 1
    deleted = run(store, "password", "delete", "example.com", "alice", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert run(store, "password", "get", "example.com").returncode == 1
    assert [login["user"] for login in json.loads(run(store, "password", "list", "--json").stdout)] == ["bob"]


def on_a_terminal(store, args, typed):
    """Runs passkey on a pseudo-terminal (conftest's `on_a_terminal`), typing each of `typed` after the prompt
    before it; returns the exit status and everything the terminal showed."""
    environment = dict(os.environ, PASSKEY_STORE=store, PASSKEY_PASSPHRASE=PASSPHRASE)
    environment.pop("PASSKEY_PASSWORD", None)
    pending = list(typed)
    return conftest.on_a_terminal(args, lambda prompt: pending.pop(0) if pending else None, environment)


def test_a_login_note_is_sealed_shown_listed_and_removed(store):
    """`passkey password note`'s I/O contract: from a pipe, --show, `password list --notes` (text and JSON),
    --clear; a login that is not saved is one line. Never in the store's files in clear text."""
    assert run(store, "password", "add", "example.com", "alice", password=SECRET).returncode == 0
    saved = run(store, "password", "note", "example.com", "alice", stdin="security answer: teal\n")
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout == 'Saved the note of the saved password for "alice" at example.com.\n'
    assert run(store, "password", "note", "example.com", "alice", "--show").stdout == "security answer: teal\n"
    assert "    note  security answer: teal\n" in run(store, "password", "list", "--notes").stdout
    [login] = json.loads(run(store, "password", "list", "--notes", "--json").stdout)
    assert login["note"] == "security answer: teal"
    for path in files_of(store):
        with open(path, "rb") as file:
            assert b"teal" not in file.read(), path
    nobody = run(store, "password", "note", "example.com", "nobody", stdin="x")
    assert nobody.returncode == 1 and nobody.stderr == 'passkey: no saved password for "nobody" at example.com\n'
    assert run(store, "password", "note", "example.com", "alice", "--clear").returncode == 0
    gone = run(store, "password", "note", "example.com", "alice", "--show")
    assert gone.returncode == 1
    assert gone.stderr == 'passkey: the saved password for "alice" at example.com has no note\n'


def test_the_password_is_asked_twice_without_echo(store):
    status, shown = on_a_terminal(store, ["password", "add", "example.com", "alice"], [SECRET, SECRET])
    assert status == 0, shown
    assert "Password:" in shown and "Repeat it:" in shown
    assert SECRET not in shown  # echo was off
    assert run(store, "password", "get", "example.com").stdout == SECRET + "\n"

    before = digests(store)
    status, shown = on_a_terminal(store, ["password", "add", "example.com", "bob"], [SECRET, SECRET + "x"])
    assert status == 1 and "do not match" in shown
    assert digests(store) == before


# MARK: Shared web credentials


def approvals_path(store):
    """The approval table `passkey domains check` keeps beside the store (Docs/Domains.md)."""
    return os.path.join(os.path.dirname(store), "domains.json")


def write_approvals(store, approvals):
    """Writes the table as `passkey domains check` would after checking each entry's domain."""
    descriptor = os.open(approvals_path(store), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump({"version": 1, "entries": approvals, "files": {}}, file)


def approval(domain, state="approved", app=APP, service="webcredentials"):
    return {"entitlement": f"{service}:{domain}", "app": app, "state": state, "reason": "checked in the test",
            "checked": "2025-11-24T12:00:00Z", "url": f"https://{domain}/.well-known/apple-app-site-association",
            "status": 200}


def test_an_app_saves_and_gets_a_login_of_an_approved_domain(store):
    """The binary's I/O contract of `password add --app` and `password request --app`: the login as one JSON object
    on standard output, and status 4 with one line when the app gets nothing. The approval table's rules (denied,
    another service, unknown, empty, a damaged table, changing and deleting asked first) are the vault's, proved in
    process by `Tests/PasskeyProviderTests/VaultPasswordTests.swift`."""
    write_approvals(store, [approval("example.com")])
    added = run(store, "password", "add", "example.com", "alice", "--app", APP, password=SECRET)
    assert added.returncode == 0, added.stderr
    requested = run(store, "password", "request", "--app", APP, "--yes")
    assert requested.returncode == 0, requested.stderr
    assert json.loads(requested.stdout) == {"server": "example.com", "account": "alice", "password": SECRET}
    assert SECRET not in requested.stderr
    unknown = run(store, "password", "request", "--app", APP, "--domain", "unknown.example", "--yes")
    assert (unknown.returncode, unknown.stdout) == (4, "")
    assert unknown.stderr.endswith("passkey: no shared web credential for this app\n")
    # What unattended approval says it approved, on standard error.
    changed = run(store, "password", "add", "example.com", "alice", "--app", APP, "--yes", password="changed-Secret-3")
    assert changed.returncode == 0 and "wants to change" in changed.stderr
    deleted = run(store, "password", "delete", "example.com", "alice", "--app", APP, "--yes")
    assert deleted.returncode == 0 and "wants to delete" in deleted.stderr
    assert json.loads(run(store, "password", "list", "--json").stdout) == []


# MARK: Passwords beside passkeys


ORIGIN = "https://example.com"


def test_client_get_offers_passwords_beside_passkeys_in_one_chooser(store):
    registration = generate_registration_options(
        rp_id="example.com", rp_name="Example", user_name="alice",
        authenticator_selection=AuthenticatorSelectionCriteria(resident_key=ResidentKeyRequirement.REQUIRED))
    created = run(store, "client", "create", "--origin", ORIGIN, "--no-phone", "--yes", "--json", "--options", "-",
                  stdin=options_to_json(registration))
    assert created.returncode == 0, created.stderr
    verified = verify_registration_response(credential=created.stdout, expected_challenge=registration.challenge,
                                            expected_origin=ORIGIN, expected_rp_id="example.com")
    assert run(store, "password", "add", "example.com", "bob", password=SECRET).returncode == 0
    assert run(store, "password", "add", "other.example", "carol", password="carol-Secret-3").returncode == 0

    options_path = os.path.join(os.path.dirname(store), "options.json")

    def authentication():
        options = generate_authentication_options(rp_id="example.com")
        with open(options_path, "w") as file:
            file.write(options_to_json(options))
        return options

    # The first choice is the passkey: an assertion py_webauthn verifies.
    options = authentication()
    passkey = run(store, "client", "get", "--origin", ORIGIN, "--no-phone", "--yes", "--json", "--password",
                  "--options", options_path)
    assert passkey.returncode == 0, passkey.stderr
    assert '"bob", saved password for example.com' in passkey.stderr
    assert "carol" not in passkey.stderr
    verify_authentication_response(
        credential=passkey.stdout, expected_challenge=options.challenge, expected_origin=ORIGIN,
        expected_rp_id="example.com", credential_public_key=verified.credential_public_key,
        credential_current_sign_count=0)

    # The second, typed on the chooser's input: the password.
    authentication()
    password = run(store, "client", "get", "--origin", ORIGIN, "--no-phone", "--json", "--password",
                   "--options", options_path, stdin="2\n", new_session=True)
    assert password.returncode == 0, password.stderr
    assert json.loads(password.stdout) == {"type": "password", "id": "bob", "password": SECRET}
    assert password.stdout.startswith('{"type":"password","id":"bob","password":')

    # Without --password, no password is offered.
    authentication()
    plain = run(store, "client", "get", "--origin", ORIGIN, "--no-phone", "--yes", "--json", "--options", options_path)
    assert plain.returncode == 0 and "saved password" not in plain.stderr


# MARK: Generated passwords saved


def test_a_generated_password_is_saved_and_shown_once_and_bad_arguments_change_nothing(store):
    added = run(store, "password", "add", "example.com", "alice", "--generate")
    assert added.returncode == 0, added.stderr
    generated = added.stdout.splitlines()[-1]
    # Safari's strong form: three groups of six, one digit and one upper case letter.
    assert re.fullmatch(r"[a-zA-Z0-9]{6}-[a-zA-Z0-9]{6}-[a-zA-Z0-9]{6}", generated), generated
    assert sum(c.isdigit() for c in generated) == 1 and sum(c.isupper() for c in generated) == 1
    assert run(store, "password", "get", "example.com").stdout == generated + "\n"

    rules = "required: upper; required: digit; allowed: lower; minlength: 12; maxlength: 12; max-consecutive: 2"
    followed = run(store, "password", "add", "shop.example", "bob", "--generate", "--rules", rules)
    assert followed.returncode == 0, followed.stderr
    password = followed.stdout.splitlines()[-1]
    assert len(password) == 12 and re.fullmatch(r"[a-zA-Z0-9]+", password)
    assert any(c.isupper() for c in password) and any(c.isdigit() for c in password)
    assert not re.search(r"(.)\1\1", password)

    # Rules no password can follow, or --rules alone: refused, nothing saved, nothing shown.
    before = digests(store)
    impossible = run(store, "password", "add", "other.example", "carol", "--generate", "--rules",
                     "minlength: 20; maxlength: 10")
    assert impossible.returncode != 0 and impossible.stdout == "" and "rules" in impossible.stderr
    alone = run(store, "password", "add", "other.example", "carol", "--rules", "minlength: 8")
    assert alone.returncode != 0 and alone.stdout == ""
    assert digests(store) == before

    # Arguments that name no service, or an empty password: refused before anything is opened.
    for service in ["http://example.com", "https://example.com/login", "exa mple.com", ""]:
        result = run(store, "password", "add", service, "alice", password=SECRET)
        assert result.returncode != 0 and "not a domain" in result.stderr
    assert run(store, "password", "add", "other.example", "alice", password="").returncode == 1
    assert digests(store) == before


@pytest.fixture
def x_display():
    """An X server of its own (Xvfb) for the clipboard: its display name, e.g. ':57'."""
    read, write = os.pipe()
    # -displayfd: Xvfb picks a free display and writes its number once it accepts connections.
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-nolisten", "tcp", "-screen", "0", "640x480x24"],
        pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        with os.fdopen(read) as announced:
            number = announced.readline().strip()
        assert number.isdigit(), "Xvfb did not start"
        yield ":" + number
    finally:
        server.terminate()
        server.wait(timeout=10)


def clipboard(display, expected=None):
    """The CLIPBOARD selection's text (None when nobody holds it); with `expected`, waits up to 5 s for it, as
    xclip takes the selection only as its background process starts."""
    for _ in range(50):
        text = read_clipboard(display)
        if expected is None or text == expected:
            return text
        time.sleep(0.1)
    return text


def read_clipboard(display):
    shown = subprocess.run(
        ["xclip", "-selection", "clipboard", "-out"], capture_output=True, text=True, timeout=10,
        env=dict(os.environ, DISPLAY=display))
    return shown.stdout if shown.returncode == 0 else None


def set_clipboard(display, text):
    subprocess.run(
        ["xclip", "-selection", "clipboard", "-in"], input=text, text=True, timeout=10, check=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, DISPLAY=display))


def clip(store, display, *args):
    """Starts `password get --clip` on `display`, returning the process once it says the password is copied."""
    environment = dict(os.environ, PASSKEY_STORE=store, PASSKEY_PASSPHRASE=PASSPHRASE, DISPLAY=display)
    environment.pop("WAYLAND_DISPLAY", None)
    process = subprocess.Popen(
        [PASSKEY_BIN, "password", "get", "example.com", "--clip", *args], stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    line = process.stdout.readline()
    assert line.startswith("Copied the password to the clipboard (xclip)"), line + process.stderr.read()
    return process


def test_clip_copies_the_password_and_clears_it_unless_something_else_was_copied(store, x_display):
    assert run(store, "password", "add", "example.com", "alice", password=SECRET).returncode == 0

    # Cleared once the time is up; the password was on the clipboard until then, and never on the output.
    process = clip(store, x_display, "--clear-after", "2")
    assert clipboard(x_display, SECRET) == SECRET
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert out == "Cleared the clipboard.\n" and err == ""
    assert clipboard(x_display) in ("", None)

    # Something copied since is left alone.
    process = clip(store, x_display, "--clear-after", "2")
    assert clipboard(x_display, SECRET) == SECRET
    set_clipboard(x_display, "a note of mine")
    assert clipboard(x_display, "a note of mine") == "a note of mine"
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "left it as it is" in out
    assert clipboard(x_display) == "a note of mine"

    # Ctrl-C clears it at once, and ends as an interrupted command does.
    process = clip(store, x_display, "--clear-after", "600")
    assert clipboard(x_display, SECRET) == SECRET
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert out == "Cleared the clipboard.\n"
    assert clipboard(x_display) in ("", None)

    # No session, or no tool: one line, and the store is not unlocked (no passphrase needed).
    environment = dict(os.environ, PASSKEY_STORE=store)
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "PASSKEY_PASSPHRASE"):
        environment.pop(name, None)
    nowhere = subprocess.run(
        [PASSKEY_BIN, "password", "get", "example.com", "--clip"], capture_output=True, text=True, timeout=30,
        env=environment, stdin=subprocess.DEVNULL)
    assert nowhere.returncode == 1 and nowhere.stdout == ""
    assert nowhere.stderr.startswith("passkey: cannot copy to the clipboard: no desktop session"), nowhere.stderr
    no_tool = subprocess.run(
        [PASSKEY_BIN, "password", "get", "example.com", "--clip"], capture_output=True, text=True, timeout=30,
        env=dict(environment, DISPLAY=x_display, PATH="/nonexistent"), stdin=subprocess.DEVNULL)
    assert no_tool.returncode == 1
    assert no_tool.stderr.startswith("passkey: cannot copy to the clipboard: xclip is not installed"), no_tool.stderr
    assert SECRET not in nowhere.stderr + no_tool.stderr


# MARK: One-time codes (`passkey otp`, issue 27)

OTP_SECRET = "HXDMVJECJJWSRB3HWIZR4IFUGFTMXBOZ"


def open_sealed_codes(store, passphrase=PASSPHRASE):
    """Every one-time-code secret, opened independently as the passwords are: the row's other columns as AAD."""
    db = sqlite3.connect(store)
    n, r, p, salt = db.execute("SELECT kdf_rounds, kdf_block_size, kdf_parallelism, kdf_salt FROM meta").fetchone()
    key = hashlib.scrypt(unicodedata.normalize("NFC", passphrase).encode(), salt=salt, n=n, r=r, p=p,
                         maxmem=2 * 128 * n * r * p + (1 << 20), dklen=32)
    opened = {}
    rows = db.execute("SELECT code_id, service, user_name, issuer, algorithm, digits, period, created_ms, "
                      "sealed_secret FROM one_time_codes").fetchall()
    for *columns, sealed in rows:
        aad = b"passkey-store-one-time-code v6\x00" + encode(columns)
        opened[(columns[1], columns[2])] = AESGCM(key).decrypt(sealed[:12], sealed[12:], aad)
    db.close()
    return opened


def current_code(store, site, *args):
    for _ in range(3):
        shown = run(store, "otp", "code", site, "--json", *args)
        assert shown.returncode == 0, shown.stderr
        result = json.loads(shown.stdout)
        if result["secondsLeft"] > 2:
            return result
        time.sleep(result["secondsLeft"] + 0.5)  # the next step, so that pyotp's code is read in the same one
    raise AssertionError("no code with time left in three tries")


def test_otp_add_code_list_delete_and_the_secret_is_never_on_disk_or_in_argv(store):
    import base64

    import pyotp

    uri = f"otpauth://totp/ACME%20Co:alice@example.com?secret={OTP_SECRET}&issuer=ACME%20Co&period=30"
    added = run(store, "otp", "add", "--site", "example.com", stdin=uri + "\n")
    assert added.returncode == 0, added.stderr
    assert 'Saved the one-time code for "alice@example.com" at example.com (SHA1, 6 digits, 30 s).' in added.stdout
    assert OTP_SECRET not in added.stdout + added.stderr
    # The same login again keeps its code.
    again = run(store, "otp", "add", "--site", "example.com", stdin=uri + "\n")
    assert again.returncode == 1 and "already has a one-time code" in again.stderr
    bare = run(store, "otp", "add", "--site", "https://example.org:8443", "--user", "bob", "--secret",
               stdin="gezd gnbv gy3t qojq gezd gnbv gy3t qojq\n")
    assert bare.returncode == 0, bare.stderr

    # pyotp, from the same secret, makes the same code; the seconds left count down to the next 30-second step.
    shown = current_code(store, "example.com")
    assert shown["code"] == pyotp.TOTP(OTP_SECRET).now() and shown["user"] == "alice@example.com"
    assert 1 <= shown["secondsLeft"] <= 30
    assert current_code(store, "https://example.org:8443")["code"] == pyotp.TOTP("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ").now()
    plain = run(store, "otp", "code", "example.com")
    assert plain.returncode == 0 and plain.stdout.splitlines()[0].isdigit()
    assert "more second" in plain.stdout.splitlines()[1]

    listed = run(store, "otp", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(row["site"], row["user"], row["algorithm"], row["digits"], row["period"]) for row in rows] == [
        ("example.com", "alice@example.com", "SHA1", 6, 30), ("https://example.org:8443", "bob", "SHA1", 6, 30)]
    assert rows[0]["issuer"] == "ACME Co" and OTP_SECRET not in listed.stdout

    # Sealed: not on disk in base32 or raw, and it opens independently with the row as associated data.
    raw = base64.b32decode(OTP_SECRET)
    assert_nowhere_on_disk(store, OTP_SECRET)
    for path in files_of(store):
        with open(path, "rb") as file:
            assert raw not in file.read()
    assert open_sealed_codes(store)[("example.com", "alice@example.com")] == raw

    refused = run(store, "otp", "delete", "example.com", "alice@example.com")
    assert refused.returncode == 1 and "confirmation" in refused.stderr
    deleted = run(store, "otp", "delete", "example.com", "alice@example.com", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert run(store, "otp", "code", "example.com").returncode == 1


@pytest.mark.parametrize("given, expected", [
    ("https://example.com/?secret=JBSWY3DPEHPK3PXP", "is not an otpauth:// URI"),
    ("otpauth://hotp/a?secret=JBSWY3DPEHPK3PXP&counter=1", "only time-based codes"),
    ("otpauth://totp/a?secret=JBSWY3DP0000", "is not base32"),
    ("otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&digits=10", "digits must be 6, 7 or 8"),
    ("otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&algorithm=MD5", "SHA1, SHA256 or SHA512"),
    ("", "no otpauth:// URI was given"),
])
def test_a_bad_otpauth_uri_is_one_clear_line_and_changes_nothing(store, given, expected):
    before = digests(store)
    result = run(store, "otp", "add", "--site", "example.com", stdin=given + "\n")
    assert result.returncode == 1, result.stderr
    assert len(result.stderr.splitlines()) == 1 and expected in result.stderr, result.stderr
    assert "JBSWY3DP" not in result.stderr
    assert digests(store) == before


def test_otp_add_asks_for_the_secret_without_echo_on_a_terminal(store):
    secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
    status, shown = on_a_terminal(store, ["otp", "add", "--site", "example.com", "--user", "carol", "--secret"],
                                  [secret])
    assert status == 0, shown
    assert "The secret:" in shown and secret not in shown  # echo was off
    listed = json.loads(run(store, "otp", "list", "--json").stdout)
    assert [(row["site"], row["user"]) for row in listed] == [("example.com", "carol")]
