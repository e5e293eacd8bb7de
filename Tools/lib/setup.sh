# Shared set-up for Tools/test, Tools/demo and Tools/bench: installs what a fresh Debian machine lacks.
# Source it; it defines ROOT and the functions below, and changes nothing it does not need to.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# publicsuffix: the Public Suffix List the WebAuthn client reads (/usr/share/publicsuffix/public_suffix_list.dat).
# haproxy, nginx: the load balancers Tools/relay-cluster puts in front of several relays (Tests/Interop runs both);
# their system services are not started (see ensure_apt_packages), the cluster runs them as its own processes.
# libnginx-mod-stream: nginx's TCP proxy, where the cluster's nginx limits connections per source network.
# openssl: the command-line tool the Swift and interop tests check certificates and keys against.
# xvfb and xclip: an X server and its clipboard for `password get --clip` (Tests/Interop/test_passwords.py).
# chromium and chromium-driver: `rp serve`'s page in headless Chromium (Tests/Interop/test_rp_page.py); the VM's
# browser checks use the same packages.
# dpkg-dev (dpkg-shlibdeps, strip) and systemd (systemd-analyze): Tools/package and its check in Tools/test.
# libsystemd-dev: sd-bus, the D-Bus client of the DBus module (notifications now, BlueZ later); dbus-daemon (package
# dbus-daemon): the private session bus the DBus tests and Tests/Interop/test_consent.py start. zbar-tools (zbarimg):
# an independent QR decoder for the QR code a notification shows (Tests/Interop/test_phone_bridge.py).
APT_PACKAGES=(libssl-dev libqrencode-dev libbluetooth-dev libsqlite3-dev libzbar-dev libpng-dev pkg-config python3-venv
    publicsuffix haproxy nginx libnginx-mod-stream openssl xvfb xclip chromium chromium-driver dpkg-dev systemd
    libsystemd-dev dbus-daemon zbar-tools)
# pyhpke and cryptography: independent HPKE and key checks for Tests/Interop/test_exchange.py.
# dbus-next: the test notification server of Tests/Interop/test_consent.py (an independent D-Bus implementation).
# pyotp: an independent TOTP (RFC 6238) for `passkey otp code` (Tests/Interop/test_passwords.py, test_exchange.py).
PIP_PACKAGES=(fido2==2.2.1 webauthn==3.0.1 cbor2==6.2.1 pytest==8.3.4 segno==1.6.6 selenium==4.45.0
    publicsuffixlist==1.1.2.20261023 pyhpke==0.6.5 cryptography==50.0.2 dbus-next==0.2.3 pyotp==2.12.0)

say() { printf '==> %s\n' "$*" >&2; }


# The flags that link a product with the Swift runtime and Foundation inside it (Tools/install, Tools/test's
# package stage). `--static-swift-stdlib` alone lists the static archives in the order the modules' autolink entries
# come in, and once a module early in the link pulls CoreFoundation's archive before Foundation's, GNU ld never goes
# back to it: Foundation's CoreFoundation symbols end up undefined. A linker group searches them until none is left.
STATIC_SWIFT_LINK=(--static-swift-stdlib -Xlinker --start-group -Xlinker -lFoundation -Xlinker -lFoundationEssentials
    -Xlinker -lCoreFoundation -Xlinker -l_FoundationICU -Xlinker -l_FoundationCShims -Xlinker -l_FoundationCollections
    -Xlinker -lswiftSynchronization -Xlinker --end-group)
# Installs the Debian packages that are not installed yet: the arguments, or APT_PACKAGES without any.
ensure_apt_packages() {
    local missing=() wanted=("$@")
    [ ${#wanted[@]} -eq 0 ] && wanted=("${APT_PACKAGES[@]}")
    for package in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing Debian packages: ${missing[*]}"
    local sudo="" status=0 policy=/usr/sbin/policy-rc.d marker="# Tools/lib/setup.sh: no service starts" ours=0
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    # Packages with a daemon (openssh-server's sshd, bluez's bluetoothd) start it when installed unless a
    # policy-rc.d denies it (Docker's Debian images ship one that does). Without one, this installation brings its
    # own for its duration, so a build host gains no running services; a policy left by an interrupted run is ours
    # to replace.
    if [ ! -e "$policy" ] || grep -qF "$marker" "$policy" 2>/dev/null; then
        printf '#!/bin/sh\n%s while it installs packages.\nexit 101\n' "$marker" | $sudo tee "$policy" >/dev/null &&
            $sudo chmod 755 "$policy" && ours=1
    fi
    $sudo apt-get update -q || status=$?
    if [ "$status" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" || status=$?
    fi
    if [ "$ours" = 1 ]; then $sudo rm -f "$policy"; fi
    return "$status"
}

# Creates the project's Python venv (.venv, ignored by git) with the pinned interop packages.
ensure_venv() {
    local venv="$ROOT/.venv"
    if [ ! -x "$venv/bin/python" ]; then
        say "creating Python venv in .venv"
        python3 -m venv "$venv"
    fi
    # The freeze list is read whole first: `grep -q` in a pipe would stop reading at the match, and pip, killed
    # by SIGPIPE, would fail the pipe under pipefail now and then.
    local installed
    installed="$("$venv/bin/python" -m pip freeze 2>/dev/null || true)"
    if ! grep -qx "fido2==2.2.1" <<<"$installed" \
        || ! "$venv/bin/python" -c "import webauthn, cbor2, pytest, segno, selenium, publicsuffixlist, pyhpke, dbus_next, pyotp" 2>/dev/null; then
        say "installing Python packages: ${PIP_PACKAGES[*]}"
        "$venv/bin/python" -m pip install -q --disable-pip-version-check "${PIP_PACKAGES[@]}"
    fi
    PYTHON="$venv/bin/python"
}

# Swift is expected at /opt/swift or on PATH.
ensure_swift() {
    if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
        export PATH="/opt/swift/usr/bin:$PATH"
    fi
    command -v swift >/dev/null 2>&1 || { echo "swift not found: install Swift 6.1 or later" >&2; exit 1; }
}
