"""This package's security key client (`passkey debug security-key`, Docs/SecurityKey.md) against `passkey serve --udp`,
with python-fido2 2.2.1 as the independent party: its Fido2Server verifies what the client got from the key, and its
ClientPin sets the PIN the client then uses. The terminal PIN prompt runs under a pseudo-terminal: no echo while the
PIN is typed, and echo back afterwards, also when Ctrl-C ends the prompt.
"""

import json
import os
import pty
import re
import select
import subprocess
import termios
import time

import pytest
from fido2.ctap2 import Ctap2
from fido2.ctap2.pin import ClientPin
from fido2.server import Fido2Server
from fido2.utils import websafe_encode
from fido2.webauthn import (
    AuthenticationResponse,
    PublicKeyCredentialRpEntity,
    RegistrationResponse,
    UserVerificationRequirement,
)

from conftest import PASSKEY_BIN, PASSPHRASE, TRANSPORT, Server

RP_ID = "example.com"
PIN = "81726354"

pytestmark = pytest.mark.skipif(TRANSPORT != "udp", reason="the client is pointed at passkey serve --udp")


def spec(server):
    return "udp:%s:%d" % server.address


def client(server, *arguments, pin=None, timeout=60):
    """Runs `passkey debug security-key …` against `server`; PASSKEY_CLIENT_PIN only when `pin` is given."""
    env = {k: v for k, v in os.environ.items() if k != "PASSKEY_CLIENT_PIN"}
    if pin is not None:
        env["PASSKEY_CLIENT_PIN"] = pin
    return subprocess.run(
        [PASSKEY_BIN, "debug", "security-key", *arguments, "--security-key", spec(server)],
        capture_output=True, text=True, env=env, timeout=timeout, stdin=subprocess.DEVNULL,
    )


def verify_with_fido2_server(result, uv):
    """Checks the client's registration and sign-in with python-fido2's relying party."""
    server = Fido2Server(PublicKeyCredentialRpEntity(name="Example", id=RP_ID), attestation="none")
    requirement = UserVerificationRequirement.REQUIRED if uv else UserVerificationRequirement.DISCOURAGED
    registration, authentication = result["registration"], result["authentication"]
    credential = server.register_complete(
        {"challenge": registration["challenge"], "user_verification": requirement},
        RegistrationResponse.from_dict({
            "id": result["credentialId"], "rawId": result["credentialId"], "type": "public-key",
            "response": {
                "clientDataJSON": registration["clientDataJSON"],
                "attestationObject": registration["attestationObject"],
            },
        }),
    ).credential_data
    server.authenticate_complete(
        {"challenge": authentication["challenge"], "user_verification": requirement},
        [credential],
        AuthenticationResponse.from_dict({
            "id": result["credentialId"], "rawId": result["credentialId"], "type": "public-key",
            "response": {
                "clientDataJSON": authentication["clientDataJSON"],
                "authenticatorData": authentication["authenticatorData"],
                "signature": authentication["signature"],
            },
        }),
    )
    return credential


@pytest.fixture
def pin_key(store_dir):
    """`passkey serve --udp --pin-only --verbose` with a PIN set by python-fido2's ClientPin."""
    server = Server(os.path.join(store_dir, "passkeys.sqlite"), extra_args=["--pin-only", "--verbose"])
    device = server.device()
    ClientPin(Ctap2(device)).set_pin(PIN)
    yield server, device
    device.close()
    stderr = server.stop()
    assert PASSPHRASE not in stderr and PIN not in stderr


def test_getinfo(server):
    result = client(server, "getinfo")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "security key: " + "udp://%s:%d" % server.address
    assert lines[1] == "ctaphid: protocol 2, device 1.0.0, capabilities wink cbor nmsg"
    assert "versions: FIDO_2_0 FIDO_2_1" in lines
    assert "aaguid: 8391e378-32c7-4aa5-ad16-6f0cf4ad7b23" in lines
    assert "pinUvAuthProtocols: 2 1" in lines


@pytest.mark.parametrize("uv", [False, True])
def test_round_trip_is_what_fido2_server_accepts(server, uv):
    result = client(server, "roundtrip", "--json", "--discoverable", *(["--uv"] if uv else []))
    assert result.returncode == 0, result.stderr
    verified = json.loads(result.stdout)
    assert verified["userVerified"] is uv
    verify_with_fido2_server(verified, uv)
    assert "makeCredential OK" in result.stderr and "getAssertion OK" in result.stderr


def test_the_pin_python_fido2_set_verifies_the_user(pin_key):
    server, device = pin_key
    result = client(server, "roundtrip", "--json", "--uv", pin=PIN)
    assert result.returncode == 0, result.stderr
    verify_with_fido2_server(json.loads(result.stdout), uv=True)
    assert ClientPin(Ctap2(device)).get_pin_retries()[0] == 8
    assert PIN not in result.stdout + result.stderr


def test_a_wrong_pin_says_how_many_tries_are_left(pin_key):
    server, device = pin_key
    result = client(server, "roundtrip", "--uv", pin="00000000")
    assert result.returncode == 1
    assert "passkey: wrong PIN: 7 tries left\n" in result.stderr
    assert "00000000" not in result.stdout + result.stderr
    assert ClientPin(Ctap2(device)).get_pin_retries()[0] == 7


def read_until(fd, pattern, limit=60):
    """Reads the pseudo-terminal until `pattern` appears; returns everything read."""
    output = b""
    deadline = time.monotonic() + limit
    while not re.search(pattern, output):
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no {pattern!r} within {limit} s: {output!r}"
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
    return output


def read_rest(fd, limit=60):
    output = b""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        output += chunk
    return output


def spawn_under_terminal(server):
    """The client in a child whose controlling terminal is a new pseudo-terminal; returns (pid, master)."""
    env = {k: v for k, v in os.environ.items() if k != "PASSKEY_CLIENT_PIN"}
    pid, master = pty.fork()
    if pid == 0:
        os.execve(PASSKEY_BIN, [PASSKEY_BIN, "debug", "security-key", "roundtrip", "--uv", "--security-key",
                                spec(server)], env)
    return pid, master


def echo_is_on(master):
    return bool(termios.tcgetattr(master)[3] & termios.ECHO)


def test_the_terminal_prompt_reads_the_pin_without_echo(pin_key):
    server, _ = pin_key
    pid, master = spawn_under_terminal(server)
    try:
        assert echo_is_on(master)
        prompt = read_until(master, rb"PIN for the security key udp://[^ ]+ \(8 tries left\): ")
        assert b"touch" not in prompt
        assert not echo_is_on(master)
        os.write(master, PIN.encode() + b"\n")
        # Each ceremony asks once: the sign-in asks again.
        output = read_until(master, rb"makeCredential OK.*\r\nPIN for the security key [^\r\n]*: ")
        assert not echo_is_on(master)
        os.write(master, PIN.encode() + b"\n")
        output += read_rest(master)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, output
        assert b"round trip: ok" in output
        assert PIN.encode() not in prompt + output
        assert echo_is_on(master)
    finally:
        os.close(master)


def test_ctrl_c_at_the_prompt_puts_echo_back(pin_key):
    server, _ = pin_key
    pid, master = spawn_under_terminal(server)
    try:
        read_until(master, rb"PIN for the security key")
        assert not echo_is_on(master)
        os.write(master, b"\x03")  # the line discipline sends SIGINT to the child
        rest = read_rest(master, limit=10)
        assert rest.strip().endswith(b"passkey: interrupted"), rest
        _, status = os.waitpid(pid, 0)
        # Ctrl-C ends it as every command (Docs/ExitStatus.md): one line, status 130, and the terminal put back.
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 130, status
        assert echo_is_on(master)
    finally:
        os.close(master)
