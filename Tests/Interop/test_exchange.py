"""`passkey export` and `passkey import` against independent code (Docs/Exchange.md).

pyhpke opens our CXP ExportResponse with the importer's private key and seals one we open; the key inside our CXF,
loaded by `cryptography`, signs an assertion that py_webauthn verifies against the public key the relying party
stored at registration; Bitwarden and KeePassXC files are built here from known keys in exactly the shapes those
programs write (GUID IDs, string booleans, PEM) and must import and sign in. Every bad input is a clear error and
leaves the store file byte for byte as it was. One bad passkey among good ones importing nothing, an importer key
never replaced and a private key refused as an export's recipient are VaultExchangeTests (Swift), in process.
"""

import base64
import hashlib
import json
import os
import stat
import subprocess
import time
import uuid

import cbor2
import pyotp
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from pyhpke import AEADId, CipherSuite, KDFId, KEMId, KEMKey

import cxf_reader
from conftest import PASSKEY_BIN, PASSPHRASE
from test_webauthn_client import ORIGIN, RP_ID, RelyingParty, client, digest, new_store

EXPORT_INFO = b"passkey CXP ExportResponse v0"
ARCHIVE_PASSPHRASE = "archive passphrase for the interop test"
SUITE = CipherSuite.new(KEMId.DHKEM_P256_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.AES256_GCM)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def passkey(*args, extra_env=None, input=None):
    env = dict(os.environ, PASSKEY_PASSPHRASE=PASSPHRASE, **(extra_env or {}))
    env.pop("PASSKEY_ASSUME_YES", None)
    return subprocess.run([PASSKEY_BIN, *args], capture_output=True, text=True, env=env, timeout=120,
                          stdin=subprocess.DEVNULL if input is None else None, input=input)


def register(store, rp, user):
    created = client(store, "create", "--origin", ORIGIN, "--no-phone", options=rp.registration_options(user=user))
    assert created.returncode == 0, created.stderr
    return rp.verify_registration(created.stdout)


def sign_in(store, rp):
    """A discoverable sign-in with the store's first passkey for the RP, verified by py_webauthn."""
    got = client(store, "get", "--origin", ORIGIN, "--no-phone", options=rp.authentication_options(allow=True))
    assert got.returncode == 0, got.stderr
    return rp.verify_authentication(got.stdout)


def importer_key(directory):
    """`passkey import-key new`: the private half 0600, the public half beside it."""
    private = os.path.join(directory, "importer.jwk")
    made = passkey("import-key", "new", "--output", private)
    assert made.returncode == 0, made.stderr
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    return private, os.path.join(directory, "importer.pub.jwk")


def new_credential(rp_id=RP_ID):
    """A known P-256 key and credential, registered with a fresh py_webauthn RP as its public key."""
    key = ec.generate_private_key(ec.SECP256R1())
    numbers = key.public_key().public_numbers()
    cose = cbor2.dumps({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})
    credential_id = os.urandom(16)
    rp = RelyingParty()
    rp.credentials[credential_id] = (cose, 0)
    pkcs8 = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption())
    return key, credential_id, pkcs8, rp


def cxf_document(passkeys, extra_credentials=()):
    """A CXF 1.0 document with one item per passkey dict (and other credentials in the first item)."""
    items = []
    for index, credential in enumerate(passkeys):
        credentials = [dict(type="passkey", **credential)]
        if index == 0:
            credentials += list(extra_credentials)
        items.append({"id": b64url(os.urandom(8)), "creationAt": 1700000000, "title": credential["rpId"],
                      "credentials": credentials})
    return {"version": {"major": 1, "minor": 0}, "exporterRpId": "interop.test", "exporterDisplayName": "pytest",
            "timestamp": 1700000000,
            "accounts": [{"id": b64url(b"acct"), "username": "", "email": "", "collections": [], "items": items}]}


def cxf_passkey(credential_id, pkcs8, user="carol", handle=b"user-carol"):
    return {"credentialId": b64url(credential_id), "rpId": RP_ID, "username": user, "userDisplayName": user.title(),
            "userHandle": b64url(handle), "key": b64url(pkcs8)}


def seal_export(document, public_jwk_path):
    """An ExportResponse sealed by pyhpke to our importer's public key."""
    with open(public_jwk_path) as file:
        recipient = KEMKey.from_jwk(json.load(file))
    enc, sender = SUITE.create_sender_context(recipient, info=EXPORT_INFO)
    payload = sender.seal(json.dumps(document).encode())
    return {"version": 0,
            "hpke": {"mode": "base", "kem": 16, "kdf": 1, "aead": 2,
                     "key": {"kty": "EC", "crv": "P-256", "x": b64url(enc[1:33]), "y": b64url(enc[33:65])}},
            "exporter": "interop.test", "payload": b64url(payload)}


def write(directory, name, content):
    path = os.path.join(directory, name)
    with open(path, "wb" if isinstance(content, bytes) else "w") as file:
        file.write(content if isinstance(content, (bytes, str)) else json.dumps(content))
    return path


def do_import(store, path, *args, extra_env=None):
    return passkey("import", path, "--store", store, "--yes", *args, extra_env=extra_env)


@pytest.fixture
def directory(tmp_path):
    return str(tmp_path)


# MARK: Between two stores


def test_passkeys_move_between_two_stores_sealed_and_as_an_archive_and_sign_in(directory):
    source = new_store(directory, "source.sqlite")
    rp = RelyingParty()
    register(source, rp, "alice")
    register(source, rp, "bob")
    private, public = importer_key(directory)

    sealed = os.path.join(directory, "export.json")
    exported = passkey("export", "--store", source, "--to", public, "--output", sealed)
    assert exported.returncode == 0, exported.stderr
    assert "exported 2 passkeys sealed to the importer key" in exported.stderr
    assert stat.S_IMODE(os.stat(sealed).st_mode) == 0o600
    text = open(sealed).read()
    assert "alice" not in text and "example.com" not in text  # nothing but the sealed payload
    # The same file is never replaced.
    assert passkey("export", "--store", source, "--to", public, "--output", sealed).returncode == 1

    target = new_store(directory, "target.sqlite")
    imported = do_import(target, sealed, "--key", private)
    assert imported.returncode == 0, imported.stderr
    assert "Imported 2 passkeys." in imported.stdout
    assert '"alice"' in imported.stderr and '"bob"' in imported.stderr and "created 20" in imported.stderr
    assert "clear text" not in imported.stderr
    assert sign_in(target, rp).new_sign_count == 0

    # Again: both are there already, so both are skipped and counted.
    again = do_import(target, sealed, "--key", private)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("(already in the store: skipped)") == 2
    assert "Imported 0 passkeys; skipped 2 already in the store." in again.stdout
    listed = json.loads(passkey("list", "--store", target, "--json").stdout)
    assert sorted(entry["userName"] for entry in listed) == ["alice", "bob"]

    archive = os.path.join(directory, "backup.json")
    secret = {"PASSKEY_EXPORT_PASSPHRASE": ARCHIVE_PASSPHRASE}
    backed_up = passkey("export", "--store", source, "--passphrase", "--rp", RP_ID, "--output", archive,
                        extra_env=secret)
    assert backed_up.returncode == 0, backed_up.stderr
    assert "scrypt(N=131072, r=8, p=1)" in backed_up.stderr
    header = json.load(open(archive))
    assert header["kdf"]["N"] == 131072 and len(unb64url(header["kdf"]["salt"])) == 32
    restored = new_store(directory, "restored.sqlite")
    result = do_import(restored, archive, extra_env=secret)
    assert result.returncode == 0, result.stderr
    assert "Imported 2 passkeys." in result.stdout
    sign_in(restored, rp)
    # Nothing secret on the terminal: neither passphrase, nor a key.
    for output in (exported, imported, backed_up, result):
        assert PASSPHRASE not in output.stdout + output.stderr
        assert ARCHIVE_PASSPHRASE not in output.stdout + output.stderr


def test_export_and_import_print_one_json_object_with_json(directory):
    """`--json` (Docs/CommandLine.md): standard output is one JSON object in the documented key style; export's needs
    --output, since without it the export itself is standard output."""
    source = new_store(directory, "source.sqlite")
    register(source, RelyingParty(), "alice")
    private, public = importer_key(directory)
    sealed = os.path.join(directory, "export.json")
    refused = passkey("export", "--store", source, "--to", public, "--json")
    assert refused.returncode == 64 and refused.stdout == "", refused.stderr
    exported = passkey("export", "--store", source, "--to", public, "--output", sealed, "--json")
    assert exported.returncode == 0, exported.stderr
    report = json.loads(exported.stdout)
    assert report["exported"] == 1 and report["file"] == sealed and report["passwordsLeftOut"] == 0
    assert report["passwords"] == 0 and report["oneTimeCodes"] == 0
    assert report["singleDeviceLeftOut"] == 0 and len(report["sealedWith"]["importerKey"]) > 0
    target = new_store(directory, "target.sqlite")
    for added, duplicates in ((1, 0), (0, 1)):
        imported = do_import(target, sealed, "--key", private, "--json", "-q")
        assert imported.returncode == 0, imported.stderr
        assert json.loads(imported.stdout) == {
            "added": added, "clearText": False, "oneTimeCodesAdded": 0, "oneTimeCodesAlreadyPresent": 0,
            "passwordsAdded": 0, "passwordsAlreadyPresent": 0, "skippedDuplicates": duplicates,
            "skippedOtherTypes": 0}


def test_export_filters_by_credential_id(directory):
    source = new_store(directory)
    rp = RelyingParty()
    alice = register(source, rp, "alice")
    register(source, rp, "bob")
    archive = os.path.join(directory, "one.json")
    secret = {"PASSKEY_EXPORT_PASSPHRASE": ARCHIVE_PASSPHRASE}
    exported = passkey("export", "--store", source, "--passphrase", "--credential=" + b64url(alice.credential_id),
                       "--output", archive, extra_env=secret)
    assert exported.returncode == 0, exported.stderr
    assert "exported 1 passkey " in exported.stderr
    target = new_store(directory, "target.sqlite")
    imported = do_import(target, archive, extra_env=secret)
    assert "Imported 1 passkey." in imported.stdout and '"alice"' in imported.stderr and '"bob"' not in imported.stderr


# MARK: pyhpke and cryptography


def test_pyhpke_opens_our_export_and_its_key_signs_an_assertion_py_webauthn_verifies(directory):
    store = new_store(directory)
    rp = RelyingParty()
    registered = register(store, rp, "alice")

    receiver = ec.generate_private_key(ec.SECP256R1())
    numbers = receiver.public_key().public_numbers()
    public_jwk = {"kty": "EC", "crv": "P-256", "x": b64url(numbers.x.to_bytes(32, "big")),
                  "y": b64url(numbers.y.to_bytes(32, "big"))}
    public = write(directory, "receiver.pub.jwk", public_jwk)
    out = os.path.join(directory, "export.json")
    assert passkey("export", "--store", store, "--to", public, "--output", out).returncode == 0

    response = json.load(open(out))
    assert response["version"] == 0 and response["exporter"] == "passkey.local"
    assert {k: response["hpke"][k] for k in ("mode", "kem", "kdf", "aead")} == \
        {"mode": "base", "kem": 16, "kdf": 1, "aead": 2}
    enc = b"\x04" + unb64url(response["hpke"]["key"]["x"]) + unb64url(response["hpke"]["key"]["y"])
    private_jwk = dict(public_jwk, d=b64url(receiver.private_numbers().private_value.to_bytes(32, "big")))
    recipient = SUITE.create_recipient_context(enc, KEMKey.from_jwk(private_jwk), info=EXPORT_INFO)
    document = json.loads(recipient.open(unb64url(response["payload"])))

    assert document["version"] == {"major": 1, "minor": 0}
    assert document["exporterRpId"] == "passkey.local" and isinstance(document["timestamp"], int)
    [item] = document["accounts"][0]["items"]
    [credential] = item["credentials"]
    assert credential["type"] == "passkey" and credential["rpId"] == RP_ID and credential["username"] == "alice"
    assert unb64url(credential["credentialId"]) == registered.credential_id
    assert "=" not in credential["key"]

    key = serialization.load_der_private_key(unb64url(credential["key"]), password=None)
    # py_webauthn's options list EdDSA first, so the passkey is Ed25519 (RFC 8410 PKCS#8); ES256 ones are P-256.
    assert isinstance(key, ed25519.Ed25519PrivateKey) or isinstance(key.curve, ec.SECP256R1)
    # An assertion made by hand with the exported key: authenticator data (UP, UV, BE, BS; counter 0), then the
    # signature over it and the client data hash, exactly as an authenticator would.
    options = json.loads(rp.authentication_options(allow=True))
    client_data = json.dumps({"type": "webauthn.get", "challenge": options["challenge"], "origin": ORIGIN,
                              "crossOrigin": False}).encode()
    authenticator_data = hashlib.sha256(RP_ID.encode()).digest() + bytes([0x1D]) + (0).to_bytes(4, "big")
    signed = authenticator_data + hashlib.sha256(client_data).digest()
    if isinstance(key, ed25519.Ed25519PrivateKey):
        signature = key.sign(signed)
    else:
        signature = key.sign(signed, ec.ECDSA(hashes.SHA256()))
    assertion = {"id": credential["credentialId"], "rawId": credential["credentialId"], "type": "public-key",
                 "response": {"clientDataJSON": b64url(client_data), "authenticatorData": b64url(authenticator_data),
                              "signature": b64url(signature), "userHandle": credential["userHandle"]},
                 "clientExtensionResults": {}}
    assert rp.verify_authentication(json.dumps(assertion)).user_verified


def test_an_export_pyhpke_seals_imports_counts_other_types_and_signs_in(directory):
    store = new_store(directory)
    private, public = importer_key(directory)
    key, credential_id, pkcs8, rp = new_credential()
    # A note in the passkey's item, written here from the published schema, becomes the passkey's note
    # (`passkey note`); a TOTP credential in an item without a site (no `scope.urls`) cannot be kept, and is counted
    # and named.
    note = {"type": "note", "content": {"fieldType": "string", "value": "kept with it"}}
    totp = {"type": "totp", "secret": "JBSWY3DPEHPK3PXP", "period": 30, "digits": 6, "algorithm": "sha1"}
    document = cxf_document([cxf_passkey(credential_id, pkcs8)], extra_credentials=[note, totp])
    path = write(directory, "from-pyhpke.json", seal_export(document, public))
    imported = do_import(store, path, "--key", private)
    assert imported.returncode == 0, imported.stderr
    assert 'skipped 1 credential of type "totp"' in imported.stderr
    assert "it names no web site or app" in imported.stderr
    assert "Imported 1 passkey; skipped 1 credential not carried (named above)." in imported.stdout
    assert "created 2023-11-14" in imported.stderr
    listed = passkey("list", "--notes", "--json", "--store", store)
    assert [entry.get("note") for entry in json.loads(listed.stdout)] == ["kept with it"], listed.stderr
    assert sign_in(store, rp).new_sign_count == 0


# MARK: Bitwarden and KeePassXC


def bitwarden_credential(credential_id, pkcs8, user, guid=True, counter="0"):
    return {"credentialId": str(uuid.UUID(bytes=credential_id)) if guid else "b64." + b64url(credential_id),
            "keyType": "public-key", "keyAlgorithm": "ECDSA", "keyCurve": "P-256", "keyValue": b64url(pkcs8),
            "rpId": RP_ID, "userHandle": b64url(("bw-" + user).encode()), "userName": user, "counter": counter,
            "rpName": "Example", "userDisplayName": user.title(), "discoverable": "true",
            "creationDate": "2024-03-05T10:11:12.345Z"}


def bitwarden_export(credentials):
    return {"encrypted": False, "folders": [],
            "items": [{"id": str(uuid.uuid4()), "type": 2, "name": "a note", "notes": "n", "secureNote": {"type": 0}}]
            + [{"id": str(uuid.uuid4()), "type": 1, "name": "Example", "favorite": False,
                "login": {"username": c["userName"], "password": None, "totp": None,
                          "uris": [{"match": None, "uri": ORIGIN}], "fido2Credentials": [c]}} for c in credentials]}


def test_a_bitwarden_export_imports_with_guid_and_b64_ids_and_signs_in(directory):
    store = new_store(directory)
    _, dave_id, dave_key, dave_rp = new_credential()
    _, erin_id, erin_key, erin_rp = new_credential()
    path = write(directory, "bitwarden.json", bitwarden_export([
        bitwarden_credential(dave_id, dave_key, "dave", guid=True),
        bitwarden_credential(erin_id, erin_key, "erin", guid=False, counter="7"),
    ]))
    imported = do_import(store, path)
    assert imported.returncode == 0, imported.stderr
    assert "Bitwarden export with 2 passkeys" in imported.stderr
    assert "created 2024-03-05T10:11:12Z" in imported.stderr
    assert "its signature counter was 7" in imported.stderr
    assert "holds secrets (private keys, passwords) in clear text: delete it now" in imported.stderr
    # The secure note item is not carried, and is named.
    assert 'skipped 1 credential of type "secure note"' in imported.stderr and '"a note"' in imported.stderr
    assert "Imported 2 passkeys; skipped 1 credential not carried (named above)." in imported.stdout
    for rp in (dave_rp, erin_rp):
        sign_in(store, rp)


def test_a_keepassxc_passkey_file_imports_and_signs_in(directory):
    store = new_store(directory)
    key, credential_id, _, rp = new_credential()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    assert pem.startswith("-----BEGIN PRIVATE KEY-----")
    path = write(directory, "example.passkey", {
        "relyingParty": RP_ID, "url": ORIGIN, "username": "frank", "credentialId": b64url(credential_id),
        "userHandle": b64url(b"kp-frank"), "privateKey": pem})
    imported = do_import(store, path)
    assert imported.returncode == 0, imported.stderr
    assert 'KeePassXC passkey file with 1 passkey' in imported.stderr and '"frank"' in imported.stderr
    assert "delete it now" in imported.stderr
    verified = sign_in(store, rp)
    assert verified.credential_id == credential_id


# MARK: Passwords, notes and one-time codes (issue 27)

TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
# A second secret (20 bytes: pyotp refuses secrets under 112 bits), written with spaces and in lower case.
BARE_SECRET = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
BARE_TYPED = "gezd gnbv gy3t qojq gezd gnbv gy3t qojq"


def save_login(store, service, user, password, note=None, otpauth=None):
    """`passkey password add` (the password from $PASSKEY_PASSWORD), `password note` and `otp add` (the URI on
    standard input, as a pipe gives it)."""
    added = passkey("password", "add", service, user, "--store", store, extra_env={"PASSKEY_PASSWORD": password})
    assert added.returncode == 0, added.stderr
    if note is not None:
        noted = passkey("password", "note", service, user, "--store", store, input=note)
        assert noted.returncode == 0, noted.stderr
    if otpauth is not None:
        code = passkey("otp", "add", "--site", service, "--user", user, "--store", store, input=otpauth + "\n")
        assert code.returncode == 0, code.stderr
        assert TOTP_SECRET not in code.stdout + code.stderr


def otp_code(store, site, *args):
    """`passkey otp code --json` and pyotp's code for the same moment (read again if a step ended in between)."""
    for _ in range(3):
        shown = passkey("otp", "code", site, "--store", store, "--json", *args)
        assert shown.returncode == 0, shown.stderr
        result = json.loads(shown.stdout)
        if result["secondsLeft"] > 2:
            return result
        time.sleep(result["secondsLeft"] + 0.5)  # the next step, so that pyotp's code is read in the same one
    raise AssertionError("no code with time left in three tries")


def open_export(path, receiver):
    """Our sealed export opened with pyhpke (the receiver's private key): the CXF document inside."""
    response = json.load(open(path))
    numbers = receiver.public_key().public_numbers()
    private_jwk = {"kty": "EC", "crv": "P-256", "x": b64url(numbers.x.to_bytes(32, "big")),
                   "y": b64url(numbers.y.to_bytes(32, "big")),
                   "d": b64url(receiver.private_numbers().private_value.to_bytes(32, "big"))}
    enc = b"\x04" + unb64url(response["hpke"]["key"]["x"]) + unb64url(response["hpke"]["key"]["y"])
    recipient = SUITE.create_recipient_context(enc, KEMKey.from_jwk(private_jwk), info=EXPORT_INFO)
    return json.loads(recipient.open(unb64url(response["payload"])))


def receiver_key(directory):
    receiver = ec.generate_private_key(ec.SECP256R1())
    numbers = receiver.public_key().public_numbers()
    public = write(directory, "receiver.pub.jwk", {"kty": "EC", "crv": "P-256",
                                                   "x": b64url(numbers.x.to_bytes(32, "big")),
                                                   "y": b64url(numbers.y.to_bytes(32, "big"))})
    return receiver, public


def test_our_export_carries_passkeys_passwords_notes_and_codes_for_an_independent_reader(directory):
    """Our export, opened by pyhpke and read by cxf_reader (written from the published CXF 1.0 member names): the
    passkey, each password with its URL and note in a `basic-auth` item, the TOTP in its login's item, a TOTP of no
    saved login in its own; the secret gives pyotp the code `passkey otp code` shows."""
    store = new_store(directory)
    register(store, RelyingParty(), "alice")
    save_login(store, "example.com", "alice", "alice's password", note="recovery codes: the red folder",
               otpauth=f"otpauth://totp/Example:alice?secret={TOTP_SECRET}&issuer=Example&algorithm=SHA256&digits=8"
                       "&period=60")
    save_login(store, "https://example.org:8443", "carol", "carol's password")
    lone = passkey("otp", "add", "--site", "other.example", "--user", "dave", "--secret", "--store", store,
                   input=BARE_TYPED + "\n")
    assert lone.returncode == 0, lone.stderr

    receiver, public = receiver_key(directory)
    out = os.path.join(directory, "export.json")
    exported = passkey("export", "--store", store, "--to", public, "--output", out)
    assert exported.returncode == 0, exported.stderr
    assert "exported 1 passkey, 2 saved passwords, 2 one-time codes sealed to the importer key" in exported.stderr
    assert "alice's password" not in open(out).read()

    found = cxf_reader.read(open_export(out, receiver))
    assert [p["rpId"] for p in found["passkeys"]] == [RP_ID]
    logins = {login["username"]: login for login in found["logins"]}
    assert logins["alice"]["password"] == "alice's password" and logins["alice"]["urls"] == ["https://example.com"]
    assert logins["carol"]["password"] == "carol's password"
    assert logins["carol"]["urls"] == ["https://example.org:8443"]
    assert [(n["title"], n["content"]) for n in found["notes"]] == [("example.com", "recovery codes: the red folder")]
    codes = {code["username"]: code for code in found["totp"]}
    assert codes["alice"]["title"] == "example.com" and codes["alice"]["urls"] == ["https://example.com"]
    assert (codes["alice"]["algorithm"], codes["alice"]["digits"], codes["alice"]["period"]) == ("sha256", 8, 60)
    assert codes["alice"]["issuer"] == "Example" and codes["alice"]["secret"] == TOTP_SECRET
    assert codes["dave"]["urls"] == ["https://other.example"] and codes["dave"]["secret"] == BARE_SECRET
    assert found["other"] == []

    # The code `passkey otp code` shows is pyotp's for the exported secret.
    shown = otp_code(store, "example.com")
    totp = pyotp.TOTP(codes["alice"]["secret"], digits=8, digest=hashlib.sha256, interval=60)
    assert shown["code"] == totp.now() and shown["user"] == "alice"
    assert pyotp.TOTP(BARE_SECRET).now() == otp_code(store, "other.example")["code"]

    # And the export comes back into another store whole.
    target = new_store(directory, "target.sqlite")
    private, _ = importer_key(directory)
    again = os.path.join(directory, "again.json")
    assert passkey("export", "--store", store, "--to", os.path.join(directory, "importer.pub.jwk"),
                   "--output", again).returncode == 0
    imported = do_import(target, again, "--key", private)
    assert imported.returncode == 0, imported.stderr
    assert "Imported 1 passkey, 2 saved passwords and 2 one-time codes." in imported.stdout
    got = passkey("password", "get", "example.com", "--store", target)
    assert got.stdout == "alice's password\n", got.stderr
    assert otp_code(target, "example.com")["code"] == totp.now()


def test_a_cxf_document_written_here_imports_with_its_passwords_and_codes(directory):
    """The reverse: a CXF 1.0 document written by cxf_reader (a passkey, a login with its note and TOTP, an SSH key
    and a wifi network) imports; what is not carried is named by its item's title."""
    store = new_store(directory)
    _, credential_id, pkcs8, rp = new_credential()
    doc = cxf_reader.document([
        cxf_reader.item("Example", [dict(type="passkey", **cxf_passkey(credential_id, pkcs8))]),
        cxf_reader.item("Mail", [
            {"type": "basic-auth", "username": cxf_reader.string_field("erin"),
             "password": cxf_reader.concealed_field("mail password")},
            {"type": "note", "content": cxf_reader.string_field("security questions: none")},
            {"type": "totp", "secret": TOTP_SECRET, "period": 30, "digits": 6, "algorithm": "sha1",
             "issuer": "Mail"},
        ], urls=["https://mail.example/login"]),
        cxf_reader.item("Build server", [{"type": "ssh-key", "keyType": "ssh-ed25519", "privateKey": "AAAA"}]),
        cxf_reader.item("Home wifi", [{"type": "wifi", "ssid": cxf_reader.string_field("home")}]),
    ])
    assert len(cxf_reader.read(doc)["logins"]) == 1  # the reader accepts what it wrote
    path = write(directory, "from-python.json", doc)
    imported = do_import(store, path)
    assert imported.returncode == 0, imported.stderr
    assert "Imported 1 passkey, 1 saved password and 1 one-time code; skipped 2 credentials not carried" \
        in imported.stdout
    assert 'skipped 1 credential of type "ssh-key"' in imported.stderr and '"Build server"' in imported.stderr
    assert 'skipped 1 credential of type "wifi"' in imported.stderr and '"Home wifi"' in imported.stderr
    assert "password mail.example" in imported.stderr
    assert "mail password" not in imported.stderr + imported.stdout and TOTP_SECRET not in imported.stderr
    got = passkey("password", "get", "mail.example", "--store", store)
    assert got.stdout == "mail password\n", got.stderr
    note = passkey("password", "note", "mail.example", "erin", "--show", "--store", store)
    assert "security questions: none" in note.stdout, note.stderr
    assert otp_code(store, "mail.example")["code"] == pyotp.TOTP(TOTP_SECRET).now()
    sign_in(store, rp)


def test_a_bitwarden_export_keeps_passwords_notes_and_codes(directory):
    """Bitwarden's login items: `login.password` for `login.uris`, `notes`, and `login.totp` as an otpauth URI or a
    bare base32 secret; the codes match pyotp's."""
    store = new_store(directory)
    _, credential_id, pkcs8, rp = new_credential()
    export = bitwarden_export([bitwarden_credential(credential_id, pkcs8, "dave")])
    export["items"][1]["login"].update(password="dave's password", totp=f"otpauth://totp/Example:dave?secret="
                                       f"{TOTP_SECRET}&issuer=Example&digits=8")
    export["items"][1]["notes"] = "dave's note"
    export["items"].append({"id": str(uuid.uuid4()), "type": 1, "name": "Forum", "notes": None,
                            "login": {"username": "dave", "password": "forum password", "totp": BARE_TYPED,
                                      "uris": [{"match": None, "uri": "forum.example"}]}})
    path = write(directory, "bitwarden.json", export)
    imported = do_import(store, path)
    assert imported.returncode == 0, imported.stderr
    assert "Imported 1 passkey, 2 saved passwords and 2 one-time codes; skipped 1 credential not carried" \
        in imported.stdout
    assert "dave's password" not in imported.stderr + imported.stdout
    assert passkey("password", "get", "example.com", "--store", store).stdout == "dave's password\n"
    assert passkey("password", "get", "forum.example", "--store", store).stdout == "forum password\n"
    assert otp_code(store, "example.com")["code"] == pyotp.TOTP(TOTP_SECRET, digits=8).now()
    assert otp_code(store, "forum.example")["code"] == pyotp.TOTP(BARE_SECRET).now()
    note = passkey("password", "note", "example.com", "dave", "--show", "--store", store)
    assert "dave's note" in note.stdout, note.stderr
    sign_in(store, rp)


# MARK: Bad input: a clear error, and the store byte for byte as it was


def p384_pkcs8():
    return ec.generate_private_key(ec.SECP384R1()).private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def bad_inputs(directory, public):
    """(name, file bytes, extra arguments, extra environment, expected words) for each bad input."""
    _, credential_id, pkcs8, _ = new_credential()
    good = cxf_passkey(credential_id, pkcs8)
    secret = {"PASSKEY_EXPORT_PASSPHRASE": ARCHIVE_PASSPHRASE}
    os.makedirs(os.path.join(directory, "other"))
    _, other_public = importer_key(os.path.join(directory, "other"))
    sealed = json.dumps(seal_export(cxf_document([good]), public)).encode()
    wrong_key = json.dumps(seal_export(cxf_document([good]), other_public)).encode()
    tampered = json.loads(sealed)
    payload = bytearray(unb64url(tampered["payload"]))
    payload[len(payload) // 2] ^= 0x01
    tampered["payload"] = b64url(bytes(payload))
    non_p256 = dict(cxf_passkey(os.urandom(16), p384_pkcs8()), username="mallory")
    no_type = cxf_document([good])
    del no_type["accounts"][0]["items"][0]["credentials"][0]["type"]
    return [
        ("wrong importer key", wrong_key, [], {}, "does not open with this key"),
        ("tampered ciphertext", json.dumps(tampered).encode(), [], {}, "does not open with this key"),
        ("non-P-256 key", json.dumps(seal_export(cxf_document([good, non_p256]), public)).encode(), [], {},
         "accounts[0].items[1].credentials[0]: the private key is not a P-256 or Ed25519 key"),
        ("missing type", json.dumps(seal_export(no_type, public)).encode(), [], {},
         "accounts[0].items[0].credentials[0].type is missing"),
        ("junk", os.urandom(10 << 20), [], {}, "is not valid JSON"),
        ("encrypted Bitwarden", json.dumps({"encrypted": True, "passwordProtected": True, "data": "x"}).encode(),
         [], {}, "this Bitwarden export is encrypted"),
        ("Bitwarden P-384", json.dumps(bitwarden_export([dict(
            bitwarden_credential(os.urandom(16), p384_pkcs8(), "zed"), keyCurve="P-256")])).encode(), [], {},
         "items[1].login.fido2Credentials[0]: the private key is not a P-256 or Ed25519 key"),
        ("KeePassXC without PEM", json.dumps({"relyingParty": RP_ID, "url": ORIGIN, "username": "x",
                                               "credentialId": "AAAA", "userHandle": "AAAA",
                                               "privateKey": b64url(pkcs8)}).encode(), [], {}, "PEM"),
    ], secret


def test_bad_input_is_a_clear_error_and_leaves_the_store_unchanged(directory):
    store = new_store(directory)
    rp = RelyingParty()
    register(store, rp, "alice")
    private, public = importer_key(directory)
    cases, secret = bad_inputs(directory, public)

    # Archives: a real one, then truncated, with the wrong passphrase, and with hostile scrypt parameters.
    archive = os.path.join(directory, "archive.json")
    assert passkey("export", "--store", store, "--passphrase", "--output", archive, extra_env=secret).returncode == 0
    archive_bytes = open(archive, "rb").read()
    hostile = json.loads(archive_bytes)
    hostile["kdf"]["N"] = 1 << 30
    cases += [
        ("truncated archive", archive_bytes[: len(archive_bytes) // 2], [], secret, "is not valid JSON"),
        ("wrong passphrase", archive_bytes, [], {"PASSKEY_EXPORT_PASSPHRASE": "not it"},
         "does not open with this passphrase"),
        ("hostile scrypt parameters", json.dumps(hostile).encode(), [], secret, "scrypt parameters are refused"),
    ]

    before = digest(store)
    for name, content, args, extra_env, expected in cases:
        path = write(directory, "bad-" + name.replace(" ", "-"), content)
        result = do_import(store, path, "--key", private, *args, extra_env=extra_env)
        assert result.returncode == 1, (name, result.stdout, result.stderr)
        assert result.stderr.startswith("passkey: cannot import"), (name, result.stderr)
        assert expected in result.stderr, (name, result.stderr)
        assert "Traceback" not in result.stderr and len(result.stderr) < 2000, name
        assert ARCHIVE_PASSPHRASE not in result.stderr and PASSPHRASE not in result.stderr
        assert digest(store) == before, name
    listed = passkey("list", "--store", store, "--json")
    assert [entry["userName"] for entry in json.loads(listed.stdout)] == ["alice"]


def test_a_keepassxc_csv_export_keeps_passwords_notes_and_codes(directory):
    """KeePassXC's CSV export (Database → Export → CSV File), written here as its CsvExporter writes it: every field
    quoted, the TOTP column an otpauth URI; an entry with neither password nor code is named as skipped."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(["Group", "Title", "Username", "Password", "URL", "Notes", "TOTP", "Icon", "Last Modified",
                     "Created"])
    writer.writerow(["Root", "Mail", "erin", 'pa"ss, word', "https://mail.example/login", "line one\nline two",
                     f"otpauth://totp/Mail:erin?secret={TOTP_SECRET}&issuer=Mail&period=30", "0",
                     "2024-03-05T10:11:12Z", "2024-03-05T10:11:12Z"])
    writer.writerow(["Root", "Door code", "", "", "", "1234", "", "0", "", ""])
    store = new_store(directory)
    path = write(directory, "keepassxc.csv", out.getvalue())
    imported = do_import(store, path)
    assert imported.returncode == 0, imported.stderr
    assert "KeePassXC CSV export with 0 passkeys, 1 saved password, 1 one-time code" in imported.stderr
    assert '"Door code"' in imported.stderr and "delete it now" in imported.stderr
    assert "Imported 0 passkeys, 1 saved password and 1 one-time code; skipped 2 credentials not carried" \
        in imported.stdout
    assert passkey("password", "get", "mail.example", "--store", store).stdout == 'pa"ss, word\n'
    note = passkey("password", "note", "mail.example", "erin", "--show", "--store", store)
    assert "line one\nline two" in note.stdout, note.stderr
    assert otp_code(store, "mail.example")["code"] == pyotp.TOTP(TOTP_SECRET).now()
