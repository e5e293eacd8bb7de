"""py_webauthn as a relying party for example.com, one step per call, with its state in a JSON file.

    webauthn_rp.py register-options STATE          prints creation options JSON
    webauthn_rp.py register-verify STATE RESPONSE  verifies a RegistrationResponseJSON, keeps the public key
    webauthn_rp.py sign-in-options STATE [allow]   prints request options JSON (with allowCredentials if `allow`)
    webauthn_rp.py sign-in-verify STATE RESPONSE   verifies an AuthenticationResponseJSON

Exits non-zero, with py_webauthn's message, when a response is refused.
"""

import base64
import json
import sys

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
)

ORIGIN = "https://example.com"
RP_ID = "example.com"


def encode(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def main(command, state_path, argument=None):
    try:
        with open(state_path) as file:
            state = json.load(file)
    except FileNotFoundError:
        state = {}
    if command == "register-options":
        options = generate_registration_options(
            rp_id=RP_ID, rp_name="Example", user_name="vm-user",
            authenticator_selection=AuthenticatorSelectionCriteria(resident_key=ResidentKeyRequirement.REQUIRED))
        state["challenge"] = encode(options.challenge)
        print(options_to_json(options))
    elif command == "register-verify":
        with open(argument) as file:
            verified = verify_registration_response(
                credential=file.read(), expected_challenge=decode(state["challenge"]), expected_origin=ORIGIN,
                expected_rp_id=RP_ID)
        state.update(id=encode(verified.credential_id), key=encode(verified.credential_public_key),
                     count=verified.sign_count)
        print(f"registered, user verified {verified.user_verified}")
    elif command == "sign-in-options":
        allow = [PublicKeyCredentialDescriptor(id=decode(state["id"]))] if argument == "allow" else None
        options = generate_authentication_options(rp_id=RP_ID, allow_credentials=allow)
        state["challenge"] = encode(options.challenge)
        print(options_to_json(options))
    elif command == "sign-in-verify":
        with open(argument) as file:
            verified = verify_authentication_response(
                credential=file.read(), expected_challenge=decode(state["challenge"]), expected_origin=ORIGIN,
                expected_rp_id=RP_ID, credential_public_key=decode(state["key"]),
                credential_current_sign_count=state["count"])
        state["count"] = verified.new_sign_count
        print(f"signed in, user verified {verified.user_verified}")
    else:
        raise SystemExit(f"unknown command {command}")
    with open(state_path, "w") as file:
        json.dump(state, file)


if __name__ == "__main__":
    main(*sys.argv[1:])
