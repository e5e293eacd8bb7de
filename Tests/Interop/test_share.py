"""`passkey share` and `passkey receive` as separate processes: a passkey goes to a person nearby.

The sender registers at a relying party played by py_webauthn (`passkey client create` with its own store),
shares the passkey with a receiver over the simulated radio and a relay, and the receiver's `passkey client get`
then signs in: py_webauthn verifies that assertion against the record the sender's registration made.

The hostile cases run through a tiny relay written here (the caBLE tunnel server's two paths, WebSocket framing
by hand) that can flip a byte or replay a message of another session. Whatever it does, nothing is stored on
either side: the stores' files are hashed before and after.
"""

import base64
import hashlib
import json
import os
import re
import socket
import struct
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import PASSKEY_BIN, PASSPHRASE, stop_process
from test_webauthn_client import ORIGIN, RELAY_BIN, RelyingParty, client, digest, env, new_store

SHARE_URL = re.compile(r"PASSKEY-SHARE:/\d+")


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def directory():
    with tempfile.TemporaryDirectory() as path:
        yield path


@pytest.fixture
def relay():
    """A real `passkey-relay` on a free port; yields its ws:// URL."""
    process = subprocess.Popen([RELAY_BIN, "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    match = re.search(r"listening on (ws://[\d.]+:\d+)", line)
    assert match, line + stop_process(process)
    yield match.group(1)
    stop_process(process)


class HostileRelay:
    """A caBLE tunnel server that relays binary messages like `passkey-relay`, except that `tamper(tunnel, direction,
    index, message)` may change them: it returns the list of messages to forward instead (empty drops it).
    `direction` is "phone" for what the `/cable/new` side sends and "computer" for the `/cable/connect` side.
    Every message is recorded per tunnel, in order, as (direction, bytes)."""

    GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    def __init__(self, tamper=None):
        self.tamper = tamper or (lambda tunnel, direction, index, message: [message])
        self.tunnels = {}
        self.log = {}
        self.lock = threading.Lock()
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen()
        self.url = "ws://127.0.0.1:%d" % self.server.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def close(self):
        self.server.close()

    def accept(self):
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(connection,), daemon=True).start()

    def serve(self, connection):
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = connection.recv(4096)
            if not chunk:
                return
            request += chunk
        head, rest = request.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        path = lines[0].split(" ")[1]
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        accept = base64.b64encode(hashlib.sha1(headers["sec-websocket-key"].encode() + self.GUID).digest())
        parts = path.strip("/").split("/")
        phone = parts[1] == "new"
        tunnel = parts[-1].upper()
        response = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    b"Sec-WebSocket-Accept: " + accept + b"\r\nSec-WebSocket-Protocol: fido.cable\r\n")
        if phone:
            response += b"X-caBLE-Routing-ID: 0A0B0C\r\n"
        connection.sendall(response + b"\r\n")
        with self.lock:
            state = self.tunnels.setdefault(tunnel, {"phone": None, "computer": None, "buffer": [], "counts": {}})
            state["phone" if phone else "computer"] = connection
            self.log.setdefault(tunnel, [])
            if not phone:
                for message in state["buffer"]:
                    connection.sendall(self.frame(0x2, message))
                state["buffer"] = []
        self.pump(connection, tunnel, "phone" if phone else "computer", rest)

    def pump(self, connection, tunnel, direction, pending):
        peer_name = "computer" if direction == "phone" else "phone"
        buffer = pending
        while True:
            frame = self.read_frame(connection, buffer)
            if frame is None:
                break
            opcode, payload, buffer = frame
            if opcode == 0x8:
                break
            if opcode != 0x2:
                continue
            with self.lock:
                state = self.tunnels[tunnel]
                index = state["counts"].get(direction, 0)
                state["counts"][direction] = index + 1
                self.log[tunnel].append((direction, payload))
                outgoing = self.tamper(tunnel, direction, index, payload)
                peer = state[peer_name]
                for message in outgoing:
                    if peer is None:
                        state["buffer"].append(message)
                    else:
                        peer.sendall(self.frame(0x2, message))
        with self.lock:
            peer = self.tunnels[tunnel][peer_name]
        for side in (connection, peer):
            if side is not None:
                try:
                    side.sendall(self.frame(0x8, struct.pack(">H", 1000)))
                    side.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    @staticmethod
    def read_frame(connection, buffer):
        def need(count):
            nonlocal buffer
            while len(buffer) < count:
                try:
                    chunk = connection.recv(65536)
                except OSError:  # the process at that end closed with data unread
                    return False
                if not chunk:
                    return False
                buffer += chunk
            return True

        if not need(2):
            return None
        opcode, length = buffer[0] & 0x0F, buffer[1] & 0x7F
        offset = 2
        if length == 126:
            if not need(4):
                return None
            length, offset = struct.unpack(">H", buffer[2:4])[0], 4
        elif length == 127:
            if not need(10):
                return None
            length, offset = struct.unpack(">Q", buffer[2:10])[0], 10
        masked = buffer[1] & 0x80
        if not need(offset + (4 if masked else 0) + length):
            return None
        mask = buffer[offset:offset + 4] if masked else b"\0\0\0\0"
        offset += 4 if masked else 0
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(buffer[offset:offset + length]))
        return opcode, payload, buffer[offset + length:]

    @staticmethod
    def frame(opcode, payload):
        if len(payload) < 126:
            header = struct.pack(">BB", 0x80 | opcode, len(payload))
        elif len(payload) < 65536:
            header = struct.pack(">BBH", 0x80 | opcode, 126, len(payload))
        else:
            header = struct.pack(">BBQ", 0x80 | opcode, 127, len(payload))
        return header + payload


def start_receive(store, relay_url, radio, timeout=30, extra=()):
    """Starts `passkey receive` and returns (process, the PASSKEY-SHARE URL it shows)."""
    process = subprocess.Popen(
        [PASSKEY_BIN, "receive", "--store", store, "--relay", relay_url, "--ble", radio, "--timeout", str(timeout),
         "--yes", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(NO_COLOR="1"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        match = SHARE_URL.search(line)
        if match:
            return process, match.group(0)
    pytest.fail("passkey receive showed no share URL: " + stop_process(process))


def share(store, credential_id, url, relay_url, radio, timeout=30, image=None):
    """Runs `passkey share` with the URL as text, or with `image` (a PNG of the QR code) instead."""
    code = ["--image", image, "--", credential_id] if image else ["--", credential_id, url]
    return subprocess.run(
        [PASSKEY_BIN, "share", "--store", store, "--relay", relay_url, "--ble", radio, "--timeout", str(timeout),
         "--yes", *code],
        capture_output=True, text=True, timeout=120, env=env())


def finish(process, timeout=60):
    stdout, stderr = process.communicate(timeout=timeout)
    return process.returncode, stdout, stderr


def registered_sender(directory, rp, user="alice"):
    """A sender store with one passkey registered at `rp`; returns (store, credential ID)."""
    store = new_store(directory, "sender.sqlite")
    created = client(store, "create", "--origin", ORIGIN, "--no-phone", options=rp.registration_options(user=user))
    assert created.returncode == 0, created.stderr
    rp.verify_registration(created.stdout)
    return store, json.loads(created.stdout)["id"]


def listed(store):
    result = subprocess.run([PASSKEY_BIN, "list", "--store", store, "--json"], capture_output=True, text=True,
                            env=env(), timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_shared_passkey_signs_in_at_the_relying_party_that_registered_the_sender(directory, relay):
    rp = RelyingParty()
    sender_store, credential_id = registered_sender(directory, rp)
    receiver_store = new_store(directory, "receiver.sqlite")
    radio = "sim:127.0.0.1:%d" % free_port(socket.SOCK_DGRAM)

    receiver, url = start_receive(receiver_store, relay, radio)
    assert not url.upper().startswith("FIDO:")
    sent = share(sender_store, credential_id, url, relay, radio)
    status, stdout, stderr = finish(receiver)
    assert sent.returncode == 0, sent.stderr
    assert status == 0, stderr
    assert "the receiver added it" in sent.stdout
    assert "Added the passkey for \"alice\" at example.com." in stdout
    assert "example.com" in stderr and "created" in stderr
    # No key material on any stream: the credential's private key never shows, nor does the CXF document.
    for text in (sent.stdout, sent.stderr, stdout, stderr):
        assert "\"key\"" not in text and "PRIVATE" not in text

    signed = client(receiver_store, "get", "--origin", ORIGIN, "--no-phone", options=rp.authentication_options())
    assert signed.returncode == 0, signed.stderr
    assert json.loads(signed.stdout)["id"] == credential_id
    verified = rp.verify_authentication(signed.stdout)
    assert verified.user_verified

    # Shared again, the code read from the receiver's PNG this time: the receiver already has the passkey, says so,
    # and nothing changes.
    before = digest(receiver_store)
    png = os.path.join(directory, "share.png")
    receiver, url = start_receive(receiver_store, relay, radio, extra=("--qr-png", png))
    again = share(sender_store, credential_id, None, relay, radio, image=png)
    status, stdout, stderr = finish(receiver)
    assert status == 0 and again.returncode == 0, stderr + again.stderr
    assert "already has that passkey" in stdout
    assert "already had" in again.stdout
    assert len(listed(receiver_store)) == 1
    assert digest(receiver_store) == before


def test_without_an_advert_nothing_is_received(directory, relay):
    receiver_store = new_store(directory, "receiver.sqlite")
    before = digest(receiver_store)
    radio = "sim:127.0.0.1:%d" % free_port(socket.SOCK_DGRAM)
    receiver, url = start_receive(receiver_store, relay, radio, timeout=2)
    status, stdout, stderr = finish(receiver)
    assert status == 1
    assert "no nearby authenticator answered within 2" in stderr
    assert "(nothing was added to the store)\n" in stderr
    assert digest(receiver_store) == before
    assert listed(receiver_store) == []


@pytest.mark.parametrize("index", [0, 2])
def test_a_byte_flipped_by_the_relay_stores_nothing_on_either_side(directory, index):
    """The phone side's message 0 is the Noise answer, 2 the share message (1 is the post-handshake message)."""
    def flip(tunnel, direction, position, message):
        if direction == "phone" and position == index:
            message = bytearray(message)
            message[len(message) // 2] ^= 0x01
            return [bytes(message)]
        return [message]

    hostile = HostileRelay(flip)
    rp = RelyingParty()
    sender_store, credential_id = registered_sender(directory, rp)
    receiver_store = new_store(directory, "receiver.sqlite")
    before = (digest(sender_store), digest(receiver_store))
    radio = "sim:127.0.0.1:%d" % free_port(socket.SOCK_DGRAM)
    try:
        receiver, url = start_receive(receiver_store, hostile.url, radio, timeout=10)
        sent = share(sender_store, credential_id, url, hostile.url, radio, timeout=10)
        status, stdout, stderr = finish(receiver)
    finally:
        hostile.close()
    assert status == 1 and sent.returncode == 1, stderr + sent.stderr
    assert ("handshake failed" if index == 0 else "message rejected") in stderr
    assert "(nothing was added to the store)\n" in stderr
    assert "not shared" in sent.stderr
    assert (digest(sender_store), digest(receiver_store)) == before
    assert listed(receiver_store) == []


def test_a_share_message_replayed_from_another_session_is_refused(directory):
    """Session 1 goes through (its frames recorded); in session 2 the relay hands the receiver session 1's share
    message instead of the real one: refused, nothing stored."""
    recorded = {}
    mode = {"replay": False}

    def replay(tunnel, direction, position, message):
        if direction == "phone" and position == 2:
            if not mode["replay"]:
                recorded["share"] = message
            else:
                return [recorded["share"]]
        return [message]

    hostile = HostileRelay(replay)
    rp = RelyingParty()
    sender_store, credential_id = registered_sender(directory, rp)
    receiver_store = new_store(directory, "receiver.sqlite")
    radio = "sim:127.0.0.1:%d" % free_port(socket.SOCK_DGRAM)
    try:
        receiver, url = start_receive(receiver_store, hostile.url, radio, timeout=10)
        first = share(sender_store, credential_id, url, hostile.url, radio, timeout=10)
        status, _, stderr = finish(receiver)
        assert status == 0 and first.returncode == 0, stderr + first.stderr
        assert "share" in recorded

        # The receiver's copy is deleted, so a replay that worked would store it again.
        subprocess.run([PASSKEY_BIN, "delete", "--store", receiver_store, "--yes", "--", credential_id], check=True,
                       capture_output=True, env=env(), timeout=60)
        before = digest(receiver_store)
        mode["replay"] = True
        receiver, url = start_receive(receiver_store, hostile.url, radio, timeout=10)
        second = share(sender_store, credential_id, url, hostile.url, radio, timeout=10)
        status, _, stderr = finish(receiver)
    finally:
        hostile.close()
    assert status == 1 and second.returncode == 1, stderr + second.stderr
    assert "message rejected" in stderr
    assert digest(receiver_store) == before
    assert listed(receiver_store) == []


def test_the_wrong_kind_of_qr_code_is_refused_before_the_store_opens(directory):
    store = os.path.join(directory, "absent.sqlite")
    hybrid = subprocess.run([PASSKEY_BIN, "share", "--store", store, "--", "AAAA",
                             "FIDO:/162870791865632382552704231438327900152302540348097243854039966655366469794954"
                             "476199158014113179232779520163209900691930075274801398564434658077048963842109321447"
                             "142660"], capture_output=True, text=True, env=env(), timeout=60)
    assert hybrid.returncode == 1
    assert "sign-in QR code (FIDO:/), not a share code" in hybrid.stderr
    broken = subprocess.run([PASSKEY_BIN, "share", "--store", store, "--", "AAAA", "PASSKEY-SHARE:/12"],
                            capture_output=True, text=True, env=env(), timeout=60)
    assert broken.returncode == 1
    assert "not a passkey share QR code" in broken.stderr
    assert not os.path.exists(store)
