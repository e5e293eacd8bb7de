import Foundation
import PasskeyStore
import Testing

/// The `SecRequestSharedWebCredential` / `SecAddSharedWebCredential` rules over an in-memory approval table, and the
/// approval file's format.
struct SharedWebCredentialsTests {
    static let app = "ABCDE12345.com.example.app"
    static let approvals = InMemoryDomainApprovals([
        app: ["webcredentials": ["example.com", "shop.example:8443"], "applinks": ["links.example"]],
        "ZZZZZ99999.com.other.app": ["webcredentials": ["other.example"]],
    ])

    static func login(_ service: String, _ user: String, rank: Int = 1) throws -> SavedLogin {
        SavedLogin(
            id: Array(repeating: UInt8(user.utf8.count), count: 16), service: try #require(PasswordService(service)),
            userName: user, creationDate: Date(timeIntervalSince1970: 1_700_000_000),
            modificationDate: Date(timeIntervalSince1970: 1_700_000_000), rank: rank)
    }

    static func saved() throws -> [SavedLogin] {
        [
            try login("example.com", "alice"), try login("https://example.com", "bob", rank: 2),
            try login("https://shop.example:8443", "carol"), try login("shop.example", "dave"),
            try login("other.example", "erin"), try login("links.example", "frank"),
            try login(app, "gina"),
        ]
    }

    @Test(arguments: [
        // No domain: every domain that approved the app for webcredentials.
        (nil as String?, ["bob", "alice", "carol"]),
        ("example.com", ["bob", "alice"]),
        ("EXAMPLE.com", ["bob", "alice"]),
        ("shop.example:8443", ["carol"]),
        // Approved for applinks only, approved for another app, a port that was not approved, never heard of:
        // nothing, as for a domain with nothing saved.
        ("links.example", []),
        ("other.example", []),
        ("shop.example", []),
        ("unknown.example", []),
    ])
    func anAppIsOfferedTheLoginsOfApprovedDomainsOnly(domain: String?, users: [String]) throws {
        let offered = SharedWebCredentials.offered(
            to: Self.app, domain: domain, approvals: Self.approvals, logins: try Self.saved())
        #expect(offered.map(\.userName) == users)
    }

    @Test func notApprovedAndNothingSavedAreTheSameAnswer() throws {
        let empty = InMemoryDomainApprovals([Self.app: ["webcredentials": ["empty.example"]]])
        let notApproved = SharedWebCredentials.offered(
            to: Self.app, domain: "example.com", approvals: empty, logins: try Self.saved())
        let nothingSaved = SharedWebCredentials.offered(
            to: Self.app, domain: "empty.example", approvals: empty, logins: try Self.saved())
        #expect(notApproved.isEmpty && nothingSaved.isEmpty)
    }

    @Test func addingIsSilentWhenNewAndChangingOrDeletingAsks() throws {
        let existing = PasswordCredential(login: try Self.login("example.com", "alice"), password: "old-Password-1")
        func decide(_ domain: String, _ existing: PasswordCredential?, _ password: String?)
            -> SharedWebCredentials.AddDecision
        {
            SharedWebCredentials.decideAdd(
                app: Self.app, domain: domain, approvals: Self.approvals, existing: existing, password: password)
        }
        #expect(decide("example.com", nil, "new-Password-2") == .saveSilently)
        #expect(decide("example.com", existing, "old-Password-1") == .unchanged)
        #expect(decide("example.com", existing, "old-Password-") == .askToChange)
        #expect(decide("example.com", existing, "old-Password-12") == .askToChange)
        #expect(decide("example.com", existing, nil) == .askToDelete)
        #expect(decide("example.com", nil, nil) == .nothingToDelete)
        #expect(decide("other.example", nil, "new-Password-2") == .notApproved)
        #expect(decide("other.example", existing, nil) == .notApproved)
    }

    @Test func theApprovalFileIsReadStrictly() throws {
        let scratch = try Scratch()
        let store = scratch.url("passkeys.sqlite")
        let url = DomainApprovalsFile.url(forStore: store)
        #expect(url.lastPathComponent == "passkeys.domains.json")
        // No file: nothing is approved.
        #expect(
            try DomainApprovalsFile(contentsOf: url).approvedDomains(app: Self.app, service: "webcredentials") == [])
        let good = """
            {"format": "passkey-domain-approvals", "version": 1, "approvals": [
              {"service": "webcredentials", "domain": "Example.com", "app": "\(Self.app)", "state": "approved",
               "checked": 1764000000000, "reason": "listed in webcredentials.apps", "extra": true},
              {"service": "webcredentials", "domain": "denied.example", "app": "\(Self.app)", "state": "denied"},
              {"service": "webcredentials", "domain": "later.example:8443", "app": "\(Self.app)", "state": "pending"},
              {"service": "applinks", "domain": "links.example", "app": "\(Self.app)", "state": "approved"}
            ]}
            """
        try good.write(to: url, atomically: true, encoding: .utf8)
        let table = try DomainApprovalsFile(contentsOf: url)
        #expect(table.approvedDomains(app: Self.app, service: "webcredentials") == ["example.com"])
        #expect(table.approvedDomains(app: Self.app, service: "applinks") == ["links.example"])
        #expect(table.approvedDomains(app: "ZZZZZ99999.x", service: "webcredentials") == [])

        for bad in [
            "not json", "[]", #"{"format": "other", "version": 1, "approvals": []}"#,
            #"{"format": "passkey-domain-approvals", "version": 2, "approvals": []}"#,
            #"{"format": "passkey-domain-approvals", "version": 1, "approvals": [{"service": "webcredentials"}]}"#,
            #"{"format": "passkey-domain-approvals", "version": 1, "approvals": [{"service": "webcredentials", "domain": "a b", "app": "x", "state": "approved"}]}"#,
            #"{"format": "passkey-domain-approvals", "version": 1, "approvals": [{"service": "webcredentials", "domain": "a.example", "app": "x", "state": "maybe"}]}"#,
        ] {
            #expect(throws: DomainApprovalsError.self, "\(bad)") {
                try DomainApprovalsFile.decode(Array(bad.utf8), path: "t")
            }
        }
    }
}
