#!/usr/bin/env python3
"""Known answers for the hybrid (caBLE v2) Noise handshake and Crypter, computed independently of the Swift code.

The Noise steps follow the write-up (shared/docs/hybrid-protocol.md §5 and §6), which was written from Chromium's
device/fido/cable/noise.cc and v2_handshake.cc. Only the `cryptography` package is used: P-256 ECDH, HKDF-SHA256,
SHA-256 and AES-256-GCM. Every handshake is run on both sides here and the script stops unless the two sides agree.

Keys are fixed P-256 scalars derived from labels, so reruns give identical bytes.

Usage (from the repository root; the venv is the one Tools/test sets up, which has `cryptography` via fido2):
    .venv/bin/python Tools/vectors/make_noise_vectors.py
Writes Tests/HybridTests/Vectors/noise-known-answers.json and Tests/HybridTests/Vectors/crypter-known-answers.json.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
from importlib.metadata import version

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

SCRIPT = "Tools/vectors/make_noise_vectors.py"
ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "Tests" / "HybridTests" / "Vectors"

# Order of the P-256 group.
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def private_key(label: str) -> ec.EllipticCurvePrivateKey:
    """A fixed key: SHA-256 of the label, reduced into [1, n-1]."""
    scalar = int.from_bytes(sha256(b"hybrid noise known answer/" + label.encode()), "big") % (N - 1) + 1
    return ec.derive_private_key(scalar, ec.SECP256R1())


def scalar_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_numbers().private_value.to_bytes(32, "big")


def public_bytes(key) -> bytes:
    """65-byte uncompressed X9.62 point."""
    if isinstance(key, ec.EllipticCurvePrivateKey):
        key = key.public_key()
    return key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)


def load_public(data: bytes) -> ec.EllipticCurvePublicKey:
    return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), data)


def dh(private: ec.EllipticCurvePrivateKey, public: bytes) -> bytes:
    """P-256 ECDH: the raw 32-byte x coordinate."""
    return private.exchange(ec.ECDH(), load_public(public))


def hkdf(salt: bytes, ikm: bytes, length: int) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=b"").derive(ikm)


class SymmetricState:
    """Noise SymmetricState as the write-up §5 describes it. Every handshake encryption uses n = 0."""

    def __init__(self, name: bytes):
        assert len(name) == 31
        self.ck = name + b"\x00"
        self.h = self.ck
        self.k: bytes | None = None

    def mix_hash(self, data: bytes) -> None:
        self.h = sha256(self.h + data)

    def mix_key(self, ikm: bytes) -> None:
        out = hkdf(self.ck, ikm, 64)
        self.ck, self.k = out[:32], out[32:]

    def mix_key_and_hash(self, ikm: bytes) -> None:
        out = hkdf(self.ck, ikm, 96)
        self.ck = out[:32]
        self.mix_hash(out[32:64])
        self.k = out[64:]

    def encrypt_and_hash(self, plaintext: bytes) -> bytes:
        ciphertext = AESGCM(self.k).encrypt(bytes(12), plaintext, self.h)
        self.mix_hash(ciphertext)
        return ciphertext

    def decrypt_and_hash(self, ciphertext: bytes) -> bytes:
        plaintext = AESGCM(self.k).decrypt(bytes(12), ciphertext, self.h)
        self.mix_hash(ciphertext)
        return plaintext

    def split(self) -> tuple[bytes, bytes]:
        out = hkdf(self.ck, b"", 64)
        return out[:32], out[32:]


KINDS = {
    # kind: (protocol name, prologue byte)
    "qr_initiated": (b"Noise_KNpsk0_P256_AESGCM_SHA256", 1),
    "state_assisted": (b"Noise_NKpsk0_P256_AESGCM_SHA256", 0),
}


def start(kind: str, static_public: bytes, psk: bytes) -> SymmetricState:
    name, prologue = KINDS[kind]
    state = SymmetricState(name)
    state.mix_hash(bytes([prologue]))
    state.mix_hash(static_public)
    state.mix_key_and_hash(psk)
    return state


def initiator_message(kind, static, psk, e, payload=b""):
    """Client side. `static` is the QR private key (KN) or the authenticator's identity public key (NK)."""
    static_public = public_bytes(static) if kind == "qr_initiated" else static
    state = start(kind, static_public, psk)
    e_pub = public_bytes(e)
    state.mix_hash(e_pub)
    state.mix_key(e_pub)
    if kind == "state_assisted":
        state.mix_key(dh(e, static))
    return e_pub + state.encrypt_and_hash(payload), state


def responder(kind, static, psk, e2, message, payload=b""):
    """Authenticator side. `static` is the QR public key (KN) or the identity private key (NK)."""
    static_public = static if kind == "qr_initiated" else public_bytes(static)
    state = start(kind, static_public, psk)
    re = message[:65]
    state.mix_hash(re)
    state.mix_key(re)
    if kind == "state_assisted":
        state.mix_key(dh(static, re))
    assert state.decrypt_and_hash(message[65:]) == b""
    e2_pub = public_bytes(e2)
    state.mix_hash(e2_pub)
    state.mix_key(e2_pub)
    state.mix_key(dh(e2, re))
    if kind == "qr_initiated":
        state.mix_key(dh(e2, static))
    return e2_pub + state.encrypt_and_hash(payload), state


def initiator_finish(kind, static, state, e, response):
    re2 = response[:65]
    state.mix_hash(re2)
    state.mix_key(re2)
    state.mix_key(dh(e, re2))
    if kind == "qr_initiated":
        state.mix_key(dh(static, re2))
    assert state.decrypt_and_hash(response[65:]) == b""
    return state


# MARK: Crypter (write-up §6)


def pad(message: bytes) -> bytes:
    """z zero bytes then the byte z, to a multiple of 32, at least one byte."""
    total = (len(message) + 1 + 31) // 32 * 32
    zeros = total - len(message) - 1
    return message + bytes(zeros) + bytes([zeros])


def seal_block(key: bytes, sequence: int, block: bytes, construction: str) -> bytes:
    """Seals an already padded block."""
    if construction == "current":
        nonce, aad = bytes(8) + sequence.to_bytes(4, "big"), b""
    else:
        nonce, aad = sequence.to_bytes(4, "little") + bytes(8), b"\x02"
    return AESGCM(key).encrypt(nonce, block, aad)


def seal(key: bytes, sequence: int, message: bytes, construction: str) -> bytes:
    return seal_block(key, sequence, pad(message), construction)


def handshake_vectors() -> list[dict]:
    vectors = []
    sample = b"hybrid transport known answer"
    for kind in KINDS:
        psk = sha256(b"psk/" + kind.encode())
        e = private_key(kind + "/initiator ephemeral")
        e2 = private_key(kind + "/responder ephemeral")
        if kind == "qr_initiated":
            static_private = private_key(kind + "/qr key")
            initiator_static, responder_static = static_private, public_bytes(static_private)
        else:
            static_private = private_key(kind + "/authenticator identity")
            initiator_static, responder_static = public_bytes(static_private), static_private

        message1, client = initiator_message(kind, initiator_static, psk, e)
        message2, authenticator = responder(kind, responder_static, psk, e2, message1)
        client = initiator_finish(kind, static_private, client, e, message2)
        assert len(message1) == 81 and len(message2) == 81
        assert client.h == authenticator.h and client.split() == authenticator.split()
        k1, k2 = client.split()

        # A message 1 / message 2 that carry a one-byte payload: correctly encrypted, but longer than 81 bytes.
        message1_payload, _ = initiator_message(kind, initiator_static, psk, e, payload=b"\x01")
        message2_payload, _ = responder(kind, responder_static, psk, e2, message1, payload=b"\x01")

        vectors.append(
            {
                "kind": kind,
                "protocol_name": KINDS[kind][0].decode(),
                "prologue": KINDS[kind][1],
                "static_private_key": scalar_bytes(static_private).hex(),
                "static_public_key": public_bytes(static_private).hex(),
                "psk": psk.hex(),
                "initiator_ephemeral_private_key": scalar_bytes(e).hex(),
                "responder_ephemeral_private_key": scalar_bytes(e2).hex(),
                "message1": message1.hex(),
                "message2": message2.hex(),
                "k1": k1.hex(),
                "k2": k2.hex(),
                "handshake_hash": client.h.hex(),
                "sample_plaintext_utf8": sample.decode(),
                "client_first_ciphertext": seal(k1, 0, sample, "current").hex(),
                "authenticator_first_ciphertext": seal(k2, 0, sample, "current").hex(),
                "message1_with_payload_01": message1_payload.hex(),
                "message2_with_payload_01": message2_payload.hex(),
            }
        )
    return vectors


# Copied from kanidm/webauthn-rs webauthn-authenticator-rs/src/cable/noise.rs @07274ab5, test `construction`:
# keys leaked from a patched Chromium, a framed makeCredential request and its ciphertext at sequence 0.
CHROMIUM_WRITE_KEY = "1fba3cce17622c68268d9f75b5a8a3351b517f096fb5e294941af7e3a6a8d6e1"
CHROMIUM_READ_KEY = "e34f1aa3747238c04d3bd25e07ef1b35fef359000d755615cd85be27cfc807d1"
CHROMIUM_PLAINTEXT = (
    "0101a60158203889285c8c6323950ced074984f9f9463bc1739bb621a9e5f1ee8dd9393ba28002a2626964781877656261757468"
    "6e2e6669727374796561722e69642e6175646e616d657818776562617574686e2e6669727374796561722e69642e617503a36269"
    "6450d6d7aa298fe84a06aaded7e49d900a62646e616d6561616b646973706c61794e616d6561610482a263616c67266474797065"
    "6a7075626c69632d6b6579a263616c6739010064747970656a7075626c69632d6b65790581a2626964440001020364747970656a"
    "7075626c69632d6b657907a1627576f5"
)
CHROMIUM_CIPHERTEXT = (
    "5062cf34571e0827a7c0207f7c00184567d613eab0da080ad042d80664c59df7b01a13db17fd277575ccff53b6a34fdb4fbcf832"
    "f3d360f8e5a7daee7f265a9253a904d6ebff2f9370d35536d8bf054830aaadffb996b420b2b3170ac80a83796823ed3c284b177c"
    "23400ca0124d6a68263d39783cfef0273fdf3bfcfa0a6c33df319b126f6e8290d22c4cd32a7a978856ba2273d1be1c0a291e5ee1"
    "97416aa0f7a104e4d0ac582b708482326d5ff0f1768c1416d016b1f89242e70e80312fe6b6d4029a40ada374b31e7d66fac3ba72"
    "83944b9b60da4b98f67804095fd39cd1d45d75c93d2d86cbfc21616f9f1a576ccf8c862ee185125fc1ed7ed2486e2c5fbfc39c91"
    "9597dd86c338e7df553d51e8"
)


def crypter_vectors() -> dict:
    key = sha256(b"hybrid crypter known answer/key")
    plaintexts = [b"", b"first message", bytes(range(40))]

    # The script's own construction must reproduce the Chromium ciphertext before anything is written.
    chromium = seal(bytes.fromhex(CHROMIUM_WRITE_KEY), 0, bytes.fromhex(CHROMIUM_PLAINTEXT), "current")
    assert chromium.hex() == CHROMIUM_CIPHERTEXT

    padding_blocks = [
        # padded block, plaintext it decrypts to (None: refused)
        (bytes(31) + bytes([31]), b""),
        (b"\x00", b""),
        (b"abc" + b"\x00" + b"\x01", b"abc"),  # not a multiple of 32: Chromium accepts it
        (b"abc" + b"xy" + b"\x02", b"abc"),  # non-zero padding bytes: Chromium accepts them
        (bytes(31) + bytes([32]), None),  # p + 1 = 33 > 32
        (bytes(63) + bytes([255]), None),
        (b"\x01", None),
    ]
    return {
        "key": key.hex(),
        "plaintexts": [p.hex() for p in plaintexts],
        "legacy_session": {
            "note": "plaintexts[i] sealed with the old construction at sequence i; current_at_sequence_2 is "
            "plaintexts[2] sealed with the current construction at sequence 2",
            "ciphertexts": [seal(key, i, p, "legacy").hex() for i, p in enumerate(plaintexts)],
            "current_at_sequence_2": seal(key, 2, plaintexts[2], "current").hex(),
        },
        "current_session": {
            "note": "plaintexts[i] sealed with the current construction at sequence i; legacy_at_sequence_1 is "
            "plaintexts[1] sealed with the old construction at sequence 1",
            "ciphertexts": [seal(key, i, p, "current").hex() for i, p in enumerate(plaintexts)],
            "legacy_at_sequence_1": seal(key, 1, plaintexts[1], "legacy").hex(),
        },
        "padding": [
            {
                "padded": block.hex(),
                "ciphertext": seal_block(key, 0, block, "current").hex(),
                "plaintext": None if plaintext is None else plaintext.hex(),
            }
            for block, plaintext in padding_blocks
        ],
        "chromium_construction": {
            "write_key": CHROMIUM_WRITE_KEY,
            "read_key": CHROMIUM_READ_KEY,
            "plaintext": CHROMIUM_PLAINTEXT,
            "ciphertext": CHROMIUM_CIPHERTEXT,
            "source": "kanidm/webauthn-rs webauthn-authenticator-rs/src/cable/noise.rs @07274ab5 (test "
            "`construction`, keys leaked from a patched Chromium); re-checked by this script",
        },
    }


def write(name: str, body) -> None:
    document = {
        "source": SCRIPT,
        "generator": f"python cryptography {version('cryptography')}",
        "about": "Computed from the write-up (hybrid-protocol.md §5, §6), independently of the Swift code.",
        "vectors": body,
    }
    path = OUT / name
    path.write_text(json.dumps(document, indent=1) + "\n")
    print("wrote", path.relative_to(ROOT))


if __name__ == "__main__":
    write("noise-known-answers.json", handshake_vectors())
    write("crypter-known-answers.json", crypter_vectors())
