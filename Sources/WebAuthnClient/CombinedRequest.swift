import Basics
import CTAP2
import Crypto
import WebAuthn

/// What a combined request returns: a WebAuthn assertion, or the saved login the user picked instead.
public enum CombinedCredential: Sendable {
    case publicKey(AuthenticationCredential)
    case password(PasswordLogin)
}

extension ClientEngine {
    /// `navigator.credentials.get({publicKey, password: true})`: the RP's saved passwords offered beside its passkeys
    /// in one chooser, as the platforms' combined passkey-and-password sheet does.
    ///
    /// `passwords` gives the saved logins for the RP ID the checks decided. With none, this is `get` exactly. With
    /// some, every choice the passkey plan has (the listed accounts, this computer, a phone, a security key; or the
    /// requests it would have carried out without asking) is shown first, then one entry per login, in the given
    /// order; a plan that would fail shows the logins alone. Dismissing the chooser is what dismissing `get`'s is
    /// (`NotAllowedError`, or `AbortError` when conditional). A login picked returns `.password` and asks no
    /// authenticator; anything else runs as `get` runs it, under the ceremony's timer.
    public func get(
        _ options: PublicKeyCredentialRequestOptions, origin: String, parameters: GetParameters = GetParameters(),
        passwords: @Sendable (String) async -> [PasswordLogin]
    ) async throws(ClientError) -> CombinedCredential {
        if Task.isCancelled { throw ClientError(.aborted) }
        let decision = try await environment.relyingPartyIDChecker.check(
            origin: origin, requested: options.relyingPartyID)
        let logins = await passwords(decision.relyingPartyID)
        guard !logins.isEmpty else {
            return .publicKey(try await get(options, origin: origin, parameters: parameters))
        }
        let (plan, assertion) = try await prepareGet(options, parameters: parameters, decision: decision)
        let conditional = parameters.isConditional
        let requests: [PlannedRequest]
        switch plan.decision {
        case .fail: requests = []
        case .ask(let asked, _): requests = asked
        case .proceed(let planned): requests = planned
        }
        let choices = requests.map(\.choice) + logins.map(ClientChoice.password)
        let prompt = ChoicePrompt(
            ceremony: .get, relyingPartyID: decision.relyingPartyID, choices: choices, isConditional: conditional)
        let timeout = CeremonyTimeout.clamped(options.timeout)
        let pick: @Sendable () async throws(ClientError) -> Int = { () async throws(ClientError) -> Int in
            guard let index = await environment.userInterface.choose(prompt), choices.indices.contains(index) else {
                if Task.isCancelled { throw ClientError(.aborted) }
                throw ClientError(conditional ? .aborted : .userCancelled)
            }
            return index
        }
        // As `get`: the conditional chooser waits as long as the page; a modal one runs under the timer.
        let index = conditional ? try await pick() : try await withTimer(timeout, pick)
        guard index < requests.count else { return .password(logins[index - requests.count]) }
        let chosen = requests[index]
        return .publicKey(
            try await withTimer(timeout) { () async throws(ClientError) in
                try await authenticate(assertion, on: chosen)
            })
    }
}
