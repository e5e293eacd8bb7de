import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import RelyingParty
import Synchronization
import TestSupport
import WebAuthn
import RelyingPartyTestSupport
import WebAuthnClient
import WebRelyingParty

/// The user of the browser, scripted: picks by a rule, answers questions, types PINs; records everything shown.
final class ScriptedInterface: ClientUserInterface {
    struct Record {
        var prompts: [ChoicePrompt] = []
        var questions: [ClientQuestion] = []
        var pinRequests: [PINRequest] = []
        var events: [ClientEvent] = []
    }

    private let record = Mutex(Record())
    private let pick: @Sendable (ChoicePrompt) -> Int?
    private let pins: Mutex<[String]>
    private let answer: Bool

    /// `pick` chooses from each prompt (default: the first entry); `pins` are typed in order; `answer` answers every
    /// question.
    init(pins: [String] = [], answer: Bool = true, pick: @escaping @Sendable (ChoicePrompt) -> Int? = { _ in 0 }) {
        self.pick = pick
        self.pins = Mutex(pins)
        self.answer = answer
    }

    func choose(_ prompt: ChoicePrompt) async -> Int? {
        record.withLock { $0.prompts.append(prompt) }
        return pick(prompt)
    }

    func confirm(_ question: ClientQuestion) async -> Bool {
        record.withLock { $0.questions.append(question) }
        return answer
    }

    func collectPIN(_ request: PINRequest) async -> String? {
        record.withLock { $0.pinRequests.append(request) }
        return pins.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }

    func notify(_ event: ClientEvent) async {
        record.withLock { $0.events.append(event) }
    }

    var prompts: [ChoicePrompt] { record.withLock { $0.prompts } }
    var questions: [ClientQuestion] { record.withLock { $0.questions } }
    var pinRequests: [PINRequest] { record.withLock { $0.pinRequests } }
    var events: [ClientEvent] { record.withLock { $0.events } }
    /// Whether anything at all reached the user.
    var showedNothing: Bool {
        record.withLock { $0.prompts.isEmpty && $0.questions.isEmpty && $0.pinRequests.isEmpty && $0.events.isEmpty }
    }
}

/// The authenticator's own prompt (the passphrase, a touch), approving with verification when asked and recording
/// each request.
final class ApprovingUser: UserInteraction {
    private let requests = Mutex<[ConsentRequest]>([])
    private let result: ConsentResult?

    /// `result`: what to answer; nil approves, with verification when it was asked for.
    init(_ result: ConsentResult? = nil) { self.result = result }

    func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        requests.withLock { $0.append(request) }
        return result ?? .approved(userVerified: request.requiresVerification, selectedAccount: nil)
    }

    var seen: [ConsentRequest] { requests.withLock { $0 } }
}

/// One authenticator for the engine: this package's CTAP2 `Authenticator` over an in-memory store, as the platform
/// (listing its credentials) or as a phone or security key (which cannot list).
struct TestAuthenticator {
    let store: InMemoryCredentialStore
    let user: ApprovingUser
    let authenticator: Authenticator
    let client: any ClientAuthenticator

    init(
        kind: AuthenticatorKind = .platform, configuration: AuthenticatorConfiguration = AuthenticatorConfiguration(),
        store: InMemoryCredentialStore = InMemoryCredentialStore(), user: ApprovingUser = ApprovingUser(),
        seed: UInt64 = 7
    ) {
        self.store = store
        self.user = user
        let random = SeededBytes(seed: seed)
        authenticator = Authenticator(
            configuration: configuration,
            environment: AuthenticatorEnvironment(
                store: store, userInteraction: user, randomBytes: { random.bytes($0) },
                currentDate: { Date(timeIntervalSince1970: 1_800_000_000) }))
        switch kind {
        case .platform:
            client = InProcessAuthenticator(authenticator, store: store)
        case .hybrid:
            client = InProcessAuthenticator(authenticator, kind: .hybrid, transports: [.hybrid], listing: nil)
        case .securityKey:
            client = InProcessAuthenticator(authenticator, kind: .securityKey, transports: [.usb], listing: nil)
        }
    }

    /// A discoverable credential for `userName` at `rpID`, made straight in the store.
    func addCredential(
        rpID: String = "example.com", userName: String, id: [UInt8]? = nil, discoverable: Bool = true,
        created: Date = Date(timeIntervalSince1970: 1_700_000_000)
    ) async throws -> [UInt8] {
        let credentialID = id ?? Array(SHA256.hash(data: Array((userName + rpID).utf8)).prefix(16))
        try store.save(
            StoredCredential(
                id: credentialID, relyingPartyID: rpID, userHandle: Array(userName.utf8), userName: userName,
                userDisplayName: userName.capitalized, privateKey: .init(), isDiscoverable: discoverable,
                backupEligible: true, backupState: true, creationDate: created))
        return credentialID
    }
}

/// An authenticator that never answers: opening waits until the task is cancelled (a phone nobody brings).
struct UnansweredAuthenticator: ClientAuthenticator {
    var kind: AuthenticatorKind = .hybrid
    var transports: [AuthenticatorTransport] = [.hybrid]

    func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]? { nil }

    func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession {
        await waitUntilCancelled()
        throw AuthenticatorTransportError("cancelled while waiting for the phone")
    }
}

/// An authenticator that cannot be reached: opening fails at once (no key plugged in).
struct UnreachableAuthenticator: ClientAuthenticator {
    var kind: AuthenticatorKind = .securityKey
    var transports: [AuthenticatorTransport] = [.usb]

    func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]? { nil }

    func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession {
        throw AuthenticatorTransportError("no security key is connected")
    }
}

/// Returns when the current task is cancelled: an `AsyncStream` that never yields ends its iteration then.
func waitUntilCancelled() async {
    let (stream, continuation) = AsyncStream<Never>.makeStream()
    _ = continuation
    for await _ in stream {}
}

/// An engine over `authenticators` with a scripted user, seeded randomness and a timer that fires only when
/// `timerFires` is true (then at once).
func makeEngine(
    _ authenticators: [any ClientAuthenticator], interface: ScriptedInterface = ScriptedInterface(),
    timerFires: Bool = false
) -> ClientEngine {
    let random = SeededBytes(seed: 99)
    return ClientEngine(
        environment: ClientEnvironment(
            authenticators: authenticators, userInterface: interface,
            relyingPartyIDChecker: HostRelyingPartyIDChecker(),
            randomBytes: { random.bytes($0) },
            sleep: { _ in
                if !timerFires {
                    await waitUntilCancelled()
                    throw CancellationError()
                }
            }))
}

/// Request options JSON for example.com with the given extra members.
func requestOptionsJSON(_ extra: String = "", challenge: String = "AAECAwQFBgcICQoLDA0ODw") -> [UInt8] {
    Array(#"{"challenge":"\#(challenge)","rpId":"example.com"\#(extra.isEmpty ? "" : ",")\#(extra)}"#.utf8)
}

/// Creation options JSON for example.com with the given extra members.
func creationOptionsJSON(_ extra: String = "", user: String = "alice") -> [UInt8] {
    let base =
        #"{"rp":{"id":"example.com","name":"Example"},"user":{"id":"\#(Array(user.utf8).base64URLEncodedString)","name":"\#(user)","displayName":"\#(user)"},"challenge":"AAECAwQFBgcICQoLDA0ODw","pubKeyCredParams":[{"type":"public-key","alg":-7}]"#
    return Array((base + (extra.isEmpty ? "" : ",") + extra + "}").utf8)
}

/// A web relying party for example.com, with the state it keeps: it writes options JSON and verifies the response
/// JSON the engine prints, as a real server would.
struct Site {
    static let origin = "https://example.com"
    var relyingParty = WebRelyingParty(
        configuration: .init(relyingParty: RelyingPartyEntity(id: "example.com", name: "Example"), origins: [origin]))
    var state = RelyingPartyState()
    let now = ContinuousClock.now
    private var counter: UInt8 = 0

    private mutating func random(_ count: Int) -> [UInt8] {
        counter &+= 1
        return [UInt8](repeating: counter, count: count)
    }

    mutating func registrationOptions(_ request: RegistrationOptionsRequest) -> [UInt8] {
        let challenge = random(32)
        let handle = random(16)
        return relyingParty.registrationOptions(
            for: request, state: state, challenge: challenge, newUserHandle: handle, now: now)
    }

    mutating func authenticationOptions(_ request: AuthenticationOptionsRequest = .init()) throws -> [UInt8] {
        let challenge = random(32)
        return try relyingParty.authenticationOptions(for: request, state: state, challenge: challenge, now: now)
    }

    mutating func verifyRegistration(_ body: [UInt8]) -> Verdict {
        let outcome = relyingParty.verifyRegistration(
            body, state: state, now: now, date: Date(timeIntervalSince1970: 1_800_000_000))
        if let newState = outcome.newState { state = newState }
        return outcome.verdict
    }

    mutating func verifyAuthentication(_ body: [UInt8]) -> Verdict {
        let outcome = relyingParty.verifyAuthentication(body, state: state, now: now)
        if let newState = outcome.newState { state = newState }
        return outcome.verdict
    }
}

/// Another authenticator with its getInfo edited: to play an authenticator without some capability, or (through
/// `answers`) one that answers what this package's authenticator never would.
struct EditedAuthenticator: ClientAuthenticator {
    let base: any ClientAuthenticator
    let edit: @Sendable (inout AuthenticatorInfo) -> Void

    var kind: AuthenticatorKind { base.kind }
    var transports: [AuthenticatorTransport] { base.transports }

    func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]? {
        await base.credentials(forRelyingParty: relyingPartyID)
    }

    func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession {
        let session = try await base.open(for: ceremony)
        var info = session.info
        edit(&info)
        return Session(base: session, info: info, log: log, answers: answers)
    }

    /// The command byte of every message sent.
    let log = CommandLog()
    /// Answers the test puts in place of the authenticator's own, or makes from them.
    let answers = ScriptedAnswers()

    struct Session: AuthenticatorSession {
        let base: any AuthenticatorSession
        let info: AuthenticatorInfo
        let log: CommandLog
        let answers: ScriptedAnswers

        func send(_ message: [UInt8]) async throws(AuthenticatorTransportError) -> [UInt8] {
            log.append(message[0])
            return try await answers.answer(message) { () async throws(AuthenticatorTransportError) in
                try await base.send(message)
            }
        }

        func close() async { await base.close() }
    }
}

/// Command bytes in the order they were sent.
final class CommandLog: Sendable {
    private let commands = Mutex<[UInt8]>([])

    func append(_ command: UInt8) { commands.withLock { $0.append(command) } }
    var all: [UInt8] { commands.withLock { $0 } }
}

/// What an `EditedAuthenticator` answers in place of the authenticator behind it: to play one that misbehaves in ways
/// this package's never does (another RP ID hash, a flag missing, CTAP2_ERR_PUAT_REQUIRED where getInfo promised none).
/// Canned answers are given without asking the authenticator; rewrites change what it answered. Every message sent is
/// kept whole.
final class ScriptedAnswers: Sendable {
    private struct State {
        var canned: [UInt8: [[UInt8]]] = [:]
        var rewrites: [UInt8: @Sendable ([UInt8]) -> [UInt8]] = [:]
        var messages: [[UInt8]] = []
    }

    private let state = Mutex(State())

    /// The next request with `command` is answered `response` (a status byte and CBOR), and reaches no authenticator.
    func answerNext(_ command: CTAPCommand, with response: [UInt8]) {
        state.withLock { $0.canned[command.rawValue, default: []].append(response) }
    }

    /// Every answer the authenticator gives to `command` goes through `edit` on its way back.
    func rewrite(_ command: CTAPCommand, with edit: @escaping @Sendable ([UInt8]) -> [UInt8]) {
        state.withLock { $0.rewrites[command.rawValue] = edit }
    }

    /// The messages sent with `command`, whole (command byte and CBOR), in order.
    func sent(_ command: CTAPCommand) -> [[UInt8]] {
        state.withLock { $0.messages.filter { $0.first == command.rawValue } }
    }

    func answer(
        _ message: [UInt8], asking authenticator: () async throws(AuthenticatorTransportError) -> [UInt8]
    ) async throws(AuthenticatorTransportError) -> [UInt8] {
        let command = message.first ?? 0
        let (canned, rewrite) = state.withLock { state -> ([UInt8]?, (@Sendable ([UInt8]) -> [UInt8])?) in
            state.messages.append(message)
            let canned = state.canned[command]?.isEmpty == false ? state.canned[command]?.removeFirst() : nil
            return (canned, state.rewrites[command])
        }
        if let canned { return canned }
        let response = try await authenticator()
        return rewrite?(response) ?? response
    }
}
