import Basics

/// Why a share failed at the share protocol's level (the hybrid layer below has its own errors). Messages name the
/// problem, never key material, the passkey's contents or the plaintext.
public struct ShareError: CodedError {
    /// The kind of failure, stable for callers and tests to match on.
    public enum Code: Hashable, Sendable {
        /// The other device did not say it speaks the share protocol (a phone, or something else).
        case notASharePeer
        /// A message is not the protocol's CBOR.
        case malformedMessage
        /// A message that is valid but not expected now, or a command this protocol does not have.
        case unexpectedMessage
        /// A second share request or share message in one session: replays are refused, one passkey per session.
        case replayed
        /// A version this program does not speak.
        case unsupportedVersion
        /// The sender answered the share request with an error status.
        case senderRefused
        /// The sealed item does not open with this session's key and handshake: sealed for another session or
        /// receiver, or changed on the way.
        case wrongKeyOrTampered
        /// The opened document is not exactly one passkey, or the passkey fails the store's checks.
        case invalidItem
        /// The passkey could not be sealed (the sender's side).
        case sealingFailed
        /// The passkey may not leave its store: it is not backup eligible (BE = 0).
        case singleDevice
        /// The receiver ended the session without acknowledging the passkey.
        case notAcknowledged
    }

    public var code: Code
    /// One sentence for people, without a trailing period.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
