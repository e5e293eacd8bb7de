import Basics
import CBOR
import CTAP2
import Crypto
import WebAuthn

extension ClientEngine {
    /// `navigator.credentials.create({publicKey, mediation})` (WebAuthn L3 §5.1.3) for `origin`: the checks, the
    /// plan, one authenticatorMakeCredential, and the new credential as `toJSON()` gives it.
    ///
    /// With `mediation` conditional (an automatic passkey upgrade), nothing is shown and nobody is asked: this
    /// computer's store makes the passkey, without user presence or verification, only when
    /// ``ClientEnvironment/conditionalCreation`` allows it for the user name; otherwise the call fails with
    /// NotAllowedError, the same one whatever the reason, so the page learns nothing.
    public func create(
        _ options: PublicKeyCredentialCreationOptions, origin: String, mediation: CredentialMediation = .optional
    ) async throws(ClientError) -> RegistrationCredential {
        if Task.isCancelled { throw ClientError(.aborted) }
        let decision = try await environment.relyingPartyIDChecker.check(
            origin: origin, requested: options.relyingParty.id)
        guard !PendingRegistration.requestedAlgorithms(options).isEmpty else {
            throw ClientError(.noSupportedAlgorithm)
        }
        if let prf = options.extensions.prf, !prf.evalByCredential.isEmpty {
            throw ClientError(.extensionInputRefused("prf evalByCredential is for authentication only (§10.1.4)"))
        }
        if let largeBlob = options.extensions.largeBlob, largeBlob.read != nil || largeBlob.write != nil {
            throw ClientError(.extensionInputRefused("largeBlob read and write are for authentication only (§10.1.5)"))
        }
        let clientDataJSON = CollectedClientData(type: .create, challenge: options.challenge, origin: decision.origin)
            .jsonBytes
        let registration = PendingRegistration(
            options: options, relyingPartyID: decision.relyingPartyID, clientDataJSON: clientDataJSON,
            clientDataHash: Self.hash(clientDataJSON), withoutPresence: mediation == .conditional)
        if mediation == .conditional {
            return try await createConditionally(registration, userName: options.user.name, timeout: options.timeout)
        }
        let plan = CeremonyPlanner.planCreate(
            attachment: options.authenticatorSelection.attachment, hints: options.hints,
            authenticators: await summaries(relyingPartyID: decision.relyingPartyID, list: false))
        if case .fail(let error) = plan { throw error }
        return try await withTimer(CeremonyTimeout.clamped(options.timeout)) { () async throws(ClientError) in
            switch plan {
            case .fail(let error):
                throw error
            case .ask(let requests, _):
                let chosen = try await choose(
                    requests, ceremony: .create, relyingPartyID: decision.relyingPartyID, userName: options.user.name,
                    conditional: false)
                return try await register(registration, on: chosen)
            case .proceed(let requests):
                return try await race(requests) { (request) async throws(ClientError) in
                    try await register(registration, on: request)
                }
            }
        }
    }

    /// A conditional create: on this computer's store, only when the provider allows it for `userName`.
    private func createConditionally(_ registration: PendingRegistration, userName: String, timeout: Int?)
        async throws(ClientError) -> RegistrationCredential
    {
        let refused = ClientError(
            .noEligibleAuthenticator(
                "no passkey was made: an automatic upgrade needs this account's saved password given to the page here "
                    + "within the last \(Int(ConditionalCreate.window / 60)) minutes, and no passkey of it here yet"))
        guard let index = environment.authenticators.firstIndex(where: { $0.kind == .platform }),
            let allows = environment.conditionalCreation,
            await allows(registration.relyingPartyID, userName)
        else { throw refused }
        let request = PlannedRequest(authenticator: index, kind: .platform, choice: .thisComputer)
        return try await withTimer(CeremonyTimeout.clamped(timeout)) { () async throws(ClientError) in
            do throws(ClientError) {
                return try await register(registration, on: request)
            } catch {
                // An excluded credential, or a store that would have to ask for its passphrase: the same refusal.
                throw error.name == .abortError ? error : refused
            }
        }
    }

    /// One makeCredential on the planned authenticator.
    func register(_ registration: PendingRegistration, on request: PlannedRequest) async throws(ClientError)
        -> RegistrationCredential
    {
        try await withSession(request, for: .create, quietly: registration.withoutPresence) {
            (context) async throws(ClientError) in
            try await registration.run(on: context)
        }
    }
}

/// A registration once the options are checked: what every authenticator is asked.
struct PendingRegistration: Sendable {
    let options: PublicKeyCredentialCreationOptions
    let relyingPartyID: String
    let clientDataJSON: [UInt8]
    let clientDataHash: [UInt8]
    /// A conditional create: the authenticator is asked with `up` false and no verification (WebAuthn L3 §5.1.3, "the
    /// client MUST set both requireUserPresence and requireUserVerification to FALSE"), so the UP flag is clear.
    var withoutPresence = false

    /// The steps of §5.1.3 step 22 ("If an authenticator becomes available") for one session: the authenticator's
    /// eligibility, the effective resident key and user verification requirements, the extensions, the request, and
    /// the response with attestation conveyance applied.
    func run(on context: SessionContext) async throws(ClientError) -> RegistrationCredential {
        let info = context.info
        let selection = options.authenticatorSelection
        let extensions = options.extensions
        let residentKey = selection.effectiveResidentKey
        guard residentKey != .required || info.supportsDiscoverableCredentials else {
            throw ClientError(
                .noEligibleAuthenticator(
                    "the \(context.kind.rawValue) authenticator cannot store a discoverable credential"))
        }
        let wantsVerification = try context.wantsVerification(selection.userVerification)
        let algorithms = Self.requestedAlgorithms(options)
        if let supported = info.algorithms, !algorithms.contains(where: supported.contains) {
            throw ClientError(.authenticator(.unsupportedAlgorithm))
        }
        // The effective resident key requirement: preferred asks for one when the authenticator can store it.
        let discoverable =
            residentKey == .required || (residentKey == .preferred && info.supportsDiscoverableCredentials)
        let largeBlobKey =
            extensions.largeBlob != nil && discoverable && info.supportsLargeBlobs
            && info.supports(extension: "largeBlobKey")
        if extensions.largeBlob?.supportRequired == true && !largeBlobKey {
            throw ClientError(
                .noEligibleAuthenticator("the \(context.kind.rawValue) authenticator cannot store large blobs"))
        }
        if extensions.enforceCredentialProtectionPolicy, let policy = extensions.credentialProtectionPolicy,
            policy != .userVerificationOptional, !info.supports(extension: "credProtect")
        {
            throw ClientError(
                .noEligibleAuthenticator("the \(context.kind.rawValue) authenticator does not support credProtect"))
        }

        var inputs: [CBORValue: CBORValue] = [:]
        if let policy = extensions.credentialProtectionPolicy, info.supports(extension: "credProtect") {
            inputs["credProtect"] = .int(policy.level)
        }
        let hmacSecret = extensions.prf != nil && info.supports(extension: PRFEvaluation.assertionExtension)
        if hmacSecret { inputs[.text(PRFEvaluation.assertionExtension)] = true }
        // prf eval at registration: CTAP 2.2's hmac-secret-mc where the authenticator offers it, with a PIN/UV auth
        // protocol to encrypt the salts (WebAuthn L3 §10.1.4 lets the client evaluate at creation when it can).
        let evaluateAtCreation =
            hmacSecret && info.supports(extension: PRFEvaluation.registrationExtension)
            && info.preferredPinUvAuthProtocol != nil
        var evaluation: PRFEvaluation? = nil
        if largeBlobKey { inputs["largeBlobKey"] = true }
        if extensions.minimumPINLength && info.supports(extension: "minPinLength") { inputs["minPinLength"] = true }
        if let blob = extensions.credentialBlob, info.supports(extension: "credBlob") {
            inputs["credBlob"] = .bytes(blob)
        }

        // Verification: built-in when configured, else the PIN; a discoverable credential, or an authenticator without
        // makeCredUvNotRqd, needs it even when the relying party did not ask (CTAP 2.1 §6.1.2 step 7; Chromium's
        // FidoDeviceAuthenticator::MakeCredentialInternal).
        let needsVerification = wantsVerification || discoverable || !info.makesCredentialsWithoutUserVerification
        var verification: SessionContext.Verification =
            withoutPresence
            ? .none
            : info.hasBuiltInUserVerification
                ? (needsVerification ? .builtIn : .none)
                : info.hasPIN && needsVerification ? .pinToken : .none
        let excludeList = try await context.fitted(
            context.descriptors(options.excludeCredentials), relyingPartyID: relyingPartyID)

        var outcome: Result<[UInt8], CTAPError>
        repeat {
            var request = MakeCredentialRequest(
                clientDataHash: clientDataHash, relyingPartyID: relyingPartyID,
                relyingPartyName: options.relyingParty.name, userHandle: options.user.id, userName: options.user.name,
                userDisplayName: options.user.displayName, algorithms: algorithms,
                excludeList: excludeList, extensions: inputs.isEmpty ? nil : .map(inputs))
            if discoverable { request.options["rk"] = true }
            if withoutPresence { request.options["up"] = false }
            if verification == .builtIn { request.options["uv"] = true }
            if verification == .pinToken {
                let token = try await context.pinToken(
                    permissions: [.makeCredential], relyingPartyID: relyingPartyID)
                request.pinUvAuthParam = token.authenticate(clientDataHash)
                request.pinUvAuthProtocol = token.pinUvAuthProtocol.rawValue
            }
            if evaluateAtCreation, let values = extensions.prf?.eval, let pinProtocol = info.preferredPinUvAuthProtocol
            {
                let agreement = try await context.keyAgreementResponse(pinProtocol)
                do {
                    evaluation = try PRFEvaluation(
                        first: values.first, second: values.second, keyAgreementResponse: agreement,
                        pinProtocol: pinProtocol, platformKey: context.platformKeyAgreementKey(),
                        iv: context.environment.randomBytes(16), extensionName: PRFEvaluation.registrationExtension)
                } catch {
                    throw ClientError(.invalidResponse("the authenticator's key agreement key is not usable"))
                }
                request.extensions = .map(inputs.merging(evaluation?.extensionInput ?? [:]) { $1 })
            }
            // An automatic upgrade waits for nobody, so it tells nobody to act.
            if !withoutPresence {
                await context.environment.userInterface.notify(.waitingForAuthenticator(context.kind))
            }
            outcome = try await context.exchange(request.message)
            // A key that wants its PIN though getInfo did not say so: ask for the PIN once.
            guard case .failure(.pinUvAuthTokenRequired) = outcome, verification != .pinToken, info.hasPIN else {
                break
            }
            verification = .pinToken
        } while true

        let response: [UInt8]
        switch outcome {
        case .success(let bytes): response = bytes
        case .failure(let status): throw SessionContext.failure(status)
        }
        let made: MakeCredentialResponse
        do {
            made = try MakeCredentialResponse(ctapResponse: response, decoder: SessionContext.responseDecoder)
        } catch {
            throw ClientError(.invalidResponse("makeCredential answer: \(error)"))
        }
        let authenticatorData = made.attestationObject.authenticatorData
        guard authenticatorData.relyingPartyIDHash == SHA256.hash(data: Array(relyingPartyID.utf8)).bytes else {
            throw ClientError(.invalidResponse("the authenticator data is for another RP ID"))
        }
        guard let attested = authenticatorData.attestedCredentialData else {
            throw ClientError(.invalidResponse("the authenticator data has no attested credential data"))
        }
        guard authenticatorData.flags.contains(.userPresent) || withoutPresence else {
            throw ClientError(.invalidResponse("the UP flag is not set"))
        }
        if selection.userVerification == .required && !authenticatorData.flags.contains(.userVerified)
            && !withoutPresence
        {
            throw ClientError(.invalidResponse("the user verification the relying party requires did not happen"))
        }

        let attestationObject = await conveyed(made.attestationObject, aaguid: attested.aaguid, context: context)
        var outputs = ClientExtensionOutputs()
        let authenticatorOutputs = authenticatorData.extensions?.mapValue ?? [:]
        if extensions.credentialProperties { outputs.credentialProperties = discoverable }
        if extensions.prf != nil {
            outputs.prf = PRFOutputs(
                enabled: authenticatorOutputs[.text(PRFEvaluation.assertionExtension)] == true,
                results: try evaluation?.prfValues(from: authenticatorData))
        }
        if extensions.largeBlob != nil { outputs.largeBlobSupported = made.largeBlobKey != nil }
        if extensions.credentialBlob != nil {
            outputs.credentialBlobStored = authenticatorOutputs["credBlob"]?.boolValue ?? false
        }
        return RegistrationCredential(
            id: attested.credentialID, clientDataJSON: clientDataJSON, attestationObject: attestationObject.bytes,
            authenticatorData: authenticatorData.bytes, transports: context.responseTransports,
            publicKey: attested.publicKey.subjectPublicKeyInfo,
            publicKeyAlgorithm: attested.publicKey.algorithm.rawValue, authenticatorAttachment: context.kind.attachment,
            clientExtensionResults: outputs)
    }

    /// The algorithms to ask the authenticator for, in the relying party's order (§5.1.3 step 10): an empty
    /// `pubKeyCredParams` means ES256 then RS256; entries of other types, and algorithms this client cannot read a
    /// key of (``COSEKey/algorithms``), are skipped. The authenticator makes the first it supports (CTAP 2.1 §6.1.2
    /// step 3), as browsers leave it to.
    static func requestedAlgorithms(_ options: PublicKeyCredentialCreationOptions) -> [Int] {
        let requested =
            options.parameters.isEmpty
            ? [COSEAlgorithm.es256.rawValue, COSEAlgorithm.rs256.rawValue]
            : options.parameters.filter { $0.type == "public-key" }.map(\.algorithm)
        return requested.filter { COSEKey.algorithms.contains(COSEAlgorithm(rawValue: $0)) }
    }

    /// Attestation conveyance (§5.1.3 step 22, constructCredentialAlg step 1). `none`: the statement is replaced by
    /// `{"fmt": "none", "attStmt": {}}` unless it is self attestation (packed, no x5c, all-zero AAGUID). `direct` or
    /// `enterprise` from a security key: the user is asked first, as Chromium asks before it reveals a key's make and
    /// model; a refusal conveys `none`. `indirect`: as the authenticator gave it.
    func conveyed(_ object: AttestationObject, aaguid: AAGUID, context: SessionContext) async -> AttestationObject {
        var preference = options.attestation
        if (preference == .direct || preference == .enterprise) && context.kind == .securityKey
            && object.format != "none"
        {
            let allowed = await context.environment.userInterface.confirm(
                .revealSecurityKeyModel(relyingPartyID: relyingPartyID))
            if !allowed { preference = .none }
        }
        guard preference == .none else { return object }
        let selfAttestation = aaguid == .zero && object.format == "packed" && object.statement.mapValue?["x5c"] == nil
        if selfAttestation { return object }
        return AttestationObject(format: "none", statement: .map([:]), authenticatorData: object.authenticatorData)
    }
}
