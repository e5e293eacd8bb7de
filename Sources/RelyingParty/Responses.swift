import WebAuthn

/// The parts of an `AuthenticatorAttestationResponse` the relying party verifies, as raw bytes.
public struct RegistrationResponse: Hashable, Sendable {
    /// `response.clientDataJSON`, exactly as the client sent it.
    public var clientDataJSON: [UInt8]
    /// `response.attestationObject`, exactly as the client sent it.
    public var attestationObject: [UInt8]
    /// `response.getTransports()`: stored in the record; empty when unknown.
    public var transports: [String]

    /// A response from its parts.
    public init(clientDataJSON: [UInt8], attestationObject: [UInt8], transports: [String] = []) {
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
    }
}

/// The parts of an `AuthenticatorAssertionResponse` the relying party verifies, as raw bytes.
public struct AuthenticationResponse: Hashable, Sendable {
    /// `rawId`: the credential that signed.
    public var credentialID: [UInt8]
    /// `response.clientDataJSON`, exactly as the client sent it.
    public var clientDataJSON: [UInt8]
    /// `response.authenticatorData`, exactly as the client sent it.
    public var authenticatorData: [UInt8]
    /// `response.signature`: an ASN.1 DER ECDSA signature for ES256.
    public var signature: [UInt8]
    /// `response.userHandle`, when the authenticator returned one.
    public var userHandle: [UInt8]?

    /// A response from its parts.
    public init(
        credentialID: [UInt8], clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8],
        userHandle: [UInt8]? = nil
    ) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
    }
}

/// A verified registration.
public struct RegistrationResult: Hashable, Sendable {
    /// The record to store. The caller must first check that no other user has this credential ID
    /// (WebAuthn §7.1 step 26).
    public var credential: CredentialRecord
    /// The parsed client data.
    public var clientData: CollectedClientData
    /// The parsed authenticator data.
    public var authenticatorData: AuthenticatorData
    /// The x5c certificates (DER, leaf first) of a `basicOrAttCA` statement; empty otherwise.
    /// Only the leaf was inspected: evaluating the chain against trust anchors is the caller's.
    public var attestationTrustPath: [[UInt8]]
}

/// A verified authentication.
public struct AuthenticationResult: Hashable, Sendable {
    /// The credential record with the new signature counter, backup state and UV state: store it.
    public var credential: CredentialRecord
    /// The parsed client data.
    public var clientData: CollectedClientData
    /// The parsed authenticator data.
    public var authenticatorData: AuthenticatorData
    /// Whether the UV flag was set.
    public var userVerified: Bool
    /// Set under `SignCountPolicy.flag` when the counter did not increase: the authenticator may
    /// have been cloned.
    public var possibleClone: Bool
}
