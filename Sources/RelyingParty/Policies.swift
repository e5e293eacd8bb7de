/// How much the relying party insists on user verification (WebAuthn §5.8.6).
public enum UserVerificationRequirement: String, Hashable, Sendable, Codable, CaseIterable {
    /// The UV flag must be set, or the response is refused.
    case required
    /// The authenticator should verify the user; a response without UV is still accepted.
    case preferred
    /// The authenticator should not verify the user; a response with UV is still accepted.
    case discouraged
}

/// Whether a discoverable credential should be created (WebAuthn §5.4.6).
public enum ResidentKeyRequirement: String, Hashable, Sendable, Codable, CaseIterable {
    /// The credential must be discoverable.
    case required
    /// A discoverable credential is preferred.
    case preferred
    /// A server-side credential is preferred.
    case discouraged
}

/// Which attestation the relying party asks the client for (WebAuthn §5.4.7).
public enum AttestationConveyancePreference: String, Hashable, Sendable, Codable, CaseIterable {
    /// No attestation: clients may replace it with `none`.
    case none
    /// Attestation the client may anonymize.
    case indirect
    /// The authenticator's own attestation.
    case direct
    /// Attestation that may identify the authenticator uniquely (managed deployments only).
    case enterprise
}

/// Whether ceremonies may run inside a cross-origin iframe (clientDataJSON `crossOrigin` / `topOrigin`).
public enum CrossOriginPolicy: Hashable, Sendable {
    /// `crossOrigin` must be false or absent and `topOrigin` absent.
    case sameOriginOnly
    /// `crossOrigin` may be true; a `topOrigin`, when the client sends one, must be in `topOrigins`.
    case allowed(topOrigins: Set<String>)
}

/// What to do when the signature counter did not increase (WebAuthn §7.2 step 22).
///
/// A counter that fails to grow, while either the stored or the new value is non-zero, is a signal
/// that the authenticator may have been cloned.
public enum SignCountPolicy: Hashable, Sendable {
    /// Refuse the assertion with `signCountRegressed`. The default.
    case reject
    /// Accept the assertion, set `AuthenticationResult.possibleClone`, and keep the stored counter
    /// (the larger value) so the counter never moves backwards.
    case flag
}

/// The attestation type a verified statement established (WebAuthn §6.5.4).
public enum AttestationType: String, Hashable, Sendable, Codable, CaseIterable {
    /// `none` attestation: nothing is known about the authenticator.
    case none
    /// Self attestation: the statement is signed with the credential's own key.
    case `self`
    /// Basic or AttCA attestation: signed by the leaf of an x5c chain. The signature and the leaf
    /// certificate's fields are verified; the chain and its trust anchor are not evaluated here.
    case basicOrAttCA
}
