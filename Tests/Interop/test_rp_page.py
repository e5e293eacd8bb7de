"""`passkey rp serve`'s page in headless Chromium (issue 24, item 10): a registration and a sign-in with Chromium's
own virtual authenticator (DevTools' WebAuthn domain), the decoded view of what the authenticator returned, deleting
a passkey from the signed-in browser, and a layout that fits a 390 px phone screen and a 1280 px desktop one.

With PASSKEY_SCREENSHOTS=DIR the page is also saved as DIR/rp-page-390.png and DIR/rp-page-1280.png."""

import os
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
            driver.execute_cdp_cmd("WebAuthn.addVirtualAuthenticator", {"options": {
                "protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
                "isUserVerified": True, "automaticPresenceSimulation": True}})
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
