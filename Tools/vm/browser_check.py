"""Drives Chromium through chromedriver (Selenium) against `passkey rp serve` inside the VM guest.

Each step opens the relying party's page with `?auto=CEREMONY&user=NAME`, which runs one WebAuthn ceremony on
load and puts `PASS …` or `FAIL …` in the page title. The step's verdict is the relying party's own: a new
`verdict …` line on its standard output (RP_LOG), never the browser's word alone.

Chromium asks the person with its own dialogs, which no WebDriver command reaches; they are answered on the
Xvfb display with xdotool, when the key's log (`--key-log`) shows the request that brings each one up:
  - "Use a saved passkey for localhost … Continue" after a getAssertion answer, even for one account and even
    from a phone over hybrid (which Chromium 156 labels "USB security key"): Return;
  - "Try a different device: You already registered this device" after an excluded registration, whose focused
    button is "Try again": Escape, which closes it and rejects the page's promise;
  - the security key PIN sheet (`--pin`): the PIN from TOKEN_PIN typed, then Return.
With `--scan COMMAND`, the page asks with `hints: ["hybrid"]` and Chromium shows its "use your phone or tablet" QR
sheet instead; the screen is photographed (ImageMagick's import), zbar reads the FIDO:/ URL off it, and COMMAND
(with the URL as its last argument) plays the phone.

The page sends the WebAuthn L3 signals a relying party sends (signalAllAcceptedCredentials and
signalCurrentUserDetails after a sign-in, signalUnknownCredential after a deletion and after a sign-in with a passkey
the RP does not know) and logs each with its outcome in `#signal-log`; every step prints that log and Chromium's
console messages, and a step that must send signalUnknownCredential fails unless Chromium resolved it ("sent").

Usage: browser_check.py --rp URL --rp-log FILE --profile DIR --logs DIR --name NAME [--pin]
           [--key-log FILE] [--transports LIST] [--scan COMMAND] [--chromium-arg ARG]… STEP…
where STEP is CEREMONY:USER:EXPECT, CEREMONY one of register, sign-in (USER empty: an empty allow list) or delete
(the user's passkeys, from this browser, signed in as the user by an earlier step), EXPECT `ok` (the RP verified it,
or deleted it), a DOMException name the page must report (the RP records it as a client error), or the code of the
RP's refusal (`unknownCredential`: a sign-in with a deleted passkey, after which the page must have sent
signalUnknownCredential). Exit status 0 when every step met its expectation.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/lib/chromium/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Headed Chromium under Xvfb in a TCG guest: with plain --disable-gpu the GPU process crashes three times and
# Chromium exits, so the GPU runs in process on SwiftShader.
CHROMIUM_ARGS = [
    "--no-sandbox",  # the guest runs everything as root
    "--no-first-run",
    "--no-default-browser-check",
    "--password-store=basic",
    "--use-gl=angle",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--in-process-gpu",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--window-size=1280,900",
    "--enable-logging",
    "--v=0",
    "--vmodule=*device/fido*=2,*webauthn*=2",
]
STEP_TIMEOUT = 150  # seconds: a ceremony under emulation takes 10–40 s, a fresh profile's first page load up to 90 s
KEY_GRACE = 60  # seconds a step may still take after the key's last request: a ceremony under way is not cut off


def say(message):
    print(f"[{time.monotonic():9.1f}] {message}", flush=True)


def xdotool(*arguments):
    subprocess.run(["xdotool", *arguments], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class RelyingPartyLog:
    """The `verdict …` lines `passkey rp serve` printed, read as they arrive."""

    def __init__(self, path):
        self.path = path
        self.seen = len(self.lines())

    def lines(self):
        with open(self.path, encoding="utf-8", errors="replace") as file:
            return [line.rstrip("\n") for line in file if line.startswith("verdict ")]

    def new(self):
        lines = self.lines()
        fresh, self.seen = lines[self.seen :], len(lines)
        return fresh


class KeyLog:
    """`passkey serve --verbose`'s standard error: one `CTAP <request shape> -> <status>` line per request, read as
    it grows. It says when Chromium is about to show a dialog: after a getAssertion answered OK (the account sheet),
    a makeCredential answered CREDENTIAL_EXCLUDED (the "already registered" sheet), or a clientPIN getPINRetries
    (the PIN sheet comes next)."""

    def __init__(self, path):
        self.path = path
        self.offset = os.path.getsize(path) if path and os.path.exists(path) else 0

    def new_requests(self):
        if not self.path or not os.path.exists(self.path):
            return []
        with open(self.path, "rb") as file:
            file.seek(self.offset)
            data = file.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        return re.findall(r"CTAP (.*?) -> (\S+)", data[:end].decode("utf-8", "replace"))


def screenshot(path):
    """The whole Xvfb screen, browser dialogs included, as a PNG (ImageMagick's import)."""
    subprocess.run(["import", "-window", "root", path], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def read_qr(args):
    """The FIDO:/ URL of the QR code on the screen now, or None."""
    shot = os.path.join(args.logs, f"{args.name}-qr.png")
    screenshot(shot)
    found = subprocess.run(["zbarimg", "--raw", "-q", shot], check=False, capture_output=True, text=True).stdout
    urls = [line for line in found.splitlines() if line.startswith("FIDO:/")]
    return urls[0] if urls else None


def signal_log(driver):
    """The page's signal log: (method, argument, outcome, message) for each signal it sent since it was loaded."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#signal-log li.signal')].map((li) => "
        "[li.dataset.method, li.dataset.argument, li.dataset.outcome, li.dataset.message || '']);")


def console(driver):
    """Chromium's console messages since the last call (chromedriver's browser log)."""
    try:
        return [f"{entry.get('level')} {entry.get('message')}" for entry in driver.get_log("browser")]
    except Exception as error:  # chromedriver without the log type: say so, once per step
        return [f"(no console log: {error})"]


def check_signals(driver, ceremony, expect):
    """Prints the page's signal log and Chromium's console; the failure, or None. A deletion, and a sign-in refused
    for an unknown credential, must have sent signalUnknownCredential and seen its promise resolve."""
    log = signal_log(driver)
    for method, argument, outcome, message in log:
        say(f"signal: {method}({argument}) -> {outcome}{f' ({message})' if message else ''}")
    for line in console(driver):
        say(f"console: {line}")
    if ceremony == "delete" or expect == "unknownCredential":
        unknown = [entry for entry in log if entry[0] == "signalUnknownCredential"]
        if not unknown:
            return f"{ceremony}: the page sent no signalUnknownCredential (log {log})"
        if any(entry[2] != "sent" for entry in unknown):
            return f"{ceremony}: signalUnknownCredential was not resolved by Chromium: {unknown}"
    if ceremony == "sign-in" and expect == "ok":
        sent = {entry[0]: entry[2] for entry in log}
        for method in ("signalAllAcceptedCredentials", "signalCurrentUserDetails"):
            if sent.get(method) != "sent":
                return f"sign-in: {method} was not sent and resolved after the sign-in: {log}"
    return None


def run_step(driver, args, rp_log, key_log, step, number):
    ceremony, user, expect = step
    query = {"auto": ceremony}
    if user:
        query["user"] = user
    if args.scan:
        query["hints"] = "hybrid"
    phone = None
    url = f"{args.rp}/?{urllib.parse.urlencode(query)}"
    say(f"step {ceremony} user={user or '(none)'} expect={expect}: {url}")
    started = time.monotonic()
    driver.get(url)
    key_log.new_requests()  # what came before this step
    press_at = None  # when to press KEY on Chromium's next dialog
    key = None
    title = ""
    deadline = started + STEP_TIMEOUT
    while time.monotonic() < deadline:
        title = driver.title
        if title.startswith(("PASS", "FAIL")):
            break
        elapsed = time.monotonic() - started
        for request, status in key_log.new_requests():
            say(f"key: {request} -> {status}")
            # The key is at work (Chromium reached it late, after a slow first page load): give the ceremony time.
            deadline = max(deadline, time.monotonic() + KEY_GRACE)
            if request.startswith("clientPIN getPINRetries") and args.pin:
                # Chromium shows its PIN sheet once it knows the retries left.
                time.sleep(2)
                # From standard input, so the PIN is on no command line.
                subprocess.run(["xdotool", "type", "--delay", "150", "--file", "-"], input=args.pin.encode(), check=False)
                xdotool("key", "Return")
                say(f"PIN typed into Chromium's PIN sheet after {elapsed:.0f} s")
            elif request.startswith("getAssertion") and status == "OK" and not args.scan:
                press_at, key = time.monotonic() + 2, "Return"
            elif request.startswith("makeCredential") and "CREDENTIAL_EXCLUDED" in status:
                press_at, key = time.monotonic() + 2, "Escape"
        if args.scan and phone is None and elapsed > 3:
            fido_url = read_qr(args)
            if fido_url:
                say(f"QR code read off the screen after {elapsed:.0f} s: {fido_url[:24]}…")
                deadline = max(deadline, time.monotonic() + 90)  # the phone's tunnel, handshake and request
                phone_output = os.path.join(args.logs, f"{args.name}-scan-{number}.txt")
                with open(phone_output, "w") as output:
                    phone = subprocess.Popen(
                        [*shlex.split(args.scan), fido_url], stdout=output, stderr=subprocess.STDOUT
                    )
        elif phone is not None and press_at is None and key is None:
            # Chromium shows its account sheet for a phone's assertion too.
            with open(phone_output, encoding="utf-8", errors="replace") as output:
                said = output.read()
            if "request received: getAssertion" in said and "answer sent: OK" in said:
                say(f"the phone answered getAssertion after {elapsed:.0f} s")
                press_at, key = time.monotonic() + 2, "Return"
        if press_at is not None and time.monotonic() >= press_at:
            xdotool("key", key)
            say(f"{key} pressed on Chromium's sheet after {elapsed:.0f} s")
            press_at = time.monotonic() + 6  # again, should the sheet still be up
        time.sleep(0.5)
    say(f"title after {time.monotonic() - started:.0f} s: {title}")
    if phone is not None:
        try:
            status = phone.wait(timeout=30)
        except subprocess.TimeoutExpired:
            phone.kill()
            status = "killed after 30 s"
        say(f"the phone (passkey scan) exited: {status}")
    elif args.scan:
        return f"{ceremony} {user}: no QR code was read off the screen (title {title!r})"
    # The verdict line follows the page's last request; give it a moment.
    verdicts = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        verdicts += rp_log.new()
        if verdicts:
            break
        time.sleep(0.5)
    for line in verdicts:
        say(f"RP: {line}")
    kind = {"register": "registration", "delete": "deletion"}.get(ceremony, "authentication")
    signals = check_signals(driver, ceremony, expect)
    if signals:
        return signals
    if expect == "ok":
        wanted = f"verdict {kind} ok"
        good = [line for line in verdicts if line.startswith(wanted) and (not user or f"user={user}" in line)]
        if not good:
            return f"{ceremony} {user}: no '{wanted}' from the RP (title {title!r}, RP said {verdicts})"
        if ceremony == "register" and args.transports:
            match = re.search(r"transports=(\S*)", good[0])
            reported = match.group(1) if match else ""
            if reported != args.transports:
                return f"register {user}: the browser reported transports {reported!r}, not {args.transports!r}"
        if ceremony == "register" and args.alg and f"alg={args.alg}" not in good[0].split():
            return f"register {user}: the RP verified a key of another algorithm than {args.alg}: {good[0]}"
        return None
    if any(line.startswith(f"verdict {kind} ok") for line in verdicts):
        return f"{ceremony} {user}: the RP accepted a ceremony that had to fail with {expect}"
    if not any(f"name={expect}" in line or f"code={expect}" in line for line in verdicts):
        return f"{ceremony} {user}: expected {expect}, the page said {title!r}, the RP said {verdicts}"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rp", required=True)
    parser.add_argument("--rp-log", required=True)
    parser.add_argument("--profile", required=True)
    parser.add_argument("--logs", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--pin", action="store_true", help="type $TOKEN_PIN into Chromium's PIN sheet")
    parser.add_argument("--transports", help="what a registration must report, e.g. usb")
    parser.add_argument("--alg", help="the algorithm a registration's key must have, e.g. EdDSA")
    parser.add_argument("--scan", help="the phone's command line; the FIDO:/ URL is appended")
    parser.add_argument("--key-log", help="passkey serve --verbose's standard error")
    parser.add_argument("--chromium-arg", action="append", default=[])
    parser.add_argument("steps", nargs="+")
    args = parser.parse_args()
    args.pin = os.environ.get("TOKEN_PIN") if args.pin else None
    steps = []
    for text in args.steps:
        ceremony, user, expect = text.split(":")
        steps.append((ceremony, user, expect))

    chromium_log_path = os.path.join(args.logs, f"{args.name}-chromium.log")
    options = Options()
    options.binary_location = CHROMIUM
    for argument in CHROMIUM_ARGS + [f"--log-file={chromium_log_path}"] + args.chromium_arg:
        options.add_argument(argument)
    options.add_argument(f"--user-data-dir={args.profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=CHROMEDRIVER, log_output=os.path.join(args.logs, f"{args.name}-chromedriver.log"))
    say("starting Chromium through chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(120)
    say(f"Chromium {driver.capabilities.get('browserVersion')} is up")
    rp_log = RelyingPartyLog(args.rp_log)
    key_log = KeyLog(args.key_log)
    failure = None
    try:
        for number, step in enumerate(steps, 1):
            failure = run_step(driver, args, rp_log, key_log, step, number)
            if failure:
                break
    finally:
        screenshot(os.path.join(args.logs, f"{args.name}.png"))
        driver.quit()
    if failure:
        print(f"FAIL: {failure}", flush=True)
        return 1
    print("all steps verified by the relying party", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
