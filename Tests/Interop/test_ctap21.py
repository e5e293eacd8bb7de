"""CTAP 2.1 completeness against python-fido2's own platform classes.

ClientPin (PIN/UV auth protocols one and two), CredentialManagement, Config and LargeBlobs drive
`passkey serve --udp`, and Fido2Client runs the WebAuthn extensions (credProtect, prf over
hmac-secret and, at registration, hmac-secret-mc, credBlob, largeBlob). Every PIN error path is checked for the spec's status code.
`passkey serve --yes` approves built-in user verification, so Fido2Client takes UV tokens.
"""

import hashlib
import os

import pytest
from fido2.client import ClientError, DefaultClientDataCollector, Fido2Client
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.ctap2.blob import LargeBlobs
from fido2.ctap2.config import Config
from fido2.ctap2.credman import CredentialManagement
from fido2.ctap2.pin import ClientPin, PinProtocolV1, PinProtocolV2
from fido2.utils import websafe_decode
from fido2.webauthn import (
    AuthenticatorData,
    PublicKeyCredentialCreationOptions,
    PublicKeyCredentialDescriptor,
    PublicKeyCredentialParameters,
    PublicKeyCredentialRequestOptions,
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialType,
    PublicKeyCredentialUserEntity,
    AuthenticatorSelectionCriteria,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from conftest import PASSPHRASE, Server

RP_ID = "example.com"
ORIGIN = "https://example.com"
PERM = ClientPin.PERMISSION
ERR = CtapError.ERR
PROTOCOLS = [PinProtocolV1, PinProtocolV2]


def sha256(data):
    return hashlib.sha256(data).digest()


def make_credential(ctap, name, user_id, rp_id=RP_ID, token=None, protocol=None, extensions=None, rk=True):
    """Raw makeCredential; with a token, the pinUvAuthParam over the client data hash."""
    client_data_hash = sha256(os.urandom(32))
    kwargs = {}
    if token is not None:
        kwargs = {"pin_uv_param": protocol.authenticate(token, client_data_hash), "pin_uv_protocol": protocol.VERSION}
        options = {"rk": rk}
    else:
        options = {"rk": rk, "uv": True} if rk else None
    return ctap.make_credential(
        client_data_hash,
        {"id": rp_id, "name": rp_id.title()},
        {"id": user_id, "name": name, "displayName": name.title()},
        [{"type": "public-key", "alg": -7}],
        extensions=extensions,
        options=options,
        **kwargs,
    )


def raw_set_pin(client_pin, block):
    """setPIN with a PIN block python-fido2 would refuse to build (too short, not padded)."""
    key_agreement, shared_secret = client_pin._get_shared_secret()
    pin_enc = client_pin.protocol.encrypt(shared_secret, block)
    client_pin.ctap.client_pin(
        client_pin.protocol.VERSION, ClientPin.CMD.SET_PIN, key_agreement=key_agreement, new_pin_enc=pin_enc,
        pin_uv_param=client_pin.protocol.authenticate(shared_secret, pin_enc),
    )


def expect_error(code, call, *args, **kwargs):
    with pytest.raises(CtapError) as error:
        call(*args, **kwargs)
    assert error.value.code == code, f"{error.value.code!r} != {code!r}"


def test_get_info_reports_exactly_what_is_implemented(device):
    info = Ctap2(device).get_info()
    assert info.versions == ["FIDO_2_0", "FIDO_2_1"]
    assert info.extensions == [
        "credProtect", "hmac-secret", "hmac-secret-mc", "credBlob", "largeBlobKey", "minPinLength", "thirdPartyPayment"
    ]
    assert info.options == {
        "rk": True, "up": True, "uv": True, "clientPin": False, "pinUvAuthToken": True,
        "makeCredUvNotRqd": True, "credMgmt": True, "perCredMgmtRO": True, "authnrCfg": True, "uvAcfg": True,
        "setMinPINLength": True, "alwaysUv": False, "largeBlobs": True,
    }
    assert info.pin_uv_protocols == [2, 1]
    assert info.transports == ["usb"]  # passkey serve is a security key, over uhid or UDP alike
    assert info.algorithms == [{"alg": alg, "type": "public-key"} for alg in (-7, -8, -9, -19)]
    assert info.max_msg_size == 7609
    assert info.max_creds_in_list == 16
    assert info.max_cred_id_length == 128
    assert info.max_large_blob == 4096
    assert info.force_pin_change is False
    assert info.min_pin_length == 4
    assert info.firmware_version == 0x000100
    assert info.max_cred_blob_length == 32
    assert info.max_rpids_for_min_pin == 8
    # CTAP 2.2's fields with an honest answer; the rest stay absent (python-fido2's defaults).
    assert info.attestation_formats == ["packed"] and info.transports_for_reset == ["usb"]
    assert info.pin_complexity_policy is False and info.max_pin_length == 63
    assert info.authenticator_config_commands == [2, 3]
    # No built-in verification yet; no persistent token was ever issued, so nothing to encrypt to it.
    assert info.uv_count_since_pin == 0 and info.enc_identifier is None and info.enc_cred_store_state is None
    assert info.long_touch_for_reset is False


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=["v1", "v2"])
def test_pin_tokens_drive_make_credential_and_get_assertion(device, protocol):
    ctap = Ctap2(device)
    client_pin = ClientPin(ctap, protocol())
    assert client_pin.get_pin_retries() == (8, False)
    client_pin.set_pin("1234")
    assert ctap.get_info().options["clientPin"] is True
    token = client_pin.get_pin_token("1234", PERM.MAKE_CREDENTIAL | PERM.GET_ASSERTION, RP_ID)
    made = make_credential(ctap, "alice", b"user-alice", token=token, protocol=client_pin.protocol)
    assert made.auth_data.is_user_verified()
    token = client_pin.get_pin_token("1234", PERM.GET_ASSERTION, RP_ID)
    client_data_hash = sha256(b"assertion")
    assertion = ctap.get_assertion(
        RP_ID, client_data_hash,
        pin_uv_param=client_pin.protocol.authenticate(token, client_data_hash),
        pin_uv_protocol=client_pin.protocol.VERSION,
    )
    assert assertion.auth_data.is_user_verified()
    assert assertion.user == {"id": b"user-alice", "name": "alice", "displayName": "Alice"}
    # The token's mc and ga permissions are spent after one use.
    expect_error(
        ERR.PIN_AUTH_INVALID, ctap.get_assertion, RP_ID, client_data_hash,
        pin_uv_param=client_pin.protocol.authenticate(token, client_data_hash),
        pin_uv_protocol=client_pin.protocol.VERSION,
    )
    client_pin.change_pin("1234", "567890")
    expect_error(ERR.PIN_INVALID, client_pin.get_pin_token, "1234", PERM.GET_ASSERTION)
    assert len(client_pin.get_pin_token("567890", PERM.GET_ASSERTION)) == 32


def test_pin_error_paths(store_dir):
    path = os.path.join(store_dir, "pin.sqlite")
    server = Server(path)
    try:
        ctap = Ctap2(server.device())
        client_pin = ClientPin(ctap, PinProtocolV2())
        expect_error(ERR.PIN_NOT_SET, client_pin.get_pin_token, "1234", PERM.GET_ASSERTION)
        expect_error(ERR.PIN_NOT_SET, client_pin.change_pin, "1234", "5678")
        expect_error(ERR.PIN_POLICY_VIOLATION, raw_set_pin, client_pin, b"123".ljust(64, b"\0"))
        expect_error(ERR.PIN_POLICY_VIOLATION, raw_set_pin, client_pin, "ü¢€".encode().ljust(64, b"\0"))
        expect_error(ERR.PIN_POLICY_VIOLATION, raw_set_pin, client_pin, b"9" * 64)
        expect_error(ERR.PIN_POLICY_VIOLATION, raw_set_pin, client_pin, b"12\x0034".ljust(64, b"\0"))
        expect_error(ERR.INVALID_PARAMETER, raw_set_pin, client_pin, b"1234".ljust(32, b"\0"))
        client_pin.set_pin("1234")
        expect_error(ERR.NOT_ALLOWED, client_pin.set_pin, "5678")
        expect_error(ERR.INVALID_PARAMETER, ctap.client_pin, 3, ClientPin.CMD.GET_KEY_AGREEMENT)
        expect_error(ERR.UNAUTHORIZED_PERMISSION, client_pin.get_pin_token, "1234", PERM.BIO_ENROLL)
        # A v2 token used with protocol one, and a token for another relying party.
        token = client_pin.get_pin_token("1234", PERM.MAKE_CREDENTIAL, RP_ID)
        expect_error(ERR.PIN_AUTH_INVALID, make_credential, ctap, "a", b"a", token=token, protocol=PinProtocolV1())
        token = client_pin.get_pin_token("1234", PERM.MAKE_CREDENTIAL, "other.example")
        expect_error(ERR.PIN_AUTH_INVALID, make_credential, ctap, "a", b"a", token=token, protocol=PinProtocolV2())
        # Three wrong PINs in a row: PIN_INVALID, PIN_INVALID, then PIN_AUTH_BLOCKED until a restart.
        expect_error(ERR.PIN_INVALID, client_pin.get_pin_token, "0000", PERM.GET_ASSERTION)
        expect_error(ERR.PIN_INVALID, client_pin.change_pin, "0000", "5678")
        expect_error(ERR.PIN_AUTH_BLOCKED, client_pin.get_pin_token, "0000", PERM.GET_ASSERTION)
        expect_error(ERR.PIN_AUTH_BLOCKED, client_pin.get_pin_token, "1234", PERM.GET_ASSERTION)
        assert client_pin.get_pin_retries() == (5, True)
    finally:
        server.stop()

    # A restart is the power cycle; retries persist in the store, and the right PIN restores them.
    server = Server(path)
    try:
        client_pin = ClientPin(Ctap2(server.device()), PinProtocolV1())
        assert client_pin.get_pin_retries() == (5, False)
        client_pin.get_pin_token("1234", PERM.GET_ASSERTION)
        assert client_pin.get_pin_retries() == (8, False)
        for _ in range(2):
            expect_error(ERR.PIN_INVALID, client_pin.get_pin_token, "0000", PERM.GET_ASSERTION)
        expect_error(ERR.PIN_AUTH_BLOCKED, client_pin.get_pin_token, "0000", PERM.GET_ASSERTION)
    finally:
        server.stop()
    # Eight wrong PINs in all block the PIN for good.
    for expected in ([ERR.PIN_INVALID, ERR.PIN_INVALID, ERR.PIN_AUTH_BLOCKED], [ERR.PIN_INVALID, ERR.PIN_BLOCKED]):
        server = Server(path)
        try:
            client_pin = ClientPin(Ctap2(server.device()), PinProtocolV2())
            for code in expected:
                expect_error(code, client_pin.get_pin_token, "0000", PERM.GET_ASSERTION)
        finally:
            server.stop()
    server = Server(path)
    try:
        client_pin = ClientPin(Ctap2(server.device()), PinProtocolV2())
        assert client_pin.get_pin_retries() == (0, False)
        expect_error(ERR.PIN_BLOCKED, client_pin.get_pin_token, "1234", PERM.GET_ASSERTION)
        expect_error(ERR.PIN_BLOCKED, client_pin.change_pin, "1234", "5678")
    finally:
        stderr = server.stop()
    assert "1234" not in stderr


def test_credential_management(device):
    ctap = Ctap2(device)
    alice = make_credential(ctap, "alice", b"user-alice").auth_data.credential_data
    make_credential(ctap, "bob", b"user-bob")
    make_credential(ctap, "carol", b"user-carol", rp_id="other.example")
    make_credential(ctap, "server-side", b"user-nora", rk=False)

    client_pin = ClientPin(ctap)
    token = client_pin.get_uv_token(PERM.CREDENTIAL_MGMT)
    credman = CredentialManagement(ctap, client_pin.protocol, token)
    metadata = credman.get_metadata()
    assert metadata[CredentialManagement.RESULT.EXISTING_CRED_COUNT] == 3
    rps = credman.enumerate_rps()
    assert [rp[CredentialManagement.RESULT.RP]["id"] for rp in rps] == [RP_ID, "other.example"]
    assert rps[0][CredentialManagement.RESULT.RP_ID_HASH] == sha256(RP_ID.encode())
    creds = credman.enumerate_creds(sha256(RP_ID.encode()))
    assert [c[CredentialManagement.RESULT.USER]["name"] for c in creds] == ["bob", "alice"]
    assert creds[1][CredentialManagement.RESULT.PUBLIC_KEY] == dict(alice.public_key)
    assert all(c[CredentialManagement.RESULT.CRED_PROTECT] == 1 for c in creds)

    descriptor = PublicKeyCredentialDescriptor(type=PublicKeyCredentialType.PUBLIC_KEY, id=alice.credential_id)
    credman.update_user_info(descriptor, {"id": b"user-alice", "name": "alice@new", "displayName": "Alice New"})
    creds = credman.enumerate_creds(sha256(RP_ID.encode()))
    assert creds[1][CredentialManagement.RESULT.USER]["name"] == "alice@new"
    credman.delete_cred(descriptor)
    assert len(credman.enumerate_creds(sha256(RP_ID.encode()))) == 1
    expect_error(ERR.NO_CREDENTIALS, credman.delete_cred, descriptor)

    # A token bound to one relying party cannot list them all.
    bound = client_pin.get_uv_token(PERM.CREDENTIAL_MGMT, "other.example")
    bound_credman = CredentialManagement(ctap, client_pin.protocol, bound)
    expect_error(ERR.PIN_AUTH_INVALID, bound_credman.enumerate_rps)
    expect_error(ERR.PIN_AUTH_INVALID, bound_credman.enumerate_creds, sha256(RP_ID.encode()))
    assert len(bound_credman.enumerate_creds(sha256(b"other.example"))) == 1
    # Without the cm permission.
    other = client_pin.get_uv_token(PERM.GET_ASSERTION, RP_ID)
    expect_error(ERR.PIN_AUTH_INVALID, CredentialManagement(ctap, client_pin.protocol, other).get_metadata)


def test_persistent_read_only_token_lists_passkeys_after_a_restart_without_the_pin(store_dir):
    """CTAP 2.2 pcmr through python-fido2 2.x: a persistent token taken once with the PIN lists the passkeys after
    the key restarts, decrypts getInfo's encIdentifier and encCredStoreState (Info.get_identifier and
    get_cred_store_state), cannot delete, and stops working when the PIN changes."""
    path = os.path.join(store_dir, "pcmr.sqlite")
    first = Server(path)
    try:
        ctap = Ctap2(first.device())
        client_pin = ClientPin(ctap, PinProtocolV2())
        client_pin.set_pin("2468")
        for name in ("alice", "bob"):
            make_credential(ctap, name, name.encode(), token=client_pin.get_pin_token("2468", PERM.MAKE_CREDENTIAL, RP_ID),
                            protocol=client_pin.protocol)
        assert CredentialManagement.is_readonly_supported(ctap.info)
        expect_error(ERR.UNAUTHORIZED_PERMISSION, client_pin.get_pin_token, "2468",
                     PERM.PERSISTENT_CREDENTIAL_MGMT | PERM.CREDENTIAL_MGMT)
        persistent = client_pin.get_pin_token("2468", PERM.PERSISTENT_CREDENTIAL_MGMT)
        info = ctap.get_info()
        identifier = info.get_identifier(persistent)
        state = info.get_cred_store_state(persistent)
        assert len(identifier) == 16 and len(state) == 16
    finally:
        first.stop()

    second = Server(path)
    try:
        ctap = Ctap2(second.device())
        credman = CredentialManagement(ctap, PinProtocolV2(), persistent)
        assert credman.get_metadata()[CredentialManagement.RESULT.EXISTING_CRED_COUNT] == 2
        creds = credman.enumerate_creds(sha256(RP_ID.encode()))
        assert sorted(c[CredentialManagement.RESULT.USER]["name"] for c in creds) == ["alice", "bob"]
        assert all(c[CredentialManagement.RESULT.THIRD_PARTY_PAYMENT] is False for c in creds)
        info = ctap.get_info()
        assert info.get_identifier(persistent) == identifier
        assert info.get_cred_store_state(persistent) == state
        descriptor = creds[0][CredentialManagement.RESULT.CREDENTIAL_ID]
        expect_error(ERR.PIN_AUTH_INVALID, credman.delete_cred, descriptor)

        # A new passkey changes the store state; a PIN change voids the token.
        client_pin = ClientPin(ctap, PinProtocolV2())
        make_credential(ctap, "carol", b"carol", token=client_pin.get_pin_token("2468", PERM.MAKE_CREDENTIAL, RP_ID),
                        protocol=client_pin.protocol)
        info = ctap.get_info()
        assert info.get_cred_store_state(persistent) != state and info.get_identifier(persistent) == identifier
        client_pin.change_pin("2468", "1357")
        expect_error(ERR.PIN_AUTH_INVALID, credman.get_metadata)
    finally:
        second.stop()


def test_third_party_payment_through_python_fido2(device):
    """CTAP 2.2 thirdPartyPayment with python-fido2's ThirdPartyPaymentExtension (the WebAuthn payment extension's
    authenticator half): stored at registration, reported at sign-in."""
    from fido2.ctap2.extensions import ThirdPartyPaymentExtension

    client = Fido2Client(device, client_data_collector=DefaultClientDataCollector(ORIGIN),
                         extensions=[ThirdPartyPaymentExtension()])
    created = client.make_credential(creation_options("payer", b"user-payer", {"payment": {"isPayment": True}}))
    auth_data = created.response.attestation_object.auth_data
    assert auth_data.extensions == {"thirdPartyPayment": True}
    allow = [PublicKeyCredentialDescriptor(type=PublicKeyCredentialType.PUBLIC_KEY,
                                           id=auth_data.credential_data.credential_id)]
    response = client.get_assertion(request_options({"payment": {"isPayment": True}}, allow)).get_response(0)
    assert AuthenticatorData(response.response.authenticator_data).extensions == {"thirdPartyPayment": True}
    # Built-in verification was used twice since no PIN was entered.
    assert Ctap2(device).get_info().uv_count_since_pin >= 2


def test_openssh_enrollment_requests(device):
    """What libfido2 1.12 sends for `ssh-keygen -t ecdsa-sk -O resident` (Docs/CTAP.md): a silent lookup with a UV
    token, then makeCredential with rk and neither uv nor a token. Without a PIN the key verifies the user itself and
    attests with packed self attestation (libfido2 needs the signature); with a PIN it answers PUAT_REQUIRED, so ssh
    asks for the PIN and comes back with a token. `ssh-keygen -K` manages credentials under the prototype command
    0x41."""
    ctap = Ctap2(device)
    client_pin = ClientPin(ctap)
    protocol = client_pin.protocol

    def enroll(name, token=None):
        client_data_hash = sha256(os.urandom(32))
        kwargs = {}
        if token is not None:
            kwargs = {"pin_uv_param": protocol.authenticate(token, client_data_hash), "pin_uv_protocol": protocol.VERSION}
        return ctap.make_credential(
            client_data_hash, {"id": "ssh:probe"}, {"id": name.encode().ljust(32, b"\0"), "name": name, "displayName": name},
            [{"type": "public-key", "alg": -7}], extensions={"credProtect": 2}, options={"rk": True}, **kwargs)

    token = client_pin.get_uv_token(PERM.GET_ASSERTION, "ssh:probe")
    lookup_hash = sha256(bytes(32))
    expect_error(ERR.NO_CREDENTIALS, ctap.get_assertion, "ssh:probe", lookup_hash, options={"up": False},
                 pin_uv_param=protocol.authenticate(token, lookup_hash), pin_uv_protocol=protocol.VERSION)
    created = enroll("openssh")
    assert created.fmt == "packed" and created.att_stmt["alg"] == -7
    assert created.auth_data.flags & AuthenticatorData.FLAG.UV

    client_pin.set_pin("13572468")
    expect_error(ERR.PUAT_REQUIRED, enroll, "second")
    second = enroll("second", client_pin.get_pin_token("13572468", PERM.MAKE_CREDENTIAL, "ssh:probe"))
    assert second.auth_data.flags & AuthenticatorData.FLAG.UV

    token = client_pin.get_pin_token("13572468", PERM.CREDENTIAL_MGMT)
    metadata = ctap.send_cbor(0x41, {1: 1, 3: protocol.VERSION, 4: protocol.authenticate(token, b"\x01")})
    assert metadata[1] == 2
    rps = ctap.send_cbor(0x41, {1: 2, 3: protocol.VERSION, 4: protocol.authenticate(token, b"\x02")})
    assert rps[3]["id"] == "ssh:probe" and rps[5] == 1


def test_config_always_uv_min_pin_length_and_no_enterprise_attestation(device):
    ctap = Ctap2(device)
    client_pin = ClientPin(ctap, PinProtocolV1())
    client_pin.set_pin("12345")
    token = client_pin.get_pin_token("12345", PERM.AUTHENTICATOR_CFG)
    config = Config(ctap, client_pin.protocol, token)
    config.toggle_always_uv()
    info = ctap.get_info()
    assert info.options["alwaysUv"] is True and info.options["makeCredUvNotRqd"] is False
    config.set_min_pin_length(min_pin_length=6, rp_ids=[RP_ID])
    info = ctap.get_info()
    assert info.min_pin_length == 6 and info.force_pin_change is True
    expect_error(ERR.PIN_POLICY_VIOLATION, config.set_min_pin_length, min_pin_length=5)
    # getInfo's authenticatorConfigCommands (CTAP 2.2) lists [2, 3], so python-fido2 will not send the enterprise
    # attestation subcommand at all; sent by hand with a valid pinUvAuthParam, the key refuses it.
    with pytest.raises(ValueError):
        config.enable_enterprise_attestation()
    message = b"\xff" * 32 + b"\x0d" + bytes([Config.CMD.ENABLE_ENTERPRISE_ATT])
    expect_error(ERR.INVALID_PARAMETER, ctap.config, Config.CMD.ENABLE_ENTERPRISE_ATT, None,
                 client_pin.protocol.VERSION, client_pin.protocol.authenticate(token, message))
    expect_error(ERR.PIN_POLICY_VIOLATION, client_pin.get_pin_token, "12345", PERM.GET_ASSERTION)
    client_pin.change_pin("12345", "123456")
    assert ctap.get_info().force_pin_change is False

    # minPinLength goes to the listed relying party only.
    token = client_pin.get_pin_token("123456", PERM.MAKE_CREDENTIAL, RP_ID)
    made = make_credential(
        ctap, "alice", b"user-alice", token=token, protocol=client_pin.protocol, extensions={"minPinLength": True}
    )
    assert made.auth_data.extensions == {"minPinLength": 6}
    expect_error(ERR.PIN_AUTH_INVALID, Config(ctap, client_pin.protocol, token).toggle_always_uv)


def webauthn_client(device):
    return Fido2Client(device, client_data_collector=DefaultClientDataCollector(ORIGIN))


def creation_options(name, user_id, extensions):
    return PublicKeyCredentialCreationOptions(
        rp=PublicKeyCredentialRpEntity(name="Example", id=RP_ID),
        user=PublicKeyCredentialUserEntity(name=name, id=user_id, display_name=name.title()),
        challenge=os.urandom(32),
        pub_key_cred_params=[PublicKeyCredentialParameters(type=PublicKeyCredentialType.PUBLIC_KEY, alg=-7)],
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED, user_verification=UserVerificationRequirement.REQUIRED
        ),
        extensions=extensions,
    )


def request_options(extensions, allow=None, uv=UserVerificationRequirement.REQUIRED):
    return PublicKeyCredentialRequestOptions(
        challenge=os.urandom(32), rp_id=RP_ID, allow_credentials=allow, user_verification=uv, extensions=extensions
    )


def test_fido2_client_extensions(device):
    client = webauthn_client(device)
    blob = b"credBlob: 32 bytes of payload..."
    created = client.make_credential(
        creation_options(
            "alice", b"user-alice",
            {
                "credentialProtectionPolicy": "userVerificationRequired",
                "enforceCredentialProtectionPolicy": True,
                "prf": {},
                "credBlob": blob,
                "largeBlob": {"support": "required"},
            },
        )
    )
    auth_data = created.response.attestation_object.auth_data
    assert auth_data.extensions == {"credProtect": 3, "hmac-secret": True, "credBlob": True}
    results = dict(created.client_extension_results)
    assert results["prf"]["enabled"] is True
    assert results["largeBlob"]["supported"] is True
    credential_id = auth_data.credential_data.credential_id

    # prf: the same salt gives the same output, another salt another.
    def prf(salt):
        selection = client.get_assertion(request_options({"prf": {"eval": {"first": salt}}}))
        response = selection.get_response(0)
        return websafe_decode(dict(response.client_extension_results)["prf"]["results"]["first"])

    first = prf(b"\x01" * 32)
    assert len(first) == 32
    assert prf(b"\x01" * 32) == first
    assert prf(b"\x02" * 32) != first

    # credBlob comes back in the authenticator data.
    response = client.get_assertion(request_options({"getCredBlob": True})).get_response(0)
    assert AuthenticatorData(response.response.authenticator_data).extensions == {"credBlob": blob}

    # largeBlob: write through one assertion, read through the next.
    allow = [PublicKeyCredentialDescriptor(type=PublicKeyCredentialType.PUBLIC_KEY, id=credential_id)]
    written = client.get_assertion(request_options({"largeBlob": {"write": b"hello large blob"}}, allow)).get_response(0)
    assert dict(written.client_extension_results)["largeBlob"]["written"] is True
    read = client.get_assertion(request_options({"largeBlob": {"read": True}}, allow)).get_response(0)
    assert websafe_decode(dict(read.client_extension_results)["largeBlob"]["blob"]) == b"hello large blob"

    # credProtect level 3: without user verification the credential is not there, even with an allowList.
    with pytest.raises(ClientError) as error:
        client.get_assertion(request_options(None, allow, uv=UserVerificationRequirement.DISCOURAGED))
    assert error.value.cause.code == ERR.NO_CREDENTIALS


def test_prf_at_registration_through_hmac_secret_mc(device):
    """python-fido2 2.x sends CTAP 2.2's hmac-secret-mc when getInfo lists it: the PRF comes back with the new
    credential, and equals what an assertion with the same input gives later (both with user verification)."""
    client = webauthn_client(device)
    salt = b"prf input at registration"
    created = client.make_credential(
        creation_options("prf-user", b"user-prf", {"prf": {"eval": {"first": salt, "second": b"rollover"}}})
    )
    auth_data = created.response.attestation_object.auth_data
    assert auth_data.extensions["hmac-secret"] is True
    assert len(auth_data.extensions["hmac-secret-mc"]) in (64 + 16, 64)  # encrypted two outputs (protocol 2 has an IV)
    prf = dict(created.client_extension_results)["prf"]
    assert prf["enabled"] is True
    at_registration = websafe_decode(prf["results"]["first"])
    rollover = websafe_decode(prf["results"]["second"])
    assert len(at_registration) == 32 and len(rollover) == 32 and at_registration != rollover

    allow = [
        PublicKeyCredentialDescriptor(type=PublicKeyCredentialType.PUBLIC_KEY, id=auth_data.credential_data.credential_id)
    ]
    response = client.get_assertion(
        request_options({"prf": {"eval": {"first": salt, "second": b"rollover"}}}, allow)
    ).get_response(0)
    results = dict(response.client_extension_results)["prf"]["results"]
    assert websafe_decode(results["first"]) == at_registration
    assert websafe_decode(results["second"]) == rollover


def test_large_blobs_with_python_fido2(device):
    ctap = Ctap2(device)
    made = make_credential(ctap, "alice", b"user-alice", extensions={"largeBlobKey": True})
    key = made.large_blob_key
    assert len(key) == 32
    client_pin = ClientPin(ctap)
    credman = CredentialManagement(ctap, client_pin.protocol, client_pin.get_uv_token(PERM.CREDENTIAL_MGMT))
    listed = credman.enumerate_creds(sha256(RP_ID.encode()))
    assert listed[0][CredentialManagement.RESULT.LARGE_BLOB_KEY] == key
    token = client_pin.get_uv_token(PERM.LARGE_BLOB_WRITE)
    blobs = LargeBlobs(ctap, client_pin.protocol, token)
    assert blobs.read_blob_array() == []
    data = os.urandom(3000)  # more than one fragment once compressed
    blobs.put_blob(key, data)
    assert LargeBlobs(ctap).get_blob(key) == data
    blobs.delete_blob(key)
    assert LargeBlobs(ctap).read_blob_array() == []
    # Writing without a token is refused.
    expect_error(ERR.PUAT_REQUIRED, LargeBlobs(ctap).write_blob_array, [])


def write_authenticated_settings(db, passphrase, **changes):
    """Changes settings columns and writes the row's MAC as PasskeyStore does (schema 3, RowAuthentication)."""
    import hashlib
    import hmac
    import struct
    import unicodedata

    n, r, p, salt = db.execute("SELECT kdf_rounds, kdf_block_size, kdf_parallelism, kdf_salt FROM meta").fetchone()
    store_key = hashlib.scrypt(
        unicodedata.normalize("NFC", passphrase).encode(), salt=salt, n=n, r=r, p=p, maxmem=2 * 128 * n * r * p + (1 << 20),
        dklen=32)
    prk = hmac.new(bytes(32), store_key, hashlib.sha256).digest()  # HKDF-SHA-256 without a salt, then one block
    mac_key = hmac.new(prk, b"passkey-store settings MAC key v3" + b"\x01", hashlib.sha256).digest()
    columns = ["sealed_pin_hash", "pin_code_points", "pin_retries", "uv_retries", "min_pin_length",
               "min_pin_length_rp_ids", "always_uv", "force_pin_change"]
    row = dict(zip(columns, db.execute(f"SELECT {', '.join(columns)} FROM authenticator_settings").fetchone()))
    row.update(changes)
    message = b"passkey-store-settings v3\x00"
    for column in columns:
        value = row[column]
        if value is None:
            message += b"\x00"
        elif isinstance(value, int):
            message += b"\x01" + struct.pack(">q", value)
        elif isinstance(value, str):
            message += b"\x02" + struct.pack(">I", len(value.encode())) + value.encode()
        else:
            message += b"\x03" + struct.pack(">I", len(value)) + bytes(value)
    mac = hmac.new(mac_key, message, hashlib.sha256).digest()
    assignments = ", ".join(f"{column} = ?" for column in changes)
    db.execute(f"UPDATE authenticator_settings SET {assignments}, mac = ?", (*changes.values(), mac))
    db.commit()


def test_uv_retries_persist_and_a_restart_restores_them(store_dir):
    import sqlite3

    path = os.path.join(store_dir, "uv.sqlite")
    server = Server(path)
    try:
        client_pin = ClientPin(Ctap2(server.device()))
        assert client_pin.get_uv_retries() == 8
        client_pin.set_pin("1234")
    finally:
        server.stop()
    # As if two passphrase prompts had failed: the counter is in the store, the PIN hash is sealed. The settings row
    # is authenticated (Docs/Store.md), so the change is made as the store would make it, with the passphrase.
    db = sqlite3.connect(path)
    write_authenticated_settings(db, PASSPHRASE, uv_retries=6)
    assert b"1234" not in open(path, "rb").read()
    assert db.execute("SELECT length(sealed_pin_hash) FROM authenticator_settings").fetchone()[0] == 12 + 16 + 16
    db.close()
    server = Server(path)
    try:
        client_pin = ClientPin(Ctap2(server.device()))
        assert client_pin.get_uv_retries() == 8  # opening the store took the passphrase: UV starts afresh
        assert client_pin.get_pin_retries() == (8, False)
    finally:
        server.stop()


def test_a_local_program_gets_nothing_without_a_click(store_dir):
    """The CTRAPS list (EuroS&P 2025) over `serve --udp`, python-fido2 as the attacker: `serve` without `--yes` and
    with nothing on standard input declines every prompt, as if nobody clicked. Reset, setPIN, selection, a UV
    token and a new credential are OPERATION_DENIED; credential management, config and large-blob writes need a
    token (PUAT_REQUIRED); a PIN token needs a PIN (PIN_NOT_SET). What is left is what CTAP 2.1 gives anyone: the
    silent pre-flight (`up: false`, no UP flag) and reading the large-blob array. The table in Docs/SecurityKey.md
    cites this test; LocalClientTests has each command's rules."""
    path = os.path.join(store_dir, "ctraps.sqlite")
    owner = Server(path)
    try:
        ctap = Ctap2(owner.device())
        ids = [make_credential(ctap, name, name.encode()).auth_data.credential_data.credential_id
               for name in ("alice", "bob")]
    finally:
        owner.stop()

    attacker = Server(path, approve=False)
    try:
        ctap = Ctap2(attacker.device())
        client_pin = ClientPin(ctap, PinProtocolV2())
        expect_error(ERR.OPERATION_DENIED, ctap.reset)
        expect_error(ERR.OPERATION_DENIED, client_pin.set_pin, "attacker's PIN")
        expect_error(ERR.PIN_NOT_SET, client_pin.get_pin_token, "attacker's PIN", PERM.CREDENTIAL_MGMT)
        expect_error(ERR.OPERATION_DENIED, client_pin.get_uv_token, PERM.CREDENTIAL_MGMT)
        for sub_cmd in (CredentialManagement.CMD.GET_CREDS_METADATA, CredentialManagement.CMD.ENUMERATE_RPS_BEGIN):
            expect_error(ERR.PUAT_REQUIRED, ctap.credential_mgmt, sub_cmd)
        alice = {"type": "public-key", "id": ids[0]}
        expect_error(ERR.PUAT_REQUIRED, ctap.credential_mgmt, CredentialManagement.CMD.DELETE_CREDENTIAL,
                     {CredentialManagement.PARAM.CREDENTIAL_ID: alice})
        expect_error(ERR.PUAT_REQUIRED, ctap.config, Config.CMD.TOGGLE_ALWAYS_UV)
        expect_error(ERR.PUAT_REQUIRED, LargeBlobs(ctap).write_blob_array, [])
        assert LargeBlobs(ctap).read_blob_array() == []
        expect_error(ERR.OPERATION_DENIED, ctap.selection)
        expect_error(ERR.OPERATION_DENIED, make_credential, ctap, "mallory", b"mallory")
        expect_error(ERR.OPERATION_DENIED, ctap.get_assertion, RP_ID, sha256(b"sign in"))

        # The pre-flight: no prompt, no UP flag, user IDs without names; both passkeys are still there.
        probe = ctap.get_assertion(RP_ID, sha256(b"probe"), [alice], options={"up": False})
        assert not probe.auth_data.flags & AuthenticatorData.FLAG.UP
        discovered = ctap.get_assertion(RP_ID, sha256(b"probe"), options={"up": False})
        assert discovered.number_of_credentials == 2
        assert discovered.user == {"id": b"bob"}
        assert ctap.get_info().options["clientPin"] is False
    finally:
        stderr = attacker.stop()
    # The operator saw each question (and nobody answered).
    assert "DELETE ALL 2 passkeys?" in stderr
    assert "Set a PIN on this authenticator?" in stderr
