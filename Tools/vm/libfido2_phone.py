"""libfido2 (Yubico's C library, as Debian ships it) makes a credential and signs in with it through the security key
at DEVICE, called through ctypes: fido_dev_make_cred, then fido_dev_get_assert with that credential, and
fido_assert_verify checks the signature with the credential's public key. With `passkey serve --phone-only` behind
DEVICE, a phone answers both.

    python libfido2_phone.py DEVICE RP_ID

Prints one line per step and exits 1 with the failing call and libfido2's error. The CLI tools cannot do this with
a phone: fido2-cred -M fails with "output error" on a credential attested with "none" (it prints a signature, which
"none" has not), as phones attest, and OpenSSH's ssh-keygen (9.2) refuses it in fido_cred_verify_self.
"""

import ctypes
import os
import sys

COSE_ES256 = -7
FIDO_OPT_TRUE = 2
FIDO_OK = 0

fido = ctypes.CDLL("libfido2.so.1")
pointer = ctypes.c_void_p
fido.fido_strerr.restype = ctypes.c_char_p
for name in ("fido_dev_new", "fido_cred_new", "fido_assert_new", "es256_pk_new"):
    getattr(fido, name).restype = pointer
for name in ("fido_cred_pubkey_ptr", "fido_cred_id_ptr", "fido_assert_sig_ptr"):
    getattr(fido, name).restype = pointer
    getattr(fido, name).argtypes = [pointer] + ([ctypes.c_size_t] if name.startswith("fido_assert") else [])
for name in ("fido_cred_pubkey_len", "fido_cred_id_len", "fido_assert_sig_len"):
    getattr(fido, name).restype = ctypes.c_size_t
    getattr(fido, name).argtypes = [pointer] + ([ctypes.c_size_t] if name.startswith("fido_assert") else [])
fido.fido_cred_fmt.restype = ctypes.c_char_p
fido.fido_cred_fmt.argtypes = [pointer]
fido.fido_cred_flags.restype = ctypes.c_uint8
fido.fido_cred_flags.argtypes = [pointer]
fido.fido_assert_count.restype = ctypes.c_size_t
fido.fido_assert_count.argtypes = [pointer]
size, text, opt = ctypes.c_size_t, ctypes.c_char_p, ctypes.c_int
for name, arguments in {
    "fido_init": [ctypes.c_int], "fido_strerr": [ctypes.c_int],
    "fido_dev_open": [pointer, text], "fido_dev_close": [pointer],
    "fido_cred_set_type": [pointer, ctypes.c_int], "fido_cred_set_clientdata_hash": [pointer, text, size],
    "fido_cred_set_rp": [pointer, text, text], "fido_cred_set_user": [pointer, text, size, text, text, text],
    "fido_cred_set_rk": [pointer, opt], "fido_dev_make_cred": [pointer, pointer, text],
    "fido_assert_set_clientdata_hash": [pointer, text, size], "fido_assert_set_rp": [pointer, text],
    "fido_assert_allow_cred": [pointer, text, size], "fido_dev_get_assert": [pointer, pointer, text],
    "es256_pk_from_ptr": [pointer, text, size], "fido_assert_verify": [pointer, size, ctypes.c_int, pointer],
}.items():
    getattr(fido, name).argtypes = arguments


def check(result, call):
    if result != FIDO_OK:
        sys.exit(f"{call}: {fido.fido_strerr(result).decode()} ({result})")


def main(device_path, rp_id):
    fido.fido_init(0)
    device = pointer(fido.fido_dev_new())
    check(fido.fido_dev_open(device, device_path.encode()), f"fido_dev_open {device_path}")

    # A discoverable ES256 credential, as fido2-cred -M -r would ask for it.
    credential = pointer(fido.fido_cred_new())
    client_data_hash = os.urandom(32)
    user_id = b"libfido2-user"
    check(fido.fido_cred_set_type(credential, COSE_ES256), "fido_cred_set_type")
    check(fido.fido_cred_set_clientdata_hash(credential, client_data_hash, len(client_data_hash)),
          "fido_cred_set_clientdata_hash")
    check(fido.fido_cred_set_rp(credential, rp_id.encode(), b"libfido2 through a phone"), "fido_cred_set_rp")
    check(fido.fido_cred_set_user(credential, user_id, len(user_id), b"libfido2", b"libfido2", None),
          "fido_cred_set_user")
    check(fido.fido_cred_set_rk(credential, FIDO_OPT_TRUE), "fido_cred_set_rk")
    check(fido.fido_dev_make_cred(device, credential, None), "fido_dev_make_cred")
    public_key = ctypes.string_at(fido.fido_cred_pubkey_ptr(credential), fido.fido_cred_pubkey_len(credential))
    credential_id = ctypes.string_at(fido.fido_cred_id_ptr(credential), fido.fido_cred_id_len(credential))
    flags = fido.fido_cred_flags(credential)
    if len(public_key) != 64 or not credential_id or not flags & 0x01:
        sys.exit(f"fido_dev_make_cred: an unusable credential (key {len(public_key)} bytes, ID "
                 f"{len(credential_id)} bytes, flags {flags:#04x})")
    print(f"made: format {fido.fido_cred_fmt(credential).decode()}, credential ID {len(credential_id)} bytes, "
          f"flags {flags:#04x}", flush=True)

    # A sign-in with it (its ID in the allow list), and the signature checked with its public key.
    assertion = pointer(fido.fido_assert_new())
    client_data_hash = os.urandom(32)
    check(fido.fido_assert_set_clientdata_hash(assertion, client_data_hash, len(client_data_hash)),
          "fido_assert_set_clientdata_hash")
    check(fido.fido_assert_set_rp(assertion, rp_id.encode()), "fido_assert_set_rp")
    check(fido.fido_assert_allow_cred(assertion, credential_id, len(credential_id)), "fido_assert_allow_cred")
    check(fido.fido_dev_get_assert(device, assertion, None), "fido_dev_get_assert")
    if fido.fido_assert_count(assertion) != 1:
        sys.exit(f"fido_dev_get_assert: {fido.fido_assert_count(assertion)} assertions, not 1")
    key = pointer(fido.es256_pk_new())
    check(fido.es256_pk_from_ptr(key, public_key, len(public_key)), "es256_pk_from_ptr")
    check(fido.fido_assert_verify(assertion, 0, COSE_ES256, key), "fido_assert_verify")
    print(f"signed in: fido_assert_verify accepted a {fido.fido_assert_sig_len(assertion, 0)}-byte signature",
          flush=True)
    fido.fido_dev_close(device)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: libfido2_phone.py DEVICE RP_ID")
    main(sys.argv[1], sys.argv[2])
