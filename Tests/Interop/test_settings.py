"""Settings in one place (issue 24, item 4; Docs/Settings.md): the settings file, the PASSKEY_ variables and the flags,
strongest first, as `passkey config` shows them and as the commands use them."""

import json
import os
import subprocess

from conftest import PASSKEY_BIN, PASSPHRASE


def environment(home, **extra):
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"), "LANG": "C.UTF-8", "PASSKEY_PASSPHRASE": PASSPHRASE,
    }
    environment.update(extra)
    return environment


def passkey(home, *arguments, **extra):
    return subprocess.run(
        [PASSKEY_BIN, *arguments], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
        env=environment(home, **extra))


def write_settings(home, text):
    path = home / "config" / "passkey" / "settings.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def config(home, *flags, **extra):
    result = passkey(home, "config", "--json", *flags, **extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_config_shows_each_value_and_where_it_came_from(tmp_path):
    shown = config(tmp_path)
    assert shown["file"] == str(tmp_path / "config" / "passkey" / "settings.toml") and not shown["filePresent"]
    assert shown["settings"]["store"] == {
        "value": str(tmp_path / "data" / "passkey" / "passkeys.sqlite"), "source": "default"}
    assert shown["settings"]["timeout"] == {"value": "120", "source": "default"}
    assert shown["settings"]["relay"] == {"value": None, "source": "default"}

    write_settings(tmp_path, 'relay = "wss://relay.example:8443"\nradio = "sim"\ntimeout = 30\n')
    shown = config(tmp_path, "--timeout", "5", PASSKEY_RELAY="ws://127.0.0.1:9")
    assert shown["filePresent"]
    assert shown["settings"]["timeout"] == {"value": "5", "source": "flag"}
    assert shown["settings"]["relay"] == {"value": "ws://127.0.0.1:9", "source": "environment"}
    assert shown["settings"]["radio"] == {"value": "sim:127.0.0.1:47250", "source": "file"}
    assert shown["settings"]["relay-ca"] == {"value": None, "source": "default"}
    assert shown["settings"]["consent"] == {"value": "auto", "source": "default"}

    # The consent settings: flag, variable and file, as the others.
    write_settings(tmp_path, 'consent = "queue"\nconsent-timeout = 30\n')
    shown = config(tmp_path, "--consent", "notification", PASSKEY_CONSENT_UV_WINDOW="2")
    assert shown["settings"]["consent"] == {"value": "notification", "source": "flag"}
    assert shown["settings"]["consent-uv-window"] == {"value": "2", "source": "environment"}
    assert shown["settings"]["consent-timeout"] == {"value": "30", "source": "file"}
    write_settings(tmp_path, 'relay = "wss://relay.example:8443"\nradio = "sim"\ntimeout = 30\n')

    text = passkey(tmp_path, "config").stdout.splitlines()
    assert text[0] == f"settings file: {tmp_path}/config/passkey/settings.toml"
    assert text[2].split() == ["relay", "wss://relay.example:8443", "file"]
    assert text[5].split() == ["timeout", "30", "file"]


def test_the_store_comes_from_the_flag_the_variable_or_the_file(tmp_path):
    write_settings(tmp_path, 'store = "~/from-file/passkeys.sqlite"\n')
    created = passkey(tmp_path, "init")
    assert created.returncode == 0, created.stderr
    assert (tmp_path / "from-file" / "passkeys.sqlite").exists()
    assert not (tmp_path / "data" / "passkey").exists()

    from_variable = tmp_path / "from-variable.sqlite"
    assert passkey(tmp_path, "init", PASSKEY_STORE=str(from_variable)).returncode == 0
    assert from_variable.exists()

    from_flag = tmp_path / "from-flag.sqlite"
    assert passkey(tmp_path, "init", "--store", str(from_flag), PASSKEY_STORE=str(tmp_path / "x")).returncode == 0
    assert from_flag.exists() and not (tmp_path / "x").exists()

    # `list` reads the store the file names.
    listed = passkey(tmp_path, "list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stderr
