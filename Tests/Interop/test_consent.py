"""Consent without a terminal (Docs/Consent.md): `passkey serve --udp` run with no terminal asks through a desktop
notification on a private session bus (dbus-daemon started here), answered by a notification server written with
dbus-next (notification_server.py), and through the queue of `passkey pending` / `approve` / `deny` when no
notification server runs. python-fido2 plays the platform.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.utils import sha256

from conftest import PASSKEY_BIN, PASSPHRASE, TRANSPORT, Server

ERR = CtapError.ERR
HERE = os.path.dirname(os.path.abspath(__file__))
RP_ID = "example.com"

pytestmark = pytest.mark.skipif(TRANSPORT != "udp", reason="the platform is python-fido2 over passkey serve --udp")


@pytest.fixture
def runtime_dir():
    with tempfile.TemporaryDirectory(prefix="passkey-runtime") as directory:
        os.chmod(directory, 0o700)
        yield directory


@pytest.fixture
def session_bus():
    """A private session bus: `dbus-daemon --session`, its address."""
    daemon = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    address = daemon.stdout.readline().strip()
    assert address.startswith("unix:"), address
    yield address
    daemon.terminate()
    daemon.wait(timeout=10)


class NotificationServer:
    """notification_server.py on `address`, answering every notification with `answer`."""

    def __init__(self, address, answer, directory):
        self.record = os.path.join(directory, "notifications.jsonl")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "notification_server.py"), address, answer, self.record],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            self.process.kill()
            raise RuntimeError("the notification server did not start: %r %r" % (line, self.process.stderr.read()))

    def calls(self):
        if not os.path.exists(self.record):
            return []
        with open(self.record) as file:
            return [json.loads(line) for line in file]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


def serve(store_dir, runtime_dir, bus=None, timeout=3, extra=()):
    """`passkey serve --udp` with no terminal and no --yes, the runtime directory and (when given) the bus."""
    environment = {"XDG_RUNTIME_DIR": runtime_dir}
    if bus is not None:
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus
    return Server(
        os.path.join(store_dir, "passkeys.sqlite"), approve=False, environment=environment,
        extra_args=("--consent-timeout", str(timeout), *extra))


def make_credential(server, uv=False):
    ctap = Ctap2(server.device())
    options = {"rk": True}
    if uv:
        options["uv"] = True
    return ctap.make_credential(
        sha256(os.urandom(32)), {"id": RP_ID, "name": "Example"},
        {"id": b"user-alice", "name": "alice", "displayName": "Alice"}, [{"type": "public-key", "alg": -7}],
        options=options)


def expect_error(code, function, *arguments, **keywords):
    with pytest.raises(CtapError) as raised:
        function(*arguments, **keywords)
    assert raised.value.code == code


def passkey(runtime_dir, *arguments):
    env = {k: v for k, v in os.environ.items() if k not in ("DBUS_SESSION_BUS_ADDRESS",)}
    env["XDG_RUNTIME_DIR"] = runtime_dir
    return subprocess.run([PASSKEY_BIN, *arguments], capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_allow_in_the_notification_approves(store_dir, runtime_dir, session_bus):
    notifications = NotificationServer(session_bus, "allow", runtime_dir)
    server = serve(store_dir, runtime_dir, bus=session_bus)
    try:
        made = make_credential(server)
        assert made.auth_data.is_user_present()
        assert not made.auth_data.is_user_verified()
    finally:
        log = server.stop()
        notifications.stop()
    notify = [call for call in notifications.calls() if call["call"] == "Notify"]
    assert len(notify) == 1
    assert notify[0]["app_name"] == "passkey"
    assert notify[0]["summary"] == "example.com asks to create a passkey for alice"
    assert notify[0]["actions"] == ["allow", "Allow", "deny", "Deny"]
    assert notify[0]["expire_timeout"] == 3000
    assert notify[0]["hints"]["urgency"] == 2
    assert "Expires in 3 seconds." in notify[0]["body"]
    assert "asking through a desktop notification, else the queue" in log
    assert "consent: notification %d sent: example.com asks to create a passkey for alice" % notify[0]["id"] in log
    assert "consent: notification %d answered: allow" % notify[0]["id"] in log


def test_deny_refuses_and_a_dismissed_notification_too(store_dir, runtime_dir, session_bus):
    for answer in ("deny", "dismiss"):
        notifications = NotificationServer(session_bus, answer, runtime_dir)
        server = serve(store_dir, runtime_dir, bus=session_bus)
        try:
            expect_error(ERR.OPERATION_DENIED, make_credential, server)
        finally:
            log = server.stop()
            notifications.stop()
        assert "answered: deny" in log


def test_no_answer_times_out_and_the_notification_is_closed(store_dir, runtime_dir, session_bus):
    notifications = NotificationServer(session_bus, "silent", runtime_dir)
    server = serve(store_dir, runtime_dir, bus=session_bus, timeout=2)
    try:
        started = time.monotonic()
        expect_error(ERR.USER_ACTION_TIMEOUT, make_credential, server)
        assert time.monotonic() - started < 15
    finally:
        log = server.stop()
        notifications.stop()
    calls = notifications.calls()
    assert [call["call"] for call in calls] == ["Notify", "CloseNotification"]
    assert calls[1]["id"] == calls[0]["id"]
    assert "expired without an answer" in log
    # Nothing was queued on the way.
    pending = os.path.join(runtime_dir, "passkey", "pending")
    assert not os.path.isdir(pending) or os.listdir(pending) == []


def test_an_allow_without_a_recent_unlock_is_presence_only(store_dir, runtime_dir, session_bus):
    notifications = NotificationServer(session_bus, "allow", runtime_dir)
    server = serve(store_dir, runtime_dir, bus=session_bus)
    try:
        made = make_credential(server, uv=True)
        assert made.auth_data.is_user_present()
        assert not made.auth_data.is_user_verified()
    finally:
        log = server.stop()
        notifications.stop()
    notify = [call for call in notifications.calls() if call["call"] == "Notify"][0]
    assert "Allow counts as presence only, not as verification: the store is not unlocked in the agent" in notify["body"]
    assert "allowed as presence only, not as verification: the store is not unlocked in the agent" in log


def test_an_allow_soon_after_passkey_unlock_verifies(store_dir, runtime_dir, session_bus):
    notifications = NotificationServer(session_bus, "allow", runtime_dir)
    server = serve(store_dir, runtime_dir, bus=session_bus)
    try:
        unlocked = subprocess.run(
            [PASSKEY_BIN, "unlock", "--store", server.store_path, "--for", "60s"], capture_output=True, text=True,
            timeout=60, stdin=subprocess.DEVNULL,
            env=dict(os.environ, PASSKEY_PASSPHRASE=PASSPHRASE, XDG_RUNTIME_DIR=runtime_dir))
        assert unlocked.returncode == 0, unlocked.stderr
        made = make_credential(server, uv=True)
        assert made.auth_data.is_user_present() and made.auth_data.is_user_verified()
    finally:
        subprocess.run([PASSKEY_BIN, "lock"], capture_output=True, timeout=30,
                       env=dict(os.environ, XDG_RUNTIME_DIR=runtime_dir))
        log = server.stop()
        notifications.stop()
    notify = [call for call in notifications.calls() if call["call"] == "Notify"][0]
    assert "Allow also verifies you (the store was unlocked recently)." in notify["body"]
    assert "presence only" not in log


def pending_requests(runtime_dir, count=1, within=10):
    """`passkey pending --json`'s requests once there are `count`."""
    deadline = time.monotonic() + within
    while True:
        listed = passkey(runtime_dir, "pending", "--json")
        assert listed.returncode == 0, listed.stderr
        requests = json.loads(listed.stdout)["pending"]
        if len(requests) >= count or time.monotonic() > deadline:
            return requests
        time.sleep(0.1)


def in_thread(function, *arguments):
    """Runs `function` in a thread; returns a callable that waits and gives its result or raises its error."""
    outcome = {}

    def run():
        try:
            outcome["value"] = function(*arguments)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome["error"] = error

    thread = threading.Thread(target=run)
    thread.start()

    def result():
        thread.join(60)
        assert not thread.is_alive()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    return result


@pytest.mark.parametrize("with_bus", [True, False], ids=["bus-without-server", "no-bus"])
def test_the_queue_when_no_notification_server_answers(store_dir, runtime_dir, session_bus, with_bus):
    server = serve(store_dir, runtime_dir, bus=session_bus if with_bus else None, timeout=30)
    try:
        # Approved from another terminal.
        result = in_thread(make_credential, server)
        requests = pending_requests(runtime_dir)
        assert len(requests) == 1
        request = requests[0]
        assert request["rpId"] == RP_ID
        assert request["action"] == "create a passkey"
        assert request["summary"] == "example.com asks to create a passkey for alice"
        assert 0 < request["expiresIn"] <= 30
        assert request["expires"].endswith("Z")
        mode = os.stat(os.path.join(runtime_dir, "passkey", "pending")).st_mode & 0o777
        assert mode == 0o700
        assert os.stat(os.path.join(runtime_dir, "passkey", "pending", request["id"] + ".json")).st_mode & 0o777 == 0o600
        shown = passkey(runtime_dir, "pending")
        assert request["id"] in shown.stdout and "example.com asks to create a passkey for alice" in shown.stdout
        approved = passkey(runtime_dir, "approve", request["id"])
        assert approved.returncode == 0, approved.stderr
        assert result().auth_data.is_user_present()
        assert pending_requests(runtime_dir, count=0, within=0) == []
        # Answered again: gone.
        again = passkey(runtime_dir, "approve", request["id"])
        assert again.returncode == 4
        assert again.stderr.strip() == "passkey: cannot approve %s: no request %s is waiting (see passkey pending)" % (
            request["id"], request["id"])

        # Denied.
        result = in_thread(make_credential, server)
        request = pending_requests(runtime_dir)[0]
        denied = passkey(runtime_dir, "deny", request["id"])
        assert denied.returncode == 0, denied.stderr
        with pytest.raises(CtapError) as raised:
            result()
        assert raised.value.code == ERR.OPERATION_DENIED
    finally:
        log = server.stop()
    assert "asking through " + ("a desktop notification, else " if with_bus else "") + "the queue" in log
    assert "queued: example.com asks to create a passkey for alice" in log
    assert "answered: allow" in log and "answered: deny" in log
    if with_bus:
        assert "no notification server answered" in log


def test_an_expired_request_is_refused_and_removed(store_dir, runtime_dir):
    server = serve(store_dir, runtime_dir, timeout=1)
    try:
        result = in_thread(expect_error, ERR.USER_ACTION_TIMEOUT, make_credential, server)
        request = pending_requests(runtime_dir)[0]
        time.sleep(1.5)
        late = passkey(runtime_dir, "approve", request["id"])
        assert late.returncode == 4
        assert late.stderr.startswith("passkey: cannot approve %s: " % request["id"])
        result()
        assert pending_requests(runtime_dir, count=0, within=0) == []
        assert os.listdir(os.path.join(runtime_dir, "passkey", "pending")) == []
    finally:
        log = server.stop()
    assert "expired without an answer" in log


def test_pending_without_requests_and_without_a_runtime_directory(runtime_dir):
    assert passkey(runtime_dir, "pending").stdout.strip() == "No request is waiting."
    assert json.loads(passkey(runtime_dir, "pending", "--json").stdout) == {"pending": []}
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    missing = subprocess.run([PASSKEY_BIN, "pending"], capture_output=True, text=True, env=env,
                             stdin=subprocess.DEVNULL, timeout=60)
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        "passkey: cannot list pending requests: XDG_RUNTIME_DIR is not set, so there is no private place for "
        "pending requests")
