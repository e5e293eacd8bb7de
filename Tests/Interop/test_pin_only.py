"""`passkey serve --udp --pin-only` against python-fido2 2.2.1: a security key without built-in user verification.

getInfo has no `uv`, so python-fido2's Fido2Client verifies the user only with a PIN: without one, a registration
that requires user verification fails before any makeCredential; after ClientPin.set_pin, Fido2Client asks its
UserInteraction for the PIN, takes a token with getPinUvAuthTokenUsingPinWithPermissions, and the relying party
(python-fido2's Fido2Server) sees UV set on the registration and the sign-in.
"""

import os

import pytest
from fido2.client import ClientError, DefaultClientDataCollector, Fido2Client, UserInteraction
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.ctap2.credman import CredentialManagement
from fido2.ctap2.pin import ClientPin
from fido2.server import Fido2Server
from fido2.webauthn import (
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialUserEntity,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from conftest import PASSPHRASE, Server

RP_ID = "example.com"
ORIGIN = "https://example.com"
PIN = "30571946"
PERM = ClientPin.PERMISSION
ERR = CtapError.ERR


class PinEntry(UserInteraction):
    """A user who types the PIN whenever the client asks for it, and who counts the prompts."""

    def __init__(self, pin):
        self.pin = pin
        self.pin_requests = []
        self.uv_requests = 0

    def request_pin(self, permissions, rp_id):
        self.pin_requests.append((permissions, rp_id))
        return self.pin

    def request_uv(self, permissions, rp_id):
        self.uv_requests += 1
        return True


@pytest.fixture
def pin_only(store_dir):
    """`passkey serve --udp --pin-only --verbose`; its log must show neither the passphrase nor the PIN."""
    server = Server(os.path.join(store_dir, "passkeys.sqlite"), extra_args=["--pin-only", "--verbose"])
    device = server.device()
    yield server, device
    device.close()
    stderr = server.stop()
    assert PASSPHRASE not in stderr and PIN not in stderr


def client(device, user=None):
    return Fido2Client(
        device, client_data_collector=DefaultClientDataCollector(ORIGIN), user_interaction=user or UserInteraction()
    )


def rp_server():
    return Fido2Server(PublicKeyCredentialRpEntity(name="Example", id=RP_ID), attestation="none")


def begin_registration(server, name):
    return server.register_begin(
        PublicKeyCredentialUserEntity(id=name.encode(), name=name, display_name=name.title()),
        resident_key_requirement=ResidentKeyRequirement.REQUIRED,
        user_verification=UserVerificationRequirement.REQUIRED,
    )


def test_get_info_offers_no_built_in_user_verification(pin_only):
    _, device = pin_only
    info = Ctap2(device).get_info()
    assert "uv" not in info.options and "uvAcfg" not in info.options
    assert info.options == {
        "rk": True, "up": True, "clientPin": False, "pinUvAuthToken": True, "makeCredUvNotRqd": True,
        "credMgmt": True, "perCredMgmtRO": True, "authnrCfg": True, "setMinPINLength": True, "alwaysUv": False,
        "largeBlobs": True,
    }
    assert info.uv_count_since_pin is None  # no built-in verification to count
    assert info.transports == ["usb"] and info.pin_uv_protocols == [2, 1]


def test_without_a_pin_required_user_verification_fails_cleanly(pin_only):
    _, device = pin_only
    server = rp_server()
    options, _ = begin_registration(server, "alice")
    user = PinEntry(PIN)
    with pytest.raises(ClientError) as error:
        client(device, user).make_credential(options.public_key)
    assert error.value.code == ClientError.ERR.CONFIGURATION_UNSUPPORTED
    assert user.pin_requests == [] and user.uv_requests == 0

    # What a platform that sent `uv` anyway would get, and what a discoverable request without it makes: a credential
    # with user presence only, since nothing protects the key yet (OpenSSH's case).
    ctap = Ctap2(device)
    user_entity = {"id": b"bob", "name": "bob", "displayName": "Bob"}
    with pytest.raises(CtapError) as refused:
        ctap.make_credential(os.urandom(32), {"id": RP_ID}, user_entity, [{"type": "public-key", "alg": -7}],
                             options={"rk": True, "uv": True})
    assert refused.value.code == ERR.INVALID_OPTION
    made = ctap.make_credential(os.urandom(32), {"id": RP_ID}, user_entity, [{"type": "public-key", "alg": -7}],
                                options={"rk": True})
    assert made.auth_data.is_user_present() and not made.auth_data.is_user_verified()

    # No built-in method: no UV token and no UV retry counter.
    client_pin = ClientPin(ctap)
    for call, args in ((client_pin.get_uv_token, (PERM.GET_ASSERTION, RP_ID)), (client_pin.get_uv_retries, ())):
        with pytest.raises(CtapError) as unsupported:
            call(*args)
        assert unsupported.value.code == ERR.INVALID_SUBCOMMAND

    # The failed registration left nothing behind: the one credential is bob's.
    client_pin.set_pin(PIN)
    token = client_pin.get_pin_token(PIN, PERM.CREDENTIAL_MGMT)
    assert CredentialManagement(ctap, client_pin.protocol, token).get_metadata()[CredentialManagement.RESULT.EXISTING_CRED_COUNT] == 1


def test_with_a_pin_fido2_client_asks_for_it_and_gets_user_verification(pin_only):
    _, device = pin_only
    ClientPin(Ctap2(device)).set_pin(PIN)
    assert Ctap2(device).get_info().options["clientPin"] is True
    user = PinEntry(PIN)

    server = rp_server()
    options, state = begin_registration(server, "bob")
    response = client(device, user).make_credential(options.public_key)
    credential = server.register_complete(state, response).credential_data
    assert response.response.attestation_object.auth_data.is_user_verified()
    assert user.pin_requests == [(PERM.MAKE_CREDENTIAL, RP_ID)]

    # Sign in with an empty allow list: the discoverable credential, found with a PIN token, user-verified.
    request, state = server.authenticate_begin(user_verification=UserVerificationRequirement.REQUIRED)
    selection = client(device, user).get_assertion(request.public_key)
    assertion = selection.get_response(0)
    server.authenticate_complete(state, [credential], assertion)
    assert assertion.response.authenticator_data.is_user_verified()
    assert user.pin_requests[1:] == [(PERM.GET_ASSERTION, RP_ID)] and user.uv_requests == 0

    # A site that does not ask for verification gets user presence only, and no PIN prompt.
    request, state = server.authenticate_begin([credential], user_verification=UserVerificationRequirement.DISCOURAGED)
    plain = client(device, user).get_assertion(request.public_key).get_response(0)
    server.authenticate_complete(state, [credential], plain)
    assert not plain.response.authenticator_data.is_user_verified()
    assert len(user.pin_requests) == 2

    # A wrong PIN is refused by the key and costs a retry.
    with pytest.raises(ClientError) as wrong:
        client(device, PinEntry("00000000")).get_assertion(
            server.authenticate_begin(user_verification=UserVerificationRequirement.REQUIRED)[0].public_key
        )
    assert wrong.value.cause.code == ERR.PIN_INVALID
    assert ClientPin(Ctap2(device)).get_pin_retries()[0] == 7


def test_the_log_shows_pin_tokens_and_never_the_pin(store_dir):
    server = Server(os.path.join(store_dir, "passkeys.sqlite"), extra_args=["--pin-only", "--verbose"])
    try:
        device = server.device()
        ClientPin(Ctap2(device)).set_pin(PIN)
        options, state = begin_registration(rp_server(), "carol")
        client(device, PinEntry(PIN)).make_credential(options.public_key)
        device.close()
    finally:
        stderr = server.stop()
    assert "clientPIN getPinUvAuthTokenUsingPinWithPermissions permissions 0x" in stderr
    assert "getPinUvAuthTokenUsingUvWithPermissions" not in stderr
    assert "makeCredential options {rk: true} pinUvAuthParam: present -> OK" in stderr
    assert PIN not in stderr and PASSPHRASE not in stderr
