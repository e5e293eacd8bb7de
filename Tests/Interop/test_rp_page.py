"""`passkey rp serve`'s page in headless Chromium (issue 24, item 10): a registration and a sign-in with Chromium's
own virtual authenticator (DevTools' WebAuthn domain), the decoded view of what the authenticator returned, deleting
a passkey from the signed-in browser, and a layout that fits a 390 px phone screen and a 1280 px desktop one.

With PASSKEY_SCREENSHOTS=DIR the page is also saved as DIR/rp-page-390.png and DIR/rp-page-1280.png."""

import json
import os
import re
import shutil
import tempfile
import time

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from conftest import stored_rp_state
from test_rp_serve import RelyingParty


def chromium():
    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--no-first-run"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)


@pytest.fixture
def page():
    with tempfile.TemporaryDirectory() as directory:
        rp = RelyingParty(os.path.join(directory, "rp-state.json"))
        driver = chromium()
        try:
            # A platform authenticator that verifies users and keeps discoverable credentials, as a phone would.
            driver.execute_cdp_cmd("WebAuthn.enable", {})
            driver.authenticator = driver.execute_cdp_cmd("WebAuthn.addVirtualAuthenticator", {"options": {
                "protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
                "isUserVerified": True, "automaticPresenceSimulation": True}})["authenticatorId"]
            yield rp, driver
        finally:
            driver.quit()
            rp.stop()


def wait_for_title(driver, prefixes, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if driver.title.startswith(prefixes):
            return driver.title
        time.sleep(0.1)
    raise AssertionError(f"the page's title stayed {driver.title!r}")


def overflow(driver):
    """How many CSS pixels the page is wider than the window (0: no sideways scrolling)."""
    return driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")


def test_the_page_registers_signs_in_shows_the_response_decoded_deletes_and_fits_a_phone(page):
    rp, driver = page
    driver.get(f"{rp.origin}/?auto=register&user=alice")
    title = wait_for_title(driver, ("PASS", "FAIL"))
    assert title == "PASS register alice", driver.find_element(By.ID, "verdict").text
    assert rp.next_line().startswith("verdict registration ok user=alice")
    decoded = driver.find_element(By.ID, "decoded")
    assert decoded.is_displayed()
    text = decoded.text
    for part in ("Flags", "userPresent ✓", "userVerified ✓", "attestedCredentialData ✓", "Client data",
                 '"type": "webauthn.create"', "Authenticator data", '"kty": "OKP"', '"crv": "Ed25519"', '"alg": "EdDSA"', "Attestation"):
        assert part in text, part

    driver.get(f"{rp.origin}/?auto=sign-in")
    assert wait_for_title(driver, ("PASS", "FAIL")) == "PASS sign-in alice"
    assert rp.next_line().startswith("verdict authentication ok user=alice")
    assert '"type": "webauthn.get"' in driver.find_element(By.ID, "decoded").text
    assert "Signature" in driver.find_element(By.ID, "decoded").text
    assert "[object Object]" not in driver.find_element(By.ID, "verdict").text
    rows = driver.find_elements(By.CSS_SELECTOR, "#credentials tbody tr")
    assert len(rows) == 1 and "alice" in rows[0].text

    # Both widths: nothing wider than the window.
    shots = os.environ.get("PASSKEY_SCREENSHOTS")
    for width in (1280, 390):
        driver.set_window_rect(width=width, height=1600)
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": 1600, "deviceScaleFactor": 1, "mobile": width < 500})
        time.sleep(0.3)
        assert overflow(driver) <= 0, f"the page is {overflow(driver)} px wider than {width} px"
        if shots:
            os.makedirs(shots, exist_ok=True)
            driver.save_screenshot(os.path.join(shots, f"rp-page-{width}.png"))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    # Delete from this browser, which the sign-in made alice's: the row goes, and the state file with it.
    # (A page driven by its query, as this one is, does not ask "Delete …?" first.)
    driver.find_element(By.CSS_SELECTOR, "#credentials button.delete").click()
    assert wait_for_title(driver, ("PASS delete", "FAIL delete")) == "PASS delete alice"
    assert rp.next_line().startswith("verdict deletion ok user=alice credential=")
    deadline = time.monotonic() + 10
    while driver.find_elements(By.CSS_SELECTOR, "#credentials tbody tr") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert driver.find_elements(By.CSS_SELECTOR, "#credentials tbody tr") == []
    assert stored_rp_state(rp.state_path)["accounts"] == []


def signal_log(driver):
    """The page's signal log: (method, argument, outcome) for each signal it sent, in order."""
    return [(item.get_attribute("data-method"), json.loads(item.get_attribute("data-argument")),
             item.get_attribute("data-outcome"))
            for item in driver.find_elements(By.CSS_SELECTOR, "#signal-log li.signal")]


def held(driver):
    """The credentials Chromium's virtual authenticator holds (DevTools' WebAuthn.getCredentials)."""
    return driver.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": driver.authenticator})["credentials"]


def has(driver, method):
    return driver.execute_script(f"return typeof PublicKeyCredential.{method} === 'function'")


def test_the_page_sends_each_signal_where_a_relying_party_would_and_logs_it(page):
    """Issue 27: after a sign-in signalAllAcceptedCredentials and signalCurrentUserDetails, after a rename
    signalCurrentUserDetails, after a deletion signalUnknownCredential; each in the log with its argument and outcome.
    The virtual authenticator is Chromium's own, so Chromium's provider gets each signal."""
    rp, driver = page
    driver.get(f"{rp.origin}/?auto=register&user=alice&display=Alice%20L")
    assert wait_for_title(driver, ("PASS", "FAIL")) == "PASS register alice"
    verdict = rp.next_line()
    credential_id = re.search(r"credential=(\S+)", verdict).group(1)
    assert signal_log(driver) == []
    [user] = stored_rp_state(rp.state_path)["users"]
    assert user["displayName"] == "Alice L"

    driver.get(f"{rp.origin}/?auto=sign-in")
    assert wait_for_title(driver, ("PASS", "FAIL")) == "PASS sign-in alice"
    rp.next_line()
    expected = "sent" if has(driver, "signalAllAcceptedCredentials") else "not supported by this browser"
    assert signal_log(driver) == [
        ("signalAllAcceptedCredentials",
         {"rpId": "localhost", "userId": user["userHandle"], "allAcceptedCredentialIds": [credential_id]}, expected),
        ("signalCurrentUserDetails",
         {"rpId": "localhost", "userId": user["userHandle"], "name": "alice", "displayName": "Alice L"}, expected),
    ]
    assert driver.find_element(By.ID, "signed-in").get_attribute("data-user") == "alice"

    driver.find_element(By.ID, "new-display-name").send_keys("Alice Liddell")
    driver.find_element(By.ID, "rename").click()
    assert wait_for_title(driver, ("PASS rename", "FAIL rename")) == "PASS rename alice"
    assert rp.next_line() == "verdict rename ok user=alice displayName=Alice%20Liddell"
    assert signal_log(driver)[2] == (
        "signalCurrentUserDetails",
        {"rpId": "localhost", "userId": user["userHandle"], "name": "alice", "displayName": "Alice Liddell"}, expected)
    assert "alice (Alice Liddell)" in driver.find_element(By.ID, "credentials").text

    outcomes = [entry[2] for entry in signal_log(driver)]
    [kept] = held(driver)
    if outcomes[2] == "sent":  # Chromium acts on signalCurrentUserDetails for its own provider: the name follows
        assert (kept["userName"], kept["userDisplayName"]) == ("alice", "Alice Liddell"), kept

    # Deleting as the VM check does (`?auto=delete&user=alice`, no confirmation). Chromium's virtual authenticator is
    # one of its own providers, so Chromium acts on the signal: the passkey is gone from it, and a sign-in finds none.
    assert len(held(driver)) == 1
    driver.get(f"{rp.origin}/?auto=delete&user=alice")
    assert wait_for_title(driver, ("PASS delete", "FAIL delete")) == "PASS delete alice"
    assert rp.next_line() == f"verdict deletion ok user=alice credential={credential_id}"
    expected = "sent" if has(driver, "signalUnknownCredential") else "not supported by this browser"
    unknown = ("signalUnknownCredential", {"rpId": "localhost", "credentialId": credential_id}, expected)
    assert signal_log(driver) == [unknown]
    log_text = driver.find_element(By.ID, "signal-log").text
    assert f'signalUnknownCredential({{"rpId":"localhost","credentialId":"{credential_id}"}}): {expected}' in log_text
    if expected == "sent":
        assert held(driver) == []
    print("Chromium's outcomes:", outcomes + [expected], "credentials held after the deletion:", len(held(driver)))

    # A passkey the RP does not know (the authenticator kept it: put back here, as a security key keeps it): the RP
    # refuses it as unknown, and the page tells the provider with signalUnknownCredential.
    driver.execute_cdp_cmd("WebAuthn.addCredential", {"authenticatorId": driver.authenticator, "credential": kept})
    driver.get(f"{rp.origin}/?auto=sign-in")
    assert wait_for_title(driver, ("PASS", "FAIL")).startswith("FAIL sign-in: unknownCredential")
    assert rp.next_line().startswith("verdict authentication refused code=unknownCredential")
    assert signal_log(driver) == [unknown]
    # The log's long JSON wraps: nothing wider than a phone's screen.
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": 390, "height": 1600, "deviceScaleFactor": 1, "mobile": True})
    time.sleep(0.3)
    assert overflow(driver) <= 0, f"the page is {overflow(driver)} px wider than 390 px"
    if os.environ.get("PASSKEY_SCREENSHOTS"):
        driver.save_screenshot(os.path.join(os.environ["PASSKEY_SCREENSHOTS"], "rp-page-signals-390.png"))


def test_the_password_form_signs_up_signs_in_and_tries_a_passkey_upgrade(page):
    """The password form has the autocomplete attributes a password manager needs; a password sign-in gets the
    options of an automatic passkey upgrade, which the page passes to create() with mediation "conditional"; the
    outcome, whatever this browser does with it, is recorded on the page and never a visible failure."""
    rp, driver = page
    # `?steps=` (none): no conditional sign-in waits on the page, which the virtual authenticator would answer.
    driver.get(f"{rp.origin}/?steps=")
    assert wait_for_title(driver, ("DONE",)) == "DONE 0 steps"
    user_field = driver.find_element(By.ID, "password-username")
    password_field = driver.find_element(By.ID, "password")
    assert user_field.get_attribute("autocomplete") == "username"
    assert password_field.get_attribute("autocomplete") == "current-password"
    assert password_field.get_attribute("type") == "password"
    user_field.send_keys("bob")
    password_field.send_keys("correct horse battery staple")
    driver.find_element(By.ID, "password-sign-up").click()
    assert wait_for_title(driver, ("PASS password", "FAIL password")) == "PASS password sign-up bob"
    assert rp.next_line() == "verdict password sign-up ok user=bob"

    password_field.send_keys("\n")  # Enter submits the form: the page signs in
    assert wait_for_title(driver, ("PASS password sign-in", "FAIL password sign-in")) == "PASS password sign-in bob"
    assert rp.next_line() == "verdict password sign-in ok user=bob"
    assert [entry[0] for entry in signal_log(driver)] == ["signalAllAcceptedCredentials", "signalCurrentUserDetails"]
    assert signal_log(driver)[0][1]["allAcceptedCredentialIds"] == []
    upgrade = driver.find_element(By.ID, "upgrade")
    deadline = time.monotonic() + 25
    while upgrade.get_attribute("data-result") == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    result = upgrade.get_attribute("data-result")
    print("conditional create in headless Chromium:", result, upgrade.text)
    accounts = stored_rp_state(rp.state_path)["accounts"]
    if result == "pass":
        assert rp.next_line().startswith("verdict registration ok user=bob ")
        assert [a["userName"] for a in accounts] == ["bob"]
    else:
        assert result == "none", upgrade.text
        assert upgrade.text.startswith("No passkey upgrade: the browser said ")
        assert accounts == []
    # The page's verdict stays the sign-in's: a failed upgrade is silent.
    assert driver.title == "PASS password sign-in bob"

    # A wrong password: the page says so, and nothing else happens.
    password_field.send_keys("wrong password\n")
    assert wait_for_title(driver, ("FAIL password sign-in",)).startswith("FAIL password sign-in: signInFailed")
    assert rp.next_line().startswith("verdict password sign-in refused code=signInFailed")
