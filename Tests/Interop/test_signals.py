"""Issue 27 through the command line: a relying party's signals (`passkey client signal`) hide, show again and rename
this computer's passkeys, and say nothing about which passkeys are here; an automatic passkey upgrade
(`client create --mediation conditional`) is made with no prompt right after `client get --password` gave the
account's password to the page, and py_webauthn, an independent relying party, accepts it with user presence not
required, as WebAuthn L3 tells relying parties to for conditional create.
"""

import base64
import json
import os

import pytest
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers.structs import AuthenticatorSelectionCriteria, ResidentKeyRequirement

from conftest import run_with_store

ORIGIN = "https://example.com"
NOT_ALLOWED, SECURITY, TYPE = 10, 12, 15


def run(store, *args, stdin="", password=None, environment_extra=None):
    # A new session: no controlling terminal, so nothing can be asked on one.
    return run_with_store(store, *args, stdin=stdin, password=password, new_session=True,
                          environment_extra=environment_extra)


def register(store, user):
    """A discoverable passkey for `user` at example.com, made by `client create` and verified by py_webauthn."""
    options = generate_registration_options(
        rp_id="example.com", rp_name="Example", user_name=user,
        authenticator_selection=AuthenticatorSelectionCriteria(resident_key=ResidentKeyRequirement.REQUIRED))
    created = run(store, "client", "create", "--origin", ORIGIN, "--no-phone", "--yes", "--json", "--options", "-",
                  stdin=options_to_json(options))
    assert created.returncode == 0, created.stderr
    verified = verify_registration_response(credential=created.stdout, expected_challenge=options.challenge,
                                            expected_origin=ORIGIN, expected_rp_id="example.com")
    return json.loads(created.stdout)["id"], options.user.id, verified


def listing(store, *flags):
    listed = run(store, "list", "--json", *flags)
    assert listed.returncode == 0, listed.stderr
    return [entry["credentialId"] for entry in json.loads(listed.stdout)]


def signal(store, kind, options, origin=ORIGIN):
    return run(store, "client", "signal", kind, "--origin", origin, "--options", "-", stdin=json.dumps(options))


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_an_unknown_credential_is_hidden_from_list_and_chooser_until_unhidden(store):
    alice, _, _ = register(store, "alice")
    bob, _, _ = register(store, "bob")

    hidden = signal(store, "unknown", {"rpId": "example.com", "credentialId": alice})
    assert hidden.returncode == 0, hidden.stderr
    assert listing(store) == [bob]
    assert listing(store, "--hidden") == [alice]
    assert listing(store, "--verify", "--hidden") == [alice]
    entry = json.loads(run(store, "list", "--json", "--hidden").stdout)[0]
    assert entry["hidden"] and entry["deletedAfter"] > entry["hidden"]

    # The chooser of a sign-in with an empty allow list offers bob only.
    options = generate_authentication_options(rp_id="example.com")
    signed = run(store, "client", "get", "--origin", ORIGIN, "--no-phone", "--yes", "--json", "--options", "-",
                 stdin=options_to_json(options))
    assert signed.returncode == 0, signed.stderr
    assert json.loads(signed.stdout)["id"] == bob
    assert "alice" not in signed.stderr

    shown = run(store, "unhide", alice)
    assert shown.returncode == 0, shown.stderr
    assert "shown again" in shown.stdout
    assert sorted(listing(store)) == sorted([alice, bob])


def test_a_signal_says_nothing_about_which_credentials_are_here(store):
    alice, alice_handle, _ = register(store, "alice")
    cases = [
        ("unknown", {"rpId": "example.com", "credentialId": alice},
         {"rpId": "example.com", "credentialId": b64(b"not a credential here")}),
        ("accepted", {"rpId": "example.com", "userId": b64(alice_handle), "allAcceptedCredentialIds": []},
         {"rpId": "example.com", "userId": b64(b"nobody"), "allAcceptedCredentialIds": []}),
        ("details", {"rpId": "example.com", "userId": b64(alice_handle), "name": "alice2", "displayName": "A"},
         {"rpId": "example.com", "userId": b64(b"nobody"), "name": "x", "displayName": "X"}),
    ]
    for kind, held, absent in cases:
        results = [signal(store, kind, options) for options in (held, absent)]
        assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
        assert results[0].stdout == results[1].stdout
        assert results[0].stderr == results[1].stderr
        json_results = [run(store, "client", "signal", kind, "--origin", ORIGIN, "--json", "--options", "-",
                            stdin=json.dumps(options)) for options in (held, absent)]
        assert [json.loads(r.stdout) for r in json_results] == [{"outcome": "signalled"}] * 2
    # The held passkey was hidden by the first two and renamed by the third.
    entry = json.loads(run(store, "list", "--json", "--hidden").stdout)[0]
    assert entry["credentialId"] == alice and entry["userName"] == "alice2" and entry["userDisplayName"] == "A"


def test_accepted_credentials_show_again_what_they_list(store):
    alice, alice_handle, _ = register(store, "alice")
    assert signal(store, "unknown", {"rpId": "example.com", "credentialId": alice}).returncode == 0
    assert listing(store) == []
    accepted = signal(store, "accepted",
                      {"rpId": "example.com", "userId": b64(alice_handle), "allAcceptedCredentialIds": [alice]})
    assert accepted.returncode == 0, accepted.stderr
    assert listing(store) == [alice]


@pytest.mark.parametrize("kind,options,origin,status", [
    ("unknown", {"rpId": "example.com"}, ORIGIN, TYPE),
    ("unknown", {"rpId": "example.com", "credentialId": "not base64url!"}, ORIGIN, TYPE),
    ("accepted", {"rpId": "example.com", "userId": "AQ", "allAcceptedCredentialIds": "AQ"}, ORIGIN, TYPE),
    ("details", {"rpId": "example.com", "userId": "AQ", "name": "a"}, ORIGIN, TYPE),
    ("unknown", {"rpId": "example.com", "credentialId": "AQID"}, "https://example.org", SECURITY),
    ("unknown", {"rpId": "com", "credentialId": "AQID"}, "https://example.com", SECURITY),
])
def test_a_bad_signal_is_the_browsers_error_and_changes_nothing(store, kind, options, origin, status):
    alice, _, _ = register(store, "alice")
    before = listing(store)
    result = signal(store, kind, options, origin=origin)
    assert result.returncode == status, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("passkey: "), result.stderr
    assert listing(store) == before == [alice]


def test_a_password_sign_in_is_upgraded_to_a_passkey_with_no_prompt(store):
    assert run(store, "password", "add", "example.com", "alice", password="correct-Horse-7").returncode == 0
    registration = generate_registration_options(
        rp_id="example.com", rp_name="Example", user_name="alice",
        authenticator_selection=AuthenticatorSelectionCriteria(resident_key=ResidentKeyRequirement.REQUIRED))

    def upgrade():
        return run(store, "client", "create", "--origin", ORIGIN, "--no-phone", "--json", "--mediation",
                   "conditional", "--options", "-", stdin=options_to_json(registration))

    # Before any fill: refused, silently for the page (nothing on standard output), with one line for the person.
    refused = upgrade()
    assert refused.returncode == NOT_ALLOWED and refused.stdout == "", refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1

    # The page's sign-in form is filled from the saved password (the combined chooser, answered by --yes).
    filled = run(store, "client", "get", "--origin", ORIGIN, "--no-phone", "--yes", "--json", "--password",
                 "--options", "-", stdin=options_to_json(generate_authentication_options(rp_id="example.com")))
    assert filled.returncode == 0, filled.stderr
    assert json.loads(filled.stdout)["type"] == "password"

    # The upgrade: no --yes, no terminal, nothing asked; the UP and UV flags are clear.
    upgraded = upgrade()
    assert upgraded.returncode == 0, upgraded.stderr
    credential = json.loads(upgraded.stdout)
    flags = base64.urlsafe_b64decode(credential["response"]["authenticatorData"] + "==")[32]
    assert flags & 0x01 == 0 and flags & 0x04 == 0
    with pytest.raises(Exception):
        verify_registration_response(credential=upgraded.stdout, expected_challenge=registration.challenge,
                                     expected_origin=ORIGIN, expected_rp_id="example.com")
    verified = verify_registration_response(
        credential=upgraded.stdout, expected_challenge=registration.challenge, expected_origin=ORIGIN,
        expected_rp_id="example.com", require_user_presence=False)

    # The new passkey signs in, with the person present as usual.
    options = generate_authentication_options(rp_id="example.com")
    signed = run(store, "client", "get", "--origin", ORIGIN, "--no-phone", "--yes", "--json", "--options", "-",
                 stdin=options_to_json(options))
    assert signed.returncode == 0, signed.stderr
    verify_authentication_response(
        credential=signed.stdout, expected_challenge=options.challenge, expected_origin=ORIGIN,
        expected_rp_id="example.com", credential_public_key=verified.credential_public_key,
        credential_current_sign_count=0)

    # A second upgrade for the same account: it has a passkey now, so the same silent refusal.
    again = upgrade()
    assert again.returncode == NOT_ALLOWED and again.stdout == ""
    assert len(listing(store)) == 1


def test_rp_serves_password_sign_in_is_upgraded_by_our_client_and_its_deletion_signal_hides_the_passkey(store):
    """The whole story against `passkey rp serve` (the relying party) with this package's client as the browser and
    this computer's store as the provider: the page's password sign-in is filled from the vault, the sign-in's
    answer carries the upgrade's options, `client create --mediation conditional` answers them with no prompt, the
    RP verifies the upgrade (UP clear), the new passkey signs in, and after the RP deletes it, the page's
    `signalUnknownCredential` arguments, given to `client signal`, hide it from our list and chooser."""
    from test_rp_serve import RelyingParty

    rp = RelyingParty(os.path.join(os.path.dirname(store), "rp-state.json"))
    try:
        origin = rp.origin
        status, answer = rp.post("/password/sign-up", {"username": "alice", "password": "hunter2 hunter2"})
        assert status == 200, answer
        assert run(store, "password", "add", "localhost", "alice", password="hunter2 hunter2").returncode == 0

        # The page asks for a sign-in with passkeys and passwords: the vault fills the password.
        status, request = rp.post("/authentication/options", {})
        assert status == 200, request
        filled = run(store, "client", "get", "--origin", origin, "--no-phone", "--yes", "--json", "--password",
                     "--options", "-", stdin=json.dumps(request))
        assert filled.returncode == 0, filled.stderr
        login = json.loads(filled.stdout)
        assert login["type"] == "password" and login["id"] == "alice"
        status, signed = rp.post("/password/sign-in", {"username": login["id"], "password": login["password"]})
        assert status == 200 and signed["verdict"] == "ok", signed

        # The upgrade: no --yes, no terminal; the RP accepts it without UP, as an upgrade only.
        upgraded = run(store, "client", "create", "--origin", origin, "--no-phone", "--json", "--mediation",
                       "conditional", "--options", "-", stdin=json.dumps(signed["upgrade"]))
        assert upgraded.returncode == 0, upgraded.stderr
        status, verdict = rp.post("/registration/verify", json.loads(upgraded.stdout))
        assert status == 200 and verdict["verdict"] == "ok", verdict
        assert verdict["upgrade"] is True and verdict["userPresent"] is False
        credential_id = verdict["credentialId"]
        assert listing(store) == [credential_id]

        # The new passkey signs in (the person present, as usual); the answer carries the signals' arguments.
        status, request = rp.post("/authentication/options", {})
        signed_in = run(store, "client", "get", "--origin", origin, "--no-phone", "--yes", "--json", "--options",
                        "-", stdin=json.dumps(request))
        assert signed_in.returncode == 0, signed_in.stderr
        status, verdict = rp.post("/authentication/verify", json.loads(signed_in.stdout))
        assert status == 200 and verdict["verdict"] == "ok", verdict
        accepted = verdict["signals"]
        assert accepted["allAcceptedCredentialIds"] == [credential_id]
        kept = signal(store, "accepted", {key: accepted[key] for key in ("rpId", "userId", "allAcceptedCredentialIds")},
                      origin=origin)
        assert kept.returncode == 0, kept.stderr
        assert listing(store) == [credential_id]

        # The RP deletes the passkey; the page's signalUnknownCredential({rpId, credentialId}) reaches our store.
        status, deleted = rp.post("/credentials/delete", {"credentialId": credential_id})
        assert status == 200, deleted
        hidden = signal(store, "unknown", {"rpId": deleted["rpId"], "credentialId": deleted["deleted"]},
                        origin=origin)
        assert hidden.returncode == 0, hidden.stderr
        assert listing(store) == [] and listing(store, "--hidden") == [credential_id]
        status, request = rp.post("/authentication/options", {})
        offered = run(store, "client", "get", "--origin", origin, "--no-phone", "--yes", "--json",
                      "--prefer-immediately-available", "--options", "-", stdin=json.dumps(request))
        assert offered.returncode == NOT_ALLOWED, offered.stdout
    finally:
        rp.stop()
