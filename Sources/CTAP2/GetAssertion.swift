import Basics
import CBOR
import Crypto
import Synchronization
import WebAuthn

/// authenticatorGetAssertion and authenticatorGetNextAssertion (CTAP 2.1 §6.2, §6.3): finding the credentials, consent,
/// account paging and the signed response.
extension Authenticator {
    func getAssertion(
        _ request: GetAssertionRequest,
        activity: @Sendable (AuthenticatorActivity) -> Void
    ) async throws(CTAPError) -> [UInt8] {
        guard request.clientDataHash.count == 32 else { throw .invalidLength }
        let pinUvAuth = try await pinUvAuthParameters(
            request.pinUvAuthParam, protocol: request.pinUvAuthProtocol, activity: activity)
        try checkUVOption(request.options["uv"], pinUvAuth: pinUvAuth)
        guard request.options["rk"] == nil else { throw .unsupportedOption }
        let extensions = try GetAssertionExtensions(cbor: request.extensions)
        guard request.allowList.count <= configuration.maximumCredentialCountInList else { throw .limitExceeded }
        let presenceRequested = request.options["up"] ?? true
        let settings = try await loadSettings()
        var token: TokenAuthorization? = nil
        if let pinUvAuth {
            token = try authorizeToken(
                pinUvAuth, message: request.clientDataHash, permission: .getAssertion,
                relyingPartyID: request.relyingPartyID)
        }
        let builtIn = configuration.userVerification.hasBuiltInVerification
        let everyRequest = configuration.verifiesEveryRequest(settings)
        let verificationRequested = builtIn && token == nil && (request.options["uv"] == true || everyRequest)
        // alwaysUv without built-in verification: a request with user presence needs a token, PIN set or not, since
        // clientPin is supported (§6.2.2 step 5). A silent one (up false) goes on without verification.
        if !builtIn && token == nil && presenceRequested && everyRequest {
            throw .pinUvAuthTokenRequired
        }
        let willVerify = token != nil || verificationRequested

        var candidates = try await candidates(for: request, willVerify: willVerify)
        guard !candidates.isEmpty else { throw .noCredentials }
        let hmacSecret = try extensions.hmacSecret.map { (input) throws(CTAPError) in try hmacSecretSession(input) }

        let chooseOnAuthenticator =
            configuration.accountSelection == .authenticator && request.allowList.isEmpty && candidates.count > 1
        var userVerified = token != nil
        var userSelected = false
        let presenceProven = token?.userPresent == true && !chooseOnAuthenticator
        if (presenceRequested && !presenceProven) || verificationRequested {
            let approval = try await consent(
                ConsentRequest(
                    action: .getAssertion(
                        relyingPartyID: request.relyingPartyID,
                        accounts: candidates.map(AccountSummary.init),
                        chooseOnAuthenticator: chooseOnAuthenticator
                    ),
                    requiresPresence: presenceRequested,
                    requiresVerification: verificationRequested
                ),
                activity
            )
            if verificationRequested { userVerified = approval.userVerified }
            if chooseOnAuthenticator, let index = approval.selectedAccount, candidates.indices.contains(index) {
                candidates = [candidates[index]]
                userSelected = true
            }
        }

        if token != nil && presenceRequested { state.withLock { $0.pinToken.consumeAfterUse() } }

        var flags: AuthenticatorFlags = []
        if presenceRequested { flags.insert(.userPresent) }
        if userVerified { flags.insert(.userVerified) }
        let first = candidates.removeFirst()
        let pagesRemaining = !candidates.isEmpty && !chooseOnAuthenticator
        if pagesRemaining {
            let pending = PendingAssertions(
                remaining: candidates,
                clientDataHash: request.clientDataHash,
                flags: flags,
                userVerified: userVerified,
                issuedAt: environment.now(),
                extensions: extensions,
                hmacSecret: hmacSecret
            )
            state.withLock { $0.pendingAssertions = pending }
        }
        let outputs = try Self.extensionOutputs(
            for: first, requested: extensions, hmacSecret: hmacSecret, userVerified: userVerified)
        let response = try assertion(
            for: first, clientDataHash: request.clientDataHash, flags: flags, userVerified: userVerified,
            extensions: outputs, numberOfCredentials: pagesRemaining ? candidates.count + 1 : nil,
            userSelected: userSelected)
        // With several accounts to page through, the platform picks one: which was used is not known here.
        if !pagesRemaining {
            await environment.store.recordUse(ofCredential: first.id, at: environment.currentDate())
        }
        return response
    }

    /// The credentials `request` can use, before anyone is asked: with an empty allowList the relying party's
    /// discoverable credentials that no signal hid, else the first listed one of this relying party (a relying party
    /// that names a hidden passkey still knows it); credProtect (§12.1) hides level 2 from discovery and level 3 from
    /// everything unless the user will be verified.
    func candidates(for request: GetAssertionRequest, willVerify: Bool) async throws(CTAPError) -> [StoredCredential] {
        if request.allowList.isEmpty {
            return try await storeCall { try await $0.credentials(forRelyingParty: request.relyingPartyID) }
                .filter {
                    $0.isDiscoverable && $0.hiddenDate == nil
                        && ($0.credentialProtection == .userVerificationOptional || willVerify)
                }
        }
        for descriptor in request.allowList where descriptor.type == "public-key" {
            if let credential = try await storeCall({ try await $0.credential(id: descriptor.id) }),
                credential.relyingPartyID == request.relyingPartyID,
                credential.credentialProtection != .userVerificationRequired || willVerify
            {
                return [credential]
            }
        }
        return []
    }

    /// Whether getAssertion could answer `request` from the store (a credential it can use is there), asking nobody
    /// and changing nothing: the question a phone behind this key asks before it shows a QR code. The user counts
    /// as verified when the request asks for it (`uv`) and this authenticator verifies built in, or it verifies every
    /// request; a token is not looked at. A store that cannot be read counts as able to answer, so that getAssertion
    /// reports its error.
    public func storeCanAnswer(_ request: GetAssertionRequest) async -> Bool {
        let settings: AuthenticatorSettings
        do {
            settings = try await loadSettings()
        } catch {
            return true
        }
        let willVerify =
            configuration.userVerification.hasBuiltInVerification
            && (request.options["uv"] == true || configuration.verifiesEveryRequest(settings))
        do {
            return try await !candidates(for: request, willVerify: willVerify).isEmpty
        } catch {
            return true
        }
    }

    /// Whether the store holds a credential of `excludeList` for `relyingPartyID`, so that makeCredential answers
    /// CREDENTIAL_EXCLUDED (any credProtect level: a phone behind the key must not make a second credential for an
    /// account this key already has). A store that cannot be read counts as holding one.
    public func storeHolds(excludeList: [CredentialDescriptor], relyingPartyID: String) async -> Bool {
        for descriptor in excludeList where descriptor.type == "public-key" {
            do {
                if try await storeCall({ try await $0.credential(id: descriptor.id) })?.relyingPartyID
                    == relyingPartyID
                {
                    return true
                }
            } catch {
                return true
            }
        }
        return false
    }

    /// Forgets the accounts a getAssertion left for getNextAssertion: a later request went elsewhere (a phone), so
    /// getNextAssertion must not page through an older answer of this store.
    public func forgetPendingAssertions() {
        state.withLock { $0.pendingAssertions = nil }
    }

    func getNextAssertion() throws(CTAPError) -> [UInt8] {
        let now = environment.now()
        let next = state.withLock { state -> (StoredCredential, PendingAssertions)? in
            guard var pending = state.pendingAssertions, !pending.remaining.isEmpty,
                now - pending.issuedAt <= configuration.nextAssertionTimeout
            else {
                state.pendingAssertions = nil
                return nil
            }
            let credential = pending.remaining.removeFirst()
            state.pendingAssertions = pending.remaining.isEmpty ? nil : pending
            return (credential, pending)
        }
        guard let (credential, pending) = next else { throw .notAllowed }
        var hmacSecret = pending.hmacSecret
        hmacSecret?.iv = environment.randomBytes(16)
        let outputs = try Self.extensionOutputs(
            for: credential, requested: pending.extensions, hmacSecret: hmacSecret, userVerified: pending.userVerified)
        return try assertion(
            for: credential, clientDataHash: pending.clientDataHash, flags: pending.flags,
            userVerified: pending.userVerified, extensions: outputs)
    }

    /// One whole assertion response (status byte and CBOR): credential, authenticator data, signature,
    /// for discoverable credentials the user (names only after user verification, CTAP 2.1 §6.2.2), then
    /// numberOfCredentials and userSelected when given. Written directly with keys in canonical order,
    /// since this is the signing hot path.
    private func assertion(
        for credential: StoredCredential,
        clientDataHash: [UInt8],
        flags: AuthenticatorFlags,
        userVerified: Bool,
        extensions: AssertionExtensionOutputs,
        numberOfCredentials: Int? = nil,
        userSelected: Bool = false
    ) throws(CTAPError) -> [UInt8] {
        let authenticatorData = AuthenticatorData(
            relyingPartyIDHash: SHA256.hash(data: Array(credential.relyingPartyID.utf8)).bytes,
            flags: flags.union(Self.backupFlags(credential)),
            signCount: 0,
            extensions: extensions.authenticatorData
        )
        let signature = try Self.sign(authenticatorData.bytes, clientDataHash, with: credential.privateKey)
        let name = userVerified ? credential.userName : nil
        let displayName = userVerified ? credential.userDisplayName : nil

        var writer = CBORWriter(prefix: [0x00], capacity: 256)
        var entries = 3
        if credential.isDiscoverable { entries += 1 }
        if numberOfCredentials != nil { entries += 1 }
        if userSelected { entries += 1 }
        if extensions.largeBlobKey != nil { entries += 1 }
        writer.mapHeader(count: entries)
        writer.int(1)  // credential: {"id", "type"}
        writer.mapHeader(count: 2)
        writer.text("id")
        writer.byteString(credential.id)
        writer.text("type")
        writer.text("public-key")
        writer.int(2)
        writer.byteString(authenticatorData.bytes)
        writer.int(3)
        writer.byteString(signature)
        if credential.isDiscoverable {
            writer.int(4)  // user: {"id", "name", "displayName"}
            writer.mapHeader(count: 1 + (name == nil ? 0 : 1) + (displayName == nil ? 0 : 1))
            writer.text("id")
            writer.byteString(credential.userHandle)
            if let name {
                writer.text("name")
                writer.text(name)
            }
            if let displayName {
                writer.text("displayName")
                writer.text(displayName)
            }
        }
        if let numberOfCredentials {
            writer.int(5)
            writer.int(numberOfCredentials)
        }
        if userSelected {
            writer.int(6)
            writer.bool(true)
        }
        if let largeBlobKey = extensions.largeBlobKey {
            writer.int(7)
            writer.byteString(largeBlobKey)
        }
        return writer.bytes
    }
}
