import Basics
/// Why the relying party refused a registration or authentication response.
///
/// `code` is stable and meant for programs; `reason` is for people and may change. Two errors are
/// equal when their codes are, so tests and callers can match on the code alone.
public struct RelyingPartyError: CodedError {
    /// A stable identifier for each kind of refusal. The raw value is the case name.
    public enum Code: String, Hashable, Sendable, CaseIterable, Codable {
        /// The clientDataJSON, attestation object, authenticator data or signature could not be parsed.
        case malformed
        /// `type` in clientDataJSON is not the ceremony's (`webauthn.create` or `webauthn.get`).
        case typeMismatch
        /// The challenge in clientDataJSON is not the one the relying party issued.
        case challengeMismatch
        /// The origin in clientDataJSON is not one the relying party expects.
        case originMismatch
        /// clientDataJSON says the ceremony ran in a cross-origin frame, and the policy forbids that.
        case crossOriginNotAllowed
        /// `topOrigin` in clientDataJSON is not one the relying party expects.
        case topOriginMismatch
        /// The rpIdHash in the authenticator data is not SHA-256 of the relying party ID.
        case rpIDHashMismatch
        /// The UP flag is not set.
        case userNotPresent
        /// User verification was required and the UV flag is not set.
        case userVerificationRequired
        /// The BS flag is set while the BE flag is not.
        case backupFlagsInconsistent
        /// The BE flag differs from the value stored at registration.
        case backupEligibilityChanged
        /// A registration's authenticator data carries no attested credential data.
        case attestedCredentialDataMissing
        /// The credential's or the attestation's algorithm is not one the relying party accepts.
        case unsupportedAlgorithm
        /// The attestation statement format is not one this verifier implements.
        case unsupportedAttestationFormat
        /// The attestation statement is malformed or its signature or certificate does not verify.
        case attestationInvalid
        /// The assertion signature does not verify with the stored public key.
        case signatureInvalid
        /// No stored credential record has the response's credential ID.
        case unknownCredential
        /// The credential is not in the `allowCredentials` list the relying party sent.
        case credentialNotAllowed
        /// The user handle does not belong to the credential, or not to the expected user.
        case userHandleMismatch
        /// A discoverable-credential authentication returned no user handle.
        case userHandleMissing
        /// The signature counter did not increase although one of the counters is non-zero.
        case signCountRegressed
    }

    /// The stable kind of refusal.
    public var code: Code
    /// A human-readable explanation; not stable.
    public var reason: String

    /// An error of kind `code`, explained by `reason`.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// `code: reason`.
    public var description: String { "\(code.rawValue): \(reason)" }
}
