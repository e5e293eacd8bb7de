#!/usr/bin/env python3
"""Known answers for the CTAP 2.1 PIN/UV auth protocols one and two, from python-fido2.

Fixed P-256 scalars stand in for the authenticator's key agreement key and the platform's ephemeral key.
python-fido2's `PinProtocolV1`/`PinProtocolV2` supply kdf, encrypt (protocol one), decrypt and
authenticate; protocol two's encrypt draws a random IV, so the script encrypts with `cryptography` under a
fixed IV and checks that python-fido2 decrypts it back. The Swift side (`PinUvAuthProtocolVectorTests`)
must reproduce every field.

Usage (from the repository root):
    python3 -m venv .venv
    .venv/bin/pip install fido2==2.2.1
    .venv/bin/python Tools/vectors/make_pin_protocol_vectors.py
Writes Tests/CTAP2Tests/Vectors/pin-protocol-known-answers.json.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
from importlib.metadata import version

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from fido2.ctap2.pin import PinProtocolV1, PinProtocolV2

OUT = pathlib.Path(__file__).resolve().parents[2] / "Tests/CTAP2Tests/Vectors/pin-protocol-known-answers.json"


def scalar_key(seed: str) -> ec.EllipticCurvePrivateKey:
    value = int.from_bytes(hashlib.sha256(seed.encode()).digest(), "big") % (
        0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551 - 1
    ) + 1
    return ec.derive_private_key(value, ec.SECP256R1())


def private_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_numbers().private_value.to_bytes(32, "big")


def public_xy(key: ec.EllipticCurvePrivateKey) -> tuple[bytes, bytes]:
    numbers = key.public_key().public_numbers()
    return numbers.x.to_bytes(32, "big"), numbers.y.to_bytes(32, "big")


def padded(pin: str) -> bytes:
    data = pin.encode()
    return data + b"\0" * (64 - len(data))


def vector(name: str, protocol, authenticator_seed: str, platform_seed: str, pin: str, iv: bytes, token: bytes):
    authenticator = scalar_key(authenticator_seed)
    platform = scalar_key(platform_seed)
    z = platform.exchange(ec.ECDH(), authenticator.public_key())
    assert z == authenticator.exchange(ec.ECDH(), platform.public_key())
    shared = protocol.kdf(z)
    pin_hash = hashlib.sha256(pin.encode()).digest()[:16]
    new_pin = padded(pin)

    def encrypt(plaintext: bytes) -> bytes:
        if protocol.VERSION == 1:
            return protocol.encrypt(shared, plaintext)
        encryptor = Cipher(algorithms.AES(shared[32:]), modes.CBC(iv)).encryptor()
        ciphertext = iv + encryptor.update(plaintext) + encryptor.finalize()
        assert protocol.decrypt(shared, ciphertext) == plaintext
        return ciphertext

    new_pin_enc = encrypt(new_pin)
    pin_hash_enc = encrypt(pin_hash)
    token_enc = encrypt(token)
    assert protocol.decrypt(shared, new_pin_enc) == new_pin
    client_data_hash = hashlib.sha256(b"client data " + name.encode()).digest()
    x, y = public_xy(platform)
    return {
        "name": name,
        "protocol": protocol.VERSION,
        "authenticator_private_key": private_bytes(authenticator).hex(),
        "platform_private_key": private_bytes(platform).hex(),
        "platform_public_x": x.hex(),
        "platform_public_y": y.hex(),
        "z": z.hex(),
        "shared_secret": shared.hex(),
        "iv": iv.hex() if protocol.VERSION == 2 else "",
        "pin": pin,
        "pin_hash": pin_hash.hex(),
        "new_pin_enc": new_pin_enc.hex(),
        "pin_hash_enc": pin_hash_enc.hex(),
        "set_pin_param": protocol.authenticate(shared, new_pin_enc).hex(),
        "change_pin_param": protocol.authenticate(shared, new_pin_enc + pin_hash_enc).hex(),
        "token": token.hex(),
        "token_enc": token_enc.hex(),
        "client_data_hash": client_data_hash.hex(),
        "token_param": protocol.authenticate(token, client_data_hash).hex(),
    }


def main() -> None:
    vectors = [
        vector("protocol one", PinProtocolV1(), "authenticator 1", "platform 1", "1234", b"", bytes(range(32))),
        vector(
            "protocol one, long PIN", PinProtocolV1(), "authenticator 2", "platform 2", "ü" * 31 + "x",
            b"", bytes(range(100, 132)),
        ),
        vector(
            "protocol two", PinProtocolV2(), "authenticator 3", "platform 3", "correct horse",
            bytes(range(0xA0, 0xB0)), bytes(range(200, 232)),
        ),
        vector(
            "protocol two, 63-byte PIN", PinProtocolV2(), "authenticator 4", "platform 4", "9" * 63,
            bytes(16), bytes(32),
        ),
    ]
    document = {
        "source": f"python-fido2 {version('fido2')} fido2.ctap2.pin, cryptography {version('cryptography')}",
        "generator": "Tools/vectors/make_pin_protocol_vectors.py",
        "vectors": vectors,
    }
    OUT.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {len(vectors)} vectors to {OUT}")


if __name__ == "__main__":
    main()
