"""`passkey inspect`: the binary's I/O contract for each decoder, on the shared known-answer vectors: one happy path
per subcommand (arguments in, JSON on standard output, exit 0) and a refusal (one line on standard error, exit
non-zero). What the reports say, text and JSON, absent keys, escaped request types, adverts that do not decrypt and
advert text that is none are Tests/TerminalIOTests/HybridInspectionTests.swift; the decoders' rules are
Tests/HybridTests."""

import json
import os
import subprocess

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


def test_qr_url_as_json_and_a_bad_one_as_one_line_on_standard_error():
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

    for url, message in [("https://example.com", "must start with FIDO:/"), ("FIDO:/12a", "digits are invalid")]:
        result = run("qr", url)
        assert result.returncode != 0 and result.stdout == "", url
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_advert_as_json_and_bad_arguments_exit_non_zero():
    expected = {
        "valid": True,
        "nonce": ADVERT["nonce"],
        "routingId": ADVERT["routing_id"].upper(),
        "domainId": ADVERT["domain_id"],
        "tunnelId": ADVERT["tunnel_id"],
        "connectURL": ADVERT["connect_url"],
    }
    assert run_json("advert", "--qr-secret", ADVERT["qr_secret"], ADVERT["advert"]) == expected
    # The same advert inside the advertising data a scanner reports (UUID list, then FFF9 service data).
    advertising_data = "0303f9ff" + "1716f9ff" + ADVERT["advert"]
    assert run_json("advert", "--qr-secret", ADVERT["qr_secret"].upper(), advertising_data) == expected

    for args, message in [
        (["--qr-secret", "01fea6f7", ADVERT["advert"]], "--qr-secret must be 16 bytes"),
        ([ADVERT["advert"]], "exactly one of --qr-secret and --qr"),
        (["--qr-secret", ADVERT["qr_secret"], ADVERT["advert"][:-2]], "is 19 bytes, not 20, and not advertising data"),
    ]:
        result = run("advert", *args)
        assert result.returncode != 0, args
        assert message in result.stderr, result.stderr


def test_a_domain_as_json_a_reserved_one_and_bad_ids_exit_non_zero():
    """One vector of each kind: every vector's host is TunnelServerTests.domainVectors (Swift)."""
    hosted = next(entry for entry in HYBRID["tunnel_domains"] if entry["host"] is not None)
    assert run_json("domain", str(hosted["id"])) == {"id": hosted["id"], "host": hosted["host"]}
    reserved = next(entry for entry in HYBRID["tunnel_domains"] if entry["host"] is None)
    result = run("domain", str(reserved["id"]))
    assert result.returncode != 0
    assert f"tunnel server domain {reserved['id']} is reserved" in result.stderr

    for value in ["65536", "abc"]:
        result = run("domain", value)
        assert result.returncode != 0, value
        assert result.stderr.strip(), value
