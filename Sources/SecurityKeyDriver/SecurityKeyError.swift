import Basics
import CTAP2
import CTAPHID
import CTAPHIDIO

/// Why a security key could not be used. Each case's description says what happened and, where the user can do
/// something, what. User verification and the PIN are the WebAuthn engine's (`ClientError`).
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
    /// The key refused a step the platform took on its own (getInfo): the step and the status.
    case refused(step: String, status: CTAPError)

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
