import AssociatedDomains
import Testing

/// The check's rules alone: each sequence of answers, the actions it asks for and the verdict, with no network and
/// no waiting. The file reader is a stand-in: "names" when the JSON mentions the app, "invalid" when it is not an
/// object.
struct DomainCheckTests {
    static let app = "ABCDE12345.com.example.app"
    static let wellKnown = "https://example.com/.well-known/apple-app-site-association"
    static let root = "https://example.com/apple-app-site-association"

    static func check(port: Int = 443, policy: RetryPolicy = RetryPolicy()) -> DomainCheck {
        DomainCheck(host: "example.com", port: port, app: app, service: "webcredentials", policy: policy) { json in
            let text = String(decoding: json, as: UTF8.self)
            guard text.hasPrefix("{") else { return .invalid("not a JSON object") }
            return text.contains(app) ? .names : .doesNotName("it lists no apps")
        }
    }

    static func ok(_ body: String, type: String? = "application/json") -> DomainCheck.FetchOutcome {
        .response(status: 200, contentType: type, body: Array(body.utf8))
    }

    static func status(_ code: Int) -> DomainCheck.FetchOutcome { .response(status: code, contentType: nil, body: []) }

    /// Runs the check over `outcomes` (one per fetch) and `signatures` (one per verify), returning every action.
    static func run(
        _ check: inout DomainCheck, _ outcomes: [DomainCheck.FetchOutcome],
        signatures: [Result<[UInt8], SignatureFailure>] = []
    ) -> [DomainCheck.Action] {
        var actions = [check.start()]
        var outcomes = outcomes[...]
        var signatures = signatures[...]
        while true {
            switch actions.last! {
            case .fetch:
                guard let next = outcomes.popFirst() else { return actions }
                actions.append(check.received(next))
            case .verify:
                guard let next = signatures.popFirst() else { return actions }
                switch next {
                case .success(let content): actions.append(check.signatureVerified(content: content, signer: "CN=x"))
                case .failure(let failure): actions.append(check.signatureRefused(failure.reason))
                }
            case .finish: return actions
            }
        }
    }

    struct SignatureFailure: Error { var reason: String }

    static func verdict(_ actions: [DomainCheck.Action]) throws -> CheckVerdict {
        guard case .finish(let verdict) = actions.last else { throw SignatureFailure(reason: "not finished") }
        return verdict
    }

    @Test func aFileNamingTheAppApproves() throws {
        var check = Self.check()
        let actions = Self.run(&check, [Self.ok(#"{"webcredentials":{"apps":["\#(Self.app)"]}}"#)])
        #expect(actions.first == .fetch(url: Self.wellKnown, after: .zero))
        let verdict = try Self.verdict(actions)
        #expect(verdict.state == .approved)
        #expect(verdict.status == 200)
        #expect(verdict.url == Self.wellKnown)
        #expect(verdict.file != nil)
        #expect(check.verdict == verdict)
    }

    @Test(arguments: [
        (#"{"webcredentials":{"apps":[]}}"#, "does not name"), ("[1]", "is not valid: not a JSON object"),
    ])
    func aFileWithoutTheAppOrInvalidDenies(body: String, reason: String) throws {
        var check = Self.check()
        let verdict = try Self.verdict(Self.run(&check, [Self.ok(body)]))
        #expect(verdict.state == .denied)
        #expect(verdict.reason.contains(reason), "\(verdict.reason)")
    }

    @Test(arguments: [
        ("<!DOCTYPE html><html></html>", "text/html; charset=utf-8"), ("\n  <html>", "application/json"),
        (#"{"webcredentials":{"apps":["ABCDE12345.com.example.app"]}}"#, "text/html"),
    ])
    func anHTMLPageIsDiagnosed(body: String, type: String) throws {
        var check = Self.check()
        let verdict = try Self.verdict(Self.run(&check, [Self.ok(body, type: type)]))
        #expect(verdict.state == .denied)
        #expect(verdict.reason.contains("the server returned an HTML page"), "\(verdict.reason)")
        #expect(verdict.reason.contains("single-page-app"), "\(verdict.reason)")
    }

    @Test(arguments: [301, 302, 307, 308, 400, 403, 404, 410])
    func aRedirectOrClientErrorFallsBackThenDenies(code: Int) throws {
        var check = Self.check()
        let actions = Self.run(&check, [Self.status(code), Self.status(code)])
        #expect(actions.count == 3)
        #expect(actions[1] == .fetch(url: Self.root, after: .zero))
        let verdict = try Self.verdict(actions)
        #expect(verdict.state == .denied)
        #expect(verdict.status == code)
        #expect(verdict.url == Self.root)
        #expect(verdict.reason.contains("answered \(code)"))
        if code < 400 { #expect(verdict.reason.contains("redirects are never followed")) }
    }

    @Test func theOlderPlaceIsReadWhenTheWellKnownOneIsMissing() throws {
        var check = Self.check()
        let verdict = try Self.verdict(
            Self.run(&check, [Self.status(404), Self.ok(#"{"webcredentials":{"apps":["\#(Self.app)"]}}"#)]))
        #expect(verdict.state == .approved)
        #expect(verdict.url == Self.root)
        #expect(verdict.reason.hasPrefix("\(Self.wellKnown) answered 404; then "), "\(verdict.reason)")
    }

    @Test func aServerErrorIsRetriedWithBackoffThenAnswers() throws {
        var check = Self.check(policy: RetryPolicy(attempts: 4, firstDelay: .seconds(1), factor: 3))
        let actions = Self.run(
            &check,
            [Self.status(503), Self.status(500), Self.ok(#"{"webcredentials":{"apps":["\#(Self.app)"]}}"#)])
        #expect(
            Array(actions.prefix(3)) == [
                .fetch(url: Self.wellKnown, after: .zero), .fetch(url: Self.wellKnown, after: .seconds(1)),
                .fetch(url: Self.wellKnown, after: .seconds(3)),
            ])
        #expect(try Self.verdict(actions).state == .approved)
    }

    @Test(arguments: [
        DomainCheck.FetchOutcome.response(status: 502, contentType: nil, body: []), .failed("connection refused"),
    ])
    func aServerThatNeverAnswersIsPending(outcome: DomainCheck.FetchOutcome) throws {
        var check = Self.check(policy: RetryPolicy(attempts: 3, firstDelay: .seconds(2), factor: 2))
        let actions = Self.run(&check, Array(repeating: outcome, count: 10))
        #expect(
            Array(actions.prefix(3)) == [
                .fetch(url: Self.wellKnown, after: .zero), .fetch(url: Self.wellKnown, after: .seconds(2)),
                .fetch(url: Self.wellKnown, after: .seconds(4)),
            ])
        #expect(actions.count == 4)
        let verdict = try Self.verdict(actions)
        #expect(verdict.state == .pending)
        #expect(verdict.reason.contains("after 3 tries; try again later"), "\(verdict.reason)")
    }

    /// Issue 24: a refused connection, an untrusted certificate or a name that does not resolve was retried
    /// silently for 21 s. A retry within seconds cannot change those: the check is pending at once, with the reason.
    @Test func aSiteThatCannotBeReachedIsPendingAtOnceWithTheReason() throws {
        var check = Self.check(policy: RetryPolicy(attempts: 3, firstDelay: .seconds(2), factor: 2))
        let reason = "the connection to https://example.com/… was refused: nothing listens there"
        let actions = Self.run(&check, [.unreachable(reason)])
        #expect(actions.count == 2, "one fetch, then the verdict: no retry")
        let verdict = try Self.verdict(actions)
        #expect(verdict.state == .pending)
        #expect(verdict.reason.contains(reason) && verdict.reason.hasSuffix("try again later"), "\(verdict.reason)")
    }

    @Test func anOversizeFileDenies() throws {
        var check = Self.check()
        let verdict = try Self.verdict(Self.run(&check, [.tooLarge("the body is over 131072 bytes")]))
        #expect(verdict.state == .denied)
        #expect(verdict.reason.contains("over the 128 KB limit"))
    }

    @Test(arguments: [("application/pkcs7-mime", [UInt8]("x".utf8)), ("application/octet-stream", [0x30, 0x82])])
    func aSignedFileIsVerifiedForTheHost(type: String, body: [UInt8]) throws {
        var check = Self.check(port: 8443)
        let signed = Self.run(
            &check, [.response(status: 200, contentType: type, body: body)],
            signatures: [.success(Array(#"{"webcredentials":{"apps":["\#(Self.app)"]}}"#.utf8))])
        #expect(signed[1] == .verify(body, domain: "example.com"))
        let verdict = try Self.verdict(signed)
        #expect(verdict.state == .approved)
        #expect(verdict.signer == "CN=x")
        #expect(verdict.url == "https://example.com:8443/.well-known/apple-app-site-association")
        #expect(verdict.reason.contains("(signed by CN=x)"))

        var refused = Self.check()
        let actions = Self.run(
            &refused, [.response(status: 200, contentType: type, body: body)],
            signatures: [.failure(SignatureFailure(reason: "not valid for example.com"))])
        let denied = try Self.verdict(actions)
        #expect(denied.state == .denied)
        #expect(denied.reason.contains("the signed file at"), "\(denied.reason)")
        #expect(denied.reason.contains("not valid for example.com"))
    }

    @Test func eventsOutOfTurnEndTheCheckDenied() throws {
        var check = Self.check()
        _ = check.start()
        #expect(try Self.verdict([check.signatureVerified(content: [], signer: "x")]).state == .denied)
        #expect(try Self.verdict([check.received(Self.ok("{}"))]).state == .denied)
    }

    @Test(arguments: [(99, "answered 99"), (204, "answered 204"), (600, "answered 600")])
    func anUnusualStatusDenies(code: Int, reason: String) throws {
        var check = Self.check()
        let verdict = try Self.verdict(Self.run(&check, [Self.status(code)]))
        #expect(verdict.state == .denied)
        #expect(verdict.reason.contains(reason))
    }
}
