import Foundation
import JSON
import Testing

@testable import PasskeyStoreIO
@testable import TerminalIO

/// What `passkey password list` shows, from the index and from the store's rows.
struct PasswordListingTests {
    static let saved = Date(timeIntervalSince1970: 1_795_000_000)
    static let changed = Date(timeIntervalSince1970: 1_795_000_600)

    static func login(_ service: String, _ user: String, modified: Date = saved, rank: Int = 0) throws -> PasswordEntry
    {
        let login = SavedLogin(
            id: Array(service.utf8.prefix(4)), service: try #require(PasswordService(service)), userName: user,
            creationDate: saved, modificationDate: modified, rank: rank)
        return .intact(PasswordCredential(login: login, password: "never shown"))
    }

    @Test func theStoresRowsShowWhenSavedAndChangedAndDamagedOnesSayHowToRemoveThem() throws {
        let rows = PasswordListing.rows([
            try Self.login("example.com", "alice", modified: Self.changed, rank: 3),
            try Self.login("https://shop.example", "bob\u{202E}"),
            .damaged(
                DamagedLogin(.password, id: [9], service: "bad.example", userName: nil, reason: .failsIntegrityCheck)),
        ])
        #expect(
            PasswordListing.lines(rows, service: nil) == [
                "example.com  \"alice\"", "    saved 2026-11-18T11:06:40Z, changed 2026-11-18T11:16:40Z, rank 3",
                "https://shop.example  \"bob\\u{202E}\"", "    saved 2026-11-18T11:06:40Z, rank 0",
                "DAMAGED  bad.example  \"\"",
                "    fails its integrity check; not used; remove it with `passkey password delete`",
            ])
        let json = PasswordListing.json(rows)
        guard case .array(let objects) = json else {
            Issue.record("the listing's JSON is not an array")
            return
        }
        #expect(
            objects.map { $0["service"] } == [
                .string("example.com"), .string("https://shop.example"), .string("bad.example"),
            ])
        #expect(objects[0]["modified"] == .string("2026-11-18T11:16:40Z"))
        #expect(objects[0]["rank"] == .number(3))
        #expect(objects[2]["damaged"] == .bool(true))
        #expect(objects[2]["created"] == nil)
        #expect(!String(decoding: json.serialized(), as: UTF8.self).contains("never shown"))
    }

    @Test func theIndexsLoginsAreFilteredByService() throws {
        let identities = [
            CredentialIdentity(
                kind: .password, serviceIdentifier: "example.com", userName: "alice", credentialID: [1], userHandle: [],
                isDiscoverable: true, creationDate: Self.saved, rank: 2),
            CredentialIdentity(
                kind: .password, serviceIdentifier: "other.example", userName: "carol", credentialID: [2],
                userHandle: [], isDiscoverable: true, creationDate: Self.saved),
            CredentialIdentity(
                kind: .password, serviceIdentifier: "not a service", userName: "x", credentialID: [3], userHandle: [],
                isDiscoverable: true, creationDate: Self.saved),
        ]
        #expect(PasswordListing.rows(identities, service: nil).map(\.user) == ["alice", "carol"])
        let wanted = try #require(PasswordService("example.com"))
        let rows = PasswordListing.rows(identities, service: wanted)
        #expect(rows.map(\.user) == ["alice"])
        #expect(rows.first?.modified == nil)
        #expect(PasswordListing.lines([], service: wanted) == ["No saved passwords for example.com."])
        #expect(PasswordListing.lines([], service: nil) == ["No saved passwords."])
    }
}
