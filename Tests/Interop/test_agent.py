"""The store agent (`passkey unlock`, `passkey lock`, `passkey agent`) and the passphrase prompts of a hybrid sign-in,
counted on a pseudo-terminal.

A sign-in on the phone (`passkey scan`) asks for the store passphrase at most once per ceremony: without the agent,
the passphrase typed to open the store is the ceremony's user verification; with the agent holding the key, the store
opens without asking and the verification asks, once. A wrong passphrase is asked again, and the third wrong one ends
the command with a one-line error. The agent's protocol, its timeout and its socket are Tests/StoreAgentTests.
"""

import json
import os
import re
import subprocess
import tempfile
import time

import pytest

import conftest
from conftest import PASSKEY_BIN, PASSPHRASE, stop_process
from test_webauthn_client import ORIGIN, RelyingParty, env, free_udp_port, new_store, relay  # noqa: F401

OPEN_PROMPT = "Passphrase for "
VERIFY_PROMPT = "Store passphrase to verify it is you:"


@pytest.fixture
def directory():
    with tempfile.TemporaryDirectory() as path:
        yield path


@pytest.fixture
def runtime():
    """A private XDG_RUNTIME_DIR for the agent's socket; any agent left in it is stopped afterwards."""
    with tempfile.TemporaryDirectory() as path:
        os.chmod(path, 0o700)
        yield path
        subprocess.run([PASSKEY_BIN, "lock"], env=dict(os.environ, XDG_RUNTIME_DIR=path), capture_output=True,
                       timeout=30)


def on_a_terminal(args, answers, extra_env):
    """Runs passkey on a pseudo-terminal (conftest's `on_a_terminal`) without PASSKEY_PASSPHRASE, each prompt
    answered by `answers(prompt)`; returns the exit status and everything the terminal showed."""
    environment = dict(os.environ, **extra_env)
    environment.pop("PASSKEY_PASSPHRASE", None)
    environment.pop("PASSKEY_ASSUME_YES", None)
    return conftest.on_a_terminal(args, answers, environment)


def answering(open_passphrases, verify_passphrase=PASSPHRASE):
    """Answers store-opening prompts with `open_passphrases` in turn, verification with `verify_passphrase`, a
    question with yes and a chooser with its first entry."""
    pending = list(open_passphrases)

    def answer(prompt):
        if OPEN_PROMPT in prompt:
            return pending.pop(0) if pending else ""
        if VERIFY_PROMPT in prompt:
            return verify_passphrase
        if "[y/N]" in prompt:
            return "y"
        if prompt.startswith("Choose 1-"):
            return "1"
        return ""
    return answer


def start_sign_in(directory, relay, rp, radio):
    """`passkey client get` on the computer (approving unattended), up to the QR code; returns it and the process."""
    process = subprocess.Popen(
        [PASSKEY_BIN, "client", "get", "--options", "-", "--origin", ORIGIN, "--hint", "hybrid",
         "--store", os.path.join(directory, "no-such-store.sqlite"), "--relay", relay, "--ble", radio, "--yes",
         "--json", "--timeout", "90"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    process.stdin.write(rp.authentication_options())
    process.stdin.close()
    process.stdin = None
    shown = []
    while True:
        line = process.stderr.readline()
        assert line, "the client ended before showing a QR code: " + "".join(shown)
        shown.append(line)
        if line.startswith("FIDO:/"):
            return line.strip(), process


def registered_phone(directory, relay):
    """A phone store holding one passkey for example.com, registered unattended, and the relying party."""
    phone_store = new_store(directory, "phone.sqlite")
    rp = RelyingParty()
    radio = f"sim:127.0.0.1:{free_udp_port()}"
    process = subprocess.Popen(
        [PASSKEY_BIN, "client", "create", "--options", "-", "--origin", ORIGIN, "--hint", "hybrid",
         "--store", os.path.join(directory, "no-such-store.sqlite"), "--relay", relay, "--ble", radio, "--yes",
         "--json", "--timeout", "60"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    process.stdin.write(rp.registration_options())
    process.stdin.close()
    process.stdin = None
    url = None
    while url is None:
        line = process.stderr.readline()
        assert line, "the client ended before showing a QR code"
        if line.startswith("FIDO:/"):
            url = line.strip()
    subprocess.run([PASSKEY_BIN, "scan", url, "--store", phone_store, "--relay", relay, "--ble", radio, "--yes"],
                   capture_output=True, text=True, timeout=120, env=env(), check=True)
    output, rest = process.communicate(timeout=120)
    assert process.returncode == 0, rest
    rp.verify_registration(output)
    return phone_store, rp


def sign_in_on_a_terminal(directory, relay, phone_store, rp, answers, extra_env):
    """A hybrid sign-in with `passkey scan` on a pseudo-terminal; returns its status, what it showed, and the
    client's status and output."""
    radio = f"sim:127.0.0.1:{free_udp_port()}"
    url, client = start_sign_in(directory, relay, rp, radio)
    status, shown = on_a_terminal(
        ["scan", url, "--store", phone_store, "--relay", relay, "--ble", radio], answers, extra_env)
    if status != 0:
        stop_process(client)
        return status, shown, None, ""
    output, rest = client.communicate(timeout=120)
    return status, shown, client.returncode, output


def test_without_the_agent_a_sign_in_asks_for_the_passphrase_once(directory, relay, runtime):
    phone_store, rp = registered_phone(directory, relay)
    status, shown, client_status, output = sign_in_on_a_terminal(
        directory, relay, phone_store, rp, answering([PASSPHRASE]), {"XDG_RUNTIME_DIR": runtime})
    assert status == 0 and client_status == 0, shown
    assert shown.count(OPEN_PROMPT) == 1, shown
    assert shown.count(VERIFY_PROMPT) == 0, shown  # the passphrase typed to open was this ceremony's verification
    assert rp.verify_authentication(output).user_verified


def test_with_the_agent_a_sign_in_asks_only_to_verify_once(directory, relay, runtime):
    phone_store, rp = registered_phone(directory, relay)
    extra = {"XDG_RUNTIME_DIR": runtime}
    # `unlock` asks again after a wrong passphrase, and starts the agent.
    status, shown = on_a_terminal(["unlock", "--store", phone_store, "--for", "5m"],
                                  answering(["not the passphrase", PASSPHRASE]), extra)
    assert status == 0, shown
    assert shown.count(OPEN_PROMPT) == 2 and "Wrong passphrase, try again." in shown, shown
    assert "Unlocked " in shown and "5 min" in shown
    socket_path = os.path.join(runtime, "passkey", "agent.sock")
    assert os.stat(socket_path).st_mode & 0o777 == 0o600
    assert os.stat(os.path.dirname(socket_path)).st_mode & 0o777 == 0o700

    status, shown, client_status, output = sign_in_on_a_terminal(
        directory, relay, phone_store, rp, answering([]), extra)
    assert status == 0 and client_status == 0, shown
    assert shown.count(OPEN_PROMPT) == 0, shown  # the agent opened the store
    assert shown.count(VERIFY_PROMPT) == 1, shown  # verification is still the person's, once
    assert rp.verify_authentication(output).user_verified

    # Commands that only open the store use the agent too; `lock` makes it forget, and the agent it started exits.
    listed = subprocess.run([PASSKEY_BIN, "info", "--store", phone_store], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, **extra))
    assert listed.returncode == 0, listed.stderr
    locked = subprocess.run([PASSKEY_BIN, "lock"], capture_output=True, text=True, timeout=30,
                            env=dict(os.environ, **extra))
    assert locked.returncode == 0 and "forgot" in locked.stdout, locked.stderr
    deadline = time.monotonic() + 5
    while os.path.exists(socket_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(socket_path)
    status, shown = on_a_terminal(["info", "--store", phone_store], answering([PASSPHRASE]), extra)
    assert status == 0 and shown.count(OPEN_PROMPT) == 1, shown


def test_a_wrong_passphrase_is_asked_again_and_the_third_fails(directory, relay, runtime):
    phone_store, rp = registered_phone(directory, relay)
    extra = {"XDG_RUNTIME_DIR": runtime}
    status, shown, client_status, output = sign_in_on_a_terminal(
        directory, relay, phone_store, rp, answering(["wrong 1", "wrong 2", PASSPHRASE]), extra)
    assert status == 0 and client_status == 0, shown
    assert shown.count(OPEN_PROMPT) == 3 and shown.count(VERIFY_PROMPT) == 0, shown
    assert rp.verify_authentication(output).user_verified

    status, shown, _, _ = sign_in_on_a_terminal(
        directory, relay, phone_store, rp, answering(["wrong 1", "wrong 2", "wrong 3"]), extra)
    assert status == 1, shown
    assert shown.count(OPEN_PROMPT) == 3, shown
    errors = [line for line in shown.splitlines() if line.startswith("passkey:")]
    assert errors == ["passkey: the passphrase does not open the passkey store"], shown


def test_unlock_without_a_runtime_directory_says_why(directory):
    store = new_store(directory)
    environment = dict(os.environ, PASSKEY_PASSPHRASE=PASSPHRASE)
    environment.pop("XDG_RUNTIME_DIR", None)
    result = subprocess.run([PASSKEY_BIN, "unlock", "--store", store], capture_output=True, text=True, timeout=30,
                            env=environment)
    assert result.returncode == 1
    assert result.stderr.startswith("passkey: cannot unlock: XDG_RUNTIME_DIR is not set"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_local_registration_asks_for_the_passphrase_once(directory, runtime):
    """`client create` on this computer's store used to ask four times (chooser, passphrase, yes, passphrase again);
    the passphrase typed to unlock the store is now the ceremony's verification."""
    store = new_store(directory)
    rp = RelyingParty()
    options = os.path.join(directory, "options.json")
    with open(options, "w") as file:
        file.write(rp.registration_options())
    status, shown = on_a_terminal(
        ["client", "create", "--options", options, "--origin", ORIGIN, "--store", store, "--no-phone", "--json"],
        answering([PASSPHRASE]), {"XDG_RUNTIME_DIR": runtime})
    assert status == 0, shown
    assert shown.count(OPEN_PROMPT) == 1 and shown.count(VERIFY_PROMPT) == 0, shown
    credential = shown[shown.index("{"):shown.rindex("}") + 1]
    assert rp.verify_registration(credential).user_verified


def test_stores_are_held_by_their_real_path_and_locked_one_at_a_time(directory, runtime):
    first, second = new_store(directory, "first.sqlite"), new_store(directory, "second.sqlite")
    link = os.path.join(directory, "link.sqlite")
    os.symlink(first, link)
    extra = {"XDG_RUNTIME_DIR": runtime}
    unlocking = dict(os.environ, PASSKEY_PASSPHRASE=PASSPHRASE, **extra)
    for store in (link, second):  # the first store unlocked through a symbolic link
        result = subprocess.run([PASSKEY_BIN, "unlock", "--store", store, "--for", "90s"], capture_output=True,
                                text=True, timeout=60, env=unlocking)
        assert result.returncode == 0 and "90 s" in result.stdout, result.stderr
    for store in (first, second):  # opened without a prompt, whichever path named it
        status, shown = on_a_terminal(["info", "--store", store], answering([]), extra)
        assert status == 0 and shown.count(OPEN_PROMPT) == 0, shown
    locked = subprocess.run([PASSKEY_BIN, "lock", "--store", first], capture_output=True, text=True, timeout=30,
                            env=dict(os.environ, **extra))
    assert locked.returncode == 0, locked.stderr
    status, shown = on_a_terminal(["info", "--store", link], answering([PASSPHRASE]), extra)
    assert status == 0 and shown.count(OPEN_PROMPT) == 1, shown
    status, shown = on_a_terminal(["info", "--store", second], answering([]), extra)
    assert status == 0 and shown.count(OPEN_PROMPT) == 0, shown


def test_the_foreground_agent_serves_and_a_signal_ends_it(directory, runtime):
    """`passkey agent` as a systemd user unit runs it: `unlock` feeds it, and SIGTERM wipes the keys and removes the
    socket; the next command asks again."""
    store = new_store(directory)
    extra = {"XDG_RUNTIME_DIR": runtime}
    agent = subprocess.Popen([PASSKEY_BIN, "agent"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, **extra))
    try:
        line = agent.stdout.readline()
        socket_path = os.path.join(runtime, "passkey", "agent.sock")
        assert line == f"passkey agent: listening on {socket_path}\n", line + agent.stderr.read()
        unlocked = subprocess.run([PASSKEY_BIN, "unlock", "--store", store], capture_output=True, text=True,
                                  timeout=60, env=dict(os.environ, PASSKEY_PASSPHRASE=PASSPHRASE, **extra))
        assert unlocked.returncode == 0 and "15 min" in unlocked.stdout, unlocked.stderr
        status, shown = on_a_terminal(["info", "--store", store], answering([]), extra)
        assert status == 0 and shown.count(OPEN_PROMPT) == 0, shown
        agent.terminate()
        assert agent.wait(timeout=10) == 0
        assert not os.path.exists(socket_path)
        status, shown = on_a_terminal(["info", "--store", store], answering([PASSPHRASE]), extra)
        assert status == 0 and shown.count(OPEN_PROMPT) == 1, shown
    finally:
        if agent.poll() is None:
            stop_process(agent)
