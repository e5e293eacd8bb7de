import ArgumentParser
import PasskeyProvider

/// The credential ID of one passkey, as `delete`, `rename` and `share` take it: base64url (as `passkey list` shows
/// it) or hex, with an optional `b64:` or `hex:` prefix (`CredentialIDText`).
struct CredentialIDArgument: ParsableArguments {
    @Argument(
        help: """
            The passkey's credential ID, in base64url (as `passkey list` shows it) or hex; prefix it with b64: \
            or hex: to say which.
            """)
    var credentialID: String

    func validate() throws {
        guard CredentialIDText(credentialID) != nil else {
            throw ValidationError("'\(credentialID)' is not a base64url or hex credential ID.")
        }
    }

    /// The IDs the text can mean (base64url and hex), for the provider to find exactly one of.
    var candidates: [[UInt8]] { CredentialIDText(credentialID)?.candidates ?? [] }
}
