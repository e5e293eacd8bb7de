"""`passkey rp serve`'s password sign-in, the automatic passkey upgrade it offers, renaming an account and the Signal
API's arguments (issue 27), against the real process.

The "browser" here is this file: it builds the `create()` and `get()` results itself from python-fido2's pieces
(`AuthenticatorData`, `AttestedCredentialData`, `AttestationObject`, `CollectedClientData`, an ES256 key), so that it
can clear the UP flag, as a password manager's conditional create may (WebAuthn L3 §7.1 step 14)."""

import base64
import hashlib
import json
import os
import statistics
import time
import urllib.request

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from fido2.cose import ES256
from fido2.webauthn import (
    AttestationObject,
    AttestedCredentialData,
    AuthenticatorData,
    CollectedClientData,
    PublicKeyCredentialCreationOptions,
)

from conftest import stored_rp_state
from test_rp_serve import RelyingParty

PASSWORD = "correct horse battery staple"


def b64url(data):
    return base64.urlsafe_b64encode(bytes(data)).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SoftKey:
    """One ES256 credential, made and used the way a passkey provider would, with the flags chosen by the test."""

    def __init__(self):
        self.private = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(32)
        self.user_handle = None
        self.counter = 0

    def create(self, options, origin, flags):
        """`credential.toJSON()` for `PublicKeyCredentialCreationOptionsJSON` `options`."""
        self.user_handle = unb64url(options["user"]["id"])
        client_data = CollectedClientData.create(
            type=CollectedClientData.TYPE.CREATE, challenge=unb64url(options["challenge"]), origin=origin)
        attested = AttestedCredentialData.create(
            b"\0" * 16, self.credential_id, ES256.from_cryptography_key(self.private.public_key()))
        auth_data = AuthenticatorData.create(
            hashlib.sha256(options["rp"]["id"].encode()).digest(), flags | AuthenticatorData.FLAG.AT, 0, attested)
        attestation = AttestationObject.create("none", auth_data, {})
        return {"id": b64url(self.credential_id), "rawId": b64url(self.credential_id), "type": "public-key",
                "authenticatorAttachment": "platform", "clientExtensionResults": {},
                "response": {"clientDataJSON": b64url(client_data), "attestationObject": b64url(attestation),
                             "transports": ["internal", "hybrid"]}}

    def get(self, options, origin):
        """`credential.toJSON()` for `PublicKeyCredentialRequestOptionsJSON` `options`."""
        self.counter += 1
        client_data = CollectedClientData.create(
            type=CollectedClientData.TYPE.GET, challenge=unb64url(options["challenge"]), origin=origin)
        flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV
        auth_data = AuthenticatorData.create(hashlib.sha256(options["rpId"].encode()).digest(), flags, self.counter)
        signature = self.private.sign(bytes(auth_data) + client_data.hash, ec.ECDSA(hashes.SHA256()))
        return {"id": b64url(self.credential_id), "rawId": b64url(self.credential_id), "type": "public-key",
                "authenticatorAttachment": "platform", "clientExtensionResults": {},
                "response": {"clientDataJSON": b64url(client_data), "authenticatorData": b64url(auth_data),
                             "signature": b64url(signature), "userHandle": b64url(self.user_handle)}}


NO_PRESENCE = AuthenticatorData.FLAG(0)
PRESENT = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV


@pytest.fixture
def rp(store_dir):
    running = RelyingParty(os.path.join(store_dir, "rp-state.json"))
    yield running
    running.stop()


def sign_up(rp, user, password=PASSWORD):
    status, answer = rp.post("/password/sign-up", {"username": user, "password": password})
    assert status == 200, answer
    assert rp.next_line() == f"verdict password sign-up ok user={user}"
    return answer


def test_a_password_sign_in_offers_an_upgrade_accepted_without_user_presence(rp):
    assert sign_up(rp, "alice") == {"verdict": "ok", "ceremony": "password-sign-up", "user": "alice"}
    stored = stored_rp_state(rp.state_path)
    [record] = stored["users"]
    assert record["userName"] == "alice" and record["password"]["kdf"] == "scrypt"
    assert len(unb64url(record["password"]["salt"])) == 16 and len(unb64url(record["password"]["hash"])) == 32
    for name in (rp.state_path, rp.state_path + ".journal"):
        if os.path.exists(name):
            with open(name, encoding="utf-8") as file:
                assert "horse" not in file.read()
            assert os.stat(name).st_mode & 0o777 == 0o600

    rp.session = None  # another browser: the password signs it in
    status, answer = rp.post("/password/sign-in", {"username": "alice", "password": PASSWORD})
    assert status == 200, answer
    assert rp.next_line() == "verdict password sign-in ok user=alice"
    assert rp.session
    upgrade = answer["upgrade"]
    # python-fido2 reads them as the creation options they are.
    parsed = PublicKeyCredentialCreationOptions.from_dict(upgrade)
    assert parsed.rp.id == "localhost" and parsed.user.name == "alice"
    assert parsed.user.id == unb64url(record["userHandle"])
    assert upgrade["authenticatorSelection"]["residentKey"] == "required"
    assert upgrade["authenticatorSelection"]["userVerification"] == "preferred"
    assert answer["signals"] == {"rpId": "localhost", "userId": record["userHandle"], "name": "alice",
                                 "displayName": "alice", "allAcceptedCredentialIds": []}

    key = SoftKey()
    status, verdict = rp.post("/registration/verify", key.create(upgrade, rp.origin, NO_PRESENCE))
    assert status == 200, verdict
    line = rp.next_line()
    assert line.startswith("verdict registration ok user=alice credential=" + b64url(key.credential_id)), line
    assert line.endswith(" upgrade=true up=false"), line
    assert verdict["upgrade"] is True and verdict["userPresent"] is False
    accounts = stored_rp_state(rp.state_path)["accounts"]
    assert [(a["userName"], a["credential"]["userHandle"]) for a in accounts] == [("alice", record["userHandle"])]

    # The new passkey signs alice in, and the answer lists it for signalAllAcceptedCredentials.
    status, options = rp.post("/authentication/options", {})
    status, signed_in = rp.post("/authentication/verify", key.get(options, rp.origin))
    assert status == 200, signed_in
    assert rp.next_line().startswith("verdict authentication ok user=alice")
    assert signed_in["signals"]["allAcceptedCredentialIds"] == [b64url(key.credential_id)]


def test_a_registration_without_user_presence_is_refused_outside_an_upgrade(rp):
    status, options = rp.post("/registration/options", {"username": "bob"})
    assert status == 200
    status, refused = rp.post("/registration/verify", SoftKey().create(options, rp.origin, AuthenticatorData.FLAG.UV))
    assert status == 400 and refused["error"] == "userNotPresent", refused
    assert rp.next_line().startswith("verdict registration refused code=userNotPresent user=bob")
    assert stored_rp_state(rp.state_path)["accounts"] == []
    # The same options answered with UP: accepted, and not an upgrade.
    status, options = rp.post("/registration/options", {"username": "bob"})
    status, verdict = rp.post("/registration/verify", SoftKey().create(options, rp.origin, PRESENT))
    assert status == 200 and verdict["upgrade"] is False
    assert "upgrade=" not in rp.next_line()


def test_a_wrong_password_and_an_unknown_user_get_the_same_answer_in_the_same_time(rp):
    sign_up(rp, "alice")
    rp.session = None
    answers, times = {}, {}
    for name, body in [("wrong password", {"username": "alice", "password": "wrong horse battery staple"}),
                       ("unknown user", {"username": "mallory", "password": PASSWORD})]:
        samples = []
        for _ in range(5):
            started = time.perf_counter()
            answers[name] = rp.post("/password/sign-in", body)
            samples.append(time.perf_counter() - started)
            assert rp.next_line() == ("verdict password sign-in refused code=signInFailed "
                                      "reason=the user name or the password is wrong")
        times[name] = statistics.median(samples)
    assert answers["wrong password"] == answers["unknown user"]
    assert answers["unknown user"][0] == 400 and answers["unknown user"][1]["error"] == "signInFailed"
    assert rp.session is None
    slow, fast = max(times.values()), min(times.values())
    assert slow < 2 * fast, times


def test_rename_the_signal_arguments_and_bad_bodies(rp):
    status, options = rp.post("/registration/options", {"username": "carol", "displayName": "Carol C"})
    key = SoftKey()
    status, verdict = rp.post("/registration/verify", key.create(options, rp.origin, PRESENT))
    assert status == 200, verdict
    rp.next_line()
    handle = b64url(key.user_handle)
    status, options = rp.post("/authentication/options", {"username": "carol"})
    status, signed_in = rp.post("/authentication/verify", key.get(options, rp.origin))
    assert signed_in["signals"] == {"rpId": "localhost", "userId": handle, "name": "carol", "displayName": "Carol C",
                                    "allAcceptedCredentialIds": [b64url(key.credential_id)]}
    rp.next_line()

    before = stored_rp_state(rp.state_path)
    session, rp.session = rp.session, None
    status, refused = rp.post("/account/rename", {"username": "carol", "displayName": "Mallory"})
    assert status == 403 and refused["error"] == "signInRequired"
    rp.session = session
    for body in (b"{", b"[]", b"null", {"username": "carol"}, {"username": "carol", "displayName": 7},
                 {"username": "carol", "displayName": "x" * 65}, {"username": "carol", "displayName": "  "},
                 {"username": "carol", "displayName": "a\u0000b"}):
        status, refused = rp.post("/account/rename", body)
        assert status == 400 and refused["error"] in ("badJSON", "invalidRequest"), (body, refused)
    for path in ("/password/sign-up", "/password/sign-in"):
        for body in (b"{", b"[]", {"username": "carol"}, {"username": "a b", "password": PASSWORD},
                     {"username": "carol", "password": 12345678}, {"username": "carol", "password": "x" * 257}):
            status, refused = rp.post(path, body)
            assert status == 400 and refused["error"] in ("badJSON", "invalidRequest"), (path, body, refused)
            assert PASSWORD not in refused["message"] and "x" * 257 not in refused["message"]
    assert stored_rp_state(rp.state_path) == before

    status, renamed = rp.post("/account/rename", {"username": "carol", "displayName": "Carol Carroll"})
    assert status == 200, renamed
    assert rp.next_line() == "verdict rename ok user=carol displayName=Carol%20Carroll"
    assert renamed["signals"]["displayName"] == "Carol Carroll" and renamed["signals"]["userId"] == handle
    users = stored_rp_state(rp.state_path)["users"]
    assert [(u["userName"], u["displayName"], u["userHandle"]) for u in users] == [("carol", "Carol Carroll", handle)]
    request = urllib.request.Request(f"http://127.0.0.1:{rp.port}/credentials", headers={"Cookie": rp.session})
    with urllib.request.urlopen(request, timeout=10) as answer:
        credentials = json.load(answer)
    assert credentials["signedIn"] == "carol" and credentials["accounts"][0]["displayName"] == "Carol Carroll"

    # After a restart the names are still there: a sign-in's signals carry the new display name.
    rp.stop()
    again = RelyingParty(rp.state_path)
    try:
        status, options = again.post("/authentication/options", {})
        status, signed_in = again.post("/authentication/verify", key.get(options, again.origin))
        assert status == 200 and signed_in["signals"]["displayName"] == "Carol Carroll"
    finally:
        again.stop()
