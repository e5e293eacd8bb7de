#!/usr/bin/env python3
"""Builds WebAuthn relying-party test vectors independently of the Swift code.

Responses are assembled with python-fido2's software data types (AuthenticatorData.create,
AttestedCredentialData.create, AttestationObject.create, CollectedClientData.create and
fido2.cose keys) and signed with `cryptography` (deterministic RFC 6979 ECDSA, so reruns give the
same bytes). Every vector is then run through two independent verifiers:

- python-fido2's `fido2.server.Fido2Server` (register_complete / authenticate_complete), with the
  attestation statement checked by fido2.attestation and the x5c chain against the script's CA;
- duo-labs py_webauthn's `verify_registration_response` / `verify_authentication_response`.

Positive vectors must be accepted by both, or the script stops. For negative vectors the script
records what each library said: some checks (crossOrigin, BE changes, user handles, allowCredentials,
sign counters in python-fido2) are not made by one or both of them, and the JSON says so.

Usage (from the repository root):
    python3 -m venv .venv
    .venv/bin/pip install fido2==2.2.1 webauthn==3.0.1 cbor2
    .venv/bin/python Tools/vectors/make_rp_vectors.py
Writes Tests/RelyingPartyTests/Vectors/python-fido2.json.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import pathlib
import struct
from importlib.metadata import version

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID
from fido2 import cbor
from fido2.attestation import FidoU2FAttestation, NoneAttestation, PackedAttestation, verify_x509_chain
from fido2.cose import ES256, EdDSA
from fido2.server import Fido2Server
from fido2.utils import websafe_encode
from fido2.webauthn import (
    Aaguid,
    AttestationObject,
    AttestedCredentialData,
    AuthenticatorData,
    CollectedClientData,
    PublicKeyCredentialRpEntity,
    UserVerificationRequirement,
)
from webauthn import verify_authentication_response, verify_registration_response
from webauthn.helpers.structs import AttestationFormat

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "Tests" / "RelyingPartyTests" / "Vectors" / "python-fido2.json"

RP_ID = "example.com"
ORIGIN = "https://example.com"
FLAG = AuthenticatorData.FLAG
SIGNING = ec.ECDSA(hashes.SHA256(), deterministic_signing=True)
NOT_BEFORE = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
NOT_AFTER = datetime.datetime(2124, 1, 1, tzinfo=datetime.timezone.utc)
AAGUID = Aaguid(bytes.fromhex("6d44ba9bf6ec2e49b9300c8fe920cb73"))
OID_FIDO_AAGUID = x509.ObjectIdentifier("1.3.6.1.4.1.45724.1.1.4")


def b64(data: bytes) -> str:
    return websafe_encode(bytes(data))


def derived(label: str, length: int = 32) -> bytes:
    """Deterministic 'random' bytes: SHA-256 chained over a label."""
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha256(f"{label}/{counter}".encode()).digest()
        counter += 1
    return out[:length]


def p256_key(label: str) -> ec.EllipticCurvePrivateKey:
    n = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    return ec.derive_private_key(int.from_bytes(derived(label), "big") % (n - 1) + 1, ec.SECP256R1())


def name(common_name: str, unit: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "SE"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Passkey test vectors"),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


CA_KEY = p256_key("attestation CA")
CA_CERT = (
    x509.CertificateBuilder()
    .subject_name(name("Passkey test attestation CA", "Authenticator Attestation CA"))
    .issuer_name(name("Passkey test attestation CA", "Authenticator Attestation CA"))
    .public_key(CA_KEY.public_key())
    .serial_number(int.from_bytes(derived("CA serial", 16), "big") >> 1)
    .not_valid_before(NOT_BEFORE)
    .not_valid_after(NOT_AFTER)
    .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    .add_extension(
        x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
    )
    .sign(CA_KEY, hashes.SHA256(), ecdsa_deterministic=True)
)
CA_DER = CA_CERT.public_bytes(serialization.Encoding.DER)
CA_PEM = CA_CERT.public_bytes(serialization.Encoding.PEM)


def attestation_cert(key: ec.EllipticCurvePrivateKey, label: str, aaguid: bytes | None) -> bytes:
    builder = (
        x509.CertificateBuilder()
        .subject_name(name(f"Passkey test attestation {label}", "Authenticator Attestation"))
        .issuer_name(CA_CERT.subject)
        .public_key(key.public_key())
        .serial_number(int.from_bytes(derived(f"serial {label}", 16), "big") >> 1)
        .not_valid_before(NOT_BEFORE)
        .not_valid_after(NOT_AFTER)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    )
    if aaguid is not None:
        # id-fido-gen-ce-aaguid: an OCTET STRING holding the 16-byte AAGUID, not critical.
        builder = builder.add_extension(
            x509.UnrecognizedExtension(OID_FIDO_AAGUID, b"\x04\x10" + aaguid), critical=False
        )
    cert = builder.sign(CA_KEY, hashes.SHA256(), ecdsa_deterministic=True)
    return cert.public_bytes(serialization.Encoding.DER)


def rp_id_hash(rp_id: str) -> bytes:
    return hashlib.sha256(rp_id.encode()).digest()


def fido2_server() -> Fido2Server:
    return Fido2Server(
        PublicKeyCredentialRpEntity(name="Example", id=RP_ID),
        attestation="direct",
        verify_attestation=fido2_attestation,
    )


def fido2_attestation(attestation_object: AttestationObject, client_data_hash: bytes) -> None:
    """Format verification by fido2.attestation, then the x5c chain against our CA."""
    formats = {"none": NoneAttestation(), "packed": PackedAttestation(), "fido-u2f": FidoU2FAttestation()}
    result = formats[attestation_object.fmt].verify(
        attestation_object.att_stmt, attestation_object.auth_data, client_data_hash
    )
    if result.trust_path:
        verify_x509_chain(result.trust_path + [CA_DER])


def outcome(action) -> str:
    try:
        action()
        return "accepted"
    except Exception as error:  # the libraries raise their own exception types
        return f"rejected: {type(error).__name__}: {error}"


# MARK: Registration


def make_registration(
    label: str,
    *,
    fmt: str = "none",
    flags: int = FLAG.UP,
    sign_count: int = 0,
    key_kind: str = "p256",
    client_type: str = "webauthn.create",
    origin: str = ORIGIN,
    challenge_in_response: bytes | None = None,
    rp_id_in_response: str = RP_ID,
    cross_origin: bool = False,
    statement_mutation: str | None = None,
    cert_aaguid: bytes | None = None,
    cert_aaguid_present: bool = True,
):
    challenge = derived(f"{label} challenge")
    user_id = derived(f"{label} user", 16)
    credential_id = derived(f"{label} credential id", 32)
    if key_kind == "ed25519":
        private = ed25519.Ed25519PrivateKey.from_private_bytes(derived(f"{label} credential key"))
        cose_key = EdDSA.from_cryptography_key(private.public_key())
    else:
        private = p256_key(f"{label} credential key")
        cose_key = ES256.from_cryptography_key(private.public_key())
    client_data = CollectedClientData.create(
        client_type,
        challenge_in_response if challenge_in_response is not None else challenge,
        origin,
        cross_origin=cross_origin,
    )
    auth_data = AuthenticatorData.create(
        rp_id_hash(rp_id_in_response),
        flags | FLAG.AT,
        sign_count,
        # FIDO U2F authenticators report the all-zero AAGUID (WebAuthn §8.6).
        AttestedCredentialData.create(Aaguid.NONE if fmt == "fido-u2f" else AAGUID, credential_id, cose_key),
    )
    signed = bytes(auth_data) + client_data.hash
    if fmt == "none":
        statement = {} if statement_mutation != "non-empty none" else {"alg": -7}
    elif fmt == "packed-self":
        signature = private.sign(signed, SIGNING)
        if statement_mutation == "bad signature":
            signature = private.sign(signed + b"tampered", SIGNING)
        alg = -257 if statement_mutation == "alg mismatch" else -7
        statement = {"alg": alg, "sig": signature}
    elif fmt == "packed-x5c":
        attestation_key = p256_key(f"{label} attestation key")
        aaguid = cert_aaguid if cert_aaguid is not None else bytes(AAGUID)
        cert = attestation_cert(attestation_key, label, aaguid if cert_aaguid_present else None)
        statement = {"alg": -7, "sig": attestation_key.sign(signed, SIGNING), "x5c": [cert, CA_DER]}
    elif fmt == "fido-u2f":
        attestation_key = p256_key(f"{label} attestation key")
        cert = attestation_cert(attestation_key, label, None)
        public_point = b"\x04" + cose_key[-2] + cose_key[-3]
        u2f_signed = b"\x00" + rp_id_hash(rp_id_in_response) + client_data.hash + credential_id + public_point
        statement = {"sig": attestation_key.sign(u2f_signed, SIGNING), "x5c": [cert]}
    else:
        raise ValueError(fmt)
    wire_fmt = {"packed-self": "packed", "packed-x5c": "packed"}.get(fmt, fmt)
    attestation_object = AttestationObject.create(wire_fmt, auth_data, statement)
    return {
        "challenge": challenge,
        "user_id": user_id,
        "credential_id": credential_id,
        "cose_key": cose_key,
        "client_data": client_data,
        "attestation_object": attestation_object,
        "auth_data": auth_data,
        "private": private,
        "fmt": wire_fmt,
        "attestation_type": {"none": "none", "packed-self": "self", "packed-x5c": "basicOrAttCA"}.get(fmt),
    }


def check_registration(made, user_verification: str):
    response = {
        "id": b64(made["credential_id"]),
        "rawId": b64(made["credential_id"]),
        "type": "public-key",
        "response": {
            "clientDataJSON": b64(made["client_data"]),
            "attestationObject": b64(made["attestation_object"]),
        },
        "clientExtensionResults": {},
    }

    def with_fido2():
        server = fido2_server()
        _, state = server.register_begin(
            {"id": made["user_id"], "name": "user"},
            challenge=made["challenge"],
            user_verification=UserVerificationRequirement(user_verification),
        )
        server.register_complete(state, response)

    def with_py_webauthn():
        verify_registration_response(
            credential=response,
            expected_challenge=made["challenge"],
            expected_rp_id=RP_ID,
            expected_origin=ORIGIN,
            require_user_verification=user_verification == "required",
            pem_root_certs_bytes_by_fmt={AttestationFormat.PACKED: [CA_PEM], AttestationFormat.FIDO_U2F: [CA_PEM]},
        )

    return outcome(with_fido2), outcome(with_py_webauthn)


def registration_vector(name: str, description: str, made, *, user_verification="preferred", error=None):
    fido2_result, py_webauthn_result = check_registration(made, user_verification)
    if error is None:
        for library, result in (("python-fido2", fido2_result), ("py_webauthn", py_webauthn_result)):
            if result != "accepted":
                raise SystemExit(f"{name}: {library} refused a positive vector: {result}")
        auth_data = made["auth_data"]
        expected = {
            "ok": True,
            "credential_id": b64(made["credential_id"]),
            "public_key": b64(cbor.encode(made["cose_key"])),
            "sign_count": auth_data.counter,
            "aaguid": str(AAGUID),
            "fmt": made["fmt"],
            "attestation_type": made["attestation_type"],
            "backup_eligible": auth_data.is_backup_eligible(),
            "backup_state": auth_data.is_backed_up(),
            "user_verified": auth_data.is_user_verified(),
        }
    else:
        expected = {"ok": False, "error": error}
    return {
        "name": name,
        "description": description,
        "rp_id": RP_ID,
        "origins": [ORIGIN],
        "challenge": b64(made["challenge"]),
        "user_id": b64(made["user_id"]),
        "user_verification": user_verification,
        "client_data_json": b64(made["client_data"]),
        "attestation_object": b64(made["attestation_object"]),
        "expected": expected,
        "python_fido2": fido2_result,
        "py_webauthn": py_webauthn_result,
    }


def registrations():
    vectors = []
    add = vectors.append
    add(registration_vector("none-up", "none attestation, UP only, counter 0", make_registration("none-up")))
    add(
        registration_vector(
            "none-uv-backed-up",
            "none attestation, UP UV BE BS, counter 5, UV required",
            make_registration("none-uv-backed-up", flags=FLAG.UP | FLAG.UV | FLAG.BE | FLAG.BS, sign_count=5),
            user_verification="required",
        )
    )
    add(
        registration_vector(
            "packed-self",
            "packed self attestation (no x5c), UP UV, counter 1",
            make_registration("packed-self", fmt="packed-self", flags=FLAG.UP | FLAG.UV, sign_count=1),
        )
    )
    add(
        registration_vector(
            "packed-x5c-aaguid",
            "packed attestation with x5c [leaf, CA]; the leaf carries the FIDO AAGUID extension",
            make_registration("packed-x5c-aaguid", fmt="packed-x5c", flags=FLAG.UP | FLAG.BE),
        )
    )
    add(
        registration_vector(
            "packed-x5c-no-aaguid-extension",
            "packed attestation with x5c; the leaf has no AAGUID extension",
            make_registration("packed-x5c-no-aaguid", fmt="packed-x5c", cert_aaguid_present=False),
        )
    )
    # Negative cases.
    add(
        registration_vector(
            "wrong-challenge",
            "clientDataJSON carries a different challenge",
            make_registration("wrong-challenge", challenge_in_response=derived("another challenge")),
            error="challengeMismatch",
        )
    )
    add(
        registration_vector(
            "wrong-origin",
            "clientDataJSON origin is https://evil.example",
            make_registration("wrong-origin", origin="https://evil.example"),
            error="originMismatch",
        )
    )
    add(
        registration_vector(
            "wrong-type",
            "clientDataJSON type is webauthn.get",
            make_registration("wrong-type", client_type="webauthn.get"),
            error="typeMismatch",
        )
    )
    add(
        registration_vector(
            "wrong-rp-id",
            "authenticator data is for RP ID evil.example",
            make_registration("wrong-rp-id", rp_id_in_response="evil.example"),
            error="rpIDHashMismatch",
        )
    )
    add(
        registration_vector(
            "user-not-present",
            "UP flag clear",
            make_registration("user-not-present", flags=0),
            error="userNotPresent",
        )
    )
    add(
        registration_vector(
            "uv-required-missing",
            "UV required, UV flag clear",
            make_registration("uv-required-missing"),
            user_verification="required",
            error="userVerificationRequired",
        )
    )
    add(
        registration_vector(
            "bs-without-be",
            "BS set while BE is clear",
            make_registration("bs-without-be", flags=FLAG.UP | FLAG.BS),
            error="backupFlagsInconsistent",
        )
    )
    add(
        registration_vector(
            "cross-origin",
            "clientDataJSON crossOrigin true while the policy is same-origin only",
            make_registration("cross-origin", cross_origin=True),
            error="crossOriginNotAllowed",
        )
    )
    add(
        registration_vector(
            "none-with-statement",
            "fmt none with a non-empty attStmt",
            make_registration("none-with-statement", statement_mutation="non-empty none"),
            error="attestationInvalid",
        )
    )
    add(
        registration_vector(
            "packed-self-bad-signature",
            "packed self attestation signed over other bytes",
            make_registration("packed-self-bad-signature", fmt="packed-self", statement_mutation="bad signature"),
            error="attestationInvalid",
        )
    )
    add(
        registration_vector(
            "packed-self-alg-mismatch",
            "packed self attestation with alg -257 for an ES256 credential",
            make_registration("packed-self-alg-mismatch", fmt="packed-self", statement_mutation="alg mismatch"),
            error="attestationInvalid",
        )
    )
    add(
        registration_vector(
            "packed-x5c-aaguid-mismatch",
            "the leaf's AAGUID extension names another AAGUID than the authenticator data",
            make_registration(
                "packed-x5c-aaguid-mismatch", fmt="packed-x5c", cert_aaguid=bytes.fromhex("00" * 15 + "01")
            ),
            error="attestationInvalid",
        )
    )
    add(
        registration_vector(
            "fido-u2f",
            "a valid fido-u2f statement: accepted by both libraries, a format this verifier does not implement",
            make_registration("fido-u2f", fmt="fido-u2f"),
            error="unsupportedAttestationFormat",
        )
    )
    add(
        registration_vector(
            "eddsa-credential",
            "an Ed25519 (alg -8) credential: accepted by both libraries, not ES256",
            make_registration("eddsa-credential", key_kind="ed25519"),
            error="unsupportedAlgorithm",
        )
    )
    return vectors


# MARK: Authentication


def make_assertion(
    label: str,
    registered,
    *,
    flags: int = FLAG.UP,
    sign_count: int = 1,
    client_type: str = "webauthn.get",
    origin: str = ORIGIN,
    challenge_in_response: bytes | None = None,
    rp_id_in_response: str = RP_ID,
    tamper: str | None = None,
):
    challenge = derived(f"{label} assertion challenge")
    client_data = CollectedClientData.create(
        client_type, challenge_in_response if challenge_in_response is not None else challenge, origin
    )
    auth_data = AuthenticatorData.create(rp_id_hash(rp_id_in_response), flags, sign_count)
    signed = bytes(auth_data) + client_data.hash
    if tamper == "other data":
        signature = registered["private"].sign(signed + b"tampered", SIGNING)
    elif tamper == "raw r||s":
        der = registered["private"].sign(signed, SIGNING)
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

        r, s = decode_dss_signature(der)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    else:
        signature = registered["private"].sign(signed, SIGNING)
    return {"challenge": challenge, "client_data": client_data, "auth_data": auth_data, "signature": signature}


def check_assertion(registered, made, *, stored_count: int, user_verification: str, response_id: bytes, user_handle):
    response = {
        "id": b64(response_id),
        "rawId": b64(response_id),
        "type": "public-key",
        "response": {
            "clientDataJSON": b64(made["client_data"]),
            "authenticatorData": b64(made["auth_data"]),
            "signature": b64(made["signature"]),
        },
        "clientExtensionResults": {},
    }
    if user_handle is not None:
        response["response"]["userHandle"] = b64(user_handle)
    credential_data = registered["auth_data"].credential_data

    def with_fido2():
        server = fido2_server()
        _, state = server.authenticate_begin(
            [credential_data],
            user_verification=UserVerificationRequirement(user_verification),
            challenge=made["challenge"],
        )
        server.authenticate_complete(state, [credential_data], response)

    def with_py_webauthn():
        verify_authentication_response(
            credential=response,
            expected_challenge=made["challenge"],
            expected_rp_id=RP_ID,
            expected_origin=ORIGIN,
            credential_public_key=cbor.encode(registered["cose_key"]),
            credential_current_sign_count=stored_count,
            require_user_verification=user_verification == "required",
        )

    return outcome(with_fido2), outcome(with_py_webauthn)


def authentication_vector(
    name: str,
    description: str,
    registered,
    made,
    *,
    stored_count: int = 0,
    stored_be: bool | None = None,
    allow_credentials: list[bytes] | None = None,
    user_verification: str = "preferred",
    response_id: bytes | None = None,
    user_handle: bytes | None = b"",
    error: str | None = None,
):
    credential_id = registered["credential_id"]
    response_id = credential_id if response_id is None else response_id
    user_handle = registered["user_id"] if user_handle == b"" else user_handle
    stored_be = registered["auth_data"].is_backup_eligible() if stored_be is None else stored_be
    allow_credentials = [credential_id] if allow_credentials is None else allow_credentials
    fido2_result, py_webauthn_result = check_assertion(
        registered,
        made,
        stored_count=stored_count,
        user_verification=user_verification,
        response_id=response_id,
        user_handle=user_handle,
    )
    auth_data = made["auth_data"]
    if error is None:
        for library, result in (("python-fido2", fido2_result), ("py_webauthn", py_webauthn_result)):
            if result != "accepted":
                raise SystemExit(f"{name}: {library} refused a positive vector: {result}")
        expected = {
            "ok": True,
            "sign_count": max(auth_data.counter, stored_count),
            "backup_state": auth_data.is_backed_up(),
            "user_verified": auth_data.is_user_verified(),
        }
    else:
        expected = {"ok": False, "error": error}
    return {
        "name": name,
        "description": description,
        "rp_id": RP_ID,
        "origins": [ORIGIN],
        "challenge": b64(made["challenge"]),
        "allow_credentials": [b64(c) for c in allow_credentials],
        "user_verification": user_verification,
        "credential": {
            "id": b64(credential_id),
            "public_key": b64(cbor.encode(registered["cose_key"])),
            "sign_count": stored_count,
            "backup_eligible": stored_be,
            "backup_state": registered["auth_data"].is_backed_up(),
            "user_handle": b64(registered["user_id"]),
        },
        "response": {
            "credential_id": b64(response_id),
            "client_data_json": b64(made["client_data"]),
            "authenticator_data": b64(auth_data),
            "signature": b64(made["signature"]),
            "user_handle": None if user_handle is None else b64(user_handle),
        },
        "expected": expected,
        "python_fido2": fido2_result,
        "py_webauthn": py_webauthn_result,
    }


def authentications():
    plain = make_registration("auth-plain")  # UP only, BE clear
    synced = make_registration("auth-synced", flags=FLAG.UP | FLAG.UV | FLAG.BE | FLAG.BS, sign_count=5)
    vectors = []
    add = vectors.append
    add(
        authentication_vector(
            "plain", "UP only, counter 0 -> 1, allowCredentials", plain, make_assertion("plain", plain)
        )
    )
    add(
        authentication_vector(
            "synced-discoverable-uv",
            "UP UV BE BS, counter 5 -> 6, UV required, empty allowCredentials with user handle",
            synced,
            make_assertion("synced", synced, flags=FLAG.UP | FLAG.UV | FLAG.BE | FLAG.BS, sign_count=6),
            stored_count=5,
            allow_credentials=[],
            user_verification="required",
        )
    )
    add(
        authentication_vector(
            "zero-counters",
            "stored and new counters both 0: allowed",
            plain,
            make_assertion("zero", plain, sign_count=0),
        )
    )
    add(
        authentication_vector(
            "backup-state-cleared",
            "BE stays set, BS goes from set to clear: allowed, record updated",
            synced,
            make_assertion("bs-cleared", synced, flags=FLAG.UP | FLAG.BE, sign_count=7),
            stored_count=6,
        )
    )
    # Negative cases.
    add(
        authentication_vector(
            "wrong-challenge",
            "clientDataJSON carries a different challenge",
            plain,
            make_assertion("a-wrong-challenge", plain, challenge_in_response=derived("another")),
            error="challengeMismatch",
        )
    )
    add(
        authentication_vector(
            "wrong-origin",
            "clientDataJSON origin is https://evil.example",
            plain,
            make_assertion("a-wrong-origin", plain, origin="https://evil.example"),
            error="originMismatch",
        )
    )
    add(
        authentication_vector(
            "wrong-type",
            "clientDataJSON type is webauthn.create",
            plain,
            make_assertion("a-wrong-type", plain, client_type="webauthn.create"),
            error="typeMismatch",
        )
    )
    add(
        authentication_vector(
            "wrong-rp-id",
            "authenticator data is for RP ID evil.example",
            plain,
            make_assertion("a-wrong-rp", plain, rp_id_in_response="evil.example"),
            error="rpIDHashMismatch",
        )
    )
    add(
        authentication_vector(
            "user-not-present",
            "UP flag clear",
            plain,
            make_assertion("a-no-up", plain, flags=0),
            error="userNotPresent",
        )
    )
    add(
        authentication_vector(
            "uv-required-missing",
            "UV required, UV flag clear",
            plain,
            make_assertion("a-no-uv", plain),
            user_verification="required",
            error="userVerificationRequired",
        )
    )
    add(
        authentication_vector(
            "bs-without-be",
            "BS set while BE is clear",
            plain,
            make_assertion("a-bs", plain, flags=FLAG.UP | FLAG.BS),
            error="backupFlagsInconsistent",
        )
    )
    add(
        authentication_vector(
            "be-cleared",
            "registered with BE set, asserted with BE clear",
            synced,
            make_assertion("a-be-cleared", synced, flags=FLAG.UP, sign_count=7),
            stored_count=6,
            error="backupEligibilityChanged",
        )
    )
    add(
        authentication_vector(
            "be-set",
            "registered with BE clear, asserted with BE set",
            plain,
            make_assertion("a-be-set", plain, flags=FLAG.UP | FLAG.BE),
            error="backupEligibilityChanged",
        )
    )
    add(
        authentication_vector(
            "bad-signature",
            "signature over other bytes",
            plain,
            make_assertion("a-bad-sig", plain, tamper="other data"),
            error="signatureInvalid",
        )
    )
    add(
        authentication_vector(
            "signature-not-der",
            "a raw r||s signature instead of DER",
            plain,
            make_assertion("a-raw-sig", plain, tamper="raw r||s"),
            error="signatureInvalid",
        )
    )
    add(
        authentication_vector(
            "sign-count-regressed",
            "stored counter 10, new counter 5",
            plain,
            make_assertion("a-regressed", plain, sign_count=5),
            stored_count=10,
            error="signCountRegressed",
        )
    )
    add(
        authentication_vector(
            "sign-count-equal",
            "stored counter 7, new counter 7",
            plain,
            make_assertion("a-equal", plain, sign_count=7),
            stored_count=7,
            error="signCountRegressed",
        )
    )
    add(
        authentication_vector(
            "user-handle-mismatch",
            "the response's user handle is another user's",
            plain,
            make_assertion("a-other-user", plain),
            user_handle=derived("someone else", 16),
            error="userHandleMismatch",
        )
    )
    add(
        authentication_vector(
            "user-handle-missing",
            "discoverable flow (empty allowCredentials) without a user handle",
            plain,
            make_assertion("a-no-handle", plain),
            allow_credentials=[],
            user_handle=None,
            error="userHandleMissing",
        )
    )
    add(
        authentication_vector(
            "credential-not-allowed",
            "allowCredentials names only another credential",
            plain,
            make_assertion("a-not-allowed", plain),
            allow_credentials=[derived("another credential")],
            error="credentialNotAllowed",
        )
    )
    add(
        authentication_vector(
            "unknown-credential",
            "the response names a credential ID with no record (allowCredentials empty)",
            plain,
            make_assertion("a-unknown", plain),
            allow_credentials=[],
            response_id=derived("unregistered credential"),
            error="unknownCredential",
        )
    )
    return vectors


def main() -> None:
    document = {
        "source": (
            "Tools/vectors/make_rp_vectors.py: responses built with python-fido2 "
            f"{version('fido2')} (fido2.webauthn, fido2.cose) and cryptography {version('cryptography')}, "
            f"each run through fido2.server.Fido2Server and py_webauthn {version('webauthn')}"
        ),
        "licence": "Generated by this repository's script; no third-party data.",
        "attestation_ca": b64(CA_DER),
        "registrations": registrations(),
        "authentications": authentications(),
    }
    OUTPUT.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {OUTPUT.relative_to(ROOT)}: "
          f"{len(document['registrations'])} registrations, {len(document['authentications'])} authentications")


if __name__ == "__main__":
    main()
