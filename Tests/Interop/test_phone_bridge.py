"""A phone behind the virtual key (issue 25), with the real binaries: python-fido2 speaks CTAP2 over CTAPHID to
`passkey serve --phone-only` (or `--phone`), which shows a QR code and prints its URL as `phone: FIDO:/…`;
`passkey scan` answers it as the phone, over the simulated radio and a local `passkey-relay`. python-fido2's
Fido2Server and py_webauthn verify what comes back, and the passkey is on the phone's store, not the key's.
"""

import base64
import json
import os
import re
import subprocess
import tempfile
import threading
import time

import pytest
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.webauthn import (
    AuthenticationResponse,
    AuthenticatorAssertionResponse,
    CollectedClientData,
    PublicKeyCredentialUserEntity,
    UserVerificationRequirement,
)

from conftest import PASSKEY_BIN, Server
from test_consent import NotificationServer, runtime_dir, session_bus  # noqa: F401 (pytest fixtures)
from test_interop import ORIGIN, RP_ID, check_assertion, register, rp_server
from test_linked import PHONE_NAME, Listener, directory, free_port, relay  # noqa: F401 (pytest fixtures)
from test_webauthn_client import env, new_store

PHONE_LINE = re.compile(r"^phone: (FIDO:/\S+)$")


class Phone(threading.Thread):
    """Reads the key's standard output and answers each QR code it shows with `passkey scan`, as a phone would."""

    def __init__(self, key, store, relay_url, radio, first_scan=()):
        """`first_scan`: more arguments for the first scan only (`--link --name NAME`)."""
        super().__init__(daemon=True)
        self.key, self.store, self.relay_url, self.radio = key, store, relay_url, radio
        self.first_scan = list(first_scan)
        self.urls = []
        self.scans = []
        self.shown = threading.Event()
        self.start()

    def finished(self, count, timeout=60):
        """The first `count` scans, once they have ended."""
        deadline = time.monotonic() + timeout
        while len(self.scans) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.scans) >= count, f"only {len(self.scans)} of {count} scans ended"
        return self.scans[:count]

    def run(self):
        while True:
            try:
                line = self.key.process.stdout.readline()
            except ValueError:  # the key stopped and its output was closed
                return
            if not line:
                return
            match = PHONE_LINE.match(line.strip())
            if not match:
                continue
            self.urls.append(match.group(1))
            self.shown.set()
            if self.store is None:
                continue
            self.scans.append(subprocess.run(
                [PASSKEY_BIN, "scan", match.group(1), "--store", self.store, "--relay", self.relay_url,
                 "--ble", self.radio, "--yes", "--timeout", "60", *(self.first_scan if not self.scans else [])],
                capture_output=True, text=True, timeout=120, env=env()))


def key_with_phone(directory, relay, mode, phone_store, link=False, consent=None):
    """`consent`: the environment of a key with no terminal and no --yes (a private session bus and runtime
    directory), which asks through desktop notifications."""
    radio = f"sim:127.0.0.1:{free_port()}"
    key = Server(os.path.join(directory, "key.sqlite"), approve=consent is None, environment=consent,
                 extra_args=[mode, "--relay", relay.url, "--ble", radio, "--timeout", "60", *(["--link"] if link else []),
                             *(["--consent", "notification"] if consent else [])])
    return key, Phone(key, phone_store, relay.url, radio, first_scan=["--link", "--name", PHONE_NAME] if link else [])


def listed(store):
    """The passkeys `passkey list --json` shows in `store`, as (RP ID, user name)."""
    output = subprocess.run([PASSKEY_BIN, "list", "--store", store, "--json"], capture_output=True, text=True,
                            check=True, timeout=60, env=env()).stdout
    return [(entry["rpId"], entry["userName"]) for entry in json.loads(output)]


def sign_in(device):
    """A discoverable sign-in with user verification, as a platform sends it; verified by both RP libraries."""
    server = rp_server()
    options, state = server.authenticate_begin(None, user_verification=UserVerificationRequirement.REQUIRED)
    client_data = CollectedClientData.create(
        type=CollectedClientData.TYPE.GET, challenge=options.public_key.challenge, origin=ORIGIN)
    assertion = Ctap2(device).get_assertion(RP_ID, client_data.hash, options={"uv": True})
    return server, state, options.public_key, AuthenticationResponse(
        raw_id=assertion.credential["id"],
        response=AuthenticatorAssertionResponse(
            client_data=client_data, authenticator_data=assertion.auth_data, signature=assertion.signature,
            user_handle=assertion.user["id"]))


def signs_in(device, credential, verified):
    """A discoverable sign-in that must be `credential`'s, checked by both RP libraries."""
    server, state, options, response = sign_in(device)
    check_assertion(server, state, options, [credential], {credential.credential_id: verified}, response, uv=True)


def test_a_phone_behind_the_key_registers_and_signs_in(directory, relay):
    phone_store = new_store(directory, "phone.sqlite")
    key, phone = key_with_phone(directory, relay, "--phone-only", phone_store)
    try:
        device = key.device()
        info = Ctap2(device).info
        # What makes platforms send plain requests a phone can serve: built-in uv, nothing bound to this key.
        assert info.options == {"rk": True, "up": True, "uv": True, "makeCredUvNotRqd": True}
        assert not info.pin_uv_protocols
        credential, verified = register(device, "alice", b"alice-user-id")
        signs_in(device, credential, verified)
        device.close()
    finally:
        stderr = key.stop()
    phone.join(timeout=10)
    assert len(phone.urls) == 2, stderr
    assert [scan.returncode for scan in phone.scans] == [0, 0], [scan.stderr for scan in phone.scans]
    assert "answer sent: OK" in stderr
    assert listed(phone_store) == [(RP_ID, "alice")]
    assert listed(os.path.join(directory, "key.sqlite")) == []


def test_a_cancel_while_the_qr_code_is_up_answers_keepalive_cancel(directory, relay):
    key, phone = key_with_phone(directory, relay, "--phone-only", None)
    try:
        device = key.device()
        cancel = threading.Event()
        threading.Thread(target=lambda: phone.shown.wait(30) and cancel.set(), daemon=True).start()
        with pytest.raises(CtapError) as error:
            Ctap2(device).get_assertion(RP_ID, b"\x01" * 32, options={"uv": True}, event=cancel)
        assert error.value.code == CtapError.ERR.KEEPALIVE_CANCEL
        assert cancel.is_set()
        # The key goes on: the next request is answered (and shows a QR code again, cancelled too).
        assert Ctap2(device).get_info().options["uv"] is True
        device.close()
    finally:
        stderr = key.stop()
    assert "no answer from a phone" in stderr and "KEEPALIVE_CANCEL" in stderr


def test_with_phone_a_sign_in_the_store_can_answer_shows_no_qr_code(directory, relay):
    phone_store = new_store(directory, "phone.sqlite")
    key, phone = key_with_phone(directory, relay, "--phone", phone_store)
    try:
        device = key.device()
        # A registration on this computer: the person picks "this computer" (--yes picks the first entry).
        register(device, "bob", b"bob-user-id")
        server, state, options, response = sign_in(device)
        assert response.raw_id
        device.close()
    finally:
        key.stop()
    phone.join(timeout=10)
    assert phone.urls == []
    assert listed(os.path.join(directory, "key.sqlite")) == [(RP_ID, "bob")]


def test_a_linked_phone_behind_the_key_signs_in_without_a_qr_code(directory, relay):
    phone_store = new_store(directory, "phone.sqlite")
    key, phone = key_with_phone(directory, relay, "--phone-only", phone_store, link=True)
    listener = None
    try:
        device = key.device()
        credential, verified = register(device, "carol", b"carol-user-id")
        [scan] = phone.finished(1)
        assert scan.returncode == 0 and "linked: the computer can reach this phone" in scan.stderr, scan.stderr
        listener = Listener(phone_store, relay.url, phone.radio)
        signs_in(device, credential, verified)
        listener.wait_for("answered")
        device.close()
    finally:
        listened = listener.stop() if listener else ""
        stderr = key.stop()
    phone.join(timeout=10)
    assert len(phone.urls) == 1, stderr  # the sign-in showed no QR code
    assert f'remembered the phone "{PHONE_NAME}"' in stderr
    assert "a sign-in goes to the linked phone" in stderr, stderr
    assert "answer sent: OK" in stderr, listened


def test_phone_name_picks_a_linked_phone_and_an_unknown_name_fails_at_start(directory, relay):
    phone_store = new_store(directory, "phone.sqlite")
    key, phone = key_with_phone(directory, relay, "--phone-only", phone_store, link=True)
    try:
        device = key.device()
        credential, verified = register(device, "erin", b"erin-user-id")
        device.close()
    finally:
        key.stop()
    phone.join(timeout=10)
    key_store = os.path.join(directory, "key.sqlite")
    arguments = [PASSKEY_BIN, "serve", "--udp", "127.0.0.1:0", "--store", key_store, "--phone-only", "--relay",
                 relay.url, "--ble", phone.radio]
    unknown = subprocess.run([*arguments, "--phone-name", "Tablet"], capture_output=True, text=True, env=env(),
                             stdin=subprocess.DEVNULL, timeout=60)
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr == f"passkey: no linked phone called Tablet (linked phones: {PHONE_NAME})\n"
    # Without --link (nothing offered to a phone that scans), --phone-name still reaches the phone through its link.
    key = Server(key_store, extra_args=["--phone-only", "--relay", relay.url, "--ble", phone.radio, "--timeout", "60",
                                        "--phone-name", PHONE_NAME])
    listener = Listener(phone_store, relay.url, phone.radio)
    try:
        device = key.device()
        signs_in(device, credential, verified)
        listener.wait_for("answered")
        device.close()
    finally:
        listener.stop()
        stderr = key.stop()
    assert "a sign-in goes to the linked phone" in stderr and "scan the QR code" not in stderr, stderr


def test_a_linked_phone_that_revoked_the_link_falls_back_to_a_qr_code(directory, relay):
    phone_store = new_store(directory, "phone.sqlite")
    key, phone = key_with_phone(directory, relay, "--phone-only", phone_store, link=True)
    try:
        device = key.device()
        credential, verified = register(device, "dave", b"dave-user-id")
        revoked = subprocess.run([PASSKEY_BIN, "links", "revoke", "--store", phone_store], capture_output=True,
                                 text=True, env=env(), timeout=60)
        assert revoked.returncode == 0, revoked.stderr
        # The relay answers 410 for the link: the key forgets it and shows a QR code in the same request.
        signs_in(device, credential, verified)
        device.close()
    finally:
        stderr = key.stop()
    phone.join(timeout=10)
    assert len(phone.urls) == 2, stderr
    assert "the linked phone was not reached" in stderr and "410" in stderr, stderr
    assert f'the phone "{PHONE_NAME}" revoked this link' in stderr, stderr


def qr_code_in(notify):
    """The text zbarimg (an independent QR decoder) reads in a Notify call's `image-data` hint."""
    width, height, stride, alpha, bits, channels, pixels = notify["hints"]["image-data"]
    assert (stride, alpha, bits, channels) == (width * 3, False, 8, 3)
    rgb = base64.b64decode(pixels["base64"])
    assert len(rgb) == stride * height
    with tempfile.NamedTemporaryFile(suffix=".ppm") as image:
        image.write(b"P6 %d %d 255\n" % (width, height) + rgb)
        image.flush()
        decoded = subprocess.run(["zbarimg", "--quiet", "--raw", image.name], capture_output=True, text=True,
                                 timeout=60)
    assert decoded.returncode == 0, decoded.stderr
    return decoded.stdout.strip()


def test_without_a_terminal_where_and_the_qr_code_are_notifications(directory, relay, runtime_dir, session_bus):
    """A key run as a service (no terminal, no --yes): "where should the passkey be created?" is a notification whose
    actions are the places, and the phone's QR code is one too, as an image, withdrawn once the phone answered."""
    phone_store = new_store(directory, "phone.sqlite")
    notifications = NotificationServer(session_bus, "place-1", runtime_dir)
    key, phone = key_with_phone(directory, relay, "--phone", phone_store,
                                consent={"XDG_RUNTIME_DIR": runtime_dir, "DBUS_SESSION_BUS_ADDRESS": session_bus})
    try:
        device = key.device()
        register(device, "dora", b"dora-user-id")
        device.close()
    finally:
        stderr = key.stop()
        notifications.stop()
    phone.join(timeout=10)
    calls = notifications.calls()
    notify = [call for call in calls if call["call"] == "Notify"]
    assert len(notify) == 2, calls
    where, qr_code = notify
    assert where["summary"] == f"{RP_ID} asks to create a passkey for dora"
    assert where["actions"] == ["place-0", "Create it on this computer", "place-1", "Create it on a phone", "deny", "Deny"]
    assert "consent: notification %d answered: a phone" % where["id"] in stderr, stderr
    assert qr_code["summary"] == "Scan this QR code with your phone"
    assert qr_code["actions"] == []
    assert len(phone.urls) == 1 and phone.urls[0] in qr_code["body"]
    assert qr_code_in(qr_code) == phone.urls[0]
    # Withdrawn once the phone came near, before the request ended.
    assert {"call": "CloseNotification", "id": qr_code["id"]} in calls, calls
    assert listed(phone_store) == [(RP_ID, "dora")]
    assert listed(os.path.join(directory, "key.sqlite")) == []
