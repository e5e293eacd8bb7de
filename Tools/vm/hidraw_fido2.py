"""python-fido2 against `passkey serve --uhid` through the kernel's hidraw (run by Tools/vm/guest-tests).

Usage: hidraw_fido2.py /dev/hidrawN

CtapHidDevice.list_devices() must find the device (it lists only HID devices with the FIDO usage page), then
CTAPHID ping, CTAP2 getInfo, and a makeCredential and getAssertion through Ctap2 (strict CBOR), each checked by
Fido2Server as a relying party would.
"""

import sys

from fido2.ctap2 import Ctap2
from fido2.hid import CtapHidDevice
from fido2.server import Fido2Server
from fido2.webauthn import (
    AttestationObject,
    AuthenticationResponse,
    AuthenticatorAssertionResponse,
    AuthenticatorAttestationResponse,
    CollectedClientData,
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialUserEntity,
    RegistrationResponse,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

RP_ID = "example.com"
ORIGIN = "https://example.com"


def main(path):
    devices = list(CtapHidDevice.list_devices())
    print("list_devices:", [(d.descriptor.path, d.product_name) for d in devices])
    matching = [d for d in devices if d.descriptor.path == path]
    if not matching:
        sys.exit(f"CtapHidDevice.list_devices() did not find {path}")
    device = matching[0]
    print(f"{path}: product {device.product_name!r}, CTAPHID version {device.version}, "
          f"capabilities {device.capabilities:#x}, device version {device.device_version}")
    assert device.ping(b"vm-test ping") == b"vm-test ping"

    ctap = Ctap2(device)
    info = ctap.info
    print("getInfo: versions", info.versions, "aaguid", info.aaguid, "options", info.options)
    assert "FIDO_2_0" in info.versions

    server = Fido2Server(PublicKeyCredentialRpEntity(name="Example", id=RP_ID), attestation="none")
    user = PublicKeyCredentialUserEntity(id=b"user-alice", name="alice", display_name="Alice")
    options, state = server.register_begin(
        user,
        resident_key_requirement=ResidentKeyRequirement.REQUIRED,
        user_verification=UserVerificationRequirement.REQUIRED,
    )
    client_data = CollectedClientData.create(
        type=CollectedClientData.TYPE.CREATE, challenge=options.public_key.challenge, origin=ORIGIN
    )
    attestation = ctap.make_credential(
        client_data.hash,
        {"id": RP_ID, "name": "Example"},
        {"id": user.id, "name": user.name, "displayName": user.display_name},
        [{"type": "public-key", "alg": -7}],
        options={"rk": True, "uv": True},
    )
    registration = RegistrationResponse(
        raw_id=attestation.auth_data.credential_data.credential_id,
        response=AuthenticatorAttestationResponse(
            client_data=client_data,
            attestation_object=AttestationObject.create(attestation.fmt, attestation.auth_data, attestation.att_stmt),
        ),
    )
    credential = server.register_complete(state, registration).credential_data
    print("makeCredential: verified by Fido2Server, credential", credential.credential_id.hex()[:16], "...")

    options, state = server.authenticate_begin([credential], user_verification=UserVerificationRequirement.REQUIRED)
    client_data = CollectedClientData.create(
        type=CollectedClientData.TYPE.GET, challenge=options.public_key.challenge, origin=ORIGIN
    )
    assertion = ctap.get_assertion(
        RP_ID,
        client_data.hash,
        allow_list=[{"type": "public-key", "id": credential.credential_id}],
        options={"uv": True},
    )
    server.authenticate_complete(
        state,
        [credential],
        AuthenticationResponse(
            raw_id=assertion.credential["id"],
            response=AuthenticatorAssertionResponse(
                client_data=client_data,
                authenticator_data=assertion.auth_data,
                signature=assertion.signature,
                user_handle=assertion.user["id"] if assertion.user else None,
            ),
        ),
    )
    print("getAssertion: verified by Fido2Server")
    device.close()
    print(f"python-fido2 over {path}: list_devices, ping, getInfo, makeCredential, getAssertion ok")


if __name__ == "__main__":
    main(sys.argv[1])
