import Basics
import CBOR
import Crypto
import Synchronization
import WebAuthn

/// authenticatorMakeCredential (CTAP 2.1 §6.1): checks, user verification and consent, the new key, its attestation.
extension Authenticator {
    func makeCredential(
        _ request: MakeCredentialRequest,
        activity: @Sendable (AuthenticatorActivity) -> Void
    ) async throws(CTAPError) -> CBORValue {
        guard request.clientDataHash.count == 32 else { throw .invalidLength }
        guard request.userHandle.count <= 64, !request.userHandle.isEmpty else { throw .invalidLength }
        let pinUvAuth = try await pinUvAuthParameters(
            request.pinUvAuthParam, protocol: request.pinUvAuthProtocol, activity: activity)
        // The first algorithm of the platform's list that this authenticator makes keys for (§6.1.2 step 3).
        guard
            let algorithm = request.algorithms.lazy.map(COSEAlgorithm.init(rawValue:)).first(
                where: configuration.algorithms.contains)
        else { throw .unsupportedAlgorithm }
        let extensions = try MakeCredentialExtensions(cbor: request.extensions)
        // hmac-secret-mc's salts are checked and decrypted before anyone is asked, as getAssertion's are.
        let hmacSecret = try extensions.hmacSecretAtCreation.map { (input) throws(CTAPError) in
            try hmacSecretSession(input)
        }
        guard request.excludeList.count <= configuration.maximumCredentialCountInList else { throw .limitExceeded }
        // Enterprise attestation is not supported (CTAP 2.1 §6.1.2 step 9).
        guard request.enterpriseAttestation == nil else { throw .invalidParameter }

        let discoverable = request.options["rk"] ?? false
        // Without presence: only where the configuration allows it, and then with nothing that asks for the user.
        let silent = request.options["up"] == false
        guard !silent || configuration.makesCredentialsWithoutPresence else { throw .invalidOption }
        guard !silent || (pinUvAuth == nil && request.options["uv"] != true) else { throw .invalidOption }
        try checkUVOption(request.options["uv"], pinUvAuth: pinUvAuth)
        let settings = try await loadSettings()
        // A pinUvAuthToken proves verification and the uv option is then ignored (§6.1.2 step 6); without one, the
        // uv option (or alwaysUv) asks for built-in verification.
        var token: TokenAuthorization? = nil
        if let pinUvAuth {
            token = try authorizeToken(
                pinUvAuth, message: request.clientDataHash, permission: .makeCredential,
                relyingPartyID: request.relyingPartyID)
        }
        // A discoverable credential needs user verification (makeCredUvNotRqd covers non-discoverable ones only,
        // §6.1.2 step 7). Without a token or `uv` and with no PIN set, the built-in method verifies the user instead
        // of answering CTAP2_ERR_PUAT_REQUIRED, as alwaysUv does in step 6 (UserVerificationPolicy.whenRequested).
        // A key without built-in verification (pinOnly) is protected only once a PIN is set: before, a discoverable
        // credential is made with user presence alone.
        let everyRequest = configuration.verifiesEveryRequest(settings)
        let builtInVerification =
            !silent && configuration.userVerification.hasBuiltInVerification && token == nil
            && (request.options["uv"] == true || everyRequest || (discoverable && !settings.isPINSet))
        // What needs verification and gets none from the built-in method needs a token: the platform collects the
        // PIN and comes back with one (step 7 with a PIN set; step 6 for alwaysUv on a key without built-in
        // verification, PIN or not, since clientPin is supported).
        if !silent && token == nil && !builtInVerification
            && ((discoverable && settings.isPINSet) || everyRequest)
        {
            throw .pinUvAuthTokenRequired
        }

        for descriptor in request.excludeList where descriptor.type == "public-key" {
            guard let existing = try await storeCall({ try await $0.credential(id: descriptor.id) }),
                existing.relyingPartyID == request.relyingPartyID
            else { continue }
            // credProtect level 3 hides a credential from requests without user verification (§12.1).
            if existing.credentialProtection == .userVerificationRequired && token == nil && !builtInVerification {
                continue
            }
            // The user's presence is collected first, so a site cannot silently probe for credentials (a silent
            // request's client decided on its own not to ask anyone, and learns this only).
            if silent { throw .credentialExcluded }
            _ = try? await ask(
                ConsentRequest(
                    action: .credentialExcluded(relyingPartyID: request.relyingPartyID),
                    requiresPresence: true,
                    requiresVerification: false
                ),
                activity
            )
            throw .credentialExcluded
        }

        var userVerified = token != nil
        if !silent && (token?.userPresent != true || builtInVerification) {
            let approval = try await consent(
                ConsentRequest(
                    action: .makeCredential(
                        relyingPartyID: request.relyingPartyID,
                        userName: request.userName,
                        userDisplayName: request.userDisplayName
                    ),
                    requiresPresence: true,
                    requiresVerification: builtInVerification
                ),
                activity
            )
            if builtInVerification { userVerified = approval.userVerified }
        }
        if token != nil { state.withLock { $0.pinToken.consumeAfterUse() } }

        guard let privateKey = CredentialPrivateKey.generate(algorithm, randomBytes: environment.randomBytes) else {
            throw .unsupportedAlgorithm
        }
        var credential = StoredCredential(
            id: environment.randomBytes(
                min(max(16, configuration.credentialIDLength), configuration.maximumCredentialIDLength)),
            relyingPartyID: request.relyingPartyID,
            relyingPartyName: Self.truncated(request.relyingPartyName),
            userHandle: request.userHandle,
            userName: Self.truncated(request.userName),
            userDisplayName: Self.truncated(request.userDisplayName),
            privateKey: privateKey,
            isDiscoverable: discoverable,
            backupEligible: configuration.backupEligible,
            backupState: configuration.backupState,
            creationDate: environment.currentDate()
        )
        let extensionOutputs = try applyExtensions(
            extensions, to: &credential, settings: settings, hmacSecret: hmacSecret, userVerified: userVerified)
        try await storeCall { [credential] in try await $0.save(credential) }

        var flags: AuthenticatorFlags = silent ? [] : [.userPresent]
        if userVerified { flags.insert(.userVerified) }
        flags.formUnion(Self.backupFlags(credential))
        let authenticatorData = AuthenticatorData(
            relyingPartyIDHash: SHA256.hash(data: Array(request.relyingPartyID.utf8)).bytes,
            flags: flags,
            signCount: 0,
            attestedCredentialData: AttestedCredentialData(
                aaguid: configuration.aaguid,
                credentialID: credential.id,
                publicKey: privateKey.publicKey
            ),
            extensions: extensionOutputs
        )
        let statement: CBORValue
        switch configuration.attestationFormat {
        case .none:
            statement = [:]
        case .packedSelf:
            let signature = try Self.sign(authenticatorData.bytes, request.clientDataHash, with: privateKey)
            statement = ["alg": .int(privateKey.algorithm.rawValue), "sig": .bytes(signature)]
        }
        var response: [CBORValue: CBORValue] = [
            1: .text(configuration.attestationFormat.rawValue),
            2: .bytes(authenticatorData.bytes),
            3: statement,
        ]
        if credential.largeBlobKey { response[5] = .bytes(Self.derivedSecret(credential, label: "largeBlobKey")) }
        return .map(response)
    }

    /// The longest rp.name, user.name and user.displayName kept, in UTF-8 bytes. CTAP 2.1 (§6.1.2, the
    /// PublicKeyCredentialUserEntity and PublicKeyCredentialRpEntity notes) lets an authenticator truncate them to
    /// 64 bytes; longer ones could make a later getAssertion response pass the CTAPHID message limit.
    static let maximumNameBytes = 64

    /// `text` cut to at most `maximumNameBytes` of UTF-8 at a character boundary.
    static func truncated(_ text: String?) -> String? {
        guard let text, text.utf8.count > maximumNameBytes else { return text }
        var result = ""
        var count = 0
        for character in text {
            count += character.utf8.count
            guard count <= maximumNameBytes else { break }
            result.append(character)
        }
        return result
    }

}
