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
        try table.record(Self.verdict(.approved, file: Self.file), entitlement: web, app: Self.app, at: Self.time)
        try table.record(Self.verdict(.denied), entitlement: web, app: Self.other, at: Self.time)
        try table.record(Self.verdict(.pending), entitlement: links, app: Self.app, at: Self.time)
        #expect(table.entries.count == 3)
        #expect(table.entry(web, app: Self.app)?.state == .approved)
        #expect(table.entry(web, app: Self.other)?.state == .denied)
        #expect(table.entries.map(\.entitlement) == [links.description, web.description, web.description])
        // The denial without a file dropped the file the approval kept: the site no longer serves one.
        #expect(table.lastFile(domain: "example.com") == nil)
        try table.record(Self.verdict(.approved, file: Self.file), entitlement: web, app: Self.other, at: Self.time)
        #expect(table.entry(web, app: Self.other)?.state == .approved)
        #expect(table.entries.count == 3)
        #expect(table.lastFile(domain: "example.com") == Self.file)
        // A pending check keeps the file.
        try table.record(Self.verdict(.pending), entitlement: web, app: Self.other, at: Self.time)
        #expect(table.lastFile(domain: "example.com") == Self.file)
    }

    /// Issue 24: `domains check` against a closed port or an untrusted certificate replaced an `approved` row with
    /// `pending`. A pending check now leaves an approval younger than a week as it is; a denial replaces it, and so
    /// does a pending check once the approval is a week old.
    @Test func anApprovalStandsThroughPendingChecksForAWeek() throws {
        var table = ApprovalTable()
        let web = try Entitlement("webcredentials:example.com")
        try table.record(Self.verdict(.approved, file: Self.file), entitlement: web, app: Self.app, at: Self.time)
        let before = table
        let nearlyAWeek = Self.time.addingTimeInterval(ApprovalTable.approvalStandsThroughPendingChecks - 1)
        #expect(
            try table.record(Self.verdict(.pending), entitlement: web, app: Self.app, at: nearlyAWeek)
                == .approvalStands(since: Self.time))
        #expect(table == before)
        let aWeek = Self.time.addingTimeInterval(ApprovalTable.approvalStandsThroughPendingChecks)
        #expect(try table.record(Self.verdict(.pending), entitlement: web, app: Self.app, at: aWeek) == .recorded)
        #expect(table.entry(web, app: Self.app)?.state == .pending)
        // A denial is an answer from the site: it replaces an approval at once.
        var denied = before
        #expect(try denied.record(Self.verdict(.denied), entitlement: web, app: Self.app, at: Self.time) == .recorded)
        #expect(denied.entry(web, app: Self.app)?.state == .denied)
    }

    @Test func forgettingAnAppRemovesItsEntriesAndFilesNoOneNeeds() throws {
        var table = ApprovalTable()
        let first = try Entitlement("webcredentials:example.com")
        let second = try Entitlement("webcredentials:shop.example:8443")
        try table.record(Self.verdict(.approved, file: Self.file), entitlement: first, app: Self.app, at: Self.time)
        try table.record(Self.verdict(.approved, file: Self.file), entitlement: second, app: Self.app, at: Self.time)
        try table.record(Self.verdict(.approved, file: Self.file), entitlement: first, app: Self.other, at: Self.time)
        let removed = table.forget(app: Self.app)
        #expect(removed.count == 2)
        #expect(table.entries.map(\.app) == [Self.other.description])
        #expect(table.lastFile(domain: "example.com") == Self.file)
        #expect(table.lastFile(domain: "shop.example:8443") == nil)
        #expect(table.forget(app: Self.app).isEmpty)
    }

    /// Issue 23, attack 5: 48 domains serving 128 KiB files made a table larger than its reader's 8 MiB limit, and
    /// then every command that reads it failed. The table now keeps the files of the 32 domains checked last.
    @Test func theFilesOfTheDomainsCheckedLongestAgoAreLetGoPastTheBound() throws {
        var table = ApprovalTable()
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: 128 * 1024)
        for number in 0..<48 {
            let entitlement = try Entitlement("webcredentials:site\(number).example")
            try table.record(
                Self.verdict(.approved, file: big), entitlement: entitlement, app: Self.app,
                at: Self.time + Double(number))
        }
        #expect(table.entries.count == 48, "every entry stays")
        #expect(table.files.count == ApprovalTable.maximumFiles)
        #expect(table.lastFile(domain: "site47.example") == big)
        #expect(table.lastFile(domain: "site16.example") == big)
        #expect(table.lastFile(domain: "site15.example") == nil, "checked longest ago: let go")
        #expect(table.json().count < 8 << 20)
        // A new check of an old domain brings its file back and lets the next oldest go.
        try table.record(
            Self.verdict(.approved, file: big), entitlement: try Entitlement("webcredentials:site0.example"),
            app: Self.app, at: Self.time + 100)
        #expect(table.lastFile(domain: "site0.example") == big)
        #expect(table.lastFile(domain: "site16.example") == nil)
        #expect(try ApprovalTable(json: table.json()) == table)
    }

    /// The bound on the file holds for the largest entries too: a reason quoting long names from a hostile file is
    /// cut, and a full table of such entries and files fits the reader's 8 MiB.
    @Test func aFullTableOfTheLargestEntriesAndFilesFitsTheReader() throws {
        var table = ApprovalTable()
        let long = String(repeating: "n", count: 200_000)
        let verdict = CheckVerdict(
            state: .denied, reason: "it lists \"\(long)\"", url: "https://example.com/" + long, status: 200,
            signer: long, file: [UInt8](repeating: UInt8(ascii: "x"), count: 128 * 1024))
        for number in 0..<ApprovalTable.maximumEntries {
            let entitlement = try Entitlement("webcredentials:site\(number % 64).example")
            try table.record(
                verdict, entitlement: entitlement, app: try AppID("ABCDE12345.com.example.app\(number)"),
                at: Self.time)
        }
        let entry = try #require(table.entries.first)
        #expect(entry.reason.count == ApprovalTable.Entry.maximumTextLength && entry.reason.hasSuffix("…"))
        #expect(entry.url.count == ApprovalTable.Entry.maximumTextLength)
        #expect(entry.signer?.count == ApprovalTable.Entry.maximumTextLength)
        #expect(table.files.count == ApprovalTable.maximumFiles)
        #expect(table.json().count < 8 << 20, "\(table.json().count) bytes")
    }

    @Test func aNewPairBeyondTheMostEntriesIsRefusedAndChangesNothing() throws {
        var table = ApprovalTable()
        let entitlement = try Entitlement("webcredentials:example.com")
        for number in 0..<ApprovalTable.maximumEntries {
            try table.record(
                Self.verdict(.denied), entitlement: entitlement, app: try AppID("ABCDE12345.com.example.app\(number)"),
                at: Self.time)
        }
        let before = table
        let error = #expect(throws: ApprovalTableError.self) {
            try table.record(Self.verdict(.approved), entitlement: entitlement, app: Self.other, at: Self.time)
        }
        #expect(error?.code == .full)
        #expect(error?.description.contains("passkey domains forget APP") == true)
        #expect(table == before)
        // A pair already there is checked again as before.
        try table.record(
            Self.verdict(.approved), entitlement: entitlement, app: try AppID("ABCDE12345.com.example.app7"),
            at: Self.time + 1)
        #expect(table.entries.count == ApprovalTable.maximumEntries)
        // And a file holding more than the bounds is not a table this program wrote.
        var document = try #require(
            try JSONSerialization.jsonObject(with: Data(table.json())) as? [String: Any])
        var entries = try #require(document["entries"] as? [Any])
        entries.append(entries[0])
        document["entries"] = entries
        let tooMany = try JSONSerialization.data(withJSONObject: document)
        #expect(throws: ApprovalTableError(.malformedTable, "")) { try ApprovalTable(json: Array(tooMany)) }
    }

    @Test func theJSONFormRoundTrips() throws {
        var table = ApprovalTable()
        try table.record(
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
