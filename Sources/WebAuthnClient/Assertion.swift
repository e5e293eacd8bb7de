import Basics
import CBOR
import CTAP2
import Crypto
import WebAuthn

extension ClientEngine {
    /// `navigator.credentials.get({publicKey, mediation})` (WebAuthn L3 §5.1.4) for `origin`: the checks, the plan,
    /// the chooser when there is one, one authenticatorGetAssertion, and the assertion as `toJSON()` gives it.
    public func get(
        _ options: PublicKeyCredentialRequestOptions, origin: String, parameters: GetParameters = GetParameters()
    ) async throws(ClientError) -> AuthenticationCredential {
        if Task.isCancelled { throw ClientError(.aborted) }
        let decision = try await environment.relyingPartyIDChecker.check(
            origin: origin, requested: options.relyingPartyID)
        let (plan, assertion) = try await prepareGet(options, parameters: parameters, decision: decision)
        let timeout = CeremonyTimeout.clamped(options.timeout)
        switch plan.decision {
        case .fail(let error):
            throw error
        case .ask(let requests, conditional: true):
            // The conditional chooser waits as long as the page lives (§5.1.4.1 step 3: lifetimeTimer is infinite);
            // the timer starts with the request the user picked.
            let chosen = try await choose(
                requests, ceremony: .get, relyingPartyID: decision.relyingPartyID, userName: nil, conditional: true)
            return try await withTimer(timeout) { () async throws(ClientError) in
                try await authenticate(assertion, on: chosen)
            }
        case .ask(let requests, conditional: false):
            return try await withTimer(timeout) { () async throws(ClientError) in
                let chosen = try await choose(
                    requests, ceremony: .get, relyingPartyID: decision.relyingPartyID, userName: nil,
                    conditional: false)
                return try await authenticate(assertion, on: chosen)
            }
        case .proceed(let requests):
            return try await withTimer(timeout) { () async throws(ClientError) in
                try await race(requests) { (request) async throws(ClientError) in
                    try await authenticate(assertion, on: request)
                }
            }
        }
    }

    /// What a get and a combined request both do once the RP ID is decided: the PRF check, the client data, the plan
    /// over the authenticators and the assertion they will be asked for.
    func prepareGet(
        _ options: PublicKeyCredentialRequestOptions, parameters: GetParameters, decision: RelyingPartyIDDecision
    ) async throws(ClientError) -> (plan: GetPlan, assertion: PendingAssertion) {
        let hints = parameters.hints ?? options.hints
        // §5.1.4.1 step 3: conditional mediation empties allowCredentials before the extensions see it.
        try Self.checkPRF(
            options.extensions.prf, allowCredentials: parameters.isConditional ? [] : options.allowCredentials)
        let clientDataJSON = CollectedClientData(type: .get, challenge: options.challenge, origin: decision.origin)
            .jsonBytes
        let plan = CeremonyPlanner.planGet(
            allowCredentials: options.allowCredentials, hints: hints, mediation: parameters.mediation,
            preferImmediatelyAvailable: parameters.preferImmediatelyAvailableCredentials,
            typedUserName: parameters.userName,
            authenticators: await summaries(relyingPartyID: decision.relyingPartyID, list: true))
        let assertion = PendingAssertion(
            options: options, relyingPartyID: decision.relyingPartyID, clientDataJSON: clientDataJSON,
            clientDataHash: Self.hash(clientDataJSON), credentialIDFilter: plan.credentialIDFilter)
        return (plan, assertion)
    }

    /// prf's authentication checks (§10.1.4, client extension processing, steps 1–2): `evalByCredential` needs a
    /// non-empty `allowCredentials` (`NotSupportedError`), and each key must be the base64url ID of one of them
    /// (`SyntaxError`).
    static func checkPRF(_ prf: PRFInputs?, allowCredentials: [PublicKeyCredentialDescriptor]) throws(ClientError) {
        guard let prf, !prf.evalByCredential.isEmpty else { return }
        guard !allowCredentials.isEmpty else {
            throw ClientError(.extensionInputRefused("prf evalByCredential needs a non-empty allowCredentials"))
        }
        for key in prf.evalByCredential.keys.sorted() {
            guard !key.isEmpty, let id = [UInt8](base64URLEncoded: key),
                allowCredentials.contains(where: { $0.id == id })
            else { throw ClientError(.prfCredentialNotAllowed(key)) }
        }
    }

    /// One getAssertion on the planned authenticator.
    func authenticate(_ assertion: PendingAssertion, on request: PlannedRequest) async throws(ClientError)
        -> AuthenticationCredential
    {
        try await withSession(request, for: .get) { (context) async throws(ClientError) in
            try await assertion.run(request, on: context)
        }
    }
}

/// An authentication once the options are checked: what every authenticator is asked.
struct PendingAssertion: Sendable {
    let options: PublicKeyCredentialRequestOptions
    let relyingPartyID: String
    let clientDataJSON: [UInt8]
    let clientDataHash: [UInt8]
    let credentialIDFilter: [[UInt8]]

    /// "Issuing a credential request to an authenticator" (§5.1.4.2) and the success branch of §5.1.4.1 for one
    /// session.
    func run(_ planned: PlannedRequest, on context: SessionContext) async throws(ClientError)
        -> AuthenticationCredential
    {
        let info = context.info
        let extensions = options.extensions
        var allowList = try await context.fitted(context.descriptors(planned.allowList), relyingPartyID: relyingPartyID)
        if !planned.allowList.isEmpty && allowList.isEmpty {
            throw ClientError(
                .noEligibleAuthenticator("none of allowCredentials is on the \(context.kind.rawValue) authenticator"))
        }
        // prf evalByCredential: the salts depend on the credential, and one request carries one set, so a list of
        // several is probed first for the one this authenticator holds (as Chromium does).
        let prfWanted = extensions.prf.map { $0.eval != nil || !$0.evalByCredential.isEmpty } ?? false
        let hmacSecret = prfWanted && info.supports(extension: "hmac-secret") && info.preferredPinUvAuthProtocol != nil
        if hmacSecret, let prf = extensions.prf, !prf.evalByCredential.isEmpty, allowList.count > 1,
            context.allowsSilentRequests
        {
            allowList = try await context.probe(allowList, relyingPartyID: relyingPartyID, batchSize: 1)
            if allowList.isEmpty {
                throw ClientError(
                    .noEligibleAuthenticator(
                        "none of allowCredentials is on the \(context.kind.rawValue) authenticator"))
            }
        }
        // The PRF is the one hmac-secret evaluates with user verification (§10.1.4), so prf asks for it when it can.
        var requirement = options.userVerification
        if hmacSecret && requirement == .discouraged && info.canVerifyUser { requirement = .preferred }
        let wantsVerification = try context.wantsVerification(requirement)
        var verification: SessionContext.Verification =
            !wantsVerification ? .none : info.hasBuiltInUserVerification ? .builtIn : .pinToken

        var inputs: [CBORValue: CBORValue] = [:]
        if extensions.getCredentialBlob && info.supports(extension: "credBlob") { inputs["credBlob"] = true }
        var evaluation: PRFEvaluation? = nil
        var prfValues: PRFValues? = nil
        if hmacSecret, let prf = extensions.prf {
            let key = allowList.count == 1 ? allowList[0].id.base64URLEncodedString : nil
            prfValues = key.flatMap { prf.evalByCredential[$0] } ?? prf.eval
        }

        var outcome: Result<[UInt8], CTAPError>
        repeat {
            var request = GetAssertionRequest(
                relyingPartyID: relyingPartyID, clientDataHash: clientDataHash, allowList: allowList)
            if verification == .builtIn { request.options["uv"] = true }
            if verification == .pinToken {
                let token = try await context.pinToken(
                    permissions: [.getAssertion], relyingPartyID: relyingPartyID)
                request.pinUvAuthParam = token.authenticate(clientDataHash)
                request.pinUvAuthProtocol = token.pinUvAuthProtocol.rawValue
            }
            if let prfValues, let pinProtocol = info.preferredPinUvAuthProtocol {
                let agreement = try await context.keyAgreementResponse(pinProtocol)
                do {
                    evaluation = try PRFEvaluation(
                        first: prfValues.first, second: prfValues.second, keyAgreementResponse: agreement,
                        pinProtocol: pinProtocol, platformKey: context.platformKeyAgreementKey(),
                        iv: context.environment.randomBytes(16))
                } catch {
                    throw ClientError(.invalidResponse("the authenticator's key agreement key is not usable"))
                }
                inputs.merge(evaluation?.extensionInput ?? [:]) { $1 }
            }
            request.extensions = inputs.isEmpty ? nil : .map(inputs)
            await context.environment.userInterface.notify(.waitingForAuthenticator(context.kind))
            outcome = try await context.exchange(request.message)
            guard case .failure(.pinUvAuthTokenRequired) = outcome, verification != .pinToken, info.hasPIN else {
                break
            }
            verification = .pinToken
        } while true

        let first: [UInt8]
        switch outcome {
        case .success(let bytes): first = bytes
        case .failure(let status): throw SessionContext.failure(status)
        }
        let chosen = try await select(first, allowList: allowList, context: context)
        return try credential(from: chosen, sentAllowList: allowList, evaluation: evaluation, context: context)
    }

    /// The response to return: the only one, or, when the authenticator found several discoverable credentials, the
    /// one the user picks from all of them (getNextAssertion for the rest, CTAP 2.1 §6.3).
    func select(_ first: [UInt8], allowList: [CredentialDescriptor], context: SessionContext) async throws(ClientError)
        -> GetAssertionResponse
    {
        let defaultID = allowList.count == 1 ? allowList[0].id : nil
        var responses = [try Self.parse(first, defaultCredentialID: defaultID)]
        let count = responses[0].numberOfCredentials ?? 1
        guard count > 1, !responses[0].userSelected else { return responses[0] }
        for _ in 1..<min(count, 64) {
            switch try await context.exchange(CTAPClient.getNextAssertionMessage) {
            case .success(let bytes): responses.append(try Self.parse(bytes, defaultCredentialID: nil))
            case .failure(let status): throw SessionContext.failure(status)
            }
        }
        let choices = responses.map { response in
            ClientChoice.account(
                CredentialMetadata(
                    credentialID: response.credentialID, userHandle: response.userHandle, userName: response.userName,
                    userDisplayName: response.userDisplayName),
                on: context.kind)
        }
        let prompt = ChoicePrompt(ceremony: .get, relyingPartyID: relyingPartyID, choices: choices)
        guard let index = await context.environment.userInterface.choose(prompt), responses.indices.contains(index)
        else {
            throw ClientError(Task.isCancelled ? .aborted : .userCancelled)
        }
        return responses[index]
    }

    static func parse(_ response: [UInt8], defaultCredentialID: [UInt8]?) throws(ClientError) -> GetAssertionResponse {
        do {
            return try GetAssertionResponse(
                ctapResponse: response, decoder: SessionContext.responseDecoder,
                defaultCredentialID: defaultCredentialID)
        } catch {
            throw ClientError(.invalidResponse("getAssertion answer: \(error)"))
        }
    }

    /// The checks a browser makes on an assertion, then the credential: the RP ID hash, UP, UV when required, the
    /// conditional filter, a user handle for a discoverable request (§5.1.4.1 success steps), and the extension
    /// outputs.
    func credential(
        from response: GetAssertionResponse, sentAllowList: [CredentialDescriptor], evaluation: PRFEvaluation?,
        context: SessionContext
    ) throws(ClientError) -> AuthenticationCredential {
        let authenticatorData: AuthenticatorData
        do {
            authenticatorData = try AuthenticatorData(
                bytes: response.authenticatorData, decoder: SessionContext.responseDecoder)
        } catch {
            throw ClientError(.invalidResponse("authenticator data: \(error)"))
        }
        guard authenticatorData.relyingPartyIDHash == SHA256.hash(data: Array(relyingPartyID.utf8)).bytes else {
            throw ClientError(.invalidResponse("the authenticator data is for another RP ID"))
        }
        guard authenticatorData.flags.contains(.userPresent) else {
            throw ClientError(.invalidResponse("the UP flag is not set"))
        }
        if options.userVerification == .required && !authenticatorData.flags.contains(.userVerified) {
            throw ClientError(.invalidResponse("the user verification the relying party requires did not happen"))
        }
        if !sentAllowList.isEmpty && !sentAllowList.contains(where: { $0.id == response.credentialID }) {
            throw ClientError(.invalidResponse("the credential is not one the request allowed"))
        }
        if !credentialIDFilter.isEmpty && !credentialIDFilter.contains(response.credentialID) {
            throw ClientError(.invalidResponse("the credential is not in allowCredentials"))
        }
        if credentialIDFilter.isEmpty && sentAllowList.isEmpty && response.userHandle == nil {
            throw ClientError(.invalidResponse("a discoverable credential came without its user handle"))
        }
        var outputs = ClientExtensionOutputs()
        if options.extensions.prf != nil {
            outputs.prf = PRFOutputs(results: try evaluation?.prfValues(from: authenticatorData))
        }
        if options.extensions.getCredentialBlob {
            outputs.credentialBlob = authenticatorData.extensions?.mapValue?["credBlob"]?.bytesValue ?? []
        }
        return AuthenticationCredential(
            id: response.credentialID, clientDataJSON: clientDataJSON, authenticatorData: response.authenticatorData,
            signature: response.signature, userHandle: response.userHandle,
            authenticatorAttachment: context.kind.attachment, clientExtensionResults: outputs)
    }
}

extension GetParameters {
    /// A conditional request: the autofill chooser, which waits as long as the page. A user name typed in a form
    /// makes it an ordinary request for that name.
    var isConditional: Bool { mediation == .conditional && userName == nil }
}
