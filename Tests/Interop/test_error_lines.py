"""Every command fails the same way (issue 24, item 5; Docs/ExitStatus.md): one line on standard error,
`passkey: <what failed>: <why>`, with no library type names, errno values, source paths or `Error:` prefix, and the
exit status from the one table.

The commands are read from `passkey --help` and each command's own help, so a new command is covered at once: every
command is run with an option it does not have (a usage error, 64), and must have a row in BAD_INPUT, which runs it
with input that is wrong for it (a missing store, a file that is not there, a value that is not one) and names the
status it must end with.
"""

import os
import re
import stat
import subprocess

import pytest

from conftest import PASSKEY_BIN

USAGE, FAILURE, UNANSWERED, NOT_FOUND, SETTINGS = 64, 1, 2, 4, 78

# Text that must never reach a person's error line: library and type names, errno, source paths, the parser's prefix.
FORBIDDEN = [
    "errno", "NIO", "BoringSSL", "OpenSSL", "/work/", ".swift", "Swift.", "ChannelError", "IOError",
    "DecodingError", "CocoaError", "NSError", "POSIXError", "Foundation.", "Optional(", "CommandFailure",
    "ProviderError", "CredentialStoreError", "SettingsError", "TOMLParseError",
]


def command_tree(path=()):
    """Every command that runs (has no subcommands), as the words that name it: read from the help text."""
    help_text = subprocess.run([PASSKEY_BIN, *path, "--help"], capture_output=True, text=True, check=True).stdout
    section = re.search(r"\nSUBCOMMANDS:\n(.*?)(?:\n\n|$)", help_text, re.S)
    if not section:
        return [path]
    names = [m.group(1) for m in re.finditer(r"^  (\S+)", section.group(1), re.M)]
    return [leaf for name in names if name != "help" for leaf in command_tree((*path, name))]


@pytest.fixture
def home(tmp_path):
    """An empty home: no store, no settings file, and a regular file where a directory would be needed."""
    for name in ("config", "data", "runtime"):
        (tmp_path / name).mkdir()
    (tmp_path / "runtime").chmod(0o700)
    (tmp_path / "a-file").write_text("not a directory\n")
    (tmp_path / "not-json.json").write_text("{ this is not json\n")
    (tmp_path / "not-a-picture.png").write_text("not a picture\n")
    return tmp_path


def environment(home, **extra):
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"), "XDG_RUNTIME_DIR": str(home / "runtime"), "LANG": "C.UTF-8",
        "PASSKEY_BLE": f"sim:127.0.0.1:9",
    }
    environment.update(extra)
    return environment


def run(home, *arguments, env=None, timeout=60):
    return subprocess.run(
        [PASSKEY_BIN, *arguments], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout,
        env=env or environment(home))


def check_one_line(result, status, words):
    lines = result.stderr.splitlines()
    shown = f"passkey {' '.join(words)}: status {result.returncode}, stderr {result.stderr!r}"
    assert len(lines) == 1, shown
    assert lines[0].startswith("passkey: "), shown
    assert len(lines[0]) > len("passkey: ") + 10, shown
    for forbidden in FORBIDDEN:
        assert forbidden not in lines[0], f"{forbidden!r} in {shown}"
    # The parser's `Error:` prefix (a DOMException name such as `NotAllowedError:` is the client's contract).
    assert not re.search(r"(?<![A-Za-z])Error:", lines[0]), shown
    assert result.returncode == status, shown
    return lines[0]


MISSING = "{home}/data/no-store.sqlite"

# Each command, input that is wrong for it, and the status it must end with. `{home}` is the test's empty home.
BAD_INPUT = {
    ("init",): (["--store", "{home}/a-file/passkeys.sqlite"], FAILURE),
    ("serve",): (["--udp", "127.0.0.1:1", "--store", MISSING], FAILURE),
    ("scan",): (["https://example.com/not-a-fido-url", "--store", MISSING], FAILURE),
    ("listen",): (["--store", MISSING], FAILURE),
    ("links", "list"): (["--store", MISSING], FAILURE),
    ("links", "remove"): (["0123456789abcdef", "--store", MISSING], FAILURE),
    ("links", "revoke"): (["--store", MISSING], FAILURE),
    ("client", "create"): (["--options", "{home}/missing.json", "--origin", "https://example.com"], FAILURE),
    ("client", "get"): (["--options", "{home}/missing.json", "--origin", "https://example.com"], FAILURE),
    ("client", "register"): (["--rp", "example.com", "--user", "alice", "--rp-state", "{home}/a-file/s.json"], FAILURE),
    ("client", "sign-in"): (["--rp", "example.com", "--rp-state", "{home}/a-file/s.json"], FAILURE),
    ("client", "links", "list"): (["--store", MISSING], FAILURE),
    ("client", "capabilities"): (["--ble", "not-a-radio"], USAGE),
    ("client", "signal"): (["unknown", "--origin", "https://example.com", "--options", "{home}/not-json.json"], 17),
    ("client", "links", "remove"): (["a phone", "--store", MISSING], FAILURE),
    ("rp", "serve"): (["--listen", "not-an-address"], USAGE),
    ("list",): (["--store", MISSING], FAILURE),
    ("delete",): (["b64:AAAA", "--store", MISSING], FAILURE),
    ("rename",): (["b64:AAAA", "--name", "alice", "--store", MISSING], FAILURE),
    ("note",): (["b64:AAAA", "--show", "--store", MISSING], FAILURE),
    ("unhide",): (["b64:AAAA", "--store", MISSING], FAILURE),
    ("password", "add"): (["example.com", "alice", "--store", MISSING], FAILURE),
    ("password", "get"): (["example.com", "--store", MISSING], FAILURE),
    ("password", "list"): (["--store", MISSING], FAILURE),
    ("password", "delete"): (["example.com", "alice", "--store", MISSING], FAILURE),
    ("password", "note"): (["example.com", "alice", "--show", "--store", MISSING], FAILURE),
    ("password", "request"): (["--app", "ABCDE12345.com.example.app", "--store", MISSING], FAILURE),
    ("password", "generate"): (["--rules", "minlength: many;"], FAILURE),
    ("otp", "add"): (["--site", "example.com", "--file", "{home}/missing.txt", "--store", MISSING], FAILURE),
    ("otp", "code"): (["example.com", "--store", MISSING], FAILURE),
    ("otp", "list"): (["--store", MISSING], FAILURE),
    ("otp", "delete"): (["example.com", "alice", "--store", MISSING], FAILURE),
    ("export",): (["--store", MISSING, "--to", "{home}/missing.jwk", "--output", "{home}/out.json"], FAILURE),
    ("import",): (["{home}/missing.json", "--store", MISSING], FAILURE),
    ("import-key", "new"): (["--output", "{home}/a-file/key.jwk"], FAILURE),
    ("share",): (["b64:AAAA", "--store", MISSING], FAILURE),
    ("receive",): (["--store", MISSING], FAILURE),
    ("info",): (["--store", MISSING], FAILURE),
    ("demo",): (["--rp="], USAGE),
    ("inspect", "qr"): (["FIDO:/1234"], FAILURE),
    ("inspect", "advert"): (["not-hex", "--qr", "FIDO:/1234"], USAGE),
    ("inspect", "domain"): (["not-a-number"], USAGE),
    ("inspect", "origin"): (["not an origin", "--rp-id", "example.com"], UNANSWERED),
    ("inspect", "banner"): (["{home}/missing.html"], UNANSWERED),
    ("domains", "check"): (["example.com", "--app", "not-an-app-id"], UNANSWERED),
    ("domains", "sign"): (["{home}/missing.json", "--key", "{home}/missing.pem", "--cert", "{home}/missing.pem"], FAILURE),
    ("domains", "list"): (["--store", "{home}/a-file/passkeys.sqlite"], FAILURE),
    ("domains", "forget"): (["example.com", "--store", "{home}/a-file/passkeys.sqlite"], UNANSWERED),
    ("domains", "match"): (["https://example.com/x", "--file", "{home}/not-json.json", "--app", "ABCDE12345.com.example.app"], UNANSWERED),
    ("domains", "endpoints"): (["not a domain"], USAGE),
    ("config",): (["--timeout", "0"], USAGE),
    ("unlock",): (["--store", MISSING], FAILURE),
    ("lock",): (["--store", MISSING, "extra"], USAGE),
    # The queue of requests from services without a terminal (Docs/Consent.md).
    ("pending",): ([], FAILURE, {"XDG_RUNTIME_DIR": "relative/runtime"}),
    ("approve",): (["0000abcd"], NOT_FOUND),
    ("deny",): (["not-an-id"], USAGE),
    # The agent takes no input but its environment: a runtime directory that is a file.
    ("agent",): ([], FAILURE, {"XDG_RUNTIME_DIR": "{home}/a-file"}),
}


def test_every_command_has_a_bad_input_row():
    commands = set(command_tree())
    assert commands, "no commands read from the help"
    assert ("config",) in commands and ("client", "get") in commands
    assert sorted(commands - set(BAD_INPUT)) == [], "commands without a row in BAD_INPUT"
    assert sorted(set(BAD_INPUT) - commands) == [], "rows for commands that do not exist"


# Every command's shared flags (-q, -v; --json, --yes and --store as one option group each) are checked in process,
# from the command tree: Tests/CommandLineTests/SharedFlagsTests.swift.


# A QR code asking to create a passkey (from test_share.py).
QR_CODE = ("FIDO:/162870791865632382552704231438327900152302540348097243854039966655366469794954"
           "476199158014113179232779520163209900691930075274801398564434658077048963842109321447142660")


def test_quiet_leaves_the_error_line_and_verbose_adds_its_cause(home):
    """One meaning of -q and -v on every command (Docs/CommandLine.md): `scan` with a relay CA file that is not one
    prints its progress line and the error line; -q only the error line; -v the error line and, after it, the
    library's own words, which are otherwise hidden. Nothing is created."""
    (home / "bad.pem").write_text("not a certificate\n")
    arguments = ["scan", QR_CODE, "--relay-ca", str(home / "bad.pem"), "--relay", "wss://127.0.0.1:9",
                 "--store", MISSING.format(home=home)]
    line = f"passkey: cannot use --relay-ca {home}/bad.pem: it is not a PEM certificate file"
    normal, quiet, verbose = (run(home, *arguments, *flags) for flags in ([], ["-q"], ["-v"]))
    for result in (normal, quiet, verbose):
        assert result.returncode == FAILURE and result.stdout == "", result.stderr
    assert re.match(r"\[\s*\d+\.\d{3} s\] QR code read", normal.stderr) and normal.stderr.splitlines()[-1] == line
    assert quiet.stderr.splitlines() == [line], quiet.stderr
    lines = verbose.stderr.splitlines()
    assert lines[-2] == line and lines[-1].startswith("passkey: detail: ") and len(lines[-1]) > 20, verbose.stderr
    assert "detail" not in normal.stderr
    assert os.listdir(home / "data") == []


def test_quiet_and_verbose_exclude_each_other(home):
    check_one_line(run(home, "list", "-q", "-v"), USAGE, ("list",))


@pytest.mark.parametrize("words", command_tree(), ids=" ".join)
def test_an_unknown_option_is_one_usage_line(home, words):
    # The parser may report a missing argument or a `validate()` refusal first: any usage error, in one line.
    line = check_one_line(run(home, *words, "--no-such-option"), USAGE, words)
    assert f"`passkey {' '.join(words)} --help`" in line


@pytest.mark.parametrize("words", sorted(BAD_INPUT), ids=" ".join)
def test_bad_input_is_one_line_and_the_documented_status(home, words):
    arguments, status, *variables = BAD_INPUT[words]
    extra = {name: value.format(home=home) for name, value in (variables[0] if variables else {}).items()}
    result = run(home, *words, *[a.format(home=home) for a in arguments], env=environment(home, **extra))
    check_one_line(result, status, words)


def write_settings(home, text, mode=0o600):
    path = home / "config" / "passkey" / "settings.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.parametrize(
    "text,expected",
    [
        ('store = "/s"\nrelay = \n', ": line 2: expected value"),
        ('colour = "blue"\n', ": colour is not a setting"),
        ('timeout = "soon"\n', ": timeout must be a number of seconds"),
        ('relay = "https://relay.example"\n', ": relay: https://relay.example is not a relay"),
    ],
    ids=["malformed", "unknown key", "wrong type", "bad value"])
def test_a_damaged_settings_file_stops_every_command_with_one_line(home, text, expected):
    path = write_settings(home, text)
    for words in [("list",), ("config",), ("client", "links")]:
        line = check_one_line(run(home, *words), SETTINGS, words)
        assert line.startswith(f"passkey: {path}") and expected in line, line
    # Nothing else changed: no store, no data directory contents.
    assert os.listdir(home / "data") == []
    # Help still prints.
    for words in [(), ("--help",), ("help", "list"), ("list", "--help")]:
        assert run(home, *words).returncode == 0, words


def test_a_settings_file_others_may_change_is_refused(home):
    path = write_settings(home, 'radio = "sim"\n', mode=0o666)
    line = check_one_line(run(home, "config"), SETTINGS, ("config",))
    assert f"{path}: other users may change it" in line


def test_a_bad_environment_value_is_refused_naming_the_variable(home):
    line = check_one_line(run(home, "config", env=environment(home, PASSKEY_TIMEOUT="soon")), SETTINGS, ("config",))
    assert line.startswith("passkey: PASSKEY_TIMEOUT: soon is not a number of seconds"), line


def wait_for_line(process, pattern, stream):
    seen = []
    while True:
        line = stream.readline()
        assert line, "ended before " + pattern + ": " + "".join(seen)
        seen.append(line)
        if re.search(pattern, line):
            return


@pytest.mark.parametrize(
    "words,ready,stream",
    [
        (("rp", "serve", "--listen", "127.0.0.1:0"), r"^listening on ", "stdout"),
        (("scan", "--store", MISSING), None, None),
        (("client", "get", "--options", "-", "--origin", "https://example.com"), None, None),
    ],
    ids=["rp serve", "scan", "client get"])
def test_ctrl_c_ends_every_command_the_same_way(home, words, ready, stream):
    """A command waiting for a person or a browser, then Ctrl-C (SIGINT): one line, `passkey: interrupted`, 130."""
    import signal
    import time

    process = subprocess.Popen(
        [PASSKEY_BIN, *[w.format(home=home) for w in words]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=environment(home))
    try:
        if ready:
            wait_for_line(process, ready, getattr(process, stream))
        else:
            time.sleep(2)  # reading standard input (a QR code URL, the options), which stays open
        assert process.poll() is None, process.communicate()
        process.send_signal(signal.SIGINT)
        # Standard input stays open until the process has ended: `communicate` would close it at once, and a
        # process slow to act on the signal (a loaded machine) would first read the end of its input and fail on
        # that instead.
        process.wait(timeout=30)
        stderr = process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1] == "passkey: interrupted", stderr


def test_sigterm_stops_a_server_cleanly(home):
    process = subprocess.Popen(
        [PASSKEY_BIN, "rp", "serve", "--listen", "127.0.0.1:0"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=environment(home))
    wait_for_line(process, r"^listening on ", process.stdout)
    process.terminate()
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0 and stderr.splitlines()[-1] == "passkey: stopped", stderr


def test_a_chooser_nobody_can_answer_is_not_shown(home):
    """`client create` with a store and a phone to choose from, no terminal and no --yes: no chooser is printed, and
    the one line says there is no terminal rather than that the person cancelled (issue 24, item 5)."""
    store = str(home / "data" / "passkeys.sqlite")
    env = environment(home, PASSKEY_PASSPHRASE="a long enough interop passphrase", PASSKEY_STORE=store)
    assert run(home, "init", env=env).returncode == 0
    options = (
        '{"rp":{"id":"example.com","name":"Example"},"user":{"id":"AAAA","name":"alice","displayName":"Alice"},'
        '"challenge":"AAAAAAAAAAAAAAAAAAAAAA","pubKeyCredParams":[{"type":"public-key","alg":-7}]}')
    result = subprocess.run(
        [PASSKEY_BIN, "client", "create", "--options", "-", "--origin", "https://example.com"], input=options,
        capture_output=True, text=True, timeout=60, env=env, start_new_session=True)
    line = check_one_line(result, 10, ("client", "create"))
    assert line.startswith("passkey: NotAllowedError: there is no terminal to choose an authenticator on"), line


@pytest.mark.parametrize(
    "security_key,expected",
    [
        ("hidraw:{home}/no-such-hidraw", "does not exist: is the security key plugged in?"),
        ("udp:127.0.0.1:1", "UDP to 127.0.0.1:1 failed: connection refused"),
    ],
    ids=["hidraw", "udp"])
def test_a_security_key_that_cannot_be_reached_is_said_in_a_persons_terms(home, security_key, expected):
    """Progress lines may come first; the failure is the last line, without errno numbers or NIO's address forms
    (`[IPv4]127.0.0.1/127.0.0.1:1`)."""
    (home / "get.json").write_text('{"challenge":"AAAAAAAAAAAAAAAAAAAAAA","rpId":"example.com"}')
    result = run(home, "client", "get", "--options", str(home / "get.json"), "--origin", "https://example.com",
                 "--no-phone", "--security-key", security_key.format(home=home), "--timeout", "10")
    assert result.returncode == 10, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("passkey: NotAllowedError: the authenticator could not be reached: ") and expected in last, last
    for forbidden in FORBIDDEN + ["[IPv4]"]:
        assert forbidden not in result.stderr, result.stderr


# MARK: passkey-relay

RELAY_BIN = os.environ.get("PASSKEY_RELAY_BIN", os.path.join(os.path.dirname(PASSKEY_BIN), "passkey-relay"))


def run_relay(*arguments):
    return subprocess.run([RELAY_BIN, *arguments], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=60)


@pytest.mark.parametrize(
    "arguments,status,expected",
    [
        (["--no-such-option"], USAGE, "passkey-relay: unknown option '--no-such-option' (see `passkey-relay --help`)"),
        (["--listen", "nowhere"], USAGE, "passkey-relay: --listen must be HOST:PORT with a port from 0 to 65535 (see `passkey-relay --help`)"),
        (["-q", "-v"], USAGE, "passkey-relay: --quiet and --verbose exclude each other (see `passkey-relay --help`)"),
        (["--print-routing-id"], USAGE, "passkey-relay: --print-routing-id needs --routing-id or --instance (see `passkey-relay --help`)"),
        (["--tls-cert", "{home}/missing.pem", "--tls-key", "{home}/missing.pem", "--listen", "127.0.0.1:0"], FAILURE,
         "passkey-relay: cannot serve wss: {home}/missing.pem does not exist"),
        (["--tls-cert", "{home}/not-json.json", "--tls-key", "{home}/not-json.json", "--listen", "127.0.0.1:0"],
         FAILURE, "passkey-relay: cannot serve wss: {home}/not-json.json and {home}/not-json.json are not a PEM "
         "certificate chain and its private key"),
    ],
    ids=["unknown option", "bad value", "quiet and verbose", "run-time usage", "missing file", "not PEM"])
def test_the_relay_fails_in_the_same_one_line_format(home, arguments, status, expected):
    """`passkey-relay`'s failures in `passkey`'s format (Docs/ExitStatus.md): one line, `passkey-relay: what failed:
    why`, no `Error:` prefix, usage text, library type name or errno; its text made terminal-safe by the same
    function (Basics' `terminalSafe`)."""
    result = run_relay(*[argument.format(home=home) for argument in arguments])
    shown = f"status {result.returncode}, stderr {result.stderr!r}"
    assert result.stderr.splitlines() == [expected.format(home=home)], shown
    assert result.returncode == status, shown


def test_a_relay_port_in_use_is_said_in_a_persons_terms(home):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for verbose in ([], ["-v"]):
            result = run_relay("--listen", f"127.0.0.1:{port}", *verbose)
            assert result.returncode == FAILURE, result.stderr
            assert result.stderr.splitlines()[-1] == f"passkey-relay: cannot listen on 127.0.0.1:{port}: address already in use", result.stderr
            for forbidden in FORBIDDEN:
                assert forbidden not in result.stderr, result.stderr


def test_the_relay_names_control_characters_it_was_given_safely(home):
    result = run_relay("--trusted-proxy", "\x1b[2Kforged")
    assert result.returncode == USAGE, result.stderr
    assert "\x1b" not in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("passkey-relay: --trusted-proxy \\u{1B}[2Kforged: "), result.stderr


def test_the_relays_help_shows_quiet_and_verbose():
    text = subprocess.run([RELAY_BIN, "--help"], capture_output=True, text=True, check=True).stdout
    options = [" ".join(line.split()) for line in text.split("\nOPTIONS:\n", 1)[1].splitlines()]
    assert any(line.startswith("-q, --quiet Print only the result") for line in options), options
    assert any(line.startswith("-v, --verbose Print details") for line in options), options
