import CTAP2
import DBus
import Foundation
import PasskeyProvider
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The provider's user interface for a service that may have no terminal (`passkey serve`, `passkey listen`): each
/// authenticator request goes along `routes` (`ConsentRoutes.choose`): a desktop notification, else the queue of
/// `passkey pending`, or the terminal. Secrets and reports go to `terminal` (without a terminal a secret is
/// declined; reports are lines on standard error, the journal of a systemd unit).
public final class ConsentChannelInterface: ProviderUserInterface, ConsentAsker {
    public let routes: [ConsentRoute]
    public let terminal: any ProviderUserInterface
    public let queue: PendingQueue?
    public let timeout: Duration
    let environment: [String: String]
    let log: @Sendable (String) -> Void
    /// The session bus connection, made at the first notification and kept; nil before, or after it failed.
    private let notifications = Mutex<DesktopNotifications?>(nil)
    private let random: @Sendable (Int) -> [UInt8]

    public init(
        routes: [ConsentRoute], terminal: any ProviderUserInterface, queue: PendingQueue?, timeout: Duration,
        environment: [String: String], log: @escaping @Sendable (String) -> Void,
        random: @escaping @Sendable (Int) -> [UInt8] = { count in
            var generator = SystemRandomNumberGenerator()
            return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
        }
    ) {
        self.routes = routes
        self.terminal = terminal
        self.queue = queue
        self.timeout = timeout
        self.environment = environment
        self.log = log
        self.random = random
    }

    /// Whether requests are asked without the terminal.
    public var asksWithoutTerminal: Bool { routes != [.terminal] }

    // MARK: ConsentAsker

    public func ask(_ prompt: ConsentPrompt) async -> PromptAnswer<Int> {
        for route in routes {
            switch route {
            case .terminal:
                return await askAtTerminal(prompt)
            case .notification:
                if let answer = await askByNotification(prompt) { return answer }
            case .queue:
                if let answer = await askThroughQueue(prompt) { return answer }
            }
        }
        log("passkey: consent: nobody could be asked: \(prompt.summary); declined")
        return .declined
    }

    private func askAtTerminal(_ prompt: ConsentPrompt) async -> PromptAnswer<Int> {
        guard prompt.accounts.isEmpty else {
            let rp = prompt.relyingPartyID ?? ""
            return await terminal.choose(.account(relyingPartyID: rp, accounts: prompt.accounts))
        }
        switch await terminal.confirm(.authenticator(prompt.action)) {
        case .given(true): return .given(0)
        case .given(false), .declined: return .declined
        case .cancelled: return .cancelled
        case .timedOut: return .timedOut
        }
    }

    private func askByNotification(_ prompt: ConsentPrompt) async -> PromptAnswer<Int>? {
        guard let notifications = await connectedNotifications() else { return nil }
        if let answer = await notifications.ask(prompt, log: log) { return answer }
        // Nobody took it: the next request connects afresh, in case the bus itself was restarted.
        let stale = self.notifications.withLock { connected in
            defer { connected = nil }
            return connected
        }
        await stale?.connection.close()
        return nil
    }

    private func connectedNotifications() async -> DesktopNotifications? {
        if let connected = notifications.withLock({ $0 }) { return connected }
        do {
            let connection = try await DBusConnection.open(.session, environment: environment)
            let connected = DesktopNotifications(connection: connection)
            notifications.withLock { $0 = connected }
            return connected
        } catch {
            log("passkey: consent: no session bus for notifications: \(error)")
            return nil
        }
    }

    /// Queues the request and waits for `passkey approve` or `passkey deny`, polling its answer file; nil when it
    /// cannot be queued.
    private func askThroughQueue(_ prompt: ConsentPrompt) async -> PromptAnswer<Int>? {
        guard let queue else { return nil }
        let request = PendingConsent(
            id: PendingConsent.id(from: random(4)), prompt: prompt, now: Date().timeIntervalSince1970,
            processID: getpid())
        do {
            try queue.add(request)
        } catch {
            log("passkey: consent: cannot queue the request: \(error)")
            return nil
        }
        log(
            "passkey: consent: request \(request.id) queued: \(request.summary) "
                + "(passkey approve \(request.id) or passkey deny \(request.id); expires in \(request.secondsLeft(now: request.created)) s)"
        )
        let deadline = ContinuousClock.now + prompt.timeout
        while true {
            switch queue.progress(request.id) {
            case .answered(.allow(let account)):
                guard prompt.accounts.isEmpty || prompt.accounts.indices.contains(account) else {
                    log("passkey: consent: request \(request.id) answered with no such account; declined")
                    return .declined
                }
                log(
                    "passkey: consent: request \(request.id) answered: "
                        + (prompt.accounts.count > 1 ? "account \(account + 1)" : "allow"))
                return .given(account)
            case .answered(.deny):
                log("passkey: consent: request \(request.id) answered: deny")
                return .declined
            case .gone:
                log("passkey: consent: request \(request.id) was removed without an answer")
                return .timedOut
            case .waiting:
                break
            }
            guard ContinuousClock.now < deadline else {
                queue.remove(request.id)
                log("passkey: consent: request \(request.id) expired without an answer")
                return .timedOut
            }
            do {
                try await Task.sleep(for: .milliseconds(100))
            } catch {
                queue.remove(request.id)
                log("passkey: consent: request \(request.id) withdrawn: the request was cancelled")
                return .cancelled
            }
        }
    }

    // MARK: ProviderUserInterface

    public func confirm(_ question: ProviderQuestion) async -> PromptAnswer<Bool> {
        guard asksWithoutTerminal else { return await terminal.confirm(question) }
        guard case .authenticator(let action) = question else {
            log("passkey: consent: a question only a terminal can answer was declined")
            return .declined
        }
        switch await ask(ConsentPrompt(action: action, verification: .notNeeded, accounts: [], timeout: timeout)) {
        case .given: return .given(true)
        case .declined: return .declined
        case .cancelled: return .cancelled
        case .timedOut: return .timedOut
        }
    }

    public func choose(_ request: ChoiceRequest) async -> PromptAnswer<Int> {
        guard asksWithoutTerminal, case .account(let rp, let accounts) = request else {
            return await terminal.choose(request)
        }
        return await ask(
            ConsentPrompt(
                action: .getAssertion(relyingPartyID: rp, accounts: accounts, chooseOnAuthenticator: true),
                verification: .notNeeded, accounts: accounts, timeout: timeout))
    }

    public func secret(_ request: SecretRequest) async -> PromptAnswer<String> { await terminal.secret(request) }

    public func report(_ event: ProviderEvent) { terminal.report(event) }

    /// Ends the session bus connection, if one was made.
    public func close() async {
        let connected = notifications.withLock { connected in
            defer { connected = nil }
            return connected
        }
        await connected?.connection.close()
    }
}
