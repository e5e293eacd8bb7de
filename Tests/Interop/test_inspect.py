"""`passkey inspect`: the hybrid (caBLE v2) decoders run through the binary, on the shared known-answer vectors."""

import json
import os
import subprocess

import pytest

from conftest import PASSKEY_BIN

VECTORS = os.path.join(os.path.dirname(__file__), "..", "HybridTests", "Vectors", "hybrid.json")
with open(VECTORS) as file:
    HYBRID = json.load(file)

QR = HYBRID["qr_urls"][0]
ADVERT = HYBRID["adverts"][0]


def run(*args):
    return subprocess.run(
        [PASSKEY_BIN, "inspect", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
    )


def run_json(*args):
    result = run(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_qr_url_as_text():
    result = run("qr", QR["url"])
    assert result.returncode == 0, result.stderr
    assert QR["fields"]["0"] in result.stdout
    assert QR["fields"]["1"] in result.stdout
    assert "1666589051 (2022-10-24T05:24:11Z)" in result.stdout
    assert "mc (makeCredential)" in result.stdout


def test_qr_url_as_json():
    fields = QR["fields"]
    assert run_json("qr", QR["url"]) == {
        "publicKey": fields["0"],
        "secret": fields["1"],
        "knownDomains": fields["2"],
        "timestamp": fields["3"],
        "stateAssisted": fields["4"],
        "requestType": fields["5"],
    }
    # The prefix is matched without regard to case.
    assert run_json("qr", "fido:/" + QR["url"][6:])["secret"] == fields["1"]


def test_qr_json_omits_absent_keys():
    # {0: the vector's key, 1: 16 × 0x00}, digit-encoded: keys 2-5 absent.
    cbor = bytes.fromhex("a20058" + "21" + QR["fields"]["0"] + "0150" + "00" * 16)
    digits = ""
    for start in range(0, len(cbor), 7):
        chunk = cbor[start : start + 7]
        width = [0, 3, 5, 8, 10, 13, 15, 17][len(chunk)]
        digits += str(int.from_bytes(chunk, "little")).zfill(width)
    assert run_json("qr", "FIDO:/" + digits) == {"publicKey": QR["fields"]["0"], "secret": "00" * 16}


@pytest.mark.parametrize(
    "url, message",
    [
        ("https://example.com", "must start with FIDO:/"),
        ("FIDO:/1234", "digits are invalid"),
        ("FIDO:/12a", "digits are invalid"),
        ("FIDO:/999", "digits are invalid"),
        ("FIDO:/", "not canonical CBOR"),
        # The vector with the public key's last byte changed: off the curve.
        (None, "not a point on P-256"),
    ],
)
def test_bad_qr_urls_exit_non_zero(url, message):
    if url is None:
        cbor = bytearray.fromhex(QR["cbor"])
        cbor[36] ^= 0x03  # last byte of the 33-byte key (map head, key 0, bstr head 58 21, then bytes 4-36)
        digits = ""
        for start in range(0, len(cbor), 7):
            chunk = bytes(cbor[start : start + 7])
            digits += str(int.from_bytes(chunk, "little")).zfill([0, 3, 5, 8, 10, 13, 15, 17][len(chunk)])
        url = "FIDO:/" + digits
    result = run("qr", url)
    assert result.returncode != 0
    assert message in result.stderr


def test_advert_as_text():
    result = run("advert", "--qr-secret", ADVERT["qr_secret"], ADVERT["advert"])
    assert result.returncode == 0, result.stderr
    assert "valid        yes" in result.stdout
    assert ADVERT["connect_url"] in result.stdout
    assert ADVERT["tunnel_id"] in result.stdout


def test_advert_as_json():
    expected = {
        "valid": True,
        "nonce": ADVERT["nonce"],
        "routingID": ADVERT["routing_id"].upper(),
        "domainID": ADVERT["domain_id"],
        "tunnelID": ADVERT["tunnel_id"],
        "connectURL": ADVERT["connect_url"],
    }
    assert run_json("advert", "--qr-secret", ADVERT["qr_secret"], ADVERT["advert"]) == expected
    # The same advert inside the advertising data a scanner reports (UUID list, then FFF9 service data).
    advertising_data = "0303f9ff" + "1716f9ff" + ADVERT["advert"]
    assert run_json("advert", "--qr-secret", ADVERT["qr_secret"].upper(), advertising_data) == expected


def test_advert_that_does_not_decrypt_is_reported_invalid():
    damaged = ADVERT["advert"][:-2] + "00"
    assert run_json("advert", "--qr-secret", ADVERT["qr_secret"], damaged) == {
        "valid": False,
        "reason": "advert tag does not match: not encrypted with this key",
    }
    other_secret = "00" * 16
    text = run("advert", "--qr-secret", other_secret, ADVERT["advert"])
    assert text.returncode == 0 and "valid        no: advert tag does not match" in text.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--qr-secret", "01fea6f7", ADVERT["advert"]], "--qr-secret must be 16 bytes"),
        (["--qr-secret", "zz" * 16, ADVERT["advert"]], "--qr-secret must be 16 bytes"),
        (["--qr-secret", ADVERT["qr_secret"], "not hex"], "The advert must be hex"),
        (["--qr-secret", ADVERT["qr_secret"], ADVERT["advert"][:-2]], "is 19 bytes, not 20, and not advertising data"),
        (["--qr-secret", ADVERT["qr_secret"], "0303f9ff"], "with 20 bytes of service data for UUID 0xFDE2 or 0xFFF9"),
        ([ADVERT["advert"]], "exactly one of --qr-secret and --qr"),
        (["--qr-secret", ADVERT["qr_secret"], "--qr", QR["url"], ADVERT["advert"]], "exactly one of"),
        (["--qr-secret", ADVERT["qr_secret"], "1816f9ff" + ADVERT["advert"]], "runs past the end"),
    ],
)
def test_bad_advert_arguments_exit_non_zero(args, message):
    result = run("advert", *args)
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.parametrize(
    "entry", HYBRID["tunnel_domains"], ids=lambda entry: str(entry["id"])
)
def test_domains(entry):
    if entry["host"] is None:
        result = run("domain", str(entry["id"]))
        assert result.returncode != 0
        assert f"tunnel server domain {entry['id']} is reserved" in result.stderr
    else:
        assert run_json("domain", str(entry["id"])) == {"id": entry["id"], "host": entry["host"]}
        text = run("domain", str(entry["id"]))
        assert text.returncode == 0 and entry["host"] in text.stdout


@pytest.mark.parametrize("value", ["65536", "-1", "abc", "2"])
def test_bad_domain_ids_exit_non_zero(value):
    result = run("domain", value)
    assert result.returncode != 0
    assert result.stderr.strip()


def test_qr_text_output_escapes_control_characters():
    """A QR code's request type is text chosen by whoever made the code: OSC and CSI sequences in it are shown as
    escapes, not sent to the terminal (issue 10, defect 5)."""
    hostile = "\x1b]0;pwned\x07\x1b[2J".encode()
    cbor = bytes.fromhex("a30058" + "21" + QR["fields"]["0"] + "0150" + "00" * 16 + "05") + bytes([0x60 + len(hostile)]) + hostile
    digits = ""
    for start in range(0, len(cbor), 7):
        chunk = cbor[start : start + 7]
        width = [0, 3, 5, 8, 10, 13, 15, 17][len(chunk)]
        digits += str(int.from_bytes(chunk, "little")).zfill(width)
    result = run("qr", "FIDO:/" + digits)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "request type    \\u{1B}]0;pwned\\u{7}\\u{1B}[2J" in result.stdout
