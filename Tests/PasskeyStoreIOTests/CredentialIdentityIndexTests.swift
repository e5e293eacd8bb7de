import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The credential identity index beside the store: kept up to date by every change, rebuilt on unlock, readable
/// without the passphrase, owner-only, and free of key material.
struct CredentialIdentityIndexTests {
    static let passphrase = "correct horse"

    private func index(_ scratch: Scratch) throws(CredentialIdentityIndexError) -> CredentialIdentityIndex {
        try CredentialIdentityIndex.read(forStore: scratch.url())
    }

    private func indexFile(_ scratch: Scratch) -> URL {
        CredentialIdentityIndex.url(forStore: scratch.url())
    }

    private func journalFile(_ scratch: Scratch) -> URL {
        URL(fileURLWithPath: indexFile(scratch).path.replacingOccurrences(of: ".json", with: ".journal"))
    }

    @Test func changesAreAppendedToAJournalAndFoldedIntoTheFileOnClose() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let written = try Data(contentsOf: indexFile(scratch))
        let alice = makeCredential(userHandle: [1], userName: "alice")
        let bob = makeCredential(userHandle: [2], userName: "bob")
        try store.save(alice)
        try store.save(bob)
        #expect(try store.deleteCredential(id: bob.id))
        // The index file is as it was; the journal holds the three changes, and a reader sees them.
        #expect(try Data(contentsOf: indexFile(scratch)) == written)
        let journal = try String(contentsOf: journalFile(scratch), encoding: .utf8)
        #expect(journal.split(separator: "\n").count == 3)
        var info = stat()
        #expect(stat(journalFile(scratch).path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try index(scratch).identities.map(\.credentialID) == [alice.id])
        store.close()
        #expect(!FileManager.default.fileExists(atPath: journalFile(scratch).path))
        #expect(try index(scratch).identities.map(\.credentialID) == [alice.id])
    }

    @Test func aLongJournalIsWrittenOutAsTheIndexFile() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        for number in 0..<(CredentialIdentityIndex.maximumJournalEntries + 1) {
            try store.save(
                makeCredential(userHandle: [UInt8(number & 0xFF), UInt8(number >> 8)], userName: "u\(number)"))
        }
        let journal = (try? String(contentsOf: journalFile(scratch), encoding: .utf8)) ?? ""
        #expect(
            journal.split(separator: "\n").count < CredentialIdentityIndex.maximumJournalEntries,
            "the journal was folded in")
        #expect(try index(scratch).identities.count == CredentialIdentityIndex.maximumJournalEntries + 1)
    }

    @Test func aTornLastLineIsIgnoredAndAGarbledOneIsDamage() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let alice = makeCredential(userHandle: [1], userName: "alice")
        try store.save(alice)
        let handle = try FileHandle(forWritingTo: journalFile(scratch))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"remove":"AQ"#.utf8))  // a write cut short: no newline
        try handle.close()
        #expect(try index(scratch).identities.map(\.credentialID) == [alice.id])

        try Data("not json\n".utf8).write(to: journalFile(scratch))
        do {
            _ = try index(scratch)
            Issue.record("a garbled journal was read")
        } catch {
            #expect(error.code == .damaged && "\(error)".contains("journal line 1"))
        }
        // Another store on the same file (another process) sees the damage, and its unlock rebuilds the index.
        let other = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase)
        #expect(try index(scratch).identities.map(\.credentialID) == [alice.id])
        #expect(!FileManager.default.fileExists(atPath: journalFile(scratch).path))
        other.close()
        store.close()
    }

    @Test func twoStoresOnOneFileKeepOneIndex() throws {
        let scratch = try Scratch()
        let first = try scratch.makeStore()
        let second = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase)
        let a = makeCredential(userHandle: [1], userName: "a")
        let b = makeCredential(userHandle: [2], userName: "b")
        let c = makeCredential(userHandle: [3], userName: "c")
        try first.save(a)
        try second.save(b)
        try first.save(c)
        #expect(Set(try index(scratch).identities.map(\.credentialID)) == [a.id, b.id, c.id])
        #expect(try second.deleteCredential(id: a.id))
        second.close()
        try first.save(makeCredential(userHandle: [4], userName: "d"))
        #expect(Set(try index(scratch).identities.compactMap(\.userName)) == ["b", "c", "d"])
        first.close()
    }

    @Test func theIndexIsNamedAfterTheStoreBesideIt() {
        let store = URL(fileURLWithPath: "/data/passkey/passkeys.sqlite")
        #expect(CredentialIdentityIndex.url(forStore: store).path == "/data/passkey/passkeys.index.json")
        #expect(
            CredentialIdentityIndex.url(forStore: URL(fileURLWithPath: "/data/work")).path == "/data/work.index.json")
    }

    @Test func madeRenamedUsedAndDeletedPasskeysUpdateTheIndex() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        #expect(try index(scratch).identities.isEmpty, "a new store has an empty index")

        let base = Date(timeIntervalSince1970: 1_700_000_000)
        let alice = makeCredential(userHandle: [1], date: base, userName: "alice")
        let bob = makeCredential(relyingParty: "other.example", userHandle: [2], date: base + 60, userName: "bob")
        try store.save(alice)
        try store.save(bob)
        var listed = try index(scratch)
        #expect(listed.identities.map(\.credentialID) == [bob.id, alice.id], "newest first")
        let first = try #require(listed.identity(credentialID: alice.id))
        #expect(first.serviceIdentifier == "example.com")
        #expect(first.userName == "alice" && first.userDisplayName == "Alice")
        #expect(first.userHandle == [1] && first.isDiscoverable && first.rank == 0 && first.lastUsedDate == nil)
        #expect(first.creationDate == base)
        #expect(listed.identities(forRelyingParty: "other.example").map(\.credentialID) == [bob.id])
        #expect(listed.identities(forRelyingParty: "https://other.example/login").map(\.credentialID) == [bob.id])

        // Renamed.
        #expect(try store.updateUser(credentialID: alice.id, userName: "alice2", userDisplayName: nil))
        listed = try index(scratch)
        #expect(listed.identity(credentialID: alice.id)?.userName == "alice2")
        #expect(listed.identity(credentialID: alice.id)?.userDisplayName == nil)

        // Used, through the authenticator's getAssertion: the last use sorts alice first.
        let usedAt = base + 3600
        let authenticator = Authenticator(
            environment: AuthenticatorEnvironment(
                store: store, userInteraction: UnattendedApproval(), currentDate: { usedAt }))
        let status = await authenticator.handle(
            CTAPClient.getAssertionMessage(
                relyingPartyID: "example.com", clientDataHash: [UInt8](repeating: 0xCD, count: 32),
                allowList: [alice.id], userVerification: false)
        ).first
        #expect(status == 0)
        listed = try index(scratch)
        #expect(listed.identity(credentialID: alice.id)?.lastUsedDate == usedAt)
        #expect(listed.identities.map(\.credentialID) == [alice.id, bob.id], "most recently used first")

        // A discoverable passkey for the same account replaces the old one in the index too.
        let aliceAgain = makeCredential(userHandle: [1], date: base + 7200, userName: "alice")
        try store.save(aliceAgain)
        listed = try index(scratch)
        #expect(listed.identities.map(\.credentialID) == [aliceAgain.id, bob.id])

        // Deleted.
        #expect(try store.deleteCredential(id: bob.id))
        #expect(try index(scratch).identities.map(\.credentialID) == [aliceAgain.id])
        try store.deleteAll()
        #expect(try index(scratch).identities.isEmpty)
    }

    @Test func rankComesFirstThenTheMostRecentUse() throws {
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        func identity(_ id: UInt8, created: Date, rank: Int = 0, used: Date? = nil) -> CredentialIdentity {
            CredentialIdentity(
                serviceIdentifier: "example.com", credentialID: [id], userHandle: [id], isDiscoverable: true,
                creationDate: created, rank: rank, lastUsedDate: used)
        }
        let index = CredentialIdentityIndex(identities: [
            identity(1, created: base),
            identity(2, created: base + 10),
            identity(3, created: base - 10, used: base + 20),
            identity(4, created: base - 20, rank: 1),
        ])
        #expect(index.identities.map(\.credentialID) == [[4], [3], [2], [1]])
    }

    @Test func deletingTheIndexThenUnlockingRebuildsItIdentically() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        try store.save(makeCredential(userHandle: [1], userName: "alice"))
        try store.save(makeCredential(relyingParty: "b.example", userHandle: [2], discoverable: false))
        let credential = makeCredential(userHandle: [3], userName: nil)
        try store.save(credential)
        #expect(try store.updateUser(credentialID: credential.id, userName: "carol", userDisplayName: "Carol"))
        store.close()
        let before = try index(scratch)
        let bytes = try Data(contentsOf: indexFile(scratch))
        #expect(before.identities.count == 3)

        try FileManager.default.removeItem(at: indexFile(scratch))
        #expect(throws: CredentialIdentityIndexError.self) { try index(scratch) }
        do {
            _ = try index(scratch)
        } catch {
            #expect(error.code == .missing)
            #expect("\(error)".contains("unlock the store once to rebuild it"))
        }
        try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase).close()
        #expect(try index(scratch) == before)
        #expect(try Data(contentsOf: indexFile(scratch)) == bytes, "byte for byte")
    }

    @Test func unlockingKeepsTheRanksAndLastUsesOfAReadableIndex() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credential = makeCredential()
        try store.save(credential)
        let used = Date(timeIntervalSince1970: 1_800_000_000)
        store.recordUse(ofCredential: credential.id, at: used)
        store.close()
        try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase).close()
        #expect(try index(scratch).identity(credentialID: credential.id)?.lastUsedDate == used)
    }

    static let damagedFiles: [(name: String, contents: String)] = [
        ("garbage", "\u{0}\u{1}not json at all"),
        ("empty", ""),
        ("an array", "[]"),
        ("another format", #"{"format": "something-else", "version": 1, "identities": []}"#),
        ("a newer version", #"{"format": "passkey-credential-identity-index", "version": 2, "identities": []}"#),
        ("identities not a list", #"{"format": "passkey-credential-identity-index", "version": 1, "identities": 3}"#),
        ("a string for a bool", identityJSON(discoverable: #""yes""#)),
        ("a number for a bool", identityJSON(discoverable: "1")),
        ("a fraction for a date", identityJSON(created: "1.5")),
        ("a string for a date", identityJSON(created: #""2026-01-01""#)),
        ("a credential ID that is not base64url", identityJSON(credentialID: #""not base64url!""#)),
        ("an empty credential ID", identityJSON(credentialID: #""""#)),
        ("a number for a name", identityJSON(userName: "7")),
    ]

    static func identityJSON(
        discoverable: String = "true", created: String = "1700000000000", credentialID: String = #""AQID""#,
        userName: String = #""alice""#
    ) -> String {
        """
        {"format": "passkey-credential-identity-index", "version": 1, "identities": [
          {"serviceIdentifier": "example.com", "userName": \(userName), "credentialID": \(credentialID),
           "userHandle": "AQ", "discoverable": \(discoverable), "created": \(created), "rank": 0}]}
        """
    }

    @Test func aWellFormedFileReads() throws {
        let scratch = try Scratch()
        try Data(Self.identityJSON().utf8).write(to: indexFile(scratch))
        let identity = try #require(try index(scratch).identities.first)
        #expect(identity.credentialID == [1, 2, 3] && identity.userName == "alice" && identity.lastUsedDate == nil)
    }

    @Test(arguments: damagedFiles)
    func aDamagedIndexIsAClearErrorAndUnlockingRebuildsIt(name: String, contents: String) throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credential = makeCredential()
        try store.save(credential)
        store.close()
        try Data(contents.utf8).write(to: indexFile(scratch))
        do {
            _ = try index(scratch)
            Issue.record("\(name) was read as an index")
        } catch {
            #expect(error.code == .damaged, "\(name)")
            #expect("\(error)".contains("missing or damaged"))
        }
        try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase).close()
        #expect(try index(scratch).identities.map(\.credentialID) == [credential.id], "\(name)")
    }

    @Test func aHugeIndexIsRefusedWithoutReadingItAll() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        store.close()
        let path = indexFile(scratch).path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(descriptor >= 0)
        #expect(ftruncate(descriptor, off_t(CredentialIdentityIndex.maximumFileSize + 1)) == 0)
        close(descriptor)
        do {
            _ = try index(scratch)
            Issue.record("a file past the limit was read")
        } catch {
            #expect(error.code == .damaged)
            #expect(error.reason.contains("larger than 16 MiB"))
        }
        try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase).close()
        #expect(try index(scratch).identities.isEmpty)
    }

    @Test func theIndexIsAlwaysOwnerOnly() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        var info = stat()
        #expect(stat(indexFile(scratch).path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        // Updated over a file someone made readable: 0600 again.
        #expect(chmod(indexFile(scratch).path, 0o644) == 0)
        try store.save(makeCredential())
        store.close()
        #expect(stat(indexFile(scratch).path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        // Rebuilt over a file someone made readable: 0600 again.
        #expect(chmod(indexFile(scratch).path, 0o644) == 0)
        try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase).close()
        #expect(stat(indexFile(scratch).path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        // No temporary files are left beside it.
        let names = try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path)
        #expect(!names.contains { $0.hasSuffix(".tmp") }, "\(names)")
    }

    @Test func theIndexHoldsNoKeyMaterial() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credentials = (0..<4).map { makeCredential(userHandle: [UInt8($0)]) }
        for credential in credentials { try store.save(credential) }
        store.close()
        let sealed = try await python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            for (key,) in db.execute("SELECT sealed_private_key FROM credentials"):
                print(key.hex())
            """,
            scratch.url().path
        ).split(separator: "\n").map { [UInt8](hexString: String($0)) }
        #expect(sealed.count == credentials.count)
        let file = [UInt8](try Data(contentsOf: indexFile(scratch)))
        let text = String(decoding: file, as: UTF8.self)
        for credential in credentials {
            let raw = [UInt8](credential.privateKey.rawRepresentation)
            #expect(!file.contains(raw), "a raw private key")
            #expect(!text.contains(raw.base64URLString), "a private key in base64url")
            #expect(!text.contains(Data(raw).base64EncodedString()), "a private key in base64")
            #expect(!text.lowercased().contains(hex(raw)), "a private key in hex")
        }
        for blob in sealed {
            #expect(!file.contains(blob), "a sealed key")
            #expect(!text.contains(blob.base64URLString), "a sealed key in base64url")
            #expect(!text.contains(hex(blob)), "a sealed key in hex")
        }
        #expect(!text.contains("privateKey") && !text.contains("sealed"))
    }
}

extension Array where Element == UInt8 {
    fileprivate init(hexString: String) {
        var bytes: [UInt8] = []
        var index = hexString.startIndex
        while let next = hexString.index(index, offsetBy: 2, limitedBy: hexString.endIndex), next > index {
            bytes.append(UInt8(hexString[index..<next], radix: 16) ?? 0)
            index = next
        }
        self = bytes
    }

    fileprivate var base64URLString: String {
        Data(self).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    fileprivate func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { self[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
