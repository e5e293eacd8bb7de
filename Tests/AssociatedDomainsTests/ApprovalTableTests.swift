import AssociatedDomains
import Foundation
import Testing

/// The approval table as a value: entitlements read and written, entries many to many, the last file per domain,
/// forgetting an app, and the JSON form.
struct ApprovalTableTests {
    static let app = try! AppID("ABCDE12345.com.example.app")
    static let other = try! AppID("ZZZZZ99999.com.example.other")
    static let time = Date(timeIntervalSince1970: 1_800_000_000)
    static let file = Array(#"{"webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#.utf8)

    static func verdict(_ state: ApprovalState, file: [UInt8]? = nil) -> CheckVerdict {
        CheckVerdict(state: state, reason: "because", url: "https://example.com/x", status: 200, file: file)
    }

    @Test(arguments: [
        ("webcredentials:example.com", "webcredentials:example.com"),
        ("applinks:Example.COM:443", "applinks:example.com"),
        ("activitycontinuation:example.com:8443", "activitycontinuation:example.com:8443"),
        ("appclips:127.0.0.1:1", "appclips:127.0.0.1:1"),
    ])
    func entitlementsRead(text: String, canonical: String) throws {
        #expect(try Entitlement(text).description == canonical)
    }

    @Test(arguments: [
        "example.com", "passwords:example.com", "webcredentials:", "webcredentials:example.com:0",
        "webcredentials:example.com:65536", "webcredentials:exa mple.com", "webcredentials:example.com.",
        "webcredentials:example.com:+1", "webcredentials:example.com:٣",
    ])
    func badEntitlementsAreRefused(text: String) {
        #expect(throws: ApprovalTableError(.invalidEntitlement, "")) { try Entitlement(text) }
    }

    /// `domains match` finds the last file by the domain given, else by the link's host and port.
    @Test func theFileDomainIsTheGivenOneOrTheLinksInLowerCaseWithout443() {
        #expect(ApprovalTable.fileDomain(given: "Example.COM:443", link: "https://x.test/") == "example.com")
        #expect(ApprovalTable.fileDomain(given: "example.com:8443", link: "") == "example.com:8443")
        #expect(ApprovalTable.fileDomain(given: nil, link: "https://Shop.Example.com/a") == "shop.example.com")
        #expect(ApprovalTable.fileDomain(given: nil, link: "https://example.com:443/a") == "example.com")
        #expect(ApprovalTable.fileDomain(given: nil, link: "https://example.com:8443/a") == "example.com:8443")
        #expect(ApprovalTable.fileDomain(given: nil, link: "not a link") == nil)
        #expect(ApprovalTable.fileDomain(given: nil, link: "/relative/path") == nil)
    }

    @Test func entriesAreManyToManyAndReplacedByTheNextCheck() throws {
        var table = ApprovalTable()
        let web = try Entitlement("webcredentials:example.com")
        let links = try Entitlement("applinks:example.com")
        table.record(Self.verdict(.approved, file: Self.file), entitlement: web, app: Self.app, at: Self.time)
        table.record(Self.verdict(.denied), entitlement: web, app: Self.other, at: Self.time)
        table.record(Self.verdict(.pending), entitlement: links, app: Self.app, at: Self.time)
        #expect(table.entries.count == 3)
        #expect(table.entry(web, app: Self.app)?.state == .approved)
        #expect(table.entry(web, app: Self.other)?.state == .denied)
        #expect(table.entries.map(\.entitlement) == [links.description, web.description, web.description])
        // The denial without a file dropped the file the approval kept: the site no longer serves one.
        #expect(table.lastFile(domain: "example.com") == nil)
        table.record(Self.verdict(.approved, file: Self.file), entitlement: web, app: Self.other, at: Self.time)
        #expect(table.entry(web, app: Self.other)?.state == .approved)
        #expect(table.entries.count == 3)
        #expect(table.lastFile(domain: "example.com") == Self.file)
        // A pending check keeps the file.
        table.record(Self.verdict(.pending), entitlement: web, app: Self.other, at: Self.time)
        #expect(table.lastFile(domain: "example.com") == Self.file)
    }

    @Test func forgettingAnAppRemovesItsEntriesAndFilesNoOneNeeds() throws {
        var table = ApprovalTable()
        let first = try Entitlement("webcredentials:example.com")
        let second = try Entitlement("webcredentials:shop.example:8443")
        table.record(Self.verdict(.approved, file: Self.file), entitlement: first, app: Self.app, at: Self.time)
        table.record(Self.verdict(.approved, file: Self.file), entitlement: second, app: Self.app, at: Self.time)
        table.record(Self.verdict(.approved, file: Self.file), entitlement: first, app: Self.other, at: Self.time)
        let removed = table.forget(app: Self.app)
        #expect(removed.count == 2)
        #expect(table.entries.map(\.app) == [Self.other.description])
        #expect(table.lastFile(domain: "example.com") == Self.file)
        #expect(table.lastFile(domain: "shop.example:8443") == nil)
        #expect(table.forget(app: Self.app).isEmpty)
    }

    @Test func theJSONFormRoundTrips() throws {
        var table = ApprovalTable()
        table.record(
            Self.verdict(.approved, file: Self.file), entitlement: try Entitlement("webcredentials:example.com"),
            app: Self.app, at: Self.time)
        let json = table.json()
        #expect(try ApprovalTable(json: json) == table)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains(#""checked" : "2027-01-15T08:00:00Z""#), "\(text)")
        #expect(text.contains(#""entitlement" : "webcredentials:example.com""#))
    }

    @Test(arguments: [
        "", "[]", #"{"version": 2, "entries": [], "files": {}}"#,
        #"{"version": 1, "entries": [{"entitlement": "nope", "app": "ABCDE12345.a", "state": "approved", "#
            + #""reason": "", "checked": "2027-01-15T08:00:00Z", "url": ""}], "files": {}}"#,
        #"{"version": 1, "entries": [{"entitlement": "webcredentials:a.com", "app": "x", "state": "approved", "#
            + #""reason": "", "checked": "2027-01-15T08:00:00Z", "url": ""}], "files": {}}"#,
        #"{"version": 1, "entries": [{"entitlement": "webcredentials:a.com", "app": "ABCDE12345.a", "#
            + #""state": "maybe", "reason": "", "checked": "2027-01-15T08:00:00Z", "url": ""}], "files": {}}"#,
        #"{"version": 1, "entries": [], "files": {"a.com": "not base64!"}}"#,
    ])
    func aDamagedTableIsRefused(text: String) {
        #expect(throws: ApprovalTableError(.malformedTable, "")) { try ApprovalTable(json: Array(text.utf8)) }
    }
}
