"""`passkey client create|get` against py_webauthn as the relying party.

py_webauthn writes the options (`generate_*_options` → `options_to_json`), our client prints the credential's
toJSON(), and py_webauthn's `verify_*_response` must accept it unchanged, for each authenticator the client can
use: this computer's store, a phone (`passkey scan`) through `passkey-relay` and the simulated radio, and a security
key (`passkey serve --udp`). Then the decision rules that show on the command line, and bad input: each a clear
one-line error with the exception's exit status, and nothing stored.
"""

import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import tempfile

import pytest
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from conftest import PASSKEY_BIN, PASSPHRASE, start_and_wait_for_line, stop_process

RELAY_BIN = os.environ.get("PASSKEY_RELAY_BIN", os.path.join(os.path.dirname(PASSKEY_BIN), "passkey-relay"))
ORIGIN = "https://example.com"
# The line a client shows its QR code's URL on (standard error), as a phone's camera would read it.
QR_CODE_LINE = r"^FIDO:/\S+"
RP_ID = "example.com"
EXIT = {"NotAllowedError": 10, "InvalidStateError": 11, "SecurityError": 12, "NotSupportedError": 13,
        "TypeError": 15, "EncodingError": 16, "SyntaxError": 17}


def env(**extra):
    return dict(os.environ, PASSKEY_PASSPHRASE=PASSPHRASE, **extra)


def client(store, *args, options, timeout=120, extra_env=None):
    """Runs `passkey client ARGS --options - --store STORE --yes --json` with `options` on standard input."""
    return subprocess.run(
        [PASSKEY_BIN, "client", *args, "--options", "-", "--store", store, "--yes", "--json"],
        input=options, capture_output=True, text=True, timeout=timeout, env=env(**(extra_env or {})))


def new_store(directory, name="store.sqlite"):
    path = os.path.join(directory, name)
    subprocess.run([PASSKEY_BIN, "init", "--store", path], check=True, capture_output=True, env=env(), timeout=60)
    return path


def digest(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


class RelyingParty:
    """py_webauthn as a relying party for example.com: options out, responses verified, credentials kept."""

    def __init__(self):
        self.credentials = {}  # credential ID -> (public key, sign count)

    def registration_options(self, user="alice", **kwargs):
        kwargs.setdefault("authenticator_selection",
                          AuthenticatorSelectionCriteria(resident_key=ResidentKeyRequirement.REQUIRED))
        options = generate_registration_options(rp_id=RP_ID, rp_name="Example", user_name=user, **kwargs)
        self.challenge = options.challenge
        return options_to_json(options)

    def verify_registration(self, output):
        verified = verify_registration_response(
            credential=output, expected_challenge=self.challenge, expected_origin=ORIGIN, expected_rp_id=RP_ID)
        self.credentials[verified.credential_id] = (verified.credential_public_key, verified.sign_count)
        return verified

    def authentication_options(self, allow=False, **kwargs):
        if allow:
            kwargs["allow_credentials"] = [PublicKeyCredentialDescriptor(id=i) for i in self.credentials]
        options = generate_authentication_options(rp_id=RP_ID, **kwargs)
        self.challenge = options.challenge
        return options_to_json(options)

    def verify_authentication(self, output):
        credential = json.loads(output)
        raw_id = base64url_decode(credential["rawId"])
        public_key, sign_count = self.credentials[raw_id]
        verified = verify_authentication_response(
            credential=output, expected_challenge=self.challenge, expected_origin=ORIGIN, expected_rp_id=RP_ID,
            credential_public_key=public_key, credential_current_sign_count=sign_count)
        self.credentials[raw_id] = (public_key, verified.new_sign_count)
        return verified


def base64url_decode(text):
    import base64
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.fixture
def directory():
    with tempfile.TemporaryDirectory() as path:
        yield path


# MARK: This computer's passkeys


def test_local_passkey_registers_and_signs_in_with_and_without_an_allow_list(directory):
    store = new_store(directory)
    rp = RelyingParty()
    created = client(store, "create", "--origin", ORIGIN, "--no-phone", options=rp.registration_options())
    assert created.returncode == 0, created.stderr
    registration = json.loads(created.stdout)
    assert registration["authenticatorAttachment"] == "platform"
    assert registration["response"]["transports"] == ["internal"]
    # py_webauthn's options list EdDSA first, and this computer's authenticator makes it.
    assert registration["response"]["publicKeyAlgorithm"] == -8
    assert registration["clientExtensionResults"] == {} or "credProps" in registration["clientExtensionResults"]
    verified = rp.verify_registration(created.stdout)
    assert verified.user_verified

    for allow in (False, True):
        got = client(store, "get", "--origin", ORIGIN, "--no-phone", options=rp.authentication_options(allow=allow))
        assert got.returncode == 0, got.stderr
        assertion = json.loads(got.stdout)
        assert assertion["authenticatorAttachment"] == "platform"
        assert rp.verify_authentication(got.stdout).user_verified
        # UV left at "preferred" by py_webauthn's default: the platform verifies (the store passphrase).
        assert "user verification auto-approved" in got.stderr


def test_the_wrapper_server_libraries_emit_is_accepted(directory):
    store = new_store(directory)
    rp = RelyingParty()
    wrapped = json.dumps({"publicKey": json.loads(rp.registration_options())})
    created = client(store, "create", "--origin", ORIGIN, "--no-phone", options=wrapped)
    assert created.returncode == 0, created.stderr
    rp.verify_registration(created.stdout)


# MARK: The decision rules, as the command line shows them
#
# The rules themselves are Tests/WebAuthnClientTests: immediate and prefer-immediately-available failing silently
# without a local passkey and immediate refusing an allow list (CeremonyTests), a modal request going ahead with the
# one local account (PlannerTests.modalWithOneLocalAccountGoesAheadWithIt), registering an account again being
# InvalidStateError that stores nothing (EndToEndTests). Here: the chooser as the terminal shows it.


def test_conditional_lists_local_passkeys_and_never_shows_a_qr_code(directory):
    store = new_store(directory)
    rp = RelyingParty()
    for user in ("alice", "bob"):
        created = client(store, "create", "--origin", ORIGIN, "--no-phone", options=rp.registration_options(user))
        rp.verify_registration(created.stdout)
    # The phone stays offered (no --no-phone), but conditional mediation shows it only if picked.
    got = client(store, "get", "--origin", ORIGIN, "--mediation", "conditional", "--ble", "sim:127.0.0.1:1",
                 options=rp.authentication_options(), timeout=60)
    assert got.returncode == 0, got.stderr
    assert "FIDO:/" not in got.stderr
    assert "autofill" in got.stderr and '"alice"' in got.stderr and '"bob"' in got.stderr
    rp.verify_authentication(got.stdout)


# MARK: A phone through the relay


def test_capabilities_tell_what_this_machine_can_do_now(directory):
    """`client capabilities --json`: the L3 map. Without a usable radio (adapter hci7 is on no machine here)
    hybridTransport is false; the platform authenticator is there exactly when a store is. The VM's bluez-dbus check
    runs it with bluetoothd's powered adapter, where hybridTransport is true."""
    def capabilities(store):
        result = subprocess.run(
            [PASSKEY_BIN, "client", "capabilities", "--json", "--ble", "hci:7", "--store", store],
            capture_output=True, text=True, timeout=60, env=env())
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    missing = capabilities(os.path.join(directory, "none.sqlite"))
    assert not os.path.exists(os.path.join(directory, "none.sqlite"))  # asking creates nothing
    assert missing["hybridTransport"] is False
    assert missing["passkeyPlatformAuthenticator"] is False and missing["userVerifyingPlatformAuthenticator"] is False
    assert missing["conditionalGet"] is True and missing["relatedOrigins"] is True
    signals = ("signalAllAcceptedCredentials", "signalCurrentUserDetails", "signalUnknownCredential")
    assert missing["conditionalCreate"] is False and not any(missing[name] for name in signals)
    assert {key for key in missing if key.startswith("extension:")} == {
        "extension:" + name for name in ("credBlob", "credProps", "credentialProtectionPolicy",
                                          "enforceCredentialProtectionPolicy", "getCredBlob", "largeBlob",
                                          "minPinLength", "prf")}
    assert all(isinstance(value, bool) for value in missing.values())
    present = capabilities(new_store(directory))
    assert present["passkeyPlatformAuthenticator"] is True and present["userVerifyingPlatformAuthenticator"] is True
    assert present["conditionalCreate"] is True and all(present[name] is True for name in signals)


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def relay():
    process, match, _ = start_and_wait_for_line([RELAY_BIN, "--listen", "127.0.0.1:0"], r"^listening on (\S+)")
    yield match.group(1)
    stop_process(process)


def through_phone(directory, relay, command, options, phone_store):
    """Runs `passkey client COMMAND` with a phone: `passkey scan` reads the QR code from the client's output."""
    radio = f"sim:127.0.0.1:{free_udp_port()}"
    process, match, shown = start_and_wait_for_line(
        [PASSKEY_BIN, "client", command, "--options", "-", "--origin", ORIGIN, "--hint", "hybrid",
         "--store", os.path.join(directory, "no-such-store.sqlite"), "--relay", relay, "--ble", radio, "--yes",
         "--json", "--timeout", "60"],
        QR_CODE_LINE, stream="stderr", input=options, env=env())
    url = match.group(0)
    phone = subprocess.run(
        [PASSKEY_BIN, "scan", url, "--store", phone_store, "--relay", relay, "--ble", radio, "--yes"],
        capture_output=True, text=True, timeout=120, env=env())
    output, rest = process.communicate(timeout=120)
    assert process.returncode == 0, "".join(shown) + rest + phone.stderr
    return output


def test_phone_registers_and_signs_in_through_the_relay(directory, relay):
    phone_store = new_store(directory, "phone.sqlite")
    rp = RelyingParty()
    output = through_phone(directory, relay, "create", rp.registration_options(), phone_store)
    registration = json.loads(output)
    assert registration["authenticatorAttachment"] == "cross-platform"
    assert "hybrid" in registration["response"]["transports"]
    rp.verify_registration(output)
    for allow in (False, True):
        output = through_phone(directory, relay, "get", rp.authentication_options(allow=allow), phone_store)
        assert rp.verify_authentication(output).user_verified


STATUS_LINE = r"^\[\s*\d+\.\d{3} s\] "


def test_quiet_prints_only_the_result_and_errors(directory, relay):
    """`-q` on both sides of a phone registration (issue 24, item 5): no progress lines (`[ 0.123 s] …`) on either
    side, while the QR code, the unattended approval's announcement and the JSON results (the credential, and
    `scan --json`'s) remain; without it, both sides show their progress."""
    phone_store = new_store(directory, "phone.sqlite")
    rp = RelyingParty()
    shown = {}
    for quiet in ([], ["-q"]):
        radio = f"sim:127.0.0.1:{free_udp_port()}"
        process, match, seen = start_and_wait_for_line(
            [PASSKEY_BIN, "client", "create", "--options", "-", "--origin", ORIGIN, "--hint", "hybrid",
             "--store", os.path.join(directory, "no-such-store.sqlite"), "--relay", relay, "--ble", radio, "--yes",
             "--json", "--timeout", "60", *quiet],
            QR_CODE_LINE, stream="stderr", input=rp.registration_options(), env=env())
        phone = subprocess.run(
            [PASSKEY_BIN, "scan", match.group(0), "--store", phone_store, "--relay", relay, "--ble", radio, "--yes",
             "--json", *quiet], capture_output=True, text=True, timeout=120, env=env())
        output, rest = process.communicate(timeout=120)
        assert process.returncode == 0 and phone.returncode == 0, "".join(seen) + rest + phone.stderr
        rp.verify_registration(output)
        assert "unattended approval is ON" in phone.stderr
        # scan --json: what it did, once the computer closed the tunnel.
        assert json.loads(phone.stdout) == {"answered": 1}, phone.stdout
        shown[bool(quiet)] = ("".join(seen) + rest, phone.stderr)
    for client_errors, phone_errors in [shown[False]]:
        assert re.search(STATUS_LINE, client_errors, re.M) and re.search(STATUS_LINE, phone_errors, re.M)
    for client_errors, phone_errors in [shown[True]]:
        assert not re.search(STATUS_LINE, client_errors, re.M), client_errors
        assert not re.search(STATUS_LINE, phone_errors, re.M), phone_errors


def test_declining_at_the_phone_is_not_success(directory, relay):
    """The person at `passkey scan` says no (issue 24: "scan exits 0 after the person declines"): scan ends with the
    declined status (5, Docs/ExitStatus.md) and one line; the browser's side gets NotAllowedError (10)."""
    import pty
    import re
    import select
    import time

    phone_store = new_store(directory, "phone.sqlite")
    radio = f"sim:127.0.0.1:{free_udp_port()}"
    process, match, shown = start_and_wait_for_line(
        [PASSKEY_BIN, "client", "create", "--options", "-", "--origin", ORIGIN, "--hint", "hybrid",
         "--store", os.path.join(directory, "no-such-store.sqlite"), "--relay", relay, "--ble", radio, "--yes",
         "--json", "--timeout", "60"],
        QR_CODE_LINE, stream="stderr", input=RelyingParty().registration_options(), env=env())
    url = match.group(0)
    pid, master = pty.fork()
    if pid == 0:
        os.execve(PASSKEY_BIN, [PASSKEY_BIN, "scan", url, "--store", phone_store, "--relay", relay, "--ble", radio],
                  env())
    output = b""
    try:
        deadline = time.monotonic() + 60
        while not re.search(rb"\[y/N\] ?$", output):
            assert time.monotonic() < deadline, output
            ready, _, _ = select.select([master], [], [], 1)
            if ready:
                output += os.read(master, 4096)
        os.write(master, b"n\n")
        while True:
            ready, _, _ = select.select([master], [], [], 30)
            if not ready:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(master)
    text = output.decode(errors="replace")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 5, text
    assert text.rstrip().splitlines()[-1] == "passkey: the request was declined at the prompt", text
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 10, "".join(shown) + rest


# MARK: A security key over UDP


@pytest.fixture
def security_key(directory):
    key_store = os.path.join(directory, "key.sqlite")
    process, match, _ = start_and_wait_for_line(
        [PASSKEY_BIN, "serve", "--udp", "127.0.0.1:0", "--store", key_store, "--yes"], r"listening on udp://([^\s,]+)",
        env=env())
    yield "udp:" + match.group(1)
    stop_process(process)


def test_security_key_registers_and_signs_in_over_udp(directory, security_key):
    rp = RelyingParty()
    no_store = os.path.join(directory, "no-such-store.sqlite")
    created = client(no_store, "create", "--origin", ORIGIN, "--no-phone", "--security-key", security_key,
                     options=rp.registration_options())
    assert created.returncode == 0, created.stderr
    registration = json.loads(created.stdout)
    assert registration["authenticatorAttachment"] == "cross-platform"
    assert registration["response"]["transports"] == ["usb"]
    rp.verify_registration(created.stdout)
    for allow in (False, True):
        got = client(no_store, "get", "--origin", ORIGIN, "--no-phone", "--security-key", security_key,
                     options=rp.authentication_options(allow=allow))
        assert got.returncode == 0, got.stderr
        rp.verify_authentication(got.stdout)


# MARK: Bad input


@pytest.mark.parametrize("options, name, words", [
    ("{", "SyntaxError", "not JSON"),
    ("[]", "TypeError", "must be"),
    ('{"challenge": 5}', "TypeError", "rp is required"),
    ('{"challenge": 5, "rp": {"name": "x"}, "user": {"id": "AA", "name": "a", "displayName": "a"}, '
     '"pubKeyCredParams": [{"type": "public-key", "alg": -7}]}', "TypeError", "challenge must be a string"),
    ('{"challenge": "!!", "rp": {"name": "x"}, "user": {"id": "AA", "name": "a", "displayName": "a"}, '
     '"pubKeyCredParams": [{"type": "public-key", "alg": -7}]}', "EncodingError", "base64url"),
    ('{"challenge": "AAAA", "rp": {"name": "x"}, "user": {"id": "AA", "name": "a", "displayName": "a"}, '
     '"pubKeyCredParams": [{"type": "public-key", "alg": -35}]}', "NotSupportedError", "EdDSA"),
    ('{"challenge": "AAAA", "rp": {"name": "x"}, "user": {"id": "' + "A" * 100 + '", "name": "a", '
     '"displayName": "a"}, "pubKeyCredParams": [{"type": "public-key", "alg": -7}]}', "TypeError", "user.id"),
])
def test_bad_creation_options_get_the_browsers_exception_and_store_nothing(directory, options, name, words):
    store = new_store(directory)
    before = digest(store)
    result = client(store, "create", "--origin", ORIGIN, "--no-phone", options=options, timeout=30)
    assert result.returncode == EXIT[name], result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"passkey: {name}: ") and words in lines[0], lines
    assert result.stdout == ""
    assert digest(store) == before


def test_oversize_options_and_insecure_origins_are_refused(directory):
    store = new_store(directory)
    before = digest(store)
    rp = RelyingParty()
    huge = client(store, "create", "--origin", ORIGIN, "--no-phone", options=" " * (2 << 20), timeout=30)
    assert huge.returncode == EXIT["TypeError"] and "bytes" in huge.stderr
    insecure = client(store, "create", "--origin", "http://example.com", "--no-phone",
                      options=rp.registration_options(), timeout=30)
    assert insecure.returncode == EXIT["SecurityError"], insecure.stderr
    assert "http is allowed only on localhost" in insecure.stderr
    ip = client(store, "get", "--origin", "https://127.0.0.1", "--no-phone", options=rp.authentication_options(),
                timeout=30)
    assert ip.returncode == EXIT["SecurityError"] and "IP address" in ip.stderr
    assert digest(store) == before


def test_ctrl_c_while_the_qr_code_is_shown_ends_as_every_command(directory, relay):
    rp = RelyingParty()
    process, _, shown = start_and_wait_for_line(
        [PASSKEY_BIN, "client", "get", "--options", "-", "--origin", ORIGIN,
         "--store", os.path.join(directory, "no-such-store.sqlite"), "--relay", relay,
         "--ble", f"sim:127.0.0.1:{free_udp_port()}", "--json", "--timeout", "60"],
        QR_CODE_LINE, stream="stderr", input=rp.authentication_options(), env=env())
    process.send_signal(signal.SIGINT)
    output, rest = process.communicate(timeout=30)
    # Ctrl-C is not a page's AbortSignal: it ends `client` as it ends every command (Docs/ExitStatus.md).
    assert process.returncode == 130, "".join(shown) + rest
    assert rest.strip().splitlines()[-1] == "passkey: interrupted"
    assert output == ""


# MARK: passkey rp serve's JSON endpoints


def test_rp_serve_options_go_through_the_client_and_back_unchanged(directory):
    from test_rp_serve import RelyingParty as ServedRelyingParty

    store = new_store(directory)
    site = ServedRelyingParty(os.path.join(directory, "rp-state.json"))
    try:
        status, options = site.post("/registration/options", {"username": "dora"})
        assert status == 200, options
        created = client(store, "create", "--origin", site.origin, "--no-phone", options=json.dumps(options))
        assert created.returncode == 0, created.stderr
        status, verdict = site.post("/registration/verify", created.stdout.encode())
        assert status == 200 and verdict["user"] == "dora", verdict
        for request in ({}, {"username": "dora"}):
            status, options = site.post("/authentication/options", request)
            assert status == 200, options
            got = client(store, "get", "--origin", site.origin, "--no-phone", options=json.dumps(options))
            assert got.returncode == 0, got.stderr
            status, verdict = site.post("/authentication/verify", got.stdout.encode())
            assert status == 200 and verdict["user"] == "dora", verdict
    finally:
        site.stop()
