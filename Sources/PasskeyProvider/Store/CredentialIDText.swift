import Basics
import CBOR
import WebAuthn

/// A credential ID as a person types it: base64url (as `passkey list` shows it) or hex, optionally with a `b64:` or
/// `hex:` prefix that says which.
///
/// Every even-length run of hex digits is also valid base64url, so without a prefix both readings are kept and the
/// store decides which of them names a passkey.
public struct CredentialIDText {
    /// The byte strings the text can mean, base64url first.
    public let candidates: [[UInt8]]

    /// `nil` when the text is no credential ID in any reading.
    public init?(_ text: String) {
        var readings: [[UInt8]?]
        if text.hasPrefix("hex:") {
            readings = [[UInt8](hex: text.dropFirst(4))]
        } else if text.hasPrefix("b64:") {
            readings = [[UInt8](base64URLEncoded: String(text.dropFirst(4)))]
        } else {
            readings = [[UInt8](base64URLEncoded: text), [UInt8](hex: text)]
        }
        var candidates: [[UInt8]] = []
        for case let bytes? in readings where !bytes.isEmpty && !candidates.contains(bytes) {
            candidates.append(bytes)
        }
        guard !candidates.isEmpty else { return nil }
        self.candidates = candidates
    }
}
