"""`passkey rp serve` as a web page's relying party, with python-fido2 as the browser.

`passkey serve --udp` is the security key (the `device` fixture of conftest.py). Options come over HTTP in the
WebAuthn Level 3 JSON forms and are read with python-fido2's own `from_dict`; its `Fido2Client` runs the ceremony
against the key with `http://localhost:PORT` as the origin, and the JSON form of its result is posted back, as a
page posts `credential.toJSON()`. The RP's verdict lines on standard output and its state file are what is checked.
"""

import base64
import hashlib
import http.client
import json
import os
import queue
import re
import subprocess
import threading
import urllib.error
import urllib.request

import pytest
from fido2.client import ClientError, DefaultClientDataCollector, Fido2Client
from fido2.webauthn import PublicKeyCredentialCreationOptions, PublicKeyCredentialRequestOptions

from conftest import PASSKEY_BIN, stop_process, stored_rp_state

AAGUID = "8391e378-32c7-4aa5-ad16-6f0cf4ad7b23"


class RelyingParty:
    """A running `passkey rp serve --listen 127.0.0.1:0` with its own state file; its output lines are collected."""

    def __init__(self, state_path, extra_args=()):
        self.state_path = state_path
        self.process = subprocess.Popen(
            [PASSKEY_BIN, "rp", "serve", "--listen", "127.0.0.1:0", "--rp-state", state_path, *extra_args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        line = self.process.stdout.readline()
        match = re.fullmatch(r"listening on http://localhost:(\d+)\n", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"passkey rp serve did not start: {line!r} {self.process.stderr.read()!r}")
        self.port = int(match.group(1))
        self.origin = f"http://localhost:{self.port}"
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def next_line(self, timeout=10):
        """The next line on standard output: each one is printed and flushed as the verdict is decided."""
        return self.lines.get(timeout=timeout)

    def post(self, path, body):
        """POSTs JSON (a dict, or raw bytes); returns (status, decoded JSON answer). Like one browser, it keeps the
        session cookie a verified registration or sign-in sets, and sends it back."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if getattr(self, "session", None):
            headers["Cookie"] = self.session
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                self._keep_session(answer.headers)
                return answer.status, json.load(answer)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)

    def _keep_session(self, headers):
        cookie = headers.get("Set-Cookie")
        if cookie:
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie, cookie
            self.session = cookie.split(";")[0]

    def get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as answer:
            return answer.status, answer.headers, answer.read()

    def stop(self):
        return stop_process(self.process)


@pytest.fixture
def rp(store_dir):
    running = RelyingParty(os.path.join(store_dir, "rp-state.json"))
    yield running
    running.stop()


def browser(device, origin):
    return Fido2Client(device, client_data_collector=DefaultClientDataCollector(origin))


def digest(path):
    """The state file's and its journal's contents, hashed (a missing file hashes as empty)."""
    hashed = hashlib.sha256()
    for name in (path, path + ".journal"):
        if os.path.exists(name):
            with open(name, "rb") as file:
                hashed.update(file.read())
        hashed.update(b"\0")
    return hashed.hexdigest()


def state(rp):
    return stored_rp_state(rp.state_path)


def registration_json(credential, transports=("usb",)):
    """`credential.toJSON()` as a browser gives it: python-fido2's JSON form plus `getTransports()`."""
    body = json.loads(json.dumps(dict(credential)))
    body["response"]["transports"] = list(transports)
    return body


def register(rp, device, user, **request):
    status, options = rp.post("/registration/options", {"username": user, **request})
    assert status == 200, options
    credential = browser(device, rp.origin).make_credential(PublicKeyCredentialCreationOptions.from_dict(options))
    return options, credential


def sign_in(rp, device, user=None, origin=None):
    status, options = rp.post("/authentication/options", {"username": user} if user else {})
    assert status == 200, options
    selection = browser(device, origin or rp.origin).get_assertion(PublicKeyCredentialRequestOptions.from_dict(options))
    return options, [selection.get_response(i) for i in range(len(selection.get_assertions()))]


def test_register_and_sign_in_with_and_without_a_user_name(rp, device):
    options, credential = register(rp, device, "alice", displayName="Alice A", hints=["security-key"])
    assert options["hints"] == ["security-key"]
    assert options["rp"]["id"] == "localhost"
    assert options["authenticatorSelection"]["residentKey"] == "required"
    assert options["excludeCredentials"] == []
    status, verdict = rp.post("/registration/verify", registration_json(credential))
    assert status == 200, verdict
    credential_id = credential.id
    assert verdict["credentialId"] == credential_id and verdict["user"] == "alice"
    assert verdict["userVerified"] is True and verdict["aaguid"] == AAGUID
    # passkey serve attests with packed self attestation, as security keys do; python-fido2's client passes it on
    # (a browser asked for attestation none replaces it with none).
    assert rp.next_line() == (
        f"verdict registration ok user=alice credential={credential_id} uv=true transports=usb "
        f"attachment=cross-platform attestation=packed aaguid={AAGUID} alg=EdDSA"
    )
    saved = state(rp)
    assert [(a["rpID"], a["userName"], a["credential"]["id"]) for a in saved["accounts"]] == [
        ("localhost", "alice", credential_id)
    ]
    assert saved["accounts"][0]["credential"]["transports"] == ["usb"]
    assert oct(os.stat(rp.state_path + ".journal").st_mode & 0o777) == "0o600"

    # Discoverable: no allow list, the key finds alice's passkey.
    options, responses = sign_in(rp, device)
    assert options["allowCredentials"] == []
    assert len(responses) == 1
    status, verdict = rp.post("/authentication/verify", dict(responses[0]))
    assert status == 200, verdict
    assert rp.next_line() == (
        f"verdict authentication ok user=alice credential={credential_id} uv=true signCount=0 "
        "attachment=cross-platform"
    )
    # With the user name: alice's credential in the allow list.
    options, responses = sign_in(rp, device, "alice")
    assert [c["id"] for c in options["allowCredentials"]] == [credential_id]
    status, verdict = rp.post("/authentication/verify", dict(responses[0]))
    assert status == 200 and verdict["user"] == "alice", verdict
    assert rp.next_line().startswith(f"verdict authentication ok user=alice credential={credential_id} ")

    status, listed = rp.post("/registration/options", {"username": "alice"})
    assert [c["id"] for c in listed["excludeCredentials"]] == [credential_id]
    with urllib.request.urlopen(f"http://127.0.0.1:{rp.port}/credentials", timeout=10) as answer:
        accounts = json.load(answer)["accounts"]
    assert [(a["user"], a["credentialId"]) for a in accounts] == [("alice", credential_id)]


def test_registering_again_on_the_same_key_is_excluded_at_the_key(rp, device):
    _, credential = register(rp, device, "alice")
    assert rp.post("/registration/verify", registration_json(credential))[0] == 200
    rp.next_line()
    saved = digest(rp.state_path)

    # Another browser, not signed in as alice, may not add a passkey to her account (issue 23, attack 2).
    session, rp.session = rp.session, None
    status, answer = rp.post("/registration/options", {"username": "alice"})
    assert status == 403 and answer["error"] == "signInRequired", answer
    rp.session = session
    status, options = rp.post("/registration/options", {"username": "alice"})
    assert [c["id"] for c in options["excludeCredentials"]] == [credential.id]
    with pytest.raises(ClientError) as error:
        browser(device, rp.origin).make_credential(PublicKeyCredentialCreationOptions.from_dict(options))
    assert error.value.code == ClientError.ERR.DEVICE_INELIGIBLE
    # What a page does with the browser's InvalidStateError.
    status, _ = rp.post(
        "/client-result",
        {"ceremony": "registration", "name": "InvalidStateError", "message": "The authenticator already has one."},
    )
    assert status == 200
    assert rp.next_line() == (
        "verdict client error ceremony=registration name=InvalidStateError message=The authenticator already has one."
    )
    assert digest(rp.state_path) == saved


def test_replays_bad_json_wrong_origins_and_unknown_credentials_change_nothing(rp, device):
    _, credential = register(rp, device, "alice")
    registration = registration_json(credential)
    assert rp.post("/registration/verify", registration)[0] == 200
    rp.next_line()
    saved = digest(rp.state_path)

    # The same registration again: its challenge is spent.
    status, answer = rp.post("/registration/verify", registration)
    assert (status, answer["error"]) == (409, "challengeReplayed")
    assert rp.next_line().startswith("verdict registration refused code=challengeReplayed reason=")

    # A replayed sign-in.
    _, responses = sign_in(rp, device, "alice")
    assertion = dict(responses[0])
    assert rp.post("/authentication/verify", assertion)[0] == 200
    rp.next_line()
    status, answer = rp.post("/authentication/verify", assertion)
    assert (status, answer["error"]) == (409, "challengeReplayed")
    assert rp.next_line().startswith("verdict authentication refused code=challengeReplayed")

    # Bad JSON, and JSON that is not a response.
    for body in (b"{not json", b"[]"):
        status, answer = rp.post("/authentication/verify", body)
        assert (status, answer["error"]) == (400, "badJSON")
        assert rp.next_line().startswith("verdict authentication refused code=badJSON")
    status, answer = rp.post("/registration/options", b"{")
    assert (status, answer["error"]) == (400, "badJSON")

    # A wrong origin (one python-fido2 accepts for the RP ID localhost, but not the page's).
    _, responses = sign_in(rp, device, "alice", origin="http://localhost:1")
    status, answer = rp.post("/authentication/verify", dict(responses[0]))
    assert (status, answer["error"]) == (400, "originMismatch"), answer
    assert rp.next_line().startswith("verdict authentication refused code=originMismatch user=alice reason=")
    status, options = rp.post("/registration/options", {"username": "bob"})
    created = browser(device, "http://localhost:1").make_credential(PublicKeyCredentialCreationOptions.from_dict(options))
    status, answer = rp.post("/registration/verify", registration_json(created))
    assert (status, answer["error"]) == (400, "originMismatch")
    assert rp.next_line().startswith("verdict registration refused code=originMismatch user=bob")

    # An unknown credential: bob's passkey is on the key (made just above), but the RP never registered it.
    _, responses = sign_in(rp, device)
    by_id = {response.id: response for response in responses}
    assert set(by_id) == {credential.id, created.id}
    status, answer = rp.post("/authentication/verify", dict(by_id[created.id]))
    assert (status, answer["error"]) == (400, "unknownCredential")
    assert rp.next_line().startswith("verdict authentication refused code=unknownCredential reason=")

    assert digest(rp.state_path) == saved
    assert [a["userName"] for a in state(rp)["accounts"]] == ["alice"]


def test_http_errors(rp):
    status, headers, body = rp.get("/")
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    assert b'autocomplete="username webauthn"' in body
    assert headers["Content-Security-Policy"].startswith("default-src 'none'")
    for path, expected in (("/nowhere", 404), ("/registration/verify", 405)):
        with pytest.raises(urllib.error.HTTPError) as error:
            rp.get(path)
        assert error.value.code == expected
        assert json.load(error.value)["error"] in ("notFound", "methodNotAllowed")
    # A declared body over 64 KiB is refused from its head alone.
    connection = http.client.HTTPConnection("127.0.0.1", rp.port, timeout=10)
    connection.putrequest("POST", "/registration/verify")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(64 * 1024 + 1))
    connection.endheaders()
    answer = connection.getresponse()
    assert (answer.status, json.load(answer)["error"]) == (413, "payloadTooLarge")
    connection.close()
    assert not os.path.exists(rp.state_path)


def test_an_rp_id_that_is_not_the_origins_is_refused_at_start(store_dir):
    result = subprocess.run(
        [PASSKEY_BIN, "rp", "serve", "--rp-id", "example.com", "--origin", "https://example.org"],
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 64
    assert "example.com" in result.stderr and "registrable suffix" in result.stderr
    result = subprocess.run(
        [PASSKEY_BIN, "rp", "serve", "--rp-id", "example.com"],
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 64 and "--origin" in result.stderr


def test_answers_show_the_response_decoded_and_a_signed_in_user_deletes_their_passkey(rp, device):
    """Issue 24, item 10: the decoded view agrees with python-fido2's own reading, and deleting needs the session."""
    _, credential = register(rp, device, "alice")
    status, verdict = rp.post("/registration/verify", registration_json(credential))
    assert status == 200, verdict
    decoded = verdict["decoded"]
    ours = credential.response.attestation_object
    assert decoded["clientData"]["type"] == "webauthn.create"
    assert decoded["clientData"]["origin"] == rp.origin
    assert decoded["attestation"]["format"] == ours.fmt
    auth_data = decoded["attestation"]["authenticatorData"]
    assert auth_data["rpIdHash"] == ours.auth_data.rp_id_hash.hex()
    assert auth_data["flags"]["byte"] == f"0x{ours.auth_data.flags:02x}"
    assert auth_data["flags"]["userVerified"] is bool(ours.auth_data.flags & 0x04)
    assert auth_data["signCount"] == ours.auth_data.counter
    assert auth_data["aaguid"] == str(ours.auth_data.credential_data.aaguid)
    key = ours.auth_data.credential_data.public_key
    # rp serve offers EdDSA first, and the key makes it: an OKP JWK (RFC 8037).
    assert auth_data["credentialPublicKey"] == {
        "kty": "OKP", "crv": "Ed25519", "alg": "EdDSA",
        "x": base64.urlsafe_b64encode(key[-2]).rstrip(b"=").decode()}

    # Another browser (no session) cannot delete it; the one signed in as alice can, and the state file loses it.
    credential_id = credential.id
    signed_in = rp.session
    rp.session = None
    status, refused = rp.post("/credentials/delete", {"credentialId": credential_id})
    assert status == 403 and refused["error"] == "signInRequired", refused
    assert len(state(rp)["accounts"]) == 1
    rp.session = signed_in
    status, answer = rp.post("/credentials/delete", {"credentialId": credential_id})
    assert status == 200 and answer == {"deleted": credential_id, "user": "alice", "rpId": "localhost"}, answer
    assert rp.next_line().startswith("verdict registration ok user=alice")
    assert rp.next_line() == f"verdict deletion ok user=alice credential={credential_id}"
    assert state(rp)["accounts"] == []
    status, gone = rp.post("/credentials/delete", {"credentialId": credential_id})
    assert status == 404 and gone["error"] == "noSuchPasskey"
