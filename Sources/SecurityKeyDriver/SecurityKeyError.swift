import Basics
import CTAP2
import CTAPHID
import CTAPHIDIO

/// Why a security key could not be used. Each case's description says what happened and, where the user can do
/// something, what; none ever contains a PIN.
public enum SecurityKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    // MARK: Finding and opening the key

    /// `--security-key` is not `hidraw:/dev/hidrawN`, `udp:HOST:PORT` or `auto`.
    case invalidSpec(String)
    /// `auto` found no hidraw node with a FIDO report descriptor.
    case noSecurityKeyFound
    /// `auto` found several; the user must choose one.
    case severalSecurityKeysFound([FIDOHidrawDevice])
    /// The hidraw node cannot be opened: missing, no permission (with the udev rule to add), not FIDO.
    case cannotOpen(HidrawOpenError)
    /// The UDP address cannot be resolved or the socket not bound (the address and the system's reason).
    case cannotConnect(address: String, reason: String)
    /// The device answered CTAPHID_INIT without the CBOR capability: it speaks only CTAP1/U2F.
    case notFIDO2(String)

    // MARK: Talking to it

    /// The CTAPHID exchange failed: the device's CTAPHID error, a broken framing rule, the device going away.
    case connection(CTAPHIDConnectionError)
    /// The device did not answer within the time limit (for a request waiting for a touch: nobody touched it).
    case timedOut(Duration)
    /// The request was cancelled (``SecurityKey/cancel()`` or the task's cancellation).
    case cancelled
    /// Another request to this key is still running.
    case busy
    /// The key stayed busy with another program's request (ERR_CHANNEL_BUSY) for the whole time limit.
    case keyBusy(Duration)
    /// An answer the key should not have given: what was wrong with it.
    case invalidResponse(String)
    /// The key refused a step the platform took on its own (getInfo, clientPIN): the step and the status.
    case refused(step: String, status: CTAPError)

    // MARK: User verification and the PIN

    /// The request needs user verification, and the key has neither built-in verification nor a PIN set.
    case pinNotSet
    /// The request needs user verification, and the key can verify users neither itself nor with a PIN.
    case userVerificationUnavailable
    /// The key needs its PIN, but no way to ask for one was given.
    case pinRequired
    /// The key lists only PIN/UV auth protocols this platform does not implement (their numbers).
    case unsupportedPinUvAuthProtocols([Int])
    /// The user gave no PIN.
    case pinEntryCancelled
    /// The PIN cannot be right (under 4 characters or over 63 bytes); it was not sent, so no retry was spent.
    case pinImpossible
    /// The PIN was wrong; the key allows this many more tries.
    case pinInvalid(retriesLeft: Int)
    /// No tries are left: the PIN is blocked until the key is reset (which deletes its credentials).
    case pinBlocked
    /// Three wrong PINs in a row: the key takes no PIN until it is unplugged and plugged in again.
    case pinAuthBlocked
    /// The key wants its PIN changed before it is used again.
    case pinChangeRequired

    public var description: String {
        switch self {
        case .invalidSpec(let text):
            "\(text.debugDescription) names no security key: use hidraw:/dev/hidrawN, udp:HOST:PORT or auto"
        case .noSecurityKeyFound:
            "no FIDO security key found: no /dev/hidraw* device declares the FIDO usage page (0xF1D0); "
                + "is the key plugged in? (`passkey serve --uhid` makes a virtual one)"
        case .severalSecurityKeysFound(let devices):
            "several FIDO security keys found: "
                + devices.map(\.description).joined(separator: ", ")
                + "; choose one with --security-key hidraw:PATH"
        case .cannotOpen(let error):
            "\(error)"
        case .cannotConnect(let address, let reason):
            "cannot reach a security key at \(address): \(reason)"
        case .notFIDO2(let key):
            "\(key) is not a FIDO2 key: it does not implement CTAPHID_CBOR (a U2F-only key?)"
        case .connection(let error):
            "\(error)"
        case .timedOut(let limit):
            "the security key did not answer within \(limit.secondsDescription) "
                + "(waiting for a touch that did not come?)"
        case .cancelled:
            "cancelled"
        case .busy:
            "another request to this security key is still running"
        case .keyBusy(let limit):
            "the security key stayed busy with another program's request for \(limit.secondsDescription) "
                + "(a browser or another platform waiting for a touch?)"
        case .invalidResponse(let what):
            "the security key sent an invalid answer: \(what)"
        case .refused(let step, let status):
            "the security key refused \(step): \(status)"
        case .pinNotSet:
            "user verification is required, but the security key has no PIN set: set one (for example with "
                + "`fido2-token -S`) and try again"
        case .userVerificationUnavailable:
            "user verification is required, but the security key can verify users neither itself nor with a PIN"
        case .pinRequired:
            "the security key needs its PIN, and no PIN was given (set PASSKEY_CLIENT_PIN, or run in a terminal)"
        case .unsupportedPinUvAuthProtocols(let numbers):
            "the security key offers only PIN/UV auth protocol(s) "
                + numbers.map(String.init).joined(separator: ", ") + ", which this platform does not implement"
        case .pinEntryCancelled:
            "no PIN was entered"
        case .pinImpossible:
            "a PIN has 4 to 63 characters: nothing was sent to the security key, no try was spent"
        case .pinInvalid(let retries) where retries == 1:
            "wrong PIN: 1 try left; one more wrong PIN blocks the PIN until the key is reset"
        case .pinInvalid(let retries):
            "wrong PIN: \(retries) tries left"
        case .pinBlocked:
            "the PIN is blocked (no tries left): only a reset of the key, which deletes its credentials, unblocks it"
        case .pinAuthBlocked:
            "too many wrong PINs in a row: unplug the security key and plug it in again before the next try"
        case .pinChangeRequired:
            "the security key requires a new PIN before it is used again: change it (for example with "
                + "`fido2-token -C`)"
        }
    }
}

extension SecurityKeyError {
    /// The error for a failed CTAPHID exchange: timeouts and cancellations get their own cases.
    init(_ error: CTAPHIDConnectionError, timeout: Duration) {
        switch error {
        case .exchange(.responseTimedOut), .exchange(.channelAllocationTimedOut): self = .timedOut(timeout)
        case .exchange(.cancelled): self = .cancelled
        case .exchange(.busy): self = .busy
        default: self = .connection(error)
        }
    }
}
