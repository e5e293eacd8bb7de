"""Linked phones end to end, with the real binaries: `passkey-relay`, `passkey scan --link`, `passkey listen`,
`passkey client create --link` and `passkey client get --phone NAME`, over the simulated radio.

A QR session links the phone once; after that the computer reaches it through the relay's wake channel
(`/cable/contact` → the listener on `/cable/listen`) without a QR code. Both sides keep their link secrets sealed
under their store's key; the computer's file is opened here independently (scrypt from the store's meta row,
HKDF-SHA256, AES-256-GCM: the `cryptography` package), so its format is what Docs/Hybrid.md says, and no secret is
in clear in any file. Then revocation (410 and the link forgotten), a listener that reconnects while a request
waits, a forged ownership proof, a wrong link secret (resealed here), and the wake channel spoken by an independent
Python client (websocket-client, cbor2, hmac).
"""

import base64
import hashlib
import hmac
import json
import os
import signal
import socket
import sqlite3
import stat
import subprocess
import tempfile
import time
import unicodedata
import urllib.request

import cbor2
import pytest
import websocket
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from conftest import PASSKEY_BIN, PASSPHRASE, start_and_wait_for_line, stop_process, stored_contacts
from test_webauthn_client import ORIGIN, QR_CODE_LINE, RelyingParty, env, new_store

RELAY_BIN = os.environ.get("PASSKEY_RELAY_BIN", os.path.join(os.path.dirname(PASSKEY_BIN), "passkey-relay"))
PHONE_NAME = "test phone"
# The computer's store, and its linked phones sealed beside it.
COMPUTER_STORE = "computer.sqlite"
COMPUTER_LINKS = "computer.computer-links.sealed"
LINKS_MAGIC = b"PKCL\x01"


def free_port(kind=socket.SOCK_DGRAM):
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Relay:
    """A `passkey-relay` with a contact file, on a fixed port so that it can be restarted in place."""

    def __init__(self, directory, port=None, extra=()):
        self.contacts = os.path.join(directory, "contacts.json")
        self.port = port or free_port(socket.SOCK_STREAM)
        self.extra = list(extra)
        self.start()

    def start(self):
        self.process, match, _ = start_and_wait_for_line(
            [RELAY_BIN, "--listen", f"127.0.0.1:{self.port}", "--contacts", self.contacts, *self.extra],
            r"^listening on (\S+)")
        self.url = match.group(1)

    def stop(self):
        return stop_process(self.process)

    def metrics(self):
        """`GET /metrics` as {sample name with labels: value}."""
        http_url = self.url.replace("wss://", "https://").replace("ws://", "http://")
        with urllib.request.urlopen(http_url + "/metrics", timeout=10) as answer:
            text = answer.read().decode()
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                samples[name] = float(value)
        return samples


@pytest.fixture
def directory():
    with tempfile.TemporaryDirectory() as path:
        yield path


@pytest.fixture
def relay(directory):
    running = Relay(directory, extra=["--wake-wait", "20"])
    yield running
    stderr = running.stop()
    # The relay never logs a contact ID (nor its hash).
    for contact in contact_ids(directory):
        assert base64.urlsafe_b64encode(contact).decode().rstrip("=") not in stderr
        assert contact.hex() not in stderr.lower()


def computer_links_key(directory):
    """The sealed links' key, derived independently: scrypt from the store's meta row, then HKDF-SHA256."""
    db = sqlite3.connect(os.path.join(directory, COMPUTER_STORE))
    n, r, p, salt = db.execute("SELECT kdf_rounds, kdf_block_size, kdf_parallelism, kdf_salt FROM meta").fetchone()
    db.close()
    store_key = hashlib.scrypt(unicodedata.normalize("NFC", PASSPHRASE).encode(), salt=salt, n=n, r=r, p=p,
                               maxmem=2 * 128 * n * r * p + (1 << 20), dklen=32)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"passkey computer links v1").derive(store_key)


def computer_links(directory):
    """The computer's linked phones, opened independently; [] when it has none."""
    path = os.path.join(directory, COMPUTER_LINKS)
    if not os.path.exists(path):
        return []
    with open(path, "rb") as file:
        sealed = file.read()
    assert sealed[:5] == LINKS_MAGIC
    opened = json.loads(AESGCM(computer_links_key(directory)).decrypt(sealed[5:17], sealed[17:], LINKS_MAGIC))
    assert opened["version"] == 1
    return opened["links"]


def seal_computer_links(directory, links):
    """Writes `links` as the computer's sealed file, as the computer would."""
    nonce = os.urandom(12)
    document = json.dumps({"version": 1, "links": links}).encode()
    sealed = LINKS_MAGIC + nonce + AESGCM(computer_links_key(directory)).encrypt(nonce, document, LINKS_MAGIC)
    with open(os.path.join(directory, COMPUTER_LINKS), "wb") as file:
        file.write(sealed)


def contact_ids(directory):
    return [b64url_decode(link["contactID"]) for link in computer_links(directory)]


def client_arguments(directory, relay_url, radio, command, *extra, timeout=90):
    """`passkey client COMMAND` with the phone as its only authenticator."""
    return [PASSKEY_BIN, "client", command, "--options", "-", "--origin", ORIGIN, "--hint", "hybrid",
            "--store", os.path.join(directory, COMPUTER_STORE), "--relay", relay_url, "--ble", radio, "--yes",
            "--json", "--timeout", str(timeout), *extra]


def client(directory, relay_url, radio, command, *extra, timeout=90):
    return subprocess.Popen(
        client_arguments(directory, relay_url, radio, command, *extra, timeout=timeout),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())


def link_by_qr(directory, relay, phone_store, rp):
    """Registers a passkey through a QR session in which the computer offers linking and the phone links. The
    computer's store (where the link is sealed) is made first when there is none."""
    if not os.path.exists(os.path.join(directory, COMPUTER_STORE)):
        new_store(directory, COMPUTER_STORE)
    radio = f"sim:127.0.0.1:{free_port()}"
    process, match, shown = start_and_wait_for_line(
        client_arguments(directory, relay.url, radio, "create", "--link"), QR_CODE_LINE, stream="stderr",
        input=rp.registration_options(), env=env())
    url = match.group(0)
    phone = subprocess.run(
        [PASSKEY_BIN, "scan", url, "--link", "--name", PHONE_NAME, "--store", phone_store, "--relay", relay.url,
         "--ble", radio, "--yes", "--timeout", "60"],
        capture_output=True, text=True, timeout=120, env=env())
    output, rest = process.communicate(timeout=120)
    assert process.returncode == 0, "".join(shown) + rest + phone.stderr
    assert phone.returncode == 0, phone.stderr
    assert "linked: the computer can reach this phone" in phone.stderr
    assert f'remembered the phone "{PHONE_NAME}"' in rest
    rp.verify_registration(output)
    return output


class Listener:
    """A running `passkey listen`, with its standard error collected line by line."""

    def __init__(self, phone_store, relay_url, radio):
        self.process, _, self.lines = start_and_wait_for_line(
            [PASSKEY_BIN, "listen", "--store", phone_store, "--relay", relay_url, "--ble", radio, "--yes",
             "--timeout", "30"], "listening:", stream="stderr", env=env())

    def wait_for(self, text, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            if text in line:
                return line
        raise AssertionError(f"passkey listen never said {text!r}: " + "".join(self.lines))

    def stop(self):
        rest = stop_process(self.process)
        return "".join(self.lines) + (rest or "")


def get_linked(directory, relay_url, radio, rp, timeout=60):
    process = client(directory, relay_url, radio, "get", "--phone", PHONE_NAME, timeout=timeout)
    output, errors = process.communicate(rp.authentication_options(), timeout=timeout + 60)
    return process.returncode, output, errors


def test_a_linked_phone_signs_in_without_a_qr_code(directory, relay):
    phone_store = new_store(directory, "phone.sqlite")
    rp = RelyingParty()
    link_by_qr(directory, relay, phone_store, rp)

    # The computer's links: sealed, owner-only, named by the phone's name.
    links_path = os.path.join(directory, COMPUTER_LINKS)
    assert stat.S_IMODE(os.stat(links_path).st_mode) == 0o600
    links = computer_links(directory)
    assert [link["name"] for link in links] == [PHONE_NAME]
    secret = b64url_decode(links[0]["linkSecret"])
    contact_id = b64url_decode(links[0]["contactID"])
    assert len(secret) == 32 and len(contact_id) == 32
    assert not os.path.exists(os.path.join(directory, "links.json"))

    # Neither side's secrets are in clear in any file: the phone's are sealed beside its store, the computer's
    # beside its own.
    assert os.path.exists(os.path.join(directory, "phone.phone-links.sealed"))
    assert stat.S_IMODE(os.stat(os.path.join(directory, "phone.phone-links.sealed")).st_mode) == 0o600
    needles = [secret, contact_id, secret.hex().encode(), contact_id.hex().encode(), links[0]["linkSecret"].encode(),
               links[0]["contactID"].encode(), base64.b64encode(secret), base64.b64encode(contact_id)]
    for name in os.listdir(directory):
        with open(os.path.join(directory, name), "rb") as file:
            content = file.read()
        for needle in needles:
            assert needle not in content, name

    # The relay keeps only the hash of the contact ID, a sealed verifier and its routing ID, in its file and its
    # journal (both 0600).
    stored = stored_contacts(relay.contacts)
    assert len(stored) == 1
    assert b64url_decode(stored[0]["hash"]) == hashlib.sha256(contact_id).digest()
    assert stored[0]["routingID"] == contact_id[:3].hex().upper()
    for path in (relay.contacts, relay.contacts + ".journal"):
        if os.path.exists(path):
            with open(path) as file:
                text = file.read()
            assert links[0]["contactID"] not in text and contact_id.hex() not in text
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

    radio = f"sim:127.0.0.1:{free_port()}"
    listener = Listener(phone_store, relay.url, radio)
    try:
        for _ in range(2):
            code, output, errors = get_linked(directory, relay.url, radio, rp)
            assert code == 0, errors + "".join(listener.lines)
            assert "FIDO:/" not in errors and "FIDO:/" not in output
            assert "the phone is near" in errors
            assert rp.verify_authentication(output).user_verified
            listener.wait_for("listening again")
        # The wake channel's metrics: one contact, one listener, two contact requests answered by two wakes.
        metrics = relay.metrics()
        assert metrics["relay_contacts"] == 1 and metrics["relay_listeners_connected"] == 1, metrics
        assert metrics['relay_contact_requests_total{result="known"}'] == 2, metrics
        assert metrics["relay_wakes_sent_total"] == 2, metrics
        assert metrics["relay_contact_requests_unanswered_total"] == 0, metrics
    finally:
        phone_log = listener.stop()
    assert "woken: a linked computer asks for this phone" in phone_log

    listed = subprocess.run(
        [PASSKEY_BIN, "client", "links", "--store", os.path.join(directory, COMPUTER_STORE), "--json"],
        capture_output=True, text=True,
        env=env(), timeout=30)
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)["links"]
    assert entry["name"] == PHONE_NAME and "lastUsed" in entry and "linkSecret" not in entry

    # A computer that linked with an earlier version has the same document in clear in links.json: the first
    # unlock seals it and removes the clear file (ComputerServiceTests covers the merge and a move cut short).
    clear_path = os.path.join(directory, "links.json")
    with open(os.open(clear_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
        json.dump({"version": 1, "links": computer_links(directory)}, file)
    os.remove(links_path)
    listed = subprocess.run(
        [PASSKEY_BIN, "client", "links", "--store", os.path.join(directory, COMPUTER_STORE), "--json"],
        capture_output=True, text=True, env=env(), timeout=30)
    assert listed.returncode == 0, listed.stderr
    assert [entry["name"] for entry in json.loads(listed.stdout)["links"]] == [PHONE_NAME]
    assert "moved 1 linked phone from" in listed.stderr
    assert not os.path.exists(clear_path)
    assert [b64url_decode(link["linkSecret"]) for link in computer_links(directory)] == [secret]


def test_a_revoked_phone_answers_410_and_the_computer_forgets_it(directory, relay):
    phone_store = new_store(directory, "phone.sqlite")
    rp = RelyingParty()
    link_by_qr(directory, relay, phone_store, rp)
    contacts = contact_ids(directory)

    revoked = subprocess.run(
        [PASSKEY_BIN, "links", "revoke", "--store", phone_store], capture_output=True, text=True, env=env(),
        timeout=60)
    assert revoked.returncode == 0, revoked.stderr
    assert "revoked 1 link" in revoked.stdout
    assert stored_contacts(relay.contacts) == []

    code, output, errors = get_linked(directory, relay.url, f"sim:127.0.0.1:{free_port()}", rp, timeout=20)
    assert code == 10, errors  # NotAllowedError
    assert "410" in errors and "forgot it" in errors
    assert computer_links(directory) == []

    # The raw relay answer, for the record: 410 Gone.
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        contact(relay.url, contacts[0], payload_hex())
    assert refused.value.status_code == 410
    metrics = relay.metrics()
    assert metrics['relay_contact_requests_total{result="gone"}'] == 2, metrics
    assert metrics["relay_contacts"] == 0, metrics

    # And the phone can no longer listen there.
    listen = subprocess.run(
        [PASSKEY_BIN, "listen", "--store", phone_store, "--ble", "sim:127.0.0.1:1", "--yes"], capture_output=True,
        text=True, env=env(), timeout=60)
    assert listen.returncode != 0 and "registered with no relay" in listen.stderr


def test_a_link_removed_on_the_phone_is_declined_and_forgotten_by_that_computer(directory, relay):
    phone_store = new_store(directory, "phone.sqlite")
    rp = RelyingParty()
    link_by_qr(directory, relay, phone_store, rp)
    listed = subprocess.run(
        [PASSKEY_BIN, "links", "list", "--store", phone_store, "--json"], capture_output=True, text=True, env=env(),
        timeout=60)
    assert listed.returncode == 0, listed.stderr
    [link] = json.loads(listed.stdout)["links"]
    assert "secret" not in listed.stdout.lower()
    removed = subprocess.run(
        [PASSKEY_BIN, "links", "remove", link["linkId"], "--store", phone_store], capture_output=True, text=True,
        env=env(), timeout=60)
    assert removed.returncode == 0, removed.stderr

    radio = f"sim:127.0.0.1:{free_port()}"
    listener = Listener(phone_store, relay.url, radio)
    try:
        code, output, errors = get_linked(directory, relay.url, radio, rp, timeout=20)
        listener.wait_for("declined a wake")
    finally:
        phone_log = listener.stop()
    assert code == 10, errors
    assert "4410" in errors and "forgot it" in errors, errors + phone_log
    assert "request received" not in phone_log
    assert computer_links(directory) == []
    # The contact itself stays: the relay still knows the phone.
    assert len(stored_contacts(relay.contacts)) == 1


def test_a_listener_that_reconnects_while_the_computer_waits_still_serves(directory, relay):
    phone_store = new_store(directory, "phone.sqlite")
    rp = RelyingParty()
    link_by_qr(directory, relay, phone_store, rp)
    radio = f"sim:127.0.0.1:{free_port()}"
    listener = Listener(phone_store, relay.url, radio)
    try:
        # The relay restarts (contacts kept in its file): the listener is cut off and backs off.
        relay.stop()
        listener.wait_for("disconnected from the relay")
        relay.start()
        # The computer asks at once, before the listener is back: the relay holds the wake for it.
        code, output, errors = get_linked(directory, relay.url, radio, rp)
        assert code == 0, errors + "".join(listener.lines)
        assert rp.verify_authentication(output).user_verified
    finally:
        phone_log = listener.stop()
    assert "attempt" in phone_log and phone_log.count("listening:") >= 2


def test_a_wrong_link_secret_never_reaches_the_phone(directory, relay):
    phone_store = new_store(directory, "phone.sqlite")
    rp = RelyingParty()
    link_by_qr(directory, relay, phone_store, rp)
    links = computer_links(directory)
    links[0]["linkSecret"] = base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
    seal_computer_links(directory, links)

    radio = f"sim:127.0.0.1:{free_port()}"
    listener = Listener(phone_store, relay.url, radio)
    try:
        code, output, errors = get_linked(directory, relay.url, radio, rp, timeout=6)
    finally:
        phone_log = listener.stop()
    assert code != 0 and output == ""
    # The phone was woken and advertised, but the computer's keys do not match its advert: no handshake message
    # and no request ever reached it.
    assert "woken" in phone_log
    assert "request received" not in phone_log and "handshake done" not in phone_log
    assert "the linked phone did not come near" in errors or "4404" in errors


# MARK: The wake channel from an independent client


def payload_hex(link_id=b"\x01" * 8, nonce=b"\x02" * 16):
    return cbor2.dumps({1: link_id, 2: nonce, 3: "ga"}, canonical=True).hex().upper()


def contact(relay_url, contact_id, payload):
    path = "/cable/contact/" + base64.urlsafe_b64encode(contact_id).decode().rstrip("=")
    return websocket.create_connection(
        relay_url + path, subprotocols=["fido.cable"], header=[f"X-caBLE-Client-Payload: {payload}"], timeout=10)


def listen_socket(relay_url):
    ws = websocket.create_connection(relay_url + "/cable/listen", subprotocols=["fido.cable"], timeout=10)
    message = cbor2.loads(ws.recv())
    assert message[0] == 1 and len(message[1]) == 32 and message[2] >= 1
    return ws, message[1]


def close_code(ws):
    while True:
        opcode, data = ws.recv_data(control_frame=True)
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            return int.from_bytes(data[:2], "big")


def verifier(secret):
    return hmac.new(secret, b"passkey listener verifier v1", hashlib.sha256).digest()


def proof(secret, challenge, contact_id):
    return hmac.new(verifier(secret), b"passkey listener proof v1" + challenge + contact_id, hashlib.sha256).digest()


def register(relay_url, secret):
    ws, _ = listen_socket(relay_url)
    ws.send_binary(cbor2.dumps({0: 2, 7: verifier(secret)}, canonical=True))
    answer = cbor2.loads(ws.recv())
    assert answer[0] == 3 and len(answer[3]) == 32
    ws.close()
    return answer[3]


def test_the_wake_channel_proves_ownership_and_refuses_forgeries(directory, relay):
    secret = os.urandom(32)
    contact_id = register(relay.url, secret)

    # A forged proof: closed with 4401.
    ws, challenge = listen_socket(relay.url)
    ws.send_binary(cbor2.dumps({0: 4, 3: contact_id, 8: os.urandom(32)}, canonical=True))
    assert close_code(ws) == 4401
    # A proof for another challenge (replayed): 4401 too.
    ws, challenge = listen_socket(relay.url)
    ws.send_binary(cbor2.dumps({0: 4, 3: contact_id, 8: proof(secret, os.urandom(32), contact_id)}, canonical=True))
    assert close_code(ws) == 4401
    # An unknown contact: 4410.
    ws, challenge = listen_socket(relay.url)
    unknown = contact_id[:3] + os.urandom(29)
    ws.send_binary(cbor2.dumps({0: 4, 3: unknown, 8: proof(secret, challenge, unknown)}, canonical=True))
    assert close_code(ws) == 4410
    # Garbage: 4400.
    ws, challenge = listen_socket(relay.url)
    ws.send_binary(b"\xff\x00")
    assert close_code(ws) == 4400

    # The right proof: listening, and a contact request wakes this listener with the payload unchanged.
    ws, challenge = listen_socket(relay.url)
    ws.send_binary(cbor2.dumps({0: 4, 3: contact_id, 8: proof(secret, challenge, contact_id)}, canonical=True))
    assert cbor2.loads(ws.recv()) == {0: 5}
    computer = contact(relay.url, contact_id, payload_hex())
    wake = cbor2.loads(ws.recv())
    assert wake[0] == 7 and len(wake[4]) == 3 and len(wake[5]) == 16
    assert cbor2.loads(wake[6]) == {1: b"\x01" * 8, 2: b"\x02" * 16, 3: "ga"}
    # The contact ID starts with the relay's routing ID, under which the tunnel was opened.
    assert wake[4] == contact_id[:3]
    # The phone joins the tunnel the wake names, and bytes flow both ways.
    phone = websocket.create_connection(
        relay.url + f"/cable/connect/{wake[4].hex().upper()}/{wake[5].hex().upper()}", subprotocols=["fido.cable"],
        timeout=10)
    computer.send_binary(b"hello phone")
    assert phone.recv() == b"hello phone"
    phone.send_binary(b"hello computer")
    assert computer.recv() == b"hello computer"
    for sock in (phone, computer, ws):
        sock.close()

    # Bad payloads are 400 and never wake anyone; an unknown contact is 410.
    for payload in ("zz", payload_hex()[:-2], cbor2.dumps({1: b"x", 2: b"\x02" * 16, 3: "ga"}).hex()):
        with pytest.raises(websocket.WebSocketBadStatusException) as refused:
            contact(relay.url, contact_id, payload)
        assert refused.value.status_code == 400
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        contact(relay.url, contact_id[:3] + os.urandom(29), payload_hex())
    assert refused.value.status_code == 410


def test_a_contact_nobody_answers_closes_with_4404(directory):
    relay = Relay(directory, extra=["--wake-wait", "1"])
    try:
        contact_id = register(relay.url, os.urandom(32))
        computer = contact(relay.url, contact_id, payload_hex())
        started = time.monotonic()
        assert close_code(computer) == 4404
        assert time.monotonic() - started < 10
        assert relay.metrics()["relay_contact_requests_unanswered_total"] == 1
    finally:
        relay.stop()
