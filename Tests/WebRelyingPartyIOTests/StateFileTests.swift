import Crypto
import Foundation
import RelyingParty
import TestSupport
import Testing
import WebAuthn
@testable import WebRelyingPartyIO

/// The state file `passkey rp serve` keeps: a change is one journal line, the file is written whole only when it
/// must be, and whatever is on the disk loads as the state last saved.
struct StateFileTests {
    static let key = COSEKey(publicKey: P256.Signing.PrivateKey().publicKey)

    static func account(_ number: Int, signCount: UInt32 = 0) -> RelyingPartyState.Account {
        RelyingPartyState.Account(
            rpID: "localhost", userName: "user-\(number)", registered: Date(timeIntervalSince1970: 1_800_000_000),
            credential: CredentialRecord(
                id: Array("credential-\(number)".utf8), publicKey: key, signCount: signCount, backupEligible: false,
                backupState: false, uvInitialized: true, userHandle: Array("user-\(number)".utf8),
                aaguid: AAGUID(bytes: [UInt8](repeating: 0, count: 16))!, attestationFormat: "none",
                attestationType: .none, transports: ["internal"]))
    }

    static func lines(_ url: URL) -> Int {
        ((try? Data(contentsOf: url)) ?? Data()).filter { $0 == UInt8(ascii: "\n") }.count
    }

    /// A password sign-up and a rename are one `{"user": …}` line each; replayed, they give the state saved.
    @Test func userRecordsAreJournalLinesToo() throws {
        let directory = try TemporaryDirectory(prefix: "rp-state-tests")
        defer { directory.remove() }
        let url = directory.url("rp-state.json")
        var state = RelyingPartyState()
        state.add(Self.account(0))
        try state.save(to: url)
        let file = RelyingPartyStateFile(url)
        var signedUp = state
        let hash = RelyingPartyState.PasswordHash(
            rounds: 1 << 14, blockSize: 8, parallelism: 1, salt: Array(repeating: 1, count: 16),
            hash: Array(repeating: 2, count: 32))
        signedUp.set(
            RelyingPartyState.User(
                rpID: "localhost", userName: "alice", displayName: nil, userHandle: [9, 9], password: hash))
        try file.save(signedUp, previous: state)
        var renamed = signedUp
        renamed.users[0].displayName = "Alice Liddell"
        try file.save(renamed, previous: signedUp)
        let journal = RelyingPartyState.journalURL(for: url)
        #expect(Self.lines(journal) == 2)
        #expect(String(decoding: try Data(contentsOf: journal), as: UTF8.self).hasPrefix(#"{"user":{"#))
        #expect(try RelyingPartyState.load(from: url) == renamed)
        #expect(try RelyingPartyStateFile(url).load() == renamed)
        #expect(try RelyingPartyState.load(from: url) == renamed)
    }

    @Test func aRegistrationAmongThousandsIsOneJournalLineAndTheFileIsNotRewritten() throws {
        let directory = try TemporaryDirectory(prefix: "rp-state-tests")
        defer { directory.remove() }
        let url = directory.url("rp-state.json")
        var state = RelyingPartyState()
        for number in 0..<3000 { state.add(Self.account(number)) }
        try state.save(to: url)
        let file = RelyingPartyStateFile(url)
        #expect(try file.load() == state)
        let whole = try #require(digest(of: url))

        var next = state
        next.add(Self.account(3000))
        try file.save(next, previous: state)
        var signedIn = next
        signedIn.update(Self.account(7, signCount: 1).credential)
        try file.save(signedIn, previous: next)
        var removed = signedIn
        removed.remove(credentialID: Self.account(11).credential.id, rpID: "localhost")
        try file.save(removed, previous: signedIn)

        #expect(digest(of: url) == whole)
        let journal = RelyingPartyState.journalURL(for: url)
        #expect(Self.lines(journal) == 3)
        #expect((try Data(contentsOf: journal)).count < 2_000)
        let attributes = try FileManager.default.attributesOfItem(atPath: journal.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try RelyingPartyState.load(from: url) == removed)

        // Loading for serving folds the journal into the file.
        #expect(try RelyingPartyStateFile(url).load() == removed)
        #expect(!FileManager.default.fileExists(atPath: journal.path))
        #expect(try RelyingPartyState.load(from: url) == removed)
    }

    @Test func replayingGivesTheSameOrderAndAChangeAlreadyInTheFileReplaysHarmlessly() throws {
        let directory = try TemporaryDirectory(prefix: "rp-state-tests")
        defer { directory.remove() }
        let url = directory.url("rp-state.json")
        let file = RelyingPartyStateFile(url)
        var state = try file.load()
        #expect(state == RelyingPartyState() && !FileManager.default.fileExists(atPath: url.path))
        for number in 0..<5 {
            var next = state
            next.add(Self.account(number))
            try file.save(next, previous: state)
            state = next
        }
        var replaced = state
        replaced.add(Self.account(2, signCount: 9))
        replaced.remove(credentialID: Self.account(0).credential.id, rpID: "localhost")
        try file.save(replaced, previous: state)
        #expect(try RelyingPartyState.load(from: url) == replaced)
        #expect(replaced.accounts.map(\.userName) == ["user-1", "user-2", "user-3", "user-4"])

        // The file written whole while the journal is still there (a crash between the two): the same state.
        let journal = try Data(contentsOf: RelyingPartyState.journalURL(for: url))
        try replaced.save(to: url)
        try journal.write(to: RelyingPartyState.journalURL(for: url))
        #expect(try RelyingPartyState.load(from: url) == replaced)
    }

    @Test func anUnfinishedLastLineIsIgnoredAndADamagedLineIsAnErrorThatChangesNothing() throws {
        let directory = try TemporaryDirectory(prefix: "rp-state-tests")
        defer { directory.remove() }
        let url = directory.url("rp-state.json")
        let file = RelyingPartyStateFile(url)
        let empty = try file.load()
        var one = empty
        one.add(Self.account(1))
        try file.save(one, previous: empty)
        let journal = RelyingPartyState.journalURL(for: url)
        let good = try Data(contentsOf: journal)

        try (good + Data(#"{"put":{"rpID":"local"#.utf8)).write(to: journal)
        #expect(try RelyingPartyState.load(from: url) == one)

        for damaged in [
            #"{"user":{}}"#, #"{"user":{"rpID":"l","userName":"a","userHandle":"***"}}"#, #"{"put":{}}"#,
            #"{"remove":"***"}"#, #"{}"#, #"{"put":null,"remove":null}"#, "not json",
        ] {
            let bytes = good + Data((damaged + "\n").utf8)
            try bytes.write(to: journal)
            let before = digest(of: url)
            #expect(throws: RelyingPartyStateError.self) { try RelyingPartyStateFile(url).load() }
            do {
                _ = try RelyingPartyState.load(from: url)
                Issue.record("a damaged journal line \(damaged) was read")
            } catch {
                #expect(error.code == .invalid)
                #expect(error.description.contains("line 2") && !error.description.contains("RelyingPartyJournalLine"))
            }
            #expect(digest(of: url) == before)
            #expect(try Data(contentsOf: journal) == bytes)
        }
    }

    @Test func theFileIsWrittenWholeOnceTheJournalIsLargeOrAnAppendFailed() throws {
        let directory = try TemporaryDirectory(prefix: "rp-state-tests")
        defer { directory.remove() }
        let url = directory.url("rp-state.json")
        let file = RelyingPartyStateFile(url)
        let empty = try file.load()
        let journal = RelyingPartyState.journalURL(for: url)
        var one = empty
        one.add(Self.account(1))

        // A journal past the bound (its lines all valid: the same account set again and again).
        let line = String(
            decoding: try Data(
                contentsOf: {
                    try file.save(one, previous: empty); return journal
                }()), as: UTF8.self)
        let repeated = String(repeating: line, count: RelyingPartyStateFile.compactionSize / line.utf8.count + 1)
        try Data(repeated.utf8).write(to: journal)
        var two = one
        two.add(Self.account(2))
        try file.save(two, previous: one)
        #expect(!FileManager.default.fileExists(atPath: journal.path))
        #expect(try RelyingPartyState.load(from: url) == two)

        // An append that fails (the journal is a directory) makes the next save write the file whole.
        try FileManager.default.createDirectory(at: journal, withIntermediateDirectories: false)
        var three = two
        three.add(Self.account(3))
        #expect(throws: RelyingPartyStateError.self) { try file.save(three, previous: two) }
        try FileManager.default.removeItem(at: journal)
        try file.save(three, previous: two)
        #expect(!FileManager.default.fileExists(atPath: journal.path))
        #expect(try RelyingPartyState.load(from: url) == three)
    }
}
