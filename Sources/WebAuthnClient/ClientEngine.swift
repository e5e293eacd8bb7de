import Basics
import CTAP2
import Crypto

/// The origin a ceremony runs for and the RP ID it uses, once a browser's checks passed.
public struct RelyingPartyIDDecision: Hashable, Sendable {
    /// The origin's serialization (`scheme://host[:port]`), which goes into clientDataJSON.
    public var origin: String
    /// The RP ID: the one asked for, or the origin's effective domain when none was.
    public var relyingPartyID: String

    public init(origin: String, relyingPartyID: String) {
        self.origin = origin
        self.relyingPartyID = relyingPartyID
    }
}

/// The browser's origin and RP ID checks (WebAuthn L3 §5.1.3 steps 6–8, §5.1.4.1 steps 5–7), injected: the
/// Public Suffix List implementation is wired by the CLI. `requested` is nil when the options name no RP ID; the RP ID
/// is then the origin's effective domain.
public protocol RelyingPartyIDChecker: Sendable {
    /// The decision, or the error a browser raises: `SecurityError` for an RP ID the origin may not use, or for an
    /// origin that is not a secure context; `NotAllowedError` for an opaque origin.
    func check(origin: String, requested: String?) async throws(ClientError) -> RelyingPartyIDDecision
}

/// Every effect the engine has, injected once (the model is `AuthenticatorEnvironment`).
public struct ClientEnvironment: Sendable {
    /// The authenticators this client can use: this computer's store, a phone over hybrid, a security key.
    public var authenticators: [any ClientAuthenticator]
    public var userInterface: any ClientUserInterface
    public var relyingPartyIDChecker: any RelyingPartyIDChecker
    /// Random bytes for key agreement keys and IVs; seeded in tests.
    public var randomBytes: @Sendable (Int) -> [UInt8]
    /// Waits out the ceremony's timer; returns when it fires, throws when cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void
    /// Whether the platform authenticator may make a passkey for this user name at this RP ID with no dialog now (an
    /// automatic passkey upgrade, ``ConditionalCreate``); nil when it never may.
    public var conditionalCreation: (@Sendable (_ relyingPartyID: String, _ userName: String) async -> Bool)?

    public init(
        authenticators: [any ClientAuthenticator], userInterface: any ClientUserInterface,
        relyingPartyIDChecker: any RelyingPartyIDChecker,
        randomBytes: @escaping @Sendable (Int) -> [UInt8] = AuthenticatorEnvironment.systemRandomBytes,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        conditionalCreation: (@Sendable (_ relyingPartyID: String, _ userName: String) async -> Bool)? = nil
    ) {
        self.authenticators = authenticators
        self.userInterface = userInterface
        self.relyingPartyIDChecker = relyingPartyIDChecker
        self.randomBytes = randomBytes
        self.sleep = sleep
        self.conditionalCreation = conditionalCreation
    }
}

/// The ceremony's timer (WebAuthn L3 §5.1.3 step 4, §5.1.4.1 step 4): the relying party's `timeout` moved into
/// Chromium's range, 10 s to 10 min (`AdjustTimeout`, content/browser/webauth/authenticator_common_impl.cc), and the
/// specification's recommended default of 5 min when there is none (§15.1, "Recommended Range for Ceremony Timeouts").
public enum CeremonyTimeout {
    public static let minimum = Duration.seconds(10)
    public static let maximum = Duration.seconds(600)
    public static let standard = Duration.seconds(300)

    /// The timer for `milliseconds`.
    public static func clamped(_ milliseconds: Int?) -> Duration {
        guard let milliseconds else { return standard }
        return min(max(.milliseconds(milliseconds), minimum), maximum)
    }
}

/// How `get()` is called, besides its options.
public struct GetParameters: Hashable, Sendable {
    public var mediation: CredentialMediation
    /// The iOS and Android option of the same name: fail at once unless a credential on this device can answer.
    public var preferImmediatelyAvailableCredentials: Bool
    /// Hints that replace the options' own, as a page would pass them; nil keeps the options' hints.
    public var hints: [PublicKeyCredentialHint]?
    /// A user name typed into the conditional UI's field: the request becomes modal with that user's credentials.
    public var userName: String?

    public init(
        mediation: CredentialMediation = .optional, preferImmediatelyAvailableCredentials: Bool = false,
        hints: [PublicKeyCredentialHint]? = nil, userName: String? = nil
    ) {
        self.mediation = mediation
        self.preferImmediatelyAvailableCredentials = preferImmediatelyAvailableCredentials
        self.hints = hints
        self.userName = userName
    }
}

/// A WebAuthn client: what a browser does between `navigator.credentials.create()` / `get()` and the
/// authenticators, over injected authenticators and UI. Pure: no I/O of its own.
///
/// A failure stores nothing this engine controls: every input is checked before any authenticator is asked, and an
/// authenticator that already created a credential has it (as with a browser) only when the failure came after.
public struct ClientEngine: Sendable {
    public var environment: ClientEnvironment

    public init(environment: ClientEnvironment) {
        self.environment = environment
    }

    // MARK: Running plans

    /// Runs `body` under the ceremony's timer: when the timer fires first, `body` is cancelled and the ceremony is
    /// `NotAllowedError`; a cancelled caller is `AbortError`.
    func withTimer<T: Sendable>(
        _ duration: Duration?, _ body: @escaping @Sendable () async throws(ClientError) -> T
    ) async throws(ClientError) -> T {
        if Task.isCancelled { throw ClientError(.aborted) }
        guard let duration else {
            let result = await Self.result(of: body)
            return try Self.settle(result)
        }
        let sleep = environment.sleep
        let outcome = await withTaskGroup(of: Result<T, ClientError>?.self) { group in
            group.addTask { await Self.result(of: body) }
            group.addTask {
                do {
                    try await sleep(duration)
                } catch {
                    return nil
                }
                return .failure(ClientError(.timedOut(milliseconds: Int(duration.inMilliseconds))))
            }
            var first: Result<T, ClientError>? = nil
            while first == nil, let next = await group.next() {
                first = next
            }
            group.cancelAll()
            return first
        }
        guard let outcome else { throw ClientError(.aborted) }
        return try Self.settle(outcome)
    }

    private static func result<T: Sendable>(of body: @Sendable () async throws(ClientError) -> T) async -> Result<
        T, ClientError
    > {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }

    private static func settle<T>(_ result: Result<T, ClientError>) throws(ClientError) -> T {
        if Task.isCancelled { throw ClientError(.aborted) }
        return try result.get()
    }

    /// Carries out several requests at once (a phone's QR code while a security key listens): the first to succeed
    /// wins and the others are cancelled. A request that could not reach its authenticator drops out; any other
    /// failure (the user declined, the key has no credential) ends the ceremony, as Chromium's request handler ends it.
    func race<T: Sendable>(
        _ requests: [PlannedRequest], _ run: @escaping @Sendable (PlannedRequest) async throws(ClientError) -> T
    ) async throws(ClientError) -> T {
        if requests.count == 1 { return try await run(requests[0]) }
        let outcome: Result<T, ClientError> = await withTaskGroup(of: Result<T, ClientError>.self) { group in
            for request in requests {
                group.addTask { await Self.result { () async throws(ClientError) -> T in try await run(request) } }
            }
            var unreachable: ClientError? = nil
            while let next = await group.next() {
                switch next {
                case .success:
                    group.cancelAll()
                    return next
                case .failure(let error):
                    if case .transport = error.reason {
                        unreachable = error
                        continue
                    }
                    group.cancelAll()
                    return next
                }
            }
            return .failure(unreachable ?? ClientError(.noEligibleAuthenticator("no authenticator answered")))
        }
        return try outcome.get()
    }

    /// Shows `requests` as a chooser and returns the one picked. Dismissing a conditional chooser is `AbortError`
    /// (what the page sees when it aborts its pending conditional request; the page learns nothing about which
    /// credentials exist), dismissing a modal one `NotAllowedError` (§5.1.4.1: "the user exercises a user agent
    /// user-interface option to cancel the process").
    func choose(
        _ requests: [PlannedRequest], ceremony: ClientCeremony, relyingPartyID: String, userName: String?,
        conditional: Bool
    ) async throws(ClientError) -> PlannedRequest {
        let prompt = ChoicePrompt(
            ceremony: ceremony, relyingPartyID: relyingPartyID, userName: userName, choices: requests.map(\.choice),
            isConditional: conditional)
        guard let index = await environment.userInterface.choose(prompt), requests.indices.contains(index) else {
            if Task.isCancelled { throw ClientError(.aborted) }
            throw ClientError(conditional ? .aborted : .userCancelled)
        }
        return requests[index]
    }

    /// Opens a session with the planned authenticator, runs `body` on it and closes it; `quietly` (an automatic
    /// passkey upgrade) tells the user interface nothing.
    func withSession<T: Sendable>(
        _ request: PlannedRequest, for ceremony: ClientCeremony, quietly: Bool = false,
        _ body: (SessionContext) async throws(ClientError) -> T
    ) async throws(ClientError) -> T {
        let authenticator = environment.authenticators[request.authenticator]
        if !quietly { await environment.userInterface.notify(.contacting(request.kind)) }
        let session: any AuthenticatorSession
        do {
            session = try await authenticator.open(for: ceremony)
        } catch {
            throw Task.isCancelled ? ClientError(.aborted) : ClientError(.transport(error.description))
        }
        let context = SessionContext(
            session: session, kind: request.kind, declaredTransports: authenticator.transports,
            environment: environment)
        do {
            let result = try await body(context)
            await session.close()
            return result
        } catch {
            await session.close()
            throw error
        }
    }

    /// What the planner needs of each authenticator; listing is asked for only when `list` is true.
    func summaries(relyingPartyID: String, list: Bool) async -> [AuthenticatorSummary] {
        var summaries: [AuthenticatorSummary] = []
        for authenticator in environment.authenticators {
            summaries.append(
                AuthenticatorSummary(
                    kind: authenticator.kind, transports: authenticator.transports,
                    credentials: list ? await authenticator.credentials(forRelyingParty: relyingPartyID) : nil))
        }
        return summaries
    }

    /// SHA-256 of the clientDataJSON (§5.8.1, "hash of the serialized client data").
    static func hash(_ clientDataJSON: [UInt8]) -> [UInt8] { SHA256.hash(data: clientDataJSON).bytes }
}
