import CBOR
import CTAP2
import CTAPHID
import CTAPHIDIO
import Crypto
import Foundation
import Logging
import NIOCore
import SecurityKeyDriver
import Synchronization
import Testing

/// Events that tests wait for, in order. ``wait(for:occurrences:timeout:)`` returns once the event has happened that
/// many times (now or earlier), or `false` when the time limit passes first; the limit only bounds a test that is
/// failing.
final class Events<Event: Equatable & Sendable>: Sendable {
    private struct Waiter {
        var event: Event
        var occurrences: Int
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var seen: [Event] = []
        var waiters: [Int: Waiter] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    func record(_ event: Event) {
        let ready = state.withLock { state in
            state.seen.append(event)
            let count = state.seen.filter { $0 == event }.count
            let matching = state.waiters.filter { $0.value.event == event && $0.value.occurrences <= count }
            for key in matching.keys { state.waiters[key] = nil }
            return matching.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    var all: [Event] { state.withLock { $0.seen } }

    func count(of event: Event) -> Int { state.withLock { $0.seen.filter { $0 == event }.count } }

    func wait(for event: Event, occurrences: Int = 1, timeout: Duration = .seconds(30)) async -> Bool {
        await withCheckedContinuation { continuation in
            let id = state.withLock { state -> Int? in
                if state.seen.filter({ $0 == event }).count >= occurrences { return nil }
                state.next += 1
                state.waiters[state.next] = Waiter(event: event, occurrences: occurrences, continuation: continuation)
                return state.next
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            Task {
                try? await Task.sleep(for: timeout)
                let expired = self.state.withLock { $0.waiters.removeValue(forKey: id) }
                expired?.continuation.resume(returning: false)
            }
        }
    }
}

/// The user of the in-process authenticator: approves at once, or waits until the test approves. A request
/// cancelled while it waits (the platform's CTAPHID_CANCEL) is recorded as `.cancelled`.
final class ScriptedUser: UserInteraction {
    enum Event: Equatable, Sendable {
        case asked
        case cancelled
    }

    private struct State {
        var waits: Bool
        var pending: CheckedContinuation<ConsentResult, Never>?
    }

    let events = Events<Event>()
    private let state: Mutex<State>

    init(waits: Bool = false) { state = Mutex(State(waits: waits)) }

    func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        let approval = ConsentResult.approved(userVerified: request.requiresVerification, selectedAccount: nil)
        guard state.withLock({ $0.waits }) else { return approval }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Under the lock that the cancellation handler takes too: cancelled before or after this, never lost.
                let cancelledAlready = state.withLock { state in
                    if Task.isCancelled { return true }
                    state.pending = continuation
                    return false
                }
                if cancelledAlready {
                    continuation.resume(returning: .cancelled)
                } else {
                    events.record(.asked)
                }
            }
        } onCancel: {
            let pending = state.withLock { state in
                defer { state.pending = nil }
                return state.pending
            }
            pending?.resume(returning: .cancelled)
        }
        if result == .cancelled { events.record(.cancelled) }
        return result
    }

    /// Approves the request that waits, if any.
    func approve() {
        let pending = state.withLock { state in
            defer { state.pending = nil }
            return state.pending
        }
        pending?.resume(returning: .approved(userVerified: true, selectedAccount: nil))
    }
}

/// `passkey serve --udp` in process: this package's authenticator over an in-memory store behind the real
/// `CTAPHIDUDPServer` on loopback, with a scripted user. Every request is logged by its shape and status (as `serve
/// --verbose` logs them), and getInfo can be rewritten to play a key that offers less.
final class TestKey: Sendable {
    /// Lines of the request log.
    final class RequestLog: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    let server: CTAPHIDUDPServer
    let store: InMemoryCredentialStore
    let user: ScriptedUser
    private let requests: RequestLog

    /// What the authenticator received, one line a request: `clientPIN getPINRetries -> OK`.
    var log: [String] { requests.all }

    var spec: SecurityKeySpec { .udp(host: "127.0.0.1", port: server.localAddress.port ?? 0) }

    private init(server: CTAPHIDUDPServer, store: InMemoryCredentialStore, user: ScriptedUser, log: RequestLog) {
        self.server = server
        self.store = store
        self.user = user
        self.requests = log
    }

    /// Starts a key.
    ///
    /// - Parameters:
    ///   - pin: A PIN already set on the key (with `retries` tries left).
    ///   - getInfo: Rewrites the authenticator's getInfo body, to play an older or smaller key.
    static func start(
        configuration: AuthenticatorConfiguration = .securityKey, pin: String? = nil,
        retries: Int = AuthenticatorSettings.maximumPINRetries, user: ScriptedUser = ScriptedUser(),
        getInfo: (@Sendable (inout [CBORValue: CBORValue]) -> Void)? = nil
    ) async throws -> TestKey {
        var settings = AuthenticatorSettings()
        if let pin {
            settings.pinHash = Array(SHA256.hash(data: Array(pin.utf8)).prefix(16))
            settings.pinCodePointCount = pin.unicodeScalars.count
            settings.pinRetries = retries
        }
        let store = InMemoryCredentialStore(settings: settings)
        let authenticator = Authenticator(
            configuration: configuration, environment: AuthenticatorEnvironment(store: store, userInteraction: user))
        let log = RequestLog()
        let server = try await CTAPHIDUDPServer.start(
            host: "127.0.0.1", port: 0, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        ) { request, setStatus in
            var response = await authenticator.handle(request) { activity in
                setStatus(activity == .waitingForUser ? .userPresenceNeeded : .processing)
            }
            if request == [CTAPCommand.getInfo.rawValue], response.first == 0, let getInfo,
                var body = try? CBORValue(decoding: Array(response.dropFirst())).mapValue
            {
                getInfo(&body)
                response = [0] + CBORValue.map(body).encoded()
            }
            let status = response.first == 0 ? "OK" : CTAPError(rawValue: response.first ?? 0x7F).description
            log.append("\(CTAPRequestSummary(message: request)) -> \(status)")
            return response
        }
        return TestKey(server: server, store: store, user: user, log: log)
    }

    func close() async { await server.close() }
}
