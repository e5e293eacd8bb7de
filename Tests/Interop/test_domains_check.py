"""`passkey domains check|sign|list|forget` against a local HTTPS server (Python's http.server with ssl).

The certificates are test material made here with the `cryptography` package: a CA, a server certificate for
localhost and one for other.example, each valid for a day. Signed files are made both by `openssl smime -sign
-nodetach -outform DER` (as Apple's documentation shows) and by `passkey domains sign`, whose output `openssl cms
-verify` must accept. Each answer the server gives ends in its state, in the table `domains list` prints.
"""

import datetime
import http.server
import json
import os
import ssl
import subprocess
import tempfile
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from conftest import PASSKEY_BIN

APP = "ABCDE12345.com.example.app"
NAMING = json.dumps({
    "webcredentials": {"apps": [APP]},
    "applinks": {"details": [{"appIDs": [APP], "components": [{"/": "/*"}]}]},
}).encode()
WELL_KNOWN = "/.well-known/apple-app-site-association"
ROOT = "/apple-app-site-association"


def write_pem(path, data):
    with open(path, "wb") as file:
        file.write(data)
    os.chmod(path, 0o600)
    return path


def make_pki(directory):
    """A test CA and two server certificates it issued (test material only)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "passkey interop test CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(1).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    paths = {"ca": write_pem(os.path.join(directory, "ca.pem"), ca.public_bytes(serialization.Encoding.PEM))}
    for serial, (name, names) in enumerate({"localhost": ["localhost"], "other": ["other.example"]}.items(), 2):
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(serial)
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        paths[name] = write_pem(
            os.path.join(directory, f"{name}.pem"), certificate.public_bytes(serialization.Encoding.PEM))
        paths[name + "-key"] = write_pem(
            os.path.join(directory, f"{name}-key.pem"),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))
    return paths


class Site:
    """An HTTPS server on 127.0.0.1 answering each path from `routes`: path → (status, content type, body) or a
    list of those, one per request (the last repeats). Requests are recorded."""

    def __init__(self, pki):
        self.routes = {}
        self.requests = []
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                site.requests.append(self.path)
                answer = site.routes.get(self.path, (404, "text/plain", b"not found"))
                if isinstance(answer, list):
                    answer = answer.pop(0) if len(answer) > 1 else answer[0]
                status, content_type, body = answer
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                if 300 <= status < 400:
                    self.send_header("Location", "/elsewhere")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki["localhost"], pki["localhost-key"])
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def setup():
    with tempfile.TemporaryDirectory() as directory:
        pki = make_pki(directory)
        site = Site(pki)
        try:
            yield directory, pki, site
        finally:
            site.close()


def passkey(directory, *args, check=None):
    store = [] if args[0] == "sign" else ["--store", os.path.join(directory, "passkeys.sqlite")]
    result = subprocess.run([PASSKEY_BIN, "domains", *args, *store], capture_output=True, timeout=120)
    if check is not None:
        assert result.returncode == check, result.stderr.decode()
    return result


def check(directory, pki, site, *extra, expect):
    result = passkey(directory, "check", f"localhost:{site.port}", "--app", APP, "--ca", pki["ca"], "--json",
                     "--retry-delay", "0", *extra, check=expect)
    return json.loads(result.stdout)


def openssl_sign(directory, pki, name, content):
    source = os.path.join(directory, "aasa.json")
    with open(source, "wb") as file:
        file.write(content)
    out = os.path.join(directory, f"signed-{name}.der")
    subprocess.run(["openssl", "smime", "-sign", "-nodetach", "-binary", "-in", source, "-signer", pki[name],
                    "-inkey", pki[name + "-key"], "-outform", "DER", "-out", out], check=True, capture_output=True)
    with open(out, "rb") as file:
        return file.read()


def test_a_plain_file_approves_and_lands_in_the_table(setup):
    directory, pki, site = setup
    site.routes[WELL_KNOWN] = (200, "application/json", NAMING)
    answer = check(directory, pki, site, expect=0)
    assert answer["state"] == "approved"
    assert answer["status"] == 200
    assert answer["url"] == f"https://localhost:{site.port}{WELL_KNOWN}"
    assert answer["entitlement"] == f"webcredentials:localhost:{site.port}"
    table = os.path.join(directory, "domains.json")
    assert os.stat(table).st_mode & 0o777 == 0o600
    listed = json.loads(passkey(directory, "list", "--json", check=0).stdout)
    assert [(e["entitlement"], e["app"], e["state"]) for e in listed] == [
        (f"webcredentials:localhost:{site.port}", APP, "approved")]
    # Another service for the same app: applinks, many to many.
    assert check(directory, pki, site, "--service", "applinks", expect=0)["state"] == "approved"
    assert len(json.loads(passkey(directory, "list", "--json", check=0).stdout)) == 2
    forgot = passkey(directory, "forget", APP, check=0)
    assert b"Forgot 2 entries" in forgot.stdout
    assert json.loads(passkey(directory, "list", "--json", check=0).stdout) == []


def test_a_file_openssl_signed_approves(setup):
    directory, pki, site = setup
    site.routes[WELL_KNOWN] = (200, "application/pkcs7-mime", openssl_sign(directory, pki, "localhost", NAMING))
    answer = check(directory, pki, site, expect=0)
    assert answer["state"] == "approved", answer["reason"]
    assert answer["signer"] == "CN=localhost"


def test_a_file_passkey_signs_passes_openssl_and_the_check(setup):
    directory, pki, site = setup
    source = os.path.join(directory, "aasa.json")
    with open(source, "wb") as file:
        file.write(NAMING)
    signed = os.path.join(directory, "aasa.p7m")
    passkey(directory, "sign", "--cert", pki["localhost"], "--key", pki["localhost-key"], source, "--output", signed,
            check=0)
    verified = subprocess.run(["openssl", "cms", "-verify", "-inform", "DER", "-in", signed, "-CAfile", pki["ca"],
                               "-purpose", "sslserver"], capture_output=True)
    assert verified.returncode == 0, verified.stderr.decode()
    assert verified.stdout == NAMING
    with open(signed, "rb") as file:
        site.routes[WELL_KNOWN] = (200, "application/octet-stream", file.read())
    assert check(directory, pki, site, expect=0)["state"] == "approved"
    # It never replaces a file, and refuses a file that is not an association file.
    again = passkey(directory, "sign", "--cert", pki["localhost"], "--key", pki["localhost-key"], source,
                    "--output", signed, check=1)
    assert b"already exists" in again.stderr
    with open(source, "wb") as file:
        file.write(b'{"webcredentials": {"apps": 3}}')
    bad = passkey(directory, "sign", "--cert", pki["localhost"], "--key", pki["localhost-key"], source,
                  "--output", os.path.join(directory, "bad.p7m"), check=1)
    assert b"not a valid apple-app-site-association" in bad.stderr
    mismatched = passkey(directory, "sign", "--cert", pki["localhost"], "--key", pki["other-key"],
                         os.path.join(directory, "aasa.json"), "--output", os.path.join(directory, "x.p7m"), check=1)
    assert b"does not belong to the certificate" in mismatched.stderr or b"not a valid" in mismatched.stderr


def test_a_file_signed_for_another_domain_is_denied(setup):
    directory, pki, site = setup
    site.routes[WELL_KNOWN] = (200, "application/pkcs7-mime", openssl_sign(directory, pki, "other", NAMING))
    answer = check(directory, pki, site, expect=1)
    assert answer["state"] == "denied"
    assert "not valid for localhost" in answer["reason"]


@pytest.mark.parametrize("status", [301, 302, 404, 410])
def test_a_redirect_or_missing_file_is_denied(setup, status):
    directory, pki, site = setup
    site.routes[WELL_KNOWN] = (status, "text/plain", b"")
    site.routes[ROOT] = (status, "text/plain", b"")
    site.routes["/elsewhere"] = (200, "application/json", NAMING)
    answer = check(directory, pki, site, expect=1)
    assert answer["state"] == "denied"
    assert answer["status"] == status
    assert site.requests == [WELL_KNOWN, ROOT]


def test_a_server_error_then_the_file_approves(setup):
    directory, pki, site = setup
    site.routes[WELL_KNOWN] = [(503, "text/plain", b"busy"), (200, "application/json", NAMING)]
    assert check(directory, pki, site, expect=0)["state"] == "approved"
    assert site.requests == [WELL_KNOWN, WELL_KNOWN]


def test_a_server_error_forever_is_pending(setup):
    directory, pki, site = setup
    site.routes[WELL_KNOWN] = (500, "text/plain", b"down")
    answer = check(directory, pki, site, "--tries", "3", expect=3)
    assert answer["state"] == "pending"
    assert "try again later" in answer["reason"]
    assert site.requests == [WELL_KNOWN] * 3


def test_an_html_page_is_diagnosed(setup):
    directory, pki, site = setup
    site.routes[WELL_KNOWN] = (200, "text/html", b"<!doctype html><html><div id=app></div></html>")
    answer = check(directory, pki, site, expect=1)
    assert answer["state"] == "denied"
    assert "the server returned an HTML page" in answer["reason"]
    text = passkey(directory, "check", f"localhost:{site.port}", "--app", APP, "--ca", pki["ca"], check=1)
    assert b"single-page-app" in text.stdout


def test_an_oversize_file_is_denied(setup):
    directory, pki, site = setup
    site.routes[WELL_KNOWN] = (200, "application/json", b"{" + b" " * (128 * 1024) + b"}")
    answer = check(directory, pki, site, expect=1)
    assert "over the 128 KB limit" in answer["reason"]


def test_a_file_without_the_app_is_denied(setup):
    directory, pki, site = setup
    site.routes[WELL_KNOWN] = (200, "application/json", b'{"webcredentials": {"apps": ["ZZZZZ99999.com.other"]}}')
    answer = check(directory, pki, site, expect=1)
    assert "does not list " + APP in answer["reason"]


@pytest.mark.parametrize("args", [["localhost:0", "--app", APP], ["local host", "--app", APP],
                                  ["localhost", "--app", "no-team"]])
def test_bad_input_exits_2(setup, args):
    directory, _, _ = setup
    assert passkey(directory, "check", *args).returncode == 2


def test_match_reads_the_file_from_the_last_check(setup):
    directory, pki, site = setup
    site.routes[WELL_KNOWN] = (200, "application/pkcs7-mime", openssl_sign(directory, pki, "localhost", NAMING))
    check(directory, pki, site, expect=0)
    url = f"https://localhost:{site.port}/any/page"
    result = passkey(directory, "match", url, "--app", APP, "--json", check=0)
    assert json.loads(result.stdout)["verdict"] == "open"
    # A check that finds no file any more leaves nothing to match against.
    site.routes[WELL_KNOWN] = (404, "text/plain", b"")
    check(directory, pki, site, expect=1)
    gone = passkey(directory, "match", url, "--app", APP, check=2)
    assert b"its last check found no file" in gone.stderr


# MARK: passkey client as an app


PASSPHRASE = "interop test passphrase"
FINGERPRINT = ":".join(["AB"] * 31 + ["01"])


def client_as_app(directory, site, pki, command, options, *app_args):
    store = os.path.join(directory, "passkeys.sqlite")
    env = dict(os.environ, PASSKEY_PASSPHRASE=PASSPHRASE)
    if not os.path.exists(store):
        subprocess.run([PASSKEY_BIN, "init", "--store", store], check=True, capture_output=True, env=env, timeout=60)
    return subprocess.run(
        [PASSKEY_BIN, "client", command, "--options", "-", "--origin", "https://localhost", "--no-phone", "--store",
         store, "--yes", "--json", "--app-ca", pki["ca"], "--app-port", str(site.port), *app_args],
        input=options, capture_output=True, text=True, timeout=120, env=env)


def registration_options():
    from webauthn import generate_registration_options, options_to_json
    from webauthn.helpers.structs import AuthenticatorSelectionCriteria, ResidentKeyRequirement
    options = generate_registration_options(
        rp_id="localhost", rp_name="Local", user_name="alice",
        authenticator_selection=AuthenticatorSelectionCriteria(resident_key=ResidentKeyRequirement.REQUIRED))
    return options, options_to_json(options)


def test_an_app_uses_the_rp_only_when_the_domain_approves_it(setup):
    from webauthn import verify_registration_response
    directory, pki, site = setup
    site.routes[WELL_KNOWN] = (200, "application/json", NAMING)
    options, text = registration_options()
    result = client_as_app(directory, site, pki, "create", text, "--app", APP)
    assert result.returncode == 0, result.stderr
    verify_registration_response(credential=result.stdout, expected_challenge=options.challenge,
                                 expected_origin="https://localhost", expected_rp_id="localhost")
    assert site.requests == [WELL_KNOWN]  # checked on demand, once

    # Another app is refused with the platform's words, and nothing is stored.
    other = "ZZZZZ99999.com.example.other"
    _, text = registration_options()
    refused = client_as_app(directory, site, pki, "create", text, "--app", other)
    assert refused.returncode == 12, refused.stderr
    assert f"Application with identifier {other} is not associated with domain localhost" in refused.stderr
    listed = json.loads(passkey(directory, "list", "--json", check=0).stdout)
    assert {(e["app"], e["state"]) for e in listed} == {(APP, "approved"), (other, "denied")}

    # The table answers from now on: the site is not asked again, even when it no longer names the app.
    site.routes[WELL_KNOWN] = (404, "text/plain", b"")
    again = client_as_app(directory, site, pki, "create", registration_options()[1], "--app", other)
    assert again.returncode == 12
    assert site.requests == [WELL_KNOWN, WELL_KNOWN]
    # Forgetting the app (uninstalling it) makes the next request check again, and now it is refused.
    passkey(directory, "forget", APP, check=0)
    gone = client_as_app(directory, site, pki, "create", registration_options()[1], "--app", APP)
    assert gone.returncode == 12 and "is not associated with domain localhost" in gone.stderr


def test_an_android_app_needs_get_login_creds_in_assetlinks(setup):
    directory, pki, site = setup
    statements = [{
        "relation": ["delegate_permission/common.get_login_creds", "delegate_permission/common.handle_all_urls"],
        "target": {"namespace": "android_app", "package_name": "com.example.app",
                   "sha256_cert_fingerprints": [FINGERPRINT]},
    }]
    site.routes["/.well-known/assetlinks.json"] = (200, "application/json", json.dumps(statements).encode())
    allowed = client_as_app(directory, site, pki, "create", registration_options()[1],
                            "--android-app", f"com.example.app:{FINGERPRINT}")
    assert allowed.returncode == 0, allowed.stderr
    wrong_key = ":".join(["CD"] * 32)
    refused = client_as_app(directory, site, pki, "create", registration_options()[1],
                            "--android-app", f"com.example.app:{wrong_key}")
    assert refused.returncode == 12
    assert "the Android app com.example.app is not associated with localhost" in refused.stderr
    statements[0]["relation"] = ["delegate_permission/common.handle_all_urls"]
    site.routes["/.well-known/assetlinks.json"] = (200, "application/json", json.dumps(statements).encode())
    links_only = client_as_app(directory, site, pki, "create", registration_options()[1],
                               "--android-app", f"com.example.app:{FINGERPRINT}")
    assert links_only.returncode == 12, links_only.stderr


def test_inspect_banner_fetches_a_page(setup):
    """`passkey inspect banner URL`: the page fetched over HTTPS (the test CA), its banner read; a redirect or an
    untrusted server is a clear error (exit status 2), never followed or trusted."""
    directory, pki, site = setup
    page = (b'<html><head><META Name="apple-itunes-app" content="app-id=123456789, app-argument=https://localhost/'
            b'item/7, affiliate-data=at=1000l">')
    site.routes["/shop"] = (200, "text/html; charset=utf-8", page)
    site.routes["/moved"] = (301, "text/html", b"")
    url = f"https://localhost:{site.port}"

    def banner(*args):
        return subprocess.run([PASSKEY_BIN, "inspect", "banner", *args], capture_output=True, timeout=120)

    found = banner(url + "/shop", "--ca", pki["ca"], "--json")
    assert found.returncode == 0, found.stderr.decode()
    assert json.loads(found.stdout)["appId"] == "123456789"
    assert json.loads(found.stdout)["appArgument"] == "https://localhost/item/7"
    moved = banner(url + "/moved", "--ca", pki["ca"])
    assert moved.returncode == 2 and b"301" in moved.stderr and site.requests.count("/elsewhere") == 0
    untrusted = banner(url + "/shop")
    assert untrusted.returncode == 2 and b"cannot fetch" in untrusted.stderr


def test_passkey_endpoints_are_fetched_with_the_well_known_rules(setup):
    """`passkey domains endpoints DOMAIN[:port]` (W3C Well-Known URL for Passkey Endpoints): the enroll and manage
    URLs over HTTPS with the test CA; a redirect, an HTML page, an http URL, a document naming neither, an oversize
    one and an untrusted server are each one line and exit status 1. The rules: PasskeyEndpointsTests (Swift)."""
    directory, pki, site = setup
    path = "/.well-known/passkey-endpoints"
    domain = f"localhost:{site.port}"

    def endpoints(*args):
        return subprocess.run([PASSKEY_BIN, "domains", "endpoints", domain, *args], capture_output=True, text=True,
                              timeout=120)

    document = {"enroll": "https://localhost/passkeys/new", "manage": "https://localhost/account/passkeys"}
    site.routes[path] = (200, "application/json", json.dumps(document).encode())
    found = endpoints("--ca", pki["ca"], "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout) == {**document, "rpId": "localhost", "url": f"https://{domain}{path}"}
    text = endpoints("--ca", pki["ca"])
    assert "  manage passkeys   https://localhost/account/passkeys" in text.stdout

    bad = [
        ((301, "text/html", b""), "the status was 301, not 200 (a redirect: they are not followed)"),
        ((200, "text/html", b"<html>"), 'the content type was "text/html", not application/json'),
        ((200, "application/json", b'{"manage": "http://example.com/"}'), '"manage" is not an https URL with a host'),
        ((200, "application/json", b'{"other": 1}'), 'the document names neither "enroll" nor "manage"'),
        ((200, "application/json", b'{"enroll": "' + b"a" * 20000 + b'"}'), "over 16384"),
    ]
    for route, words in bad:
        site.routes[path] = route
        refused = endpoints("--ca", pki["ca"])
        assert refused.returncode == 1, refused.stderr
        assert refused.stderr.startswith(f"passkey: no passkey endpoints for {domain}: "), refused.stderr
        assert words in refused.stderr and refused.stderr.count("\n") == 1, refused.stderr
    site.routes[path] = (200, "application/json", json.dumps(document).encode())
    untrusted = endpoints()
    assert untrusted.returncode == 1 and "no passkey endpoints" in untrusted.stderr


def test_list_shows_where_each_site_manages_its_passkeys(setup):
    """`passkey list --endpoints`: each listed site's passkey-endpoints document fetched with the same rules as
    `domains endpoints`, its manage URL under each of its passkeys (text and JSON), and a site that publishes none
    said so for its passkeys only."""
    directory, pki, site = setup
    store = os.path.join(directory, "list.sqlite")
    environment = dict(os.environ, PASSKEY_STORE=store, PASSKEY_PASSPHRASE="list endpoints passphrase")
    environment.pop("PASSKEY_ASSUME_YES", None)

    def run(*args, stdin=""):
        return subprocess.run([PASSKEY_BIN, *args], input=stdin, capture_output=True, text=True, timeout=120,
                              env=environment)

    assert run("init").returncode == 0
    for rp, user in (("localhost", "alice"), ("example.invalid", "bob")):
        options = {"rp": {"id": rp, "name": rp}, "user": {"id": "dXNlcg", "name": user, "displayName": user},
                   "challenge": "Y2hhbGxlbmdlY2hhbGxlbmdl", "pubKeyCredParams": [{"type": "public-key", "alg": -7}],
                   "authenticatorSelection": {"residentKey": "required"}}
        created = run("client", "create", "--origin", f"https://{rp}", "--no-phone", "--yes", "--json",
                      "--options", "-", stdin=json.dumps(options))
        assert created.returncode == 0, created.stderr
    site.routes["/.well-known/passkey-endpoints"] = (
        200, "application/json", json.dumps({"manage": "https://localhost/account/passkeys"}).encode())

    listed = run("list", "--endpoints", "--ca", pki["ca"], "--endpoints-port", str(site.port), "--json")
    assert listed.returncode == 0, listed.stderr
    by_rp = {entry["rpId"]: entry for entry in json.loads(listed.stdout)}
    assert by_rp["localhost"]["manage"] == "https://localhost/account/passkeys"
    assert "manage" not in by_rp["example.invalid"] and by_rp["example.invalid"]["manageUnavailable"]
    text = run("list", "--endpoints", "--ca", pki["ca"], "--endpoints-port", str(site.port))
    assert text.returncode == 0, text.stderr
    assert "    manage at https://localhost/account/passkeys" in text.stdout
    assert text.stdout.count("no passkey endpoints: ") == 1
    # Without --endpoints nothing is fetched.
    requests = len(site.requests)
    assert "manage" not in run("list").stdout and len(site.requests) == requests
