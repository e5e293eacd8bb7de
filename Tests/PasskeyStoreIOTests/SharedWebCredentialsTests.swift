import Foundation
import PasskeyStoreIO
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
}
