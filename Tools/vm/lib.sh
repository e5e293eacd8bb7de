# shellcheck shell=bash
# Helpers shared by the scripts Tools/vm-test runs inside its guest (Tools/vm/guest-tests, Tools/vm/browser-tests).
# Source it after setting LOGS (the logs folder on the scratch share) and RESULTS (results.txt there).
#
# Under emulation every fork and exec costs real time, so the helpers use bash builtins only: the polling loops
# must not take the CPU from the programs they wait for.

# pause SECONDS: sleeps without running sleep(1): a read with a timeout on a pipe nobody writes to.
exec {never_fd}<> <(:)
pause() {
    read -r -t "$1" -u "$never_fd" _ || true
}

# One line on the console and in logs/guest-tests.log, with the guest's uptime.
log() {
    local uptime _ line
    read -r uptime _ </proc/uptime
    printf -v line '[%7s s] %s%s' "$uptime" "${TAG:+$TAG: }" "$*"
    echo "$line"
    echo "$line" >>"$LOGS/guest-tests.log"
}

# fail REASON: ends the current check; run_test puts REASON on its FAIL line.
fail() {
    log "FAILED: $*"
    [ -n "${REASON_FILE:-}" ] && printf '%s' "$*" >"$REASON_FILE"
    exit 1
}

# first_line FILE REGEX: sets LINE to the first line of FILE matching the bash REGEX; fails without one.
first_line() {
    local lines
    [[ -f "$1" ]] || return 1
    mapfile -t lines <"$1"
    for LINE in "${lines[@]}"; do
        [[ "$LINE" =~ $2 ]] && return 0
    done
    return 1
}

# wait_for SECONDS WHAT COMMAND…: runs COMMAND (a function or builtin) every 0.2 s until it succeeds; fails the
# check after SECONDS, or at once when the process WAIT_PID (if set) has exited.
wait_for() {
    local limit="$1" what="$2" started="$SECONDS"
    shift 2
    until "$@"; do
        ((SECONDS - started < limit)) || fail "no $what within $limit s"
        if [ -n "${WAIT_PID:-}" ] && ! kill -0 "$WAIT_PID" 2>/dev/null; then
            "$@" && break # it finished just after the last look
            local code=0
            wait "$WAIT_PID" || code=$?
            fail "no $what: the process exited with status $code"
        fi
        pause 0.2
    done
    log "ready: $what ($((SECONDS - started)) s)"
}

# Sets HIDRAW to /dev/hidrawN of the HID device whose name contains "passkey"; fails while there is none.
passkey_hidraw() {
    local uevent
    for uevent in /sys/class/hidraw/hidraw*/device/uevent; do
        if first_line "$uevent" '^HID_NAME=.*[Pp]asskey'; then
            HIDRAW="/dev/${uevent#/sys/class/hidraw/}"
            HIDRAW="${HIDRAW%%/device/uevent}"
            return 0
        fi
    done
    return 1
}

no_passkey_hidraw() { ! passkey_hidraw; }

# start_key NAME [serve arguments…]: `passkey serve --uhid --yes` with the store $WORK/NAME.sqlite and its output in
# $LOGS/NAME-serve.out and .err, once the previous key is gone; waits KEY_WAIT seconds (default 60) for its hidraw
# node and sets HIDRAW.
start_key() {
    local name="$1"
    shift
    wait_for 10 "the previous key gone" no_passkey_hidraw
    "$BIN/passkey" serve --uhid --store "$WORK/$name.sqlite" --yes "$@" \
        >"$LOGS/$name-serve.out" 2>"$LOGS/$name-serve.err" &
    WAIT_PID=$! wait_for "${KEY_WAIT:-60}" "a hidraw device named passkey" passkey_hidraw
    log "passkey serve --uhid $* is $HIDRAW"
}

# answer_phone_urls NAME PHONE…: a phone for the QR codes of `passkey serve --phone`: runs `PHONE… URL` for each
# `phone: FIDO:/…` line the key NAME prints, one after another, each logged to $LOGS/NAME-scan-N.txt.
answer_phone_urls() {
    local name="$1" count=0 line
    shift
    tail -n +1 -F "$LOGS/$name-serve.out" 2>/dev/null | while read -r line; do
        [[ "$line" == "phone: FIDO:/"* ]] || continue
        count=$((count + 1))
        "$@" "${line#phone: }" >"$LOGS/$name-scan-$count.txt" 2>&1 || true
    done
}

# phone_timings NAME: one line per ceremony the key NAME sent to a phone by QR code, from its --verbose log: the
# time from the browser's request reaching the key to the QR code (the routing line, printed as the code is drawn),
# from the phone's advert to the answer going back, and the whole request. The request's arrival is the answer's
# time less the CTAPHID transaction's milliseconds.
phone_timings() {
    awk '
        function stamp(line) { sub(/^\[ */, "", line); sub(/ s\].*/, "", line); return line + 0 }
        /^\[ *[0-9.]+ s\] phone: a .* goes to a phone/ { routed = stamp($0); kind = $0 ~ /registration/ ? "registration" : "sign-in" }
        /^\[ *[0-9.]+ s\] phone: advert seen/ { advert = stamp($0) }
        /^\[ *[0-9.]+ s\] phone: answer sent: OK/ { answered = stamp($0) }
        answered && routed && / command=0x0[12] milliseconds=[0-9]+ / {
            match($0, /milliseconds=[0-9]+/)
            ms = substr($0, RSTART + 13, RLENGTH - 13)
            printf "%s: request to QR code %d ms, advert to answer %d ms, request to answer %.1f s\n", kind,
                (routed - (answered - ms / 1000)) * 1000, (answered - advert) * 1000, ms / 1000
            answered = 0; routed = 0
        }
    ' "$LOGS/$1-serve.err"
}

# Ends this check's background processes (SIGTERM, then SIGKILL after 5 s) so the next one starts clean.
stop_children() {
    local pids pid
    pids="$(jobs -pr)"
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill $pids 2>/dev/null || true
    for _ in {1..25}; do
        pids="$(jobs -pr)"
        [ -n "$pids" ] || return 0
        pause 0.2
    done
    for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
}

# selected NAME: whether the check NAME is to run (ONLY, from VM_TEST_ONLY, is empty or a comma-separated list).
selected() {
    [ -z "${ONLY:-}" ] || [[ ",$ONLY," == *",$1,"* ]]
}

# run_test NAME FUNCTION: runs FUNCTION in a subshell with errexit and records `PASS NAME (N s)` or
# `FAIL NAME: reason (N s)` in results.txt.
run_test() {
    local name="$1" started="$SECONDS" result reason
    TAG="$name"
    REASON_FILE="$LOGS/.reason-$name"
    rm -f "$REASON_FILE"
    log "starting"
    set +e
    (
        set -e
        "$2"
    )
    result=$?
    set -e
    if [ "$result" = 0 ]; then
        echo "PASS $name ($((SECONDS - started)) s)" >>"$RESULTS"
        log "passed in $((SECONDS - started)) s"
    else
        reason="exit status $result"
        # One result line per check: the reason's first line, at most 200 characters.
        if [ -s "$REASON_FILE" ]; then read -r reason <"$REASON_FILE" || true; fi
        ((${#reason} <= 200)) || reason="${reason:0:197}..."
        echo "FAIL $name: $reason ($((SECONDS - started)) s)" >>"$RESULTS"
        log "FAILED after $((SECONDS - started)) s"
    fi
}
