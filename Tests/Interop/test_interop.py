"""python-fido2 and the webauthn package drive `passkey serve --udp` for real.

Every registration and assertion is verified twice: by python-fido2's Fido2Server and by the
independent `webauthn` package (py_webauthn). python-fido2's Ctap2 keeps strict CBOR on, so any
non-canonical response fails the test.
"""

import json
import os

import pytest
import webauthn
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives import hashes
from fido2 import cose
from fido2.client import ClientError, DefaultClientDataCollector, Fido2Client
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.hid import CTAPHID
from fido2.server import Fido2Server
from fido2.webauthn import (
    AttestationObject,
    AuthenticationResponse,
    AuthenticatorAssertionResponse,
    AuthenticatorAttestationResponse,
    CollectedClientData,
    PublicKeyCredentialParameters,
    PublicKeyCredentialType,
    RegistrationResponse,
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialUserEntity,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from conftest import Server

RP_ID = "example.com"
ORIGIN = "https://example.com"
AAGUID = "8391e378-32c7-4aa5-ad16-6f0cf4ad7b23"


def client(device):
    return Fido2Client(device, client_data_collector=DefaultClientDataCollector(ORIGIN))


def rp_server():
    return Fido2Server(PublicKeyCredentialRpEntity(name="Example", id=RP_ID), attestation="none")


def check_registration(server, state, options, response, uv):
    """Verifies one registration with Fido2Server and with py_webauthn; returns both views."""
    credential = server.register_complete(state, response).credential_data
    verified = webauthn.verify_registration_response(
        credential=json.dumps(dict(response)),
        expected_challenge=options.challenge,
        expected_origin=ORIGIN,
        expected_rp_id=RP_ID,
        require_user_verification=uv,
    )
    assert verified.credential_id == credential.credential_id
    assert verified.aaguid == AAGUID
    assert verified.sign_count == 0
    assert verified.credential_device_type == "multi_device"
    assert verified.credential_backed_up is True
    assert str(credential.aaguid) == AAGUID
    return credential, verified


def register(device, name, user_id, resident=True, exclude=None):
    """Registers one account and verifies it twice.

    A discoverable passkey needs user verification. python-fido2's Fido2Client insists on a
    PIN/UV auth protocol before it asks for any UV, and none is implemented yet, so discoverable
    registrations go through Ctap2 with the uv option, as a CTAP 2.0 platform sends them; the
    client data and the WebAuthn response are still python-fido2's own objects.
    """
    server = rp_server()
    options, state = server.register_begin(
        PublicKeyCredentialUserEntity(id=user_id, name=name, display_name=name.title()),
        credentials=exclude,
        resident_key_requirement=ResidentKeyRequirement.REQUIRED if resident else ResidentKeyRequirement.DISCOURAGED,
        user_verification=UserVerificationRequirement.REQUIRED if resident else UserVerificationRequirement.DISCOURAGED,
    )
    public_key = options.public_key
    if not resident:
        response = client(device).make_credential(public_key)
        return check_registration(server, state, public_key, response, uv=False)

    client_data = CollectedClientData.create(type=CollectedClientData.TYPE.CREATE, challenge=public_key.challenge, origin=ORIGIN)
    attestation = Ctap2(device).make_credential(
        client_data.hash,
        {"id": RP_ID, "name": "Example"},
        {"id": user_id, "name": name, "displayName": name.title()},
        [{"type": "public-key", "alg": -7}],
        exclude_list=[{"type": "public-key", "id": c.credential_id} for c in exclude or []] or None,
        options={"rk": True, "uv": True},
    )
    response = RegistrationResponse(
        raw_id=attestation.auth_data.credential_data.credential_id,
        response=AuthenticatorAttestationResponse(
            client_data=client_data,
            attestation_object=AttestationObject.create(attestation.fmt, attestation.auth_data, attestation.att_stmt),
        ),
    )
    return check_registration(server, state, public_key, response, uv=True)


def check_assertion(server, state, options, credentials, verified_by_id, response, uv):
    server.authenticate_complete(state, credentials, response)
    checked = webauthn.verify_authentication_response(
        credential=json.dumps(dict(response)),
        expected_challenge=options.challenge,
        expected_origin=ORIGIN,
        expected_rp_id=RP_ID,
        credential_public_key=verified_by_id[response.raw_id].credential_public_key,
        credential_current_sign_count=0,
        require_user_verification=uv,
    )
    assert checked.credential_id == response.raw_id
    assert checked.user_verified is uv


def authenticate(device, credentials, verified_by_id, allow=True):
    """Signs in through Fido2Client (no UV); verifies every assertion with both RP libraries."""
    server = rp_server()
    options, state = server.authenticate_begin(
        credentials if allow else None, user_verification=UserVerificationRequirement.DISCOURAGED
    )
    selection = client(device).get_assertion(options.public_key)
    responses = [selection.get_response(i) for i in range(len(selection.get_assertions()))]
    for response in responses:
        check_assertion(server, state, options.public_key, credentials, verified_by_id, response, uv=False)
    return responses


def authenticate_with_uv(device, credentials, verified_by_id):
    """Signs in with user verification through Ctap2 (see `register`), verified with both RP libraries."""
    server = rp_server()
    options, state = server.authenticate_begin(None, user_verification=UserVerificationRequirement.REQUIRED)
    client_data = CollectedClientData.create(
        type=CollectedClientData.TYPE.GET, challenge=options.public_key.challenge, origin=ORIGIN
    )
    assertion = Ctap2(device).get_assertion(RP_ID, client_data.hash, options={"uv": True})
    response = AuthenticationResponse(
        raw_id=assertion.credential["id"],
        response=AuthenticatorAssertionResponse(
            client_data=client_data,
            authenticator_data=assertion.auth_data,
            signature=assertion.signature,
            user_handle=assertion.user["id"],
        ),
    )
    check_assertion(server, state, options.public_key, credentials, verified_by_id, response, uv=True)
    return assertion


def test_get_info(device):
    info = Ctap2(device).get_info()
    assert info.versions == ["FIDO_2_0", "FIDO_2_1"]
    assert str(info.aaguid) == AAGUID
    assert info.options["uv"] is True and info.options["makeCredUvNotRqd"] is True  # exactness: test_ctap21.py
    assert info.transports == ["usb"]
    assert info.algorithms == [{"alg": alg, "type": "public-key"} for alg in (-7, -8, -9, -19)]
    # CTAP 2.2's fields, as python-fido2 2.x reads them: packed self attestation, reset over USB, no PIN complexity
    # policy, PINs up to 63 bytes, authenticatorConfig's toggleAlwaysUv and setMinPINLength.
    assert info.attestation_formats == ["packed"] and info.transports_for_reset == ["usb"]
    assert info.pin_complexity_policy is False and info.max_pin_length == 63
    assert info.authenticator_config_commands == [2, 3]


def test_register_and_sign_in_with_and_without_allow_list(device):
    credential, verified = register(device, "alice", b"user-alice")
    by_id = {credential.credential_id: verified}

    with_list = authenticate(device, [credential], by_id, allow=True)
    assert [r.raw_id for r in with_list] == [credential.credential_id]

    discovered = authenticate(device, [credential], by_id, allow=False)
    assert [r.raw_id for r in discovered] == [credential.credential_id]
    assert discovered[0].response.user_handle == b"user-alice"

    verified = authenticate_with_uv(device, [credential], by_id)
    assert verified.user == {"id": b"user-alice", "name": "alice", "displayName": "Alice"}


def test_non_discoverable_credential_needs_allow_list(device):
    credential, verified = register(device, "nora", b"user-nora", resident=False)
    authenticate(device, [credential], {credential.credential_id: verified}, allow=True)
    with pytest.raises(ClientError) as error:
        authenticate(device, [credential], {credential.credential_id: verified}, allow=False)
    assert isinstance(error.value.cause, CtapError)
    assert error.value.cause.code == CtapError.ERR.NO_CREDENTIALS


def test_two_accounts_page_with_get_next_assertion(device):
    alice, alice_verified = register(device, "alice", b"user-alice")
    bob, bob_verified = register(device, "bob", b"user-bob")
    by_id = {alice.credential_id: alice_verified, bob.credential_id: bob_verified}

    # Raw CTAP: numberOfCredentials, newest first, then getNextAssertion.
    ctap = Ctap2(device)
    first = ctap.get_assertion(RP_ID, b"\x01" * 32)
    assert first.number_of_credentials == 2
    assert first.credential["id"] == bob.credential_id
    second = ctap.get_next_assertion()
    assert second.credential["id"] == alice.credential_id
    with pytest.raises(CtapError) as error:
        ctap.get_next_assertion()
    assert error.value.code == CtapError.ERR.NOT_ALLOWED

    # Through the WebAuthn client: both assertions verify.
    responses = authenticate(device, [alice, bob], by_id, allow=False)
    assert {r.raw_id for r in responses} == {alice.credential_id, bob.credential_id}


def test_exclude_list_refuses_a_second_registration(device):
    credential, _ = register(device, "alice", b"user-alice")
    with pytest.raises(CtapError) as error:
        register(device, "alice", b"user-alice-2", exclude=[credential])
    assert error.value.code == CtapError.ERR.CREDENTIAL_EXCLUDED
    # Through Fido2Client the same refusal surfaces as the WebAuthn "device ineligible" error.
    server_credential, _ = register(device, "nora", b"user-nora", resident=False)
    with pytest.raises(ClientError) as error:
        register(device, "nora", b"user-nora-2", resident=False, exclude=[server_credential])
    assert error.value.code == ClientError.ERR.DEVICE_INELIGIBLE


def test_ctap_errors_for_bad_requests(device):
    ctap = Ctap2(device)
    rp = {"id": RP_ID}
    user = {"id": b"u", "name": "u"}
    with pytest.raises(CtapError) as error:
        ctap.make_credential(b"\x00" * 32, rp, user, [{"type": "public-key", "alg": -35}, {"type": "public-key", "alg": -257}])
    assert error.value.code == CtapError.ERR.UNSUPPORTED_ALGORITHM
    with pytest.raises(CtapError) as error:
        ctap.send_cbor(Ctap2.CMD.MAKE_CREDENTIAL, {1: b"\x00" * 32, 2: rp})
    assert error.value.code == CtapError.ERR.MISSING_PARAMETER
    with pytest.raises(CtapError) as error:
        ctap.send_cbor(Ctap2.CMD.GET_ASSERTION, {1: 5, 2: b"\x00" * 32})
    assert error.value.code == CtapError.ERR.CBOR_UNEXPECTED_TYPE
    # Map keys out of order are read, as security keys read them (Firefox sends uv before up); a duplicate key is not.
    assert device.call(CTAPHID.CBOR, b"\x01\xa2\x02\x00\x01\x00") == bytes([CtapError.ERR.CBOR_UNEXPECTED_TYPE])
    assert device.call(CTAPHID.CBOR, b"\x01\xa2\x01\x00\x01\x00") == bytes([CtapError.ERR.INVALID_CBOR])
    with pytest.raises(CtapError) as error:
        ctap.get_assertion(RP_ID, b"\x00" * 32)
    assert error.value.code == CtapError.ERR.NO_CREDENTIALS


def test_ctaphid_ping_and_wink(device):
    payload = os.urandom(1000)
    assert device.ping(payload) == payload
    device.wink()


def test_reset_deletes_every_passkey(store_dir):
    path = os.path.join(store_dir, "reset.sqlite")
    first = Server(path)
    try:
        dev = first.device()
        register(dev, "alice", b"user-alice")
    finally:
        first.stop()

    # Reset is allowed only just after start-up, so use a fresh process.
    second = Server(path)
    try:
        dev = second.device()
        ctap = Ctap2(dev)
        assert ctap.get_assertion(RP_ID, b"\x00" * 32).credential is not None
        ctap.reset()
        with pytest.raises(CtapError) as error:
            ctap.get_assertion(RP_ID, b"\x00" * 32)
        assert error.value.code == CtapError.ERR.NO_CREDENTIALS
    finally:
        second.stop()


def test_passkeys_survive_a_restart(store_dir):
    path = os.path.join(store_dir, "restart.sqlite")
    first = Server(path)
    try:
        credential, verified = register(first.device(), "alice", b"user-alice")
    finally:
        first.stop()
    second = Server(path)
    try:
        authenticate(second.device(), [credential], {credential.credential_id: verified}, allow=False)
    finally:
        second.stop()
    assert os.stat(path).st_mode & 0o777 == 0o600


@pytest.mark.parametrize("alg", [-8, -19, -9])
def test_eddsa_and_the_fully_specified_algorithms(device, alg):
    """makeCredential with only `alg` offered (and ES256 after it, which must not win): the key is of that algorithm,
    its packed self attestation and a later assertion verify with `cryptography` directly, and Fido2Server (and, for
    EdDSA, py_webauthn, which knows no -19 or -9) accepts both ceremonies."""
    server = rp_server()
    server.allowed_algorithms = [PublicKeyCredentialParameters(type=PublicKeyCredentialType.PUBLIC_KEY, alg=alg)]
    options, state = server.register_begin(
        PublicKeyCredentialUserEntity(id=b"user-olga", name="olga", display_name="Olga"),
        resident_key_requirement=ResidentKeyRequirement.REQUIRED, user_verification=UserVerificationRequirement.REQUIRED)
    public_key = options.public_key
    client_data = CollectedClientData.create(type=CollectedClientData.TYPE.CREATE, challenge=public_key.challenge, origin=ORIGIN)
    attestation = Ctap2(device).make_credential(
        client_data.hash, {"id": RP_ID, "name": "Example"}, {"id": b"user-olga", "name": "olga"},
        [{"type": "public-key", "alg": alg}, {"type": "public-key", "alg": -7}], options={"rk": True, "uv": True})
    key = attestation.auth_data.credential_data.public_key
    assert key[3] == alg and isinstance(key, cose.CoseKey.for_alg(alg))
    assert attestation.fmt == "packed" and attestation.att_stmt["alg"] == alg
    signed = bytes(attestation.auth_data) + client_data.hash

    def verify(signature, message):
        if alg in (-8, -19):
            assert key[1] == 1 and key[-1] == 6 and len(signature) == 64
            ed25519.Ed25519PublicKey.from_public_bytes(key[-2]).verify(signature, message)
        else:
            assert key[1] == 2 and key[-1] == 1
            public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + key[-2] + key[-3])
            public.verify(signature, message, ec.ECDSA(hashes.SHA256()))

    verify(attestation.att_stmt["sig"], signed)
    response = RegistrationResponse(
        raw_id=attestation.auth_data.credential_data.credential_id,
        response=AuthenticatorAttestationResponse(
            client_data=client_data,
            attestation_object=AttestationObject.create(attestation.fmt, attestation.auth_data, attestation.att_stmt)))
    credential = server.register_complete(state, response).credential_data
    if alg == -8:
        verified = webauthn.verify_registration_response(
            credential=json.dumps(dict(response)), expected_challenge=public_key.challenge, expected_origin=ORIGIN,
            expected_rp_id=RP_ID, require_user_verification=True, supported_pub_key_algs=[webauthn.helpers.structs.COSEAlgorithmIdentifier.EDDSA])
        assert verified.credential_id == credential.credential_id

    request, request_state = server.authenticate_begin([credential], user_verification=UserVerificationRequirement.REQUIRED)
    get_data = CollectedClientData.create(type=CollectedClientData.TYPE.GET, challenge=request.public_key.challenge, origin=ORIGIN)
    assertion = Ctap2(device).get_assertion(RP_ID, get_data.hash, options={"uv": True})
    verify(assertion.signature, bytes(assertion.auth_data) + get_data.hash)
    server.authenticate_complete(request_state, [credential], AuthenticationResponse(
        raw_id=assertion.credential["id"],
        response=AuthenticatorAssertionResponse(
            client_data=get_data, authenticator_data=assertion.auth_data, signature=assertion.signature,
            user_handle=assertion.user["id"])))
    if alg == -8:
        checked = webauthn.verify_authentication_response(
            credential=json.dumps(dict(AuthenticationResponse(
                raw_id=assertion.credential["id"],
                response=AuthenticatorAssertionResponse(
                    client_data=get_data, authenticator_data=assertion.auth_data, signature=assertion.signature,
                    user_handle=assertion.user["id"])))),
            expected_challenge=request.public_key.challenge, expected_origin=ORIGIN, expected_rp_id=RP_ID,
            credential_public_key=verified.credential_public_key, credential_current_sign_count=0,
            require_user_verification=True)
        assert checked.user_verified
