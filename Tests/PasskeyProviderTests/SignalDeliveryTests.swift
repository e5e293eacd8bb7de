import CTAP2
import Crypto
import Foundation
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
import TestSupport
import Testing
import WebAuthnClient

/// Signals applied to a store (`passkey client signal`), and the store's side of an automatic passkey upgrade.
struct SignalDeliveryTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let unlocked = ["PASSKEY_PASSPHRASE": "pw"]

    static func credential(_ id: UInt8, user: String, rp: String = "example.com", discoverable: Bool = true)
        -> StoredCredential
    {
        StoredCredential(
            id: [UInt8](repeating: id, count: 16), relyingPartyID: rp, userHandle: Array(user.utf8), userName: user,
            userDisplayName: user.capitalized, privateKey: P256.Signing.PrivateKey(compactRepresentable: false),
            isDiscoverable: discoverable, backupEligible: false, backupState: false,
            creationDate: Date(timeIntervalSince1970: 1_700_000_000))
    }

    /// The store's rows as (ID byte, hidden?, user name), in ID order.
    static func rows(_ directory: TemporaryDirectory) throws -> [String] {
        let store = try SQLiteCredentialStore.open(at: directory.url("passkeys.sqlite"), passphrase: "pw")
        defer { store.close() }
        return try store.allCredentials().sorted { $0.id.lexicographicallyPrecedes($1.id) }.map {
            "\($0.id[0]) \($0.hiddenDate == nil ? "shown" : "hidden") \($0.userName ?? "-")"
        }
    }

    static func deliver(_ directory: TemporaryDirectory, _ signal: CredentialSignal) async throws -> [SignalAction] {
        try await PasskeyCatalogTests.catalog(directory, environment: unlocked, person: ScriptedPerson())
            .deliver(signal, now: now)
    }

    @Test func anUnknownCredentialIsHiddenAndNothingElseMoves() async throws {
        let directory = try TemporaryDirectory()
        try PasskeyCatalogTests.populate(
            directory,
            [
                Self.credential(1, user: "alice"), Self.credential(2, user: "bob"),
                Self.credential(3, user: "alice", rp: "other.com"),
            ])
        let actions = try await Self.deliver(
            directory, .unknownCredential(rpID: "example.com", credentialID: [UInt8](repeating: 1, count: 16)))
        #expect(actions == [.hide(credentialID: [UInt8](repeating: 1, count: 16))])
        #expect(try Self.rows(directory) == ["1 hidden alice", "2 shown bob", "3 shown alice"])
        // The same ID under another relying party's name touches nothing.
        #expect(
            try await Self.deliver(
                directory, .unknownCredential(rpID: "other.com", credentialID: [UInt8](repeating: 2, count: 16))
            ).isEmpty)
    }

    @Test func aSignalForCredentialsThisStoreDoesNotHoldChangesNothing() async throws {
        let directory = try TemporaryDirectory()
        try PasskeyCatalogTests.populate(directory, [Self.credential(1, user: "alice")])
        let file = directory.url("passkeys.sqlite")
        let before = (try Self.rows(directory), PasskeyCatalogTests.bytes(file))
        for signal: CredentialSignal in [
            .unknownCredential(rpID: "example.com", credentialID: [9, 9, 9]),
            .allAcceptedCredentials(rpID: "example.com", userHandle: Array("carol".utf8), credentialIDs: []),
            .currentUserDetails(rpID: "example.com", userHandle: Array("carol".utf8), name: "c", displayName: "C"),
        ] {
            #expect(try await Self.deliver(directory, signal).isEmpty)
        }
        #expect(try Self.rows(directory) == before.0)
        #expect(PasskeyCatalogTests.bytes(file) == before.1)
    }

    @Test func acceptedCredentialsHideTheRestAndShowAgainWhatTheyList() async throws {
        let directory = try TemporaryDirectory()
        try PasskeyCatalogTests.populate(
            directory,
            [
                Self.credential(1, user: "alice"), Self.credential(2, user: "alice", discoverable: false),
                Self.credential(3, user: "bob"),
            ])
        _ = try await Self.deliver(
            directory, .unknownCredential(rpID: "example.com", credentialID: [UInt8](repeating: 1, count: 16)))
        let actions = try await Self.deliver(
            directory,
            .allAcceptedCredentials(
                rpID: "example.com", userHandle: Array("alice".utf8), credentialIDs: [[UInt8](repeating: 1, count: 16)])
        )
        #expect(
            Set(actions) == [
                .unhide(credentialID: [UInt8](repeating: 1, count: 16)),
                .hide(credentialID: [UInt8](repeating: 2, count: 16)),
            ])
        #expect(try Self.rows(directory) == ["1 shown alice", "2 hidden alice", "3 shown bob"])
    }

    @Test func currentDetailsRenameTheUsersPasskeysAndKeepThemUsable() async throws {
        let directory = try TemporaryDirectory()
        try PasskeyCatalogTests.populate(
            directory, [Self.credential(1, user: "alice"), Self.credential(2, user: "bob")])
        let long = String(repeating: "é", count: 40)  // 80 bytes: cut to 64, on a character boundary
        _ = try await Self.deliver(
            directory,
            .currentUserDetails(
                rpID: "example.com", userHandle: Array("alice".utf8), name: "alice.new", displayName: long))
        #expect(try Self.rows(directory) == ["1 shown alice.new", "2 shown bob"])
        let store = try SQLiteCredentialStore.open(at: directory.url("passkeys.sqlite"), passphrase: "pw")
        defer { store.close() }
        let renamed = try #require(try store.credential(id: [UInt8](repeating: 1, count: 16)))
        #expect(renamed.userDisplayName == String(repeating: "é", count: 32))
    }

    @Test func unhideBringsBackAHiddenPasskeyAndListingsFollow() async throws {
        let directory = try TemporaryDirectory()
        try PasskeyCatalogTests.populate(
            directory, [Self.credential(1, user: "alice"), Self.credential(2, user: "bob")])
        _ = try await Self.deliver(
            directory, .unknownCredential(rpID: "example.com", credentialID: [UInt8](repeating: 1, count: 16)))
        let catalog = PasskeyCatalogTests.catalog(directory, environment: Self.unlocked, person: ScriptedPerson())
        let shown = try await catalog.listing(relyingParty: nil, verify: false, notes: false, hidden: false)
        #expect(shown.identities.compactMap(\.userName) == ["bob"])
        let hidden = try await catalog.listing(relyingParty: "example.com", verify: true, notes: false, hidden: true)
        #expect(hidden.entries?.count == 1)
        #expect(try await catalog.unhide(candidates: [[UInt8](repeating: 1, count: 16)], text: "AQ").hiddenDate == nil)
        #expect(try Self.rows(directory) == ["1 shown alice", "2 shown bob"])
    }

    @Test func anUpgradeIsAllowedOnlyJustAfterAFillAndOnlyOnce() async throws {
        let directory = try TemporaryDirectory()
        try PasskeyCatalogTests.populate(directory, [Self.credential(1, user: "bob")])
        let file = directory.url("passkeys.sqlite")
        let store = try SQLiteCredentialStore.open(at: file, passphrase: "pw")
        let service = try #require(PasswordService("login.example.com"))
        try store.savePassword("correct horse battery", userName: "alice", service: service)
        try store.savePassword("correct horse battery", userName: "bob", service: service)
        let logins = try store.passwords().map(\.login)
        for login in logins { try store.recordPasswordUse(login, filledAt: Self.now) }
        store.close()

        let access = StoreAccess(
            files: PasskeyFiles(store: file), interface: ScriptedPerson(), environment: Self.unlocked, canAsk: false)
        let computer = ThisComputer(access: access, approval: ApprovalMode(yes: false, environment: [:]))
        let oneMinuteLater = Self.now.addingTimeInterval(60)
        #expect(
            await computer.allowsConditionalCreation(
                relyingPartyID: "example.com", userName: "alice", now: oneMinuteLater))
        // bob has a passkey here already; carol's password was never filled; a fill six minutes ago is too old.
        #expect(
            !(await computer.allowsConditionalCreation(
                relyingPartyID: "example.com", userName: "bob", now: oneMinuteLater)))
        #expect(
            !(await computer.allowsConditionalCreation(
                relyingPartyID: "example.com", userName: "carol", now: oneMinuteLater)))
        #expect(
            !(await computer.allowsConditionalCreation(
                relyingPartyID: "example.com", userName: "alice", now: Self.now.addingTimeInterval(360))))
        #expect(
            !(await computer.allowsConditionalCreation(
                relyingPartyID: "other.com", userName: "alice", now: oneMinuteLater)))

        // A store that would have to ask for its passphrase allows nothing: an upgrade shows no dialog.
        let locked = ThisComputer(
            access: StoreAccess(
                files: PasskeyFiles(store: file), interface: ScriptedPerson(), environment: [:], canAsk: true),
            approval: ApprovalMode(yes: false, environment: [:]))
        #expect(
            !(await locked.allowsConditionalCreation(
                relyingPartyID: "example.com", userName: "alice", now: oneMinuteLater)))
    }

    /// The grace period ends at the next unlock: the passkey goes, and the person is told how many went.
    @Test func hiddenPasskeysGoAtTheFirstUnlockAfterTheirGracePeriod() async throws {
        let directory = try TemporaryDirectory()
        try PasskeyCatalogTests.populate(
            directory, [Self.credential(1, user: "alice"), Self.credential(2, user: "bob")])
        let file = directory.url("passkeys.sqlite")
        let store = try SQLiteCredentialStore.open(at: file, passphrase: "pw")
        try store.setHidden(
            Date().addingTimeInterval(-SQLiteCredentialStore.hiddenGracePeriod - 60),
            credentialIDs: [[UInt8](repeating: 1, count: 16)])
        try store.setHidden(Date().addingTimeInterval(-86_400), credentialIDs: [[UInt8](repeating: 2, count: 16)])
        store.close()

        let person = ScriptedPerson()
        let access = StoreAccess(
            files: PasskeyFiles(store: file), interface: person, environment: Self.unlocked, canAsk: false)
        try await access.open(create: false).close()
        let reported = person.events.compactMap { event -> String? in
            guard case .hiddenPasskeysDeleted(let count, let days) = event else { return nil }
            return "\(count) after \(days) days"
        }
        #expect(reported == ["1 after 30 days"])
        #expect(try Self.rows(directory) == ["2 hidden bob"])
        // Nothing more is due: the next unlock reports nothing.
        try await access.open(create: false).close()
        #expect(person.events.count { if case .hiddenPasskeysDeleted = $0 { true } else { false } } == 1)
    }
}
