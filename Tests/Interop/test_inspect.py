"""`passkey inspect`: the binary's I/O contract for each decoder, on the shared known-answer vectors: one happy path
per subcommand (arguments in, JSON on standard output, exit 0) and a refusal (one line on standard error, exit
non-zero). What the reports say, text and JSON, absent keys, escaped request types, adverts that do not decrypt and
advert text that is none are Tests/TerminalIOTests/HybridInspectionTests.swift; the decoders' rules are
Tests/HybridTests."""

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


@pytest.mark.parametrize("url, message", [("https://example.com", "must start with FIDO:/"), ("FIDO:/12a", "digits are invalid")])
def test_a_bad_qr_url_is_one_line_on_standard_error(url, message):
    result = run("qr", url)
    assert result.returncode != 0 and result.stdout == ""
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


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


@pytest.mark.parametrize(
    "args, message",
    [
        (["--qr-secret", "01fea6f7", ADVERT["advert"]], "--qr-secret must be 16 bytes"),
        ([ADVERT["advert"]], "exactly one of --qr-secret and --qr"),
        (["--qr-secret", ADVERT["qr_secret"], ADVERT["advert"][:-2]], "is 19 bytes, not 20, and not advertising data"),
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


@pytest.mark.parametrize("value", ["65536", "abc"])
def test_bad_domain_ids_exit_non_zero(value):
    result = run("domain", value)
    assert result.returncode != 0
    assert result.stderr.strip()
