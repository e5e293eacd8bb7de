import Foundation
import PublicSuffix
import Synchronization
import TestSupport
import Testing
import WebAuthnClient

/// WebAuthn L3 §5.11.1 on documents held in memory: step 2's checks, the label budget of steps 3–5, and the
/// client's verdict around them.
struct RelatedOriginsTests {
    /// A list written for these tests, so the outcomes do not move with the system's list.
    static let list = try! PublicSuffixList(
        text: "com\nnet\nde\nsg\nuk\nco.uk\nio\n*.ck\n// ===BEGIN PRIVATE DOMAINS===\ngithub.io\n")

    /// WebAuthn L3 §5.11's example document for the RP ID example.com.
    static let specExample = [
        "https://example.co.uk", "https://example.de", "https://example.sg", "https://example.net",
        "https://exampledelivery.com", "https://exampledelivery.co.uk", "https://exampledelivery.de",
        "https://exampledelivery.sg", "https://myexamplerewards.com", "https://examplecars.com",
    ]

    static func validate(_ caller: String, _ origins: [String], maximumLabels: Int = 5) throws -> RelatedOrigins.Outcome
    {
        RelatedOrigins.validate(
            callerOrigin: try WebOrigin(url: caller), origins: origins, list: list, maximumLabels: maximumLabels)
    }

    @Test func theSpecExampleAllowsItsFirstFiveLabels() throws {
        // Labels in order: example, exampledelivery, myexamplerewards, examplecars: four, within five.
        for origin in Self.specExample {
            #expect(try Self.validate(origin, Self.specExample).matched, "\(origin)")
        }
        #expect(try Self.validate("https://example.co.uk", Self.specExample).labelsSeen == [])
        #expect(
            try Self.validate("https://examplecars.com", Self.specExample).labelsSeen == [
                "example", "exampledelivery", "myexamplerewards",
            ])
        // Same origin means scheme, host and port: a path in the list is fine, another port or scheme is not.
        #expect(try Self.validate("https://example.de", ["https://example.de/login"]).matched)
        #expect(try !Self.validate("https://example.de:8443", ["https://example.de"]).matched)
        #expect(try !Self.validate("http://example.de", ["https://example.de"]).matched)
        #expect(try !Self.validate("https://www.example.de", ["https://example.de"]).matched)
    }

    @Test func theBudgetCountsDistinctLabels() throws {
        let five = ["https://a.com", "https://b.com", "https://c.com", "https://d.com", "https://e.com"]
        // A sixth label is past the budget: its origins are skipped, even the caller's.
        let outcome = try Self.validate("https://f.com", five + ["https://f.com"])
        #expect(!outcome.matched)
        #expect(outcome.listedBeyondBudget)
        #expect(outcome.labelsSeen == ["a", "b", "c", "d", "e"])
        #expect(outcome.explanation.contains("budget"))
        // A label already seen still counts once the budget is spent: a.co.uk's label is a.
        #expect(try Self.validate("https://a.co.uk", five + ["https://a.co.uk"]).matched)
        #expect(try Self.validate("https://www.a.de", five + ["https://www.a.de"]).matched)
        // Duplicates and other origins of one label use one place in the budget.
        let repeated = [
            "https://a.com", "https://a.com", "https://www.a.com", "https://a.net", "https://b.com",
            "https://c.com", "https://d.com", "https://e.com", "https://e.com",
        ]
        #expect(try Self.validate("https://e.com", repeated).matched)
        #expect(try Self.validate("https://e.com", repeated).labelsSeen == ["a", "b", "c", "d"])
        // A larger client budget lets the sixth label in.
        #expect(try Self.validate("https://f.com", five + ["https://f.com"], maximumLabels: 6).matched)
        #expect(try !Self.validate("https://b.com", five, maximumLabels: 1).matched)
    }

    @Test func itemsWithoutALabelAreSkippedAndCostNothing() throws {
        let skipped = [
            "not a url", "https://", "data:,x", "https://127.0.0.1", "https://[::1]", "https://com",
            "https://github.io",
            "https://x.ck", "https://exa_mple.com", "https://example.com.", "https://bücher.de",
        ]
        let outcome = try Self.validate(
            "https://f.com",
            skipped + [
                "https://a.com", "https://b.com", "https://c.com",
                "https://d.com", "https://f.com",
            ])
        #expect(outcome.matched)
        #expect(outcome.labelsSeen == ["a", "b", "c", "d"])
        // Labels come from the registrable domain, private section included: whatwg.github.io's label is whatwg.
        #expect(
            RelatedOrigins.registrableOriginLabel(
                of: try WebOrigin(url: "https://www.whatwg.github.io"), list: Self.list) == "whatwg")
        #expect(
            RelatedOrigins.registrableOriginLabel(of: try WebOrigin(url: "https://a.b.x.ck"), list: Self.list) == "b")
    }

    static func response(_ body: String, status: Int = 200, type: String? = "application/json") -> WellKnownResponse {
        WellKnownResponse(status: status, contentType: type, body: Array(body.utf8))
    }

    @Test(
        arguments: [
            (#"{"origins": ["https://a.com"]}"#, 200, "application/json", nil as RelatedOriginsError.Code?),
            (#"{"origins": ["https://a.com"]}"#, 200, "application/json; charset=utf-8", nil),
            (#"{"origins": ["https://a.com"]}"#, 200, "Application/JSON ;charset=UTF-8", nil),
            (#"{"origins": [], "other": 1}"#, 200, "application/json", nil),
            (#"{"origins": ["https://a.com"]}"#, 301, "application/json", .status),
            (#"{"origins": ["https://a.com"]}"#, 302, "text/html", .status),
            (#"{"origins": ["https://a.com"]}"#, 404, "application/json", .status),
            (#"{"origins": ["https://a.com"]}"#, 200, "text/plain", .contentType),
            (#"{"origins": ["https://a.com"]}"#, 200, "application/jsonp", .contentType),
            (#"{"origins": ["https://a.com"]}"#, 200, "application/ld+json", .contentType),
            ("{\"origins\": [\"https://a.com\"]", 200, "application/json", .notAJSONObject),
            ("", 200, "application/json", .notAJSONObject),
            (#"["https://a.com"]"#, 200, "application/json", .notAJSONObject),
            (#""https://a.com""#, 200, "application/json", .notAJSONObject),
            ("{\"origins\": [\"https://a.com\"]} trailing", 200, "application/json", .notAJSONObject),
            (#"{}"#, 200, "application/json", .badOrigins),
            (#"{"Origins": ["https://a.com"]}"#, 200, "application/json", .badOrigins),
            (#"{"origins": "https://a.com"}"#, 200, "application/json", .badOrigins),
            (#"{"origins": null}"#, 200, "application/json", .badOrigins),
            (#"{"origins": {"0": "https://a.com"}}"#, 200, "application/json", .badOrigins),
            (#"{"origins": ["https://a.com", 5]}"#, 200, "application/json", .badOrigins),
            (#"{"origins": ["https://a.com", true]}"#, 200, "application/json", .badOrigins),
            (#"{"origins": ["https://a.com", null]}"#, 200, "application/json", .badOrigins),
            (#"{"origins": [["https://a.com"]]}"#, 200, "application/json", .badOrigins),
        ] as [(String, Int, String, RelatedOriginsError.Code?)])
    func checksTheResponse(body: String, status: Int, type: String, refusal: RelatedOriginsError.Code?) {
        do {
            let origins = try RelatedOrigins.origins(in: Self.response(body, status: status, type: type))
            #expect(refusal == nil, "accepted \(body) (\(status), \(type)): \(origins)")
        } catch {
            #expect(error.code == refusal, "\(body) (\(status), \(type)): \(error)")
            #expect(!error.description.isEmpty)
        }
    }

    @Test func refusesAMissingContentTypeAndATooLargeBody() {
        #expect(throws: RelatedOriginsError(.contentType, "")) {
            try RelatedOrigins.origins(in: Self.response(#"{"origins": []}"#, type: nil))
        }
        let padding = String(repeating: " ", count: RelatedOrigins.maximumDocumentSize)
        #expect(throws: RelatedOriginsError(.tooLarge, "")) {
            try RelatedOrigins.origins(in: Self.response(#"{"origins": []}"# + padding))
        }
        // Exactly at the limit is fine.
        let exact = #"{"origins": []}"#
        let filled = exact + String(repeating: " ", count: RelatedOrigins.maximumDocumentSize - exact.utf8.count)
        #expect(throws: Never.self) { try RelatedOrigins.origins(in: Self.response(filled)) }
    }

    @Test func survivesSeededJSON() {
        var generator = SeededRandom(seed: 511)
        let pieces = [
            #"{"#, #"}"#, #"["#, #"]"#, #"""#, #"origins"#, ":", ",", "1", "true", "null", "https://a.com", "\\", " ",
            "é",
        ]
        for _ in 0..<3_000 {
            let body = (0..<Int.random(in: 0...16, using: &generator)).map { _ in
                pieces.randomElement(using: &generator)!
            }
            .joined()
            if let origins = try? RelatedOrigins.origins(in: Self.response(body)) {
                _ = RelatedOrigins.validate(callerOrigin: .opaque(scheme: "data"), origins: origins, list: Self.list)
            }
        }
    }
}

/// The whole client decision with related origins, through a `RelatedOriginsSource` that serves documents from
/// memory and records what it was asked for.
struct RelatedOriginsVerdictTests {
    final class Source: RelatedOriginsSource {
        let result: Result<WellKnownResponse, RelatedOriginsError>
        private let requested = Mutex<[String]>([])

        init(_ result: Result<WellKnownResponse, RelatedOriginsError>) { self.result = result }

        var requests: [String] { requested.withLock { $0 } }

        func wellKnownResponse(for rpID: DomainName) async throws(RelatedOriginsError) -> WellKnownResponse {
            requested.withLock { $0.append(rpID.text) }
            return try result.get()
        }
    }

    static let list = RelatedOriginsTests.list

    static func document(_ origins: [String]) -> Result<WellKnownResponse, RelatedOriginsError> {
        let json = try! JSONSerialization.data(withJSONObject: ["origins": origins])
        return .success(WellKnownResponse(status: 200, contentType: "application/json", body: Array(json)))
    }

    static func verdict(_ origin: String, _ rpID: String?, _ source: Source) async throws -> RelyingPartyIDVerdict {
        await RelyingPartyIDCheck.evaluate(
            origin: try WebOrigin(url: origin), rpID: rpID, list: list, relatedOrigins: source)
    }

    @Test func aListedOriginMayUseTheRPID() async throws {
        let source = Source(Self.document(RelatedOriginsTests.specExample))
        let verdict = try await Self.verdict("https://exampledelivery.sg", "example.com", source)
        #expect(verdict.valid)
        #expect(verdict.rule == .relatedOrigin)
        #expect(verdict.rpID == "example.com")
        #expect(verdict.reason.contains("https://example.com/.well-known/webauthn"))
        #expect(source.requests == ["example.com"])
    }

    @Test func anUnlistedOriginMayNot() async throws {
        let source = Source(Self.document(RelatedOriginsTests.specExample))
        let verdict = try await Self.verdict("https://example.ck.example.net", "example.com", source)
        #expect(!verdict.valid)
        #expect(verdict.rule == .relatedOriginsRefused)
        #expect(verdict.reason.contains("neither"))
        #expect(verdict.reason.contains("is not listed"))
    }

    @Test func aFailedFetchRefuses() async throws {
        let source = Source(.failure(RelatedOriginsError(.fetchFailed, "connection refused")))
        let verdict = try await Self.verdict("https://example.de", "example.com", source)
        #expect(!verdict.valid)
        #expect(verdict.rule == .relatedOriginsRefused)
        #expect(verdict.reason.contains("connection refused"))
        let redirected = Source(.success(WellKnownResponse(status: 302, contentType: "text/html", body: [])))
        let redirectVerdict = try await Self.verdict("https://example.de", "example.com", redirected)
        #expect(redirectVerdict.reason.contains("302"))
    }

    @Test func nothingIsFetchedWhenTheSuffixCheckDecides() async throws {
        let source = Source(Self.document(["https://example.de"]))
        // Passing checks, and refusals before the suffix check, fetch nothing.
        for (origin, rpID) in [
            ("https://login.example.com", "example.com"), ("https://example.com", nil),
            ("http://example.de", "example.com"),
            ("data:,x", "example.com"), ("https://127.0.0.1", "example.com"), ("https://example.de", "127.0.0.1"),
            ("https://example.de", ""), ("https://example.de", "exa mple.com"),
        ] as [(String, String?)] {
            _ = try await Self.verdict(origin, rpID, source)
        }
        #expect(source.requests.isEmpty)
        // A public suffix as RP ID fails the suffix check, so it is asked for.
        _ = try await Self.verdict("https://example.de", "de", source)
        #expect(source.requests == ["de"])
    }
}
