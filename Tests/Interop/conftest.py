"""Fixtures that run `passkey serve --udp` and connect python-fido2 to it over UDP.

Each datagram is one 64-byte CTAPHID report (see Docs/Transports.md), so python-fido2's own
CtapHidDevice does all the framing: nothing here re-implements CTAPHID.

With PASSKEY_INTEROP_TRANSPORT=uhid (Tools/vm-test sets it inside its guest, where the kernel has uhid), the
same tests run `passkey serve --uhid` and open its /dev/hidrawN with python-fido2's own Linux HID backend.
"""

import glob
import os
import re
import select
import socket
import subprocess
import tempfile
import time

import pytest
from fido2.hid import CtapHidDevice, open_device
from fido2.hid.base import CtapHidConnection, HidDescriptor

PASSKEY_BIN = os.environ.get("PASSKEY_BIN", ".build/debug/passkey")
PASSPHRASE = "interop test passphrase"
TRANSPORT = os.environ.get("PASSKEY_INTEROP_TRANSPORT", "udp")


def stored_contacts(path):
    """The contacts a `passkey-relay --contacts PATH` keeps: the file, with its journal (`PATH.journal`, one change a
    line: `{"store": contact}` or `{"forget": hash}`) replayed over it; a last line without its newline is ignored."""
    import json

    contacts = {}
    if os.path.exists(path):
        with open(path) as file:
            for contact in json.load(file)["contacts"]:
                contacts[contact["hash"]] = contact
    if os.path.exists(path + ".journal"):
        with open(path + ".journal") as file:
            lines = file.read().split("\n")
        for line in lines[:-1]:
            change = json.loads(line)
            if "store" in change:
                contacts[change["store"]["hash"]] = change["store"]
            else:
                del contacts[change["forget"]]
    return list(contacts.values())


def stored_rp_state(path):
    """The state a `passkey rp serve --rp-state PATH` keeps: the file (none is an empty state), with its journal
    (`PATH.journal`, one change a line: `{"put": account}`, `{"remove": credential ID}` or `{"user": user record}`)
    replayed over it; a last line without its newline is ignored."""
    import json

    state = {"version": 1, "accounts": []}
    if os.path.exists(path):
        with open(path) as file:
            state = json.load(file)
    if os.path.exists(path + ".journal"):
        with open(path + ".journal") as file:
            lines = file.read().split("\n")
        for line in lines[:-1]:
            change = json.loads(line)
            accounts = state["accounts"]
            if "put" in change:
                put = change["put"]
                same = [i for i, a in enumerate(accounts) if a["credential"]["id"] == put["credential"]["id"]]
                if same:
                    accounts[same[0]] = put
                else:
                    accounts.append(put)
            elif "user" in change:
                user = change["user"]
                users = state.setdefault("users", [])
                same = [i for i, u in enumerate(users) if (u["rpID"], u["userName"]) == (user["rpID"], user["userName"])]
                if same:
                    users[same[0]] = user
                else:
                    users.append(user)
            else:
                state["accounts"] = [a for a in accounts if a["credential"]["id"] != change["remove"]]
    return state


def stop_process(process):
    """Stops a child with SIGTERM (SIGKILL after 10 s) and returns what it wrote to standard error."""
    process.terminate()
    try:
        _, stderr = process.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
    return stderr


def on_a_terminal(args, answer, environment, timeout=120):
    """Runs passkey with a pseudo-terminal as its only terminal (a new session, the pty on every standard stream) and
    `environment` as its whole environment. Whenever the output so far ends in a prompt ("…: " for a passphrase, a
    password or a choice, "[y/N] " for a question), `answer(prompt)` gives the line to type (None: type nothing).
    Only a prompt on the last line counts: the line end written once an answer is read still follows the previous
    prompt. Returns the exit status and everything the terminal showed."""
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen([PASSKEY_BIN, *args], stdin=follower, stdout=follower, stderr=follower,
                               env=environment, start_new_session=True)
    os.close(follower)
    shown = b""
    answered = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
            text = shown.decode(errors="replace")
            last = text.rsplit("\n", 1)[-1]
            if len(text) > answered and (last.rstrip(" ").endswith(":") or last.endswith("[y/N] ")):
                answered = len(text)
                line = answer(last)
                if line is not None:
                    os.write(leader, line.encode() + b"\n")
        elif process.poll() is not None:
            break
    status = process.wait(timeout=60)
    os.close(leader)
    return status, shown.decode(errors="replace")


def start_and_wait_for_line(arguments, pattern, stream="stdout", input=None, **popen):
    """Starts `arguments` with standard output and error as pipes (text), writes `input` to its standard input and
    closes it (no `input`: /dev/null), then reads `stream` ("stdout" or "stderr") until a line matches `pattern`, a
    regular expression. Returns the process, the match and the lines read; a process that ends first is stopped and
    fails the test with what it printed."""
    process = subprocess.Popen(
        arguments, stdin=subprocess.DEVNULL if input is None else subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, **popen)
    if input is not None:
        process.stdin.write(input)
        process.stdin.close()
        process.stdin = None
    seen = []
    source = getattr(process, stream)
    while True:
        line = source.readline()
        if not line:
            rest = stop_process(process) or ""
            raise AssertionError(f"{os.path.basename(arguments[0])} ended before {pattern!r}: {''.join(seen)}{rest}")
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return process, match, seen


class UdpHidConnection(CtapHidConnection):
    """A CTAPHID connection whose reports travel as UDP datagrams."""

    def __init__(self, address):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect(address)

    def read_packet(self):
        ready, _, _ = select.select([self.sock], [], [], 10)
        if not ready:
            raise TimeoutError("no CTAPHID report from passkey serve within 10 s")
        return self.sock.recv(64)

    def write_packet(self, data):
        assert len(data) == 64
        self.sock.send(data)

    def close(self):
        self.sock.close()


class Server:
    """A running `passkey serve --udp` (or `--uhid`, see above) process with its own store."""

    def __init__(self, store_path, extra_args=(), approve=True, environment=None):
        """With `approve` False there is no `--yes` and standard input is empty: every prompt is declined, as if
        nobody were at the terminal to click. No session bus and no runtime directory are inherited, so that such a
        server does not ask through a desktop notification or the queue of `passkey pending` (Docs/Consent.md);
        `environment` adds variables (test_consent.py gives it a private bus and runtime directory)."""
        self.store_path = store_path
        env = dict(os.environ, PASSKEY_PASSPHRASE=PASSPHRASE)
        for name in ("PASSKEY_ASSUME_YES", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "PASSKEY_CONSENT",
                     "PASSKEY_CONSENT_UV_WINDOW", "PASSKEY_CONSENT_TIMEOUT"):
            env.pop(name, None)
        env.update(environment or {})
        transport = ["--uhid"] if TRANSPORT == "uhid" else ["--udp", "127.0.0.1:0"]
        approval = ["--yes"] if approve else []
        self.process = subprocess.Popen(
            [PASSKEY_BIN, "serve", *transport, "--store", store_path, *approval, *extra_args],
            stdin=None if approve else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        line = self.process.stdout.readline()
        if TRANSPORT == "uhid":
            match = re.search(r"virtual FIDO device created(?:: (/dev/hidraw\d+))?", line)
            if match:
                self.path = match.group(1) or self._find_hidraw()
        else:
            match = re.search(r"listening on udp://([\d.]+):(\d+)", line)
            if match:
                self.address = (match.group(1), int(match.group(2)))
        if not match:
            self.process.kill()
            raise RuntimeError(f"passkey serve did not start: {line!r} {self.process.stderr.read()!r}")

    @staticmethod
    def _find_hidraw():
        """The /dev/hidrawN whose HID name contains "passkey", waiting up to 10 s for udev-less devtmpfs."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for uevent in glob.glob("/sys/class/hidraw/hidraw*/device/uevent"):
                with open(uevent) as file:
                    if re.search(r"^HID_NAME=.*passkey", file.read(), re.M | re.I):
                        return "/dev/" + uevent.split("/")[4]
            time.sleep(0.05)
        raise RuntimeError("passkey serve --uhid created no hidraw device named passkey")

    def device(self):
        if TRANSPORT == "uhid":
            return open_device(self.path)
        descriptor = HidDescriptor("udp:%s:%d" % self.address, 0x1209, 0x5050, 64, 64, "passkey", None)
        return CtapHidDevice(descriptor, UdpHidConnection(self.address))

    def stop(self):
        return stop_process(self.process)


def run_with_store(store, *args, stdin="", password=None, passphrase=PASSPHRASE, new_session=False,
                   environment_extra=None, timeout=120):
    """`passkey ARGS` on the store at `store`: with its passphrase unless `passphrase` is None, PASSKEY_PASSWORD only
    when `password` is given, never PASSKEY_ASSUME_YES. In a new session there is no controlling terminal, so nothing
    can be asked on one."""
    environment = dict(os.environ, PASSKEY_STORE=store, NO_COLOR="1")
    for name in ("PASSKEY_PASSWORD", "PASSKEY_ASSUME_YES", "PASSKEY_PASSPHRASE"):
        environment.pop(name, None)
    if passphrase is not None:
        environment["PASSKEY_PASSPHRASE"] = passphrase
    if password is not None:
        environment["PASSKEY_PASSWORD"] = password
    environment.update(environment_extra or {})
    return subprocess.run([PASSKEY_BIN, *args], input=stdin if stdin is not None else "", capture_output=True,
                          text=True, timeout=timeout, env=environment, start_new_session=new_session)


@pytest.fixture
def store():
    """A new store made by `passkey init` in a temporary folder, with PASSPHRASE; its path."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "store.sqlite")
        created = run_with_store(path, "init")
        assert created.returncode == 0, created.stderr
        yield path


@pytest.fixture
def store_dir():
    with tempfile.TemporaryDirectory() as directory:
        yield directory


@pytest.fixture
def server(store_dir):
    running = Server(os.path.join(store_dir, "passkeys.sqlite"))
    yield running
    stderr = running.stop()
    # Nothing secret may reach the operator's terminal.
    assert PASSPHRASE not in stderr


@pytest.fixture
def device(server):
    dev = server.device()
    yield dev
    dev.close()
