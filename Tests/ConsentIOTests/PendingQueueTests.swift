import CTAP2
import ConsentIO
import Foundation
import JSON
import PasskeyProvider
import Testing
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The queue of pending requests (passkey pending / approve / deny)")
struct PendingQueueTests {
    static let alice = AccountSummary(
        relyingPartyID: "example.com", userName: "alice", userDisplayName: nil, credentialID: [1])
    static let bob = AccountSummary(
        relyingPartyID: "example.com", userName: "bob", userDisplayName: nil, credentialID: [2])

    static func prompt(accounts: [AccountSummary] = [], timeout: Duration = .seconds(60)) -> ConsentPrompt {
        ConsentPrompt(
            action: .getAssertion(
                relyingPartyID: "example.com", accounts: accounts.isEmpty ? [alice] : accounts,
                chooseOnAuthenticator: !accounts.isEmpty),
            verification: .notNeeded, accounts: accounts, timeout: timeout)
    }

    @Test("a request's record round-trips; IDs are eight hex digits")
    func records() throws {
        let request = PendingConsent(
            id: "0a1b2c3d", prompt: Self.prompt(accounts: [Self.alice, Self.bob]), now: 1000, processID: 42)
        #expect(request.expires == 1060)
        #expect(request.accounts == ["alice", "bob"])
        #expect(PendingConsent(json: request.json.serialized()) == request)
        #expect(PendingConsent(json: Array("{}".utf8)) == nil)
        #expect(PendingConsent(json: Array("not json".utf8)) == nil)
        #expect(PendingConsent.id(from: [0x0a, 0x1b, 0x2c, 0x3d]) == "0a1b2c3d")
        for text in ["0a1b2c3d", "ffffffff"] { #expect(PendingConsent.isID(text)) }
        for text in ["0A1B2C3D", "0a1b2c3", "0a1b2c3d0", "../a1b2c", "0a1b2c3g", ""] {
            #expect(!PendingConsent.isID(text))
        }
        #expect(request.secondsLeft(now: 1059.5) == 1)
        #expect(request.isExpired(now: 1060))
        for answer in [PendingAnswer.allow(choice: 1), .deny] {
            #expect(PendingAnswer(json: answer.json.serialized()) == answer)
        }
        #expect(PendingAnswer(json: Array(#"{"answer":"allow","account":-1}"#.utf8)) == nil)
        // Several accounts need --account; one needs none.
        #expect(PendingAnswer.approval(of: request, account: nil) == .failure(.chooseAccount(["alice", "bob"])))
        #expect(PendingAnswer.approval(of: request, account: 2) == .success(.allow(choice: 1)))
        #expect(PendingAnswer.approval(of: request, account: 3) == .failure(.noSuchAccount(3, count: 2)))
        let single = PendingConsent(id: "00000001", prompt: Self.prompt(), now: 0, processID: 1)
        #expect(PendingAnswer.approval(of: single, account: nil) == .success(.allow(choice: 0)))
        #expect(PendingAnswer.approval(of: single, account: nil, place: 1) == .failure(.noPlaces))
    }

    @Test("where to create, queued: the places in the record, answered with --place only")
    func whereToCreate() throws {
        let prompt = ConsentPrompt.whereToCreate(
            relyingPartyID: "example.com", userName: "alice", timeout: .seconds(60))
        let request = PendingConsent(id: "0a1b2c3d", prompt: prompt, now: 1000, processID: 42)
        #expect(request.places == ["this computer", "a phone"] && request.accounts.isEmpty)
        #expect(PendingConsent(json: request.json.serialized()) == request)
        let places = PendingRefusal.choosePlace(["this computer", "a phone"])
        #expect(PendingAnswer.approval(of: request, account: nil) == .failure(places))
        #expect(PendingAnswer.approval(of: request, account: 2) == .failure(places))
        #expect(PendingAnswer.approval(of: request, account: nil, place: 2) == .success(.allow(choice: 1)))
        #expect(PendingAnswer.approval(of: request, account: nil, place: 3) == .failure(.noSuchPlace(3, count: 2)))
        #expect(
            places.description
                == "the request asks where to create the passkey: give --place N (1 this computer, 2 a phone)")
        // A record with both accounts and places is not one this program wrote.
        guard case .object(let members) = request.json else {
            Issue.record("the record is not a JSON object: \(request.json)")
            return
        }
        let damaged = JSONValue.object(
            members.map { $0.key == "accounts" ? JSONMember("accounts", .strings(["alice"])) : $0 })
        #expect(PendingConsent(json: damaged.serialized()) == nil)
    }

    @Test("queued, listed, approved and answered through the files; private to this user")
    func approveThroughTheQueue() async throws {
        let runtime = try TemporaryDirectory()
        let queue = try #require(PendingQueue(environment: ["XDG_RUNTIME_DIR": runtime.path]))
        let logged = Recorder<String>()
        let interface = ConsentChannelInterface(
            routes: [.queue], terminal: NobodyAtTheTerminal(), queue: queue, timeout: .seconds(20), environment: [:],
            log: { logged.append($0) })
        let asking = Task { await interface.ask(Self.prompt(accounts: [Self.alice, Self.bob])) }
        let request = try await waitForOne(queue)
        #expect(request.summary == "example.com asks to sign in")
        var info = stat()
        #expect(lstat(queue.directory.path, &info) == 0 && info.st_mode & 0o777 == 0o700)
        #expect(lstat(queue.directory.appendingPathComponent("\(request.id).json").path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        // Refusals change nothing.
        #expect(throws: PendingQueueError.self) {
            try queue.answer(request.id, now: Date().timeIntervalSince1970) {
                PendingAnswer.approval(of: $0, account: nil)
            }
        }
        let unknown = try #require(throws: PendingQueueError.self) {
            try queue.answer("00000000", now: Date().timeIntervalSince1970) { _ in .success(.deny) }
        }
        #expect(unknown.notFound)
        _ = try queue.answer(request.id, now: Date().timeIntervalSince1970) {
            PendingAnswer.approval(of: $0, account: 2)
        }
        // Answered once only.
        #expect(throws: PendingQueueError.self) {
            try queue.answer(request.id, now: Date().timeIntervalSince1970) { _ in .success(.deny) }
        }
        #expect(await asking.value == .given(1))
        #expect(try queue.list(now: Date().timeIntervalSince1970).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: queue.directory.path).isEmpty)
        #expect(logged.all.contains { $0.contains("request \(request.id) queued: example.com asks to sign in") })
        #expect(logged.all.contains { $0.contains("request \(request.id) answered: account 2") })
    }

    @Test("deny refuses; no answer in time expires and removes the request; cancellation withdraws it")
    func denyExpiryAndCancellation() async throws {
        let runtime = try TemporaryDirectory()
        let queue = try #require(PendingQueue(environment: ["XDG_RUNTIME_DIR": runtime.path]))
        let interface = ConsentChannelInterface(
            routes: [.queue], terminal: NobodyAtTheTerminal(), queue: queue, timeout: .seconds(20), environment: [:],
            log: { _ in })
        let denied = Task { await interface.ask(Self.prompt()) }
        let request = try await waitForOne(queue)
        _ = try queue.answer(request.id, now: Date().timeIntervalSince1970) { _ in .success(.deny) }
        #expect(await denied.value == .declined)

        let start = ContinuousClock.now
        #expect(await interface.ask(Self.prompt(timeout: .milliseconds(400))) == .timedOut)
        #expect(ContinuousClock.now - start < .seconds(15))
        #expect(try FileManager.default.contentsOfDirectory(atPath: queue.directory.path).isEmpty)

        let cancelled = Task { await interface.ask(Self.prompt()) }
        _ = try await waitForOne(queue)
        cancelled.cancel()
        #expect(await cancelled.value == .cancelled)
        #expect(try FileManager.default.contentsOfDirectory(atPath: queue.directory.path).isEmpty)
    }

    @Test("an expired request is refused and removed, by approve and by the listing")
    func expiredRequests() throws {
        let runtime = try TemporaryDirectory()
        let queue = try #require(PendingQueue(environment: ["XDG_RUNTIME_DIR": runtime.path]))
        let old = PendingConsent(id: "00000001", prompt: Self.prompt(), now: 1000, processID: 1)
        let other = PendingConsent(id: "00000002", prompt: Self.prompt(), now: 1000, processID: 1)
        try queue.add(old)
        try queue.add(other)
        #expect(try queue.list(now: 1059).map(\.id) == ["00000001", "00000002"])
        let error = try #require(throws: PendingQueueError.self) {
            try queue.answer(old.id, now: 1060) { _ in .success(.allow(choice: 0)) }
        }
        #expect(error.notFound)
        #expect(error.message == "request 00000001 has expired; it is removed")
        #expect(try queue.list(now: 1059).map(\.id) == ["00000002"])
        #expect(try queue.list(now: 1061).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: queue.directory.path).isEmpty)
        // The same ID is never queued twice.
        try queue.add(old)
        #expect(throws: PendingQueueError.self) { try queue.add(old) }
    }

    @Test("a directory others may use, a damaged request and a symbolic link are refused or removed")
    func untrustedFiles() throws {
        let runtime = try TemporaryDirectory()
        let queue = try #require(PendingQueue(environment: ["XDG_RUNTIME_DIR": runtime.path]))
        try queue.add(PendingConsent(id: "00000001", prompt: Self.prompt(), now: 1000, processID: 1))
        // A damaged file is removed from the listing.
        let damaged = queue.directory.appendingPathComponent("00000003.json")
        try Data("{".utf8).write(to: damaged)
        chmod(damaged.path, 0o600)
        // A link to a request elsewhere is not followed.
        let elsewhere = runtime.file("elsewhere.json")
        try Data(PendingConsent(id: "00000004", prompt: Self.prompt(), now: 1000, processID: 1).json.serialized())
            .write(to: URL(fileURLWithPath: elsewhere))
        #expect(symlink(elsewhere, queue.directory.appendingPathComponent("00000004.json").path) == 0)
        #expect(try queue.list(now: 1001).map(\.id) == ["00000001"])
        #expect(throws: PendingQueueError.self) { try queue.answer("00000004", now: 1001) { _ in .success(.deny) } }

        chmod(queue.directory.path, 0o755)
        let error = try #require(throws: PendingQueueError.self) { try queue.list(now: 1001) }
        #expect(error.message.hasSuffix("others may use it (mode 755); chmod 700 it"))
        #expect(throws: PendingQueueError.self) { try queue.answer("00000001", now: 1001) { _ in .success(.deny) } }
        #expect(PendingQueue(environment: ["XDG_RUNTIME_DIR": "relative"]) == nil)
        #expect(PendingQueue(environment: [:]) == nil)
    }

    @Test("routes: a notification route with no session bus falls to the queue; no route left declines")
    func fallingThrough() async throws {
        let runtime = try TemporaryDirectory()
        let queue = try #require(PendingQueue(environment: ["XDG_RUNTIME_DIR": runtime.path]))
        let logged = Recorder<String>()
        let interface = ConsentChannelInterface(
            routes: [.notification, .queue], terminal: NobodyAtTheTerminal(), queue: queue, timeout: .seconds(20),
            environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(runtime.path)/no-bus"], log: { logged.append($0) })
        let asking = Task { await interface.ask(Self.prompt()) }
        let request = try await waitForOne(queue)
        _ = try queue.answer(request.id, now: Date().timeIntervalSince1970) {
            PendingAnswer.approval(of: $0, account: nil)
        }
        #expect(await asking.value == .given(0))
        #expect(logged.all.first?.hasPrefix("passkey: consent: no session bus for notifications") == true)

        let nowhere = ConsentChannelInterface(
            routes: [.notification], terminal: NobodyAtTheTerminal(), queue: nil, timeout: .seconds(20),
            environment: [:], log: { logged.append($0) })
        #expect(await nowhere.ask(Self.prompt()) == .declined)
        #expect(logged.all.last?.contains("nobody could be asked") == true)
        // Questions that are not an authenticator's are never asked without a terminal.
        #expect(await nowhere.confirm(.deletePasskey(relyingPartyID: "example.com", account: "alice")) == .declined)
    }

    /// The one request in `queue`, waiting up to 60 s for it to appear (the whole suite shares two cores in CI);
    /// looked for once more after the deadline, in case this task was the one kept waiting.
    func waitForOne(_ queue: PendingQueue) async throws -> PendingConsent {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let requests = try queue.list(now: Date().timeIntervalSince1970)
            if requests.count == 1 { return requests[0] }
            guard ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("no request was queued")
        throw PendingQueueError("no request")
    }
}

/// A terminal nobody is at: every question declined, every report dropped.
struct NobodyAtTheTerminal: ProviderUserInterface {
    func confirm(_ question: ProviderQuestion) async -> PromptAnswer<Bool> { .declined }
    func choose(_ request: ChoiceRequest) async -> PromptAnswer<Int> { .declined }
    func secret(_ request: SecretRequest) async -> PromptAnswer<String> { .declined }
    func report(_ event: ProviderEvent) {}
}
