import Basics
import Foundation
import PasskeyFilesIO
import RelyingParty
import Synchronization

/// One line of the state file's journal: an account set whole, the account of a credential removed, or a user
/// record (display name, password hash) set whole.
///
/// ```json
/// {"put":{"rpID":"example.com","userName":"alice","registered":"2026-…Z","credential":{…}}}
/// {"remove":"<base64url credential ID>"}
/// {"user":{"rpID":"example.com","userName":"alice","displayName":"Alice","userHandle":"…","password":{…}}}
/// ```
///
/// Each line sets or removes one account whole, so replaying a journal over a file that already holds some of its
/// changes gives the same state.
struct RelyingPartyJournalLine: Codable, Equatable {
    var put: RelyingPartyState.Account?
    var remove: String?
    var user: RelyingPartyState.User?

    init(put: RelyingPartyState.Account? = nil, remove: String? = nil, user: RelyingPartyState.User? = nil) {
        self.put = put
        self.remove = remove
        self.user = user
    }
}

extension RelyingPartyState {
    /// The journal beside the state file `url`: `FILE.journal`.
    public static func journalURL(for url: URL) -> URL { URL(fileURLWithPath: url.path + ".journal") }

    /// Reads the file (`PasskeyFiles.relyingPartyState` by default) and replays its journal, both through
    /// `OwnerOnlyFile`; a missing file is an empty state. Anything unreadable is an error naming the file, and
    /// nothing is changed.
    public static func load(from url: URL) throws(RelyingPartyStateError) -> RelyingPartyState {
        var state = RelyingPartyState()
        if let bytes = try read(url, what: "state") {
            state = try RelyingPartyState(jsonData: Data(bytes), source: url.path)
        }
        let journal = journalURL(for: url)
        guard let bytes = try read(journal, what: "journal") else { return state }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        for (number, line) in OwnerOnlyFile.completeLines(of: bytes).enumerated() {
            guard let entry = try? decoder.decode(RelyingPartyJournalLine.self, from: Data(line)) else {
                throw RelyingPartyStateError(
                    .invalid,
                    "the relying party journal \(journal.path), line \(number + 1), is not a journal entry; "
                        + "it was left unchanged")
            }
            switch (entry.put, entry.remove.flatMap { [UInt8](base64URLEncoded: $0) }, entry.user) {
            case (let account?, nil, nil): state.add(account)
            case (nil, let id?, nil): state.accounts.removeAll { $0.credential.id == id }
            case (nil, nil, let user?): state.set(user)
            default:
                throw RelyingPartyStateError(
                    .invalid,
                    "the relying party journal \(journal.path), line \(number + 1), is not a journal entry; "
                        + "it was left unchanged")
            }
        }
        return state
    }

    /// Writes the file whole, atomically and durably, 0600 (`OwnerOnlyFile.write`), then removes the journal,
    /// whose changes it holds.
    public func save(to url: URL) throws(RelyingPartyStateError) {
        let data = try jsonData()
        do {
            try OwnerOnlyFile.write([UInt8](data), to: url)
            try OwnerOnlyFile.remove(Self.journalURL(for: url))
        } catch {
            throw RelyingPartyStateError(
                .unwritable, "cannot save the relying party state \(url.path): \(error.reason)")
        }
    }

    /// The journal lines that turn `previous` into this state: removals first, then the accounts added or changed,
    /// in this state's order (replayed, they give this state, order included, since `add` replaces in place), then
    /// the user records added or changed (user records are never removed).
    func journalLines(since previous: RelyingPartyState) -> [RelyingPartyJournalLine] {
        let before = Dictionary(previous.accounts.map { ($0.credential.id, $0) }, uniquingKeysWith: { $1 })
        let now = Set(accounts.map(\.credential.id))
        let removed = previous.accounts.filter { !now.contains($0.credential.id) }.map {
            RelyingPartyJournalLine(remove: $0.credential.id.base64URLEncodedString)
        }
        let put = accounts.filter { before[$0.credential.id] != $0 }.map { RelyingPartyJournalLine(put: $0) }
        let users = users.filter { !previous.users.contains($0) }.map { RelyingPartyJournalLine(user: $0) }
        return removed + put + users
    }

    private static func read(_ url: URL, what: String) throws(RelyingPartyStateError) -> [UInt8]? {
        do {
            return try OwnerOnlyFile.read(url, limit: maximumFileSize)
        } catch {
            throw RelyingPartyStateError(
                .unreadable, "cannot read the relying party \(what) \(url.path): \(error.reason)")
        }
    }
}

/// The state file `passkey rp serve` keeps: a change costs one append to the journal beside it, not a rewrite of
/// every account (at 3,000 accounts, a rewrite took 168 ms per registration; issue 23, attack 2). The file is
/// written whole when the journal passes `compactionSize`, after an append failed (it may have left part of a
/// line), and when a journal is there at load (a killed process may have left part of a line).
public final class RelyingPartyStateFile: Sendable {
    /// The journal size past which the next change writes the file whole.
    public static let compactionSize = 4 << 20

    public let url: URL
    /// Whether the next save writes the file whole.
    private let writeWholeNext = Mutex(false)

    public init(_ url: URL) { self.url = url }

    /// The state, from the file and its journal; a journal found is folded into the file at once.
    public func load() throws(RelyingPartyStateError) -> RelyingPartyState {
        let state = try RelyingPartyState.load(from: url)
        if FileManager.default.fileExists(atPath: RelyingPartyState.journalURL(for: url).path) {
            try state.save(to: url)
        }
        return state
    }

    /// Records the change from `previous` (the state as last saved) to `state` durably.
    public func save(_ state: RelyingPartyState, previous: RelyingPartyState) throws(RelyingPartyStateError) {
        let journal = RelyingPartyState.journalURL(for: url)
        let journalSize = (try? FileManager.default.attributesOfItem(atPath: journal.path)[.size] as? Int) ?? 0
        if writeWholeNext.withLock({ $0 }) || journalSize >= Self.compactionSize {
            try state.save(to: url)
            writeWholeNext.withLock { $0 = false }
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        var bytes: [UInt8] = []
        for line in state.journalLines(since: previous) {
            guard let encoded = try? encoder.encode(line) else {
                throw RelyingPartyStateError(.unwritable, "cannot encode a change to the relying party state")
            }
            bytes += encoded + [UInt8(ascii: "\n")]
        }
        guard !bytes.isEmpty else { return }
        do {
            try OwnerOnlyFile.append(bytes, to: journal, durably: true)
        } catch {
            writeWholeNext.withLock { $0 = true }
            throw RelyingPartyStateError(
                .unwritable, "cannot save the relying party state \(journal.path): \(error.reason)")
        }
    }
}
