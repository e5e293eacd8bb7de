import Basics
import CBOR
import Crypto
import WebAuthn

/// A WebAuthn Level 3 relying party: verifies registration (§7.1) and authentication (§7.2) responses.
///
/// Pure: it reads no clock, store or network. Challenges are the caller's, and so is keeping
/// credential records. ES256, ESP256, EdDSA, Ed25519 and RS256 credentials are accepted (`COSEKey`), and only
/// `none` and `packed` attestation statements; for `packed` with x5c the leaf certificate's fields and signature are
/// verified but the chain is returned for the caller to evaluate (`RegistrationResult.attestationTrustPath`).
public struct RelyingPartyVerifier: Hashable, Sendable {
    /// The relying party; its `id` is the RP ID whose SHA-256 the authenticator data must carry.
    public var relyingParty: RelyingPartyEntity
    /// The origins (scheme://host[:port]) clientDataJSON may name, compared exactly.
    public var origins: Set<String>
    /// Whether responses from cross-origin iframes are accepted.
    public var crossOrigin: CrossOriginPolicy
    /// What to do with a signature counter that did not increase.
    public var signCountPolicy: SignCountPolicy

    /// A verifier for `relyingParty` that accepts `origins`.
    /// Reads responses as authenticators write them: real ones do not all use CTAP2 canonical key order
    /// or minimal integers, and WebAuthn does not require it of them. Everything else stays strict.
    static let responseDecoder = CBORDecoder(requiresCanonicalForm: false)

    public init(
        relyingParty: RelyingPartyEntity,
        origins: Set<String>,
        crossOrigin: CrossOriginPolicy = .sameOriginOnly,
        signCountPolicy: SignCountPolicy = .reject
    ) {
        self.relyingParty = relyingParty
        self.origins = origins
        self.crossOrigin = crossOrigin
        self.signCountPolicy = signCountPolicy
    }

    /// Verifies a registration response against the options sent for it (WebAuthn §7.1).
    ///
    /// Checked in the specification's order: clientDataJSON type, challenge (constant time), origin,
    /// crossOrigin / topOrigin; the attestation object; rpIdHash, UP, UV when required, BS only with
    /// BE, attested credential data present; the credential algorithm against `options.algorithms`;
    /// then the attestation statement. Not checked: extensions, and whether the credential ID is
    /// already registered (step 26): do that before storing the record.
    ///
    /// `conditionalMediation` is true when the options were passed to `create()` with `mediation: "conditional"`
    /// (an automatic passkey upgrade): then the UP flag is not required (§7.1 step 14: "If options.mediation is not
    /// set to conditional, verify that the UP bit … is set"), and every other check stays.
    public func verifyRegistration(
        _ response: RegistrationResponse, options: RegistrationOptions, conditionalMediation: Bool = false
    ) throws(RelyingPartyError) -> RegistrationResult {
        let clientData = try verifyClientData(response.clientDataJSON, type: .create, challenge: options.challenge)
        let clientDataHash = Array(SHA256.hash(data: response.clientDataJSON))

        let object: AttestationObject
        do {
            object = try AttestationObject(bytes: response.attestationObject, decoder: Self.responseDecoder)
        } catch {
            throw Self.refusal(error)
        }
        let authenticatorData = object.authenticatorData
        try verifyFlags(
            authenticatorData, userVerification: options.userVerification, requireUserPresence: !conditionalMediation)
        guard let attested = authenticatorData.attestedCredentialData else {
            throw RelyingPartyError(.attestedCredentialDataMissing, "the AT flag is not set in a registration")
        }
        guard options.algorithms.contains(attested.publicKey.algorithm) else {
            throw RelyingPartyError(
                .unsupportedAlgorithm,
                "credential algorithm \(attested.publicKey.algorithm.rawValue) was not in pubKeyCredParams")
        }
        let attestation = try AttestationVerification.verify(
            object, clientDataHash: clientDataHash, credential: attested)

        let flags = authenticatorData.flags
        let record = CredentialRecord(
            id: attested.credentialID,
            publicKey: attested.publicKey,
            signCount: authenticatorData.signCount,
            backupEligible: flags.contains(.backupEligible),
            backupState: flags.contains(.backupState),
            uvInitialized: flags.contains(.userVerified),
            userHandle: options.user.id,
            aaguid: attested.aaguid,
            attestationFormat: object.format,
            attestationType: attestation.type,
            transports: response.transports)
        return RegistrationResult(
            credential: record, clientData: clientData, authenticatorData: authenticatorData,
            attestationTrustPath: attestation.trustPath)
    }

    /// Verifies an authentication response against the options sent for it and the stored records
    /// (WebAuthn §7.2).
    ///
    /// Checked in the specification's order: the credential is in `allowCredentials` when that is not
    /// empty; a record with its ID exists; the user handle, required when `allowCredentials` was
    /// empty, matches the record's and `options.expectedUserHandle`; clientDataJSON type, challenge,
    /// origin, crossOrigin / topOrigin; rpIdHash, UP, UV when required; BS only with BE, BE unchanged;
    /// the signature over authenticatorData ‖ SHA-256(clientDataJSON); the signature counter.
    /// Not checked: extensions.
    public func verifyAuthentication(
        _ response: AuthenticationResponse, options: AuthenticationOptions,
        credentials: some Sequence<CredentialRecord>
    ) throws(RelyingPartyError) -> AuthenticationResult {
        if !options.allowCredentials.isEmpty {
            guard options.allowCredentials.contains(response.credentialID) else {
                throw RelyingPartyError(.credentialNotAllowed, "the credential was not in allowCredentials")
            }
        }
        guard let stored = credentials.first(where: { $0.id == response.credentialID }) else {
            throw RelyingPartyError(.unknownCredential, "no credential record has this credential ID")
        }
        try verifyUserHandle(response.userHandle, record: stored, options: options)

        let clientData = try verifyClientData(response.clientDataJSON, type: .get, challenge: options.challenge)
        let authenticatorData: AuthenticatorData
        do {
            authenticatorData = try AuthenticatorData(bytes: response.authenticatorData, decoder: Self.responseDecoder)
        } catch {
            throw RelyingPartyError(.malformed, "authenticator data: \(error)")
        }
        try verifyFlags(authenticatorData, userVerification: options.userVerification)
        let flags = authenticatorData.flags
        guard flags.contains(.backupEligible) == stored.backupEligible else {
            throw RelyingPartyError(
                .backupEligibilityChanged,
                "BE is \(flags.contains(.backupEligible)) but was \(stored.backupEligible) at registration")
        }

        let signedData = response.authenticatorData + Array(SHA256.hash(data: response.clientDataJSON))
        guard stored.publicKey.isValidSignature(response.signature, for: signedData) else {
            throw RelyingPartyError(.signatureInvalid, "the assertion signature does not verify with the stored key")
        }

        var updated = stored
        var possibleClone = false
        let newCount = authenticatorData.signCount
        if (newCount != 0 || stored.signCount != 0) && newCount <= stored.signCount {
            switch signCountPolicy {
            case .reject:
                throw RelyingPartyError(
                    .signCountRegressed,
                    "signature counter \(newCount) is not above the stored \(stored.signCount): possible clone")
            case .flag:
                possibleClone = true
            }
        } else {
            updated.signCount = newCount
        }
        updated.backupState = flags.contains(.backupState)
        if flags.contains(.userVerified) { updated.uvInitialized = true }
        return AuthenticationResult(
            credential: updated, clientData: clientData, authenticatorData: authenticatorData,
            userVerified: flags.contains(.userVerified), possibleClone: possibleClone)
    }

    // MARK: Shared steps

    /// §7.1 steps 5–10 / §7.2 steps 7–10.
    private func verifyClientData(
        _ json: [UInt8], type: CollectedClientData.CeremonyType, challenge: [UInt8]
    ) throws(RelyingPartyError) -> CollectedClientData {
        let clientData: CollectedClientData
        do {
            clientData = try CollectedClientData(jsonBytes: json)
        } catch {
            throw RelyingPartyError(.malformed, "clientDataJSON: \(error)")
        }
        guard clientData.type == type.rawValue else {
            throw RelyingPartyError(
                .typeMismatch, "clientDataJSON type is \"\(clientData.type)\", not \"\(type.rawValue)\"")
        }
        guard constantTimeEqual(clientData.challenge, challenge) else {
            throw RelyingPartyError(.challengeMismatch, "clientDataJSON challenge is not the one issued")
        }
        guard origins.contains(clientData.origin) else {
            throw RelyingPartyError(.originMismatch, "origin \"\(clientData.origin)\" is not expected")
        }
        switch crossOrigin {
        case .sameOriginOnly:
            guard !clientData.crossOrigin, clientData.topOrigin == nil else {
                throw RelyingPartyError(.crossOriginNotAllowed, "the ceremony ran in a cross-origin frame")
            }
        case .allowed(let topOrigins):
            if let topOrigin = clientData.topOrigin, !topOrigins.contains(topOrigin) {
                throw RelyingPartyError(.topOriginMismatch, "topOrigin \"\(topOrigin)\" is not expected")
            }
        }
        return clientData
    }

    /// §7.1 steps 13–16 / §7.2 steps 11–14 (the parts that need no stored record).
    private func verifyFlags(
        _ authenticatorData: AuthenticatorData, userVerification: UserVerificationRequirement,
        requireUserPresence: Bool = true
    ) throws(RelyingPartyError) {
        let expectedHash = Array(SHA256.hash(data: Array(relyingParty.id.utf8)))
        guard constantTimeEqual(authenticatorData.relyingPartyIDHash, expectedHash) else {
            throw RelyingPartyError(.rpIDHashMismatch, "rpIdHash is not SHA-256(\"\(relyingParty.id)\")")
        }
        let flags = authenticatorData.flags
        guard flags.contains(.userPresent) || !requireUserPresence else {
            throw RelyingPartyError(.userNotPresent, "the UP flag is not set")
        }
        if userVerification == .required, !flags.contains(.userVerified) {
            throw RelyingPartyError(.userVerificationRequired, "user verification was required; the UV flag is not set")
        }
        if flags.contains(.backupState), !flags.contains(.backupEligible) {
            throw RelyingPartyError(.backupFlagsInconsistent, "BS is set but BE is not")
        }
    }

    /// §7.2 steps 5–6.
    private func verifyUserHandle(
        _ userHandle: [UInt8]?, record: CredentialRecord, options: AuthenticationOptions
    ) throws(RelyingPartyError) {
        guard let userHandle else {
            if options.allowCredentials.isEmpty {
                throw RelyingPartyError(.userHandleMissing, "a discoverable credential must return its user handle")
            }
            return
        }
        if let owner = record.userHandle, owner != userHandle {
            throw RelyingPartyError(.userHandleMismatch, "the user handle is not the credential's owner")
        }
        if let expected = options.expectedUserHandle, expected != userHandle {
            throw RelyingPartyError(.userHandleMismatch, "the user handle is not the expected user's")
        }
    }

    /// Maps a parse failure of the attestation object to the relying party's codes: a credential key
    /// of another algorithm is `unsupportedAlgorithm`, anything else `malformed`.
    private static func refusal(_ error: AttestationObjectError) -> RelyingPartyError {
        if case .invalidAuthenticatorData(.invalidPublicKey(.unsupportedKey(let keyType, let curve, let algorithm))) =
            error
        {
            func text(_ value: Int?) -> String { value.map(String.init) ?? "absent" }
            return RelyingPartyError(
                .unsupportedAlgorithm,
                "credential key kty \(text(keyType)), crv \(text(curve)), alg \(text(algorithm)) is not one of ES256 or "
                    + "ESP256 on P-256, EdDSA or Ed25519 on Ed25519, RS256")
        }
        return RelyingPartyError(.malformed, "attestation object: \(error)")
    }
}
