import CTAP2
import DBus
import Hybrid
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
        let rp = prompt.relyingPartyID ?? ""
        switch prompt.choice {
        case .account(let accounts):
            return await terminal.choose(.account(relyingPartyID: rp, accounts: accounts))
        case .place:
            guard case .makeCredential(_, let name, let displayName) = prompt.action else { return .declined }
            return await terminal.choose(.whereToCreate(relyingPartyID: rp, userName: name ?? displayName))
        case .allow:
            break
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
            case .answered(.allow(let choice)):
                guard prompt.accepts(choice) else {
                    log("passkey: consent: request \(request.id) answered with no such choice; declined")
                    return .declined
                }
                log(
                    "passkey: consent: request \(request.id) answered: \(DesktopNotifications.describe(choice, of: prompt))"
                )
                return .given(choice)
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
        guard asksWithoutTerminal else { return await terminal.choose(request) }
        switch request {
        case .account(let rp, let accounts):
            return await ask(
                ConsentPrompt(
                    action: .getAssertion(relyingPartyID: rp, accounts: accounts, chooseOnAuthenticator: true),
                    verification: .notNeeded, accounts: accounts, timeout: timeout))
        case .whereToCreate(let rp, let userName):
            return await ask(.whereToCreate(relyingPartyID: rp, userName: userName, timeout: timeout))
        case .sharedLogin:
            return await terminal.choose(request)
        }
    }

    public func secret(_ request: SecretRequest) async -> PromptAnswer<String> { await terminal.secret(request) }

    /// Reports go to the terminal (standard error: the journal of a unit). Without a terminal, the QR code a phone
    /// behind the security key is to scan is also shown in a notification, withdrawn once the phone is near or the
    /// request ends.
    public func report(_ event: ProviderEvent) {
        terminal.report(event)
        guard asksWithoutTerminal, routes.contains(.notification), case .bridge(let bridgeEvent) = event else { return }
        switch bridgeEvent {
        case .session(.showQRCode(let url)): showQRCode(.show(url))
        case .session(.advertSeen), .session(.linkedPhoneNear), .answered, .failed: showQRCode(.withdraw)
        default: break
        }
    }

    /// What the QR notification does next, in the order reported.
    enum QRCodeStep: Sendable {
        case show(String)
        case withdraw
    }

    /// The QR code steps, carried out one after another by one task, started with the first step.
    private let qrCodeSteps = Mutex<AsyncStream<QRCodeStep>.Continuation?>(nil)

    private func showQRCode(_ step: QRCodeStep) {
        let continuation = qrCodeSteps.withLock { existing in
            if let existing { return existing }
            let (steps, continuation) = AsyncStream.makeStream(of: QRCodeStep.self)
            existing = continuation
            Task { [weak self] in
                var shown: UInt32?
                for await step in steps {
                    // Nothing on the screen and nothing to show: no reason to reach the session bus at all.
                    if case .withdraw = step, shown == nil { continue }
                    guard let self, let notifications = await self.connectedNotifications() else { continue }
                    if let id = shown {
                        await notifications.withdraw(id)
                        shown = nil
                    }
                    if case .show(let url) = step {
                        shown = await notifications.showQRCode(
                            url: url, summary: "Scan this QR code with your phone", timeout: self.timeout,
                            log: self.log)
                    }
                }
            }
            return continuation
        }
        continuation.yield(step)
    }

    /// Ends the session bus connection, if one was made, and the task that shows QR codes.
    public func close() async {
        qrCodeSteps.withLock { continuation in
            continuation?.finish()
            continuation = nil
        }
        let connected = notifications.withLock { connected in
            defer { connected = nil }
            return connected
        }
        await connected?.connection.close()
    }
}
