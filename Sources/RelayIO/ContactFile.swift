import Basics
import Foundation
import Hybrid
import PasskeyFilesIO
import Relay

/// Why the contact file could not be read or written.
struct ContactFileError: Error, CustomStringConvertible {
    var description: String
}

/// The contact file (`--contacts FILE`) and its journal (`FILE.journal`): hashes of contact IDs, sealed verifiers
/// and dates only, both owner-only (0600).
///
/// The file holds every contact as of when it was last written whole; the journal the changes since, one JSON object
/// a line, so that a registration costs one append of about 200 bytes rather than writing every contact again (with
/// 1,700 contacts, rewriting the file on each registration held unrelated tunnels up for a median of 1.2 s; issue 23,
/// attack 1):
///
/// ```json
/// {"store":{"hash":"<base64url>","verifier":"<base64url>","created":1764000000,"lastUsed":1764000000,"routingID":"0A0B0C"}}
/// {"forget":"<base64url hash>"}
/// ```
///
/// Each line sets or removes one contact whole, so replaying the journal over a file that already holds some of its
/// changes gives the same contacts: the file can be written before the journal is removed. A last line without its
/// newline is a write that did not finish and is ignored; any other line that is not one of these makes the file
/// unreadable (the relay does not start, and changes nothing). Relays before the journal read the file alone.
struct ContactFile: Sendable {
    /// The file's path; the journal is beside it.
    let path: String

    var journalPath: String { path + ".journal" }

    /// Either file may be at most this large (100,000 contacts take about 20 MiB).
    static let readLimit = 256 << 20

    private struct Contents: Codable {
        var version: Int
        var contacts: [Entry]
    }

    private struct Entry: Codable {
        /// Base64url of SHA-256(contact ID).
        var hash: String
        /// Base64url of the sealed verifier.
        var verifier: String
        var created: Int64
        var lastUsed: Int64
        /// False until a listener proves ownership; absent in files written before it existed (proved).
        var proved: Bool?
        /// Six hex digits: the routing ID the contact ID starts with; absent in files written before it existed.
        var routingID: String?

        init(_ record: ContactRecord) {
            hash = record.hash.base64URLEncodedString
            verifier = record.sealedVerifier.base64URLEncodedString
            created = record.created
            lastUsed = record.lastUsed
            proved = record.proved == false ? false : nil
            routingID = record.routingID?.hex
        }

        func record(_ what: String) throws(ContactFileError) -> ContactRecord {
            guard let hash = [UInt8](base64URLEncoded: hash), hash.count == 32,
                let sealed = [UInt8](base64URLEncoded: verifier)
            else { throw ContactFileError(description: "\(what) holds a malformed contact") }
            var routing: RoutingID?
            if let routingID {
                guard let parsed = try? RoutingID(hex: routingID) else {
                    throw ContactFileError(description: "\(what) holds a malformed routing ID")
                }
                routing = parsed
            }
            return ContactRecord(
                hash: hash, sealedVerifier: sealed, created: created, lastUsed: lastUsed, proved: proved ?? true,
                routingID: routing)
        }
    }

    private struct Line: Codable {
        var store: Entry?
        var forget: String?
    }

    /// The contacts: the file with the journal replayed, and how many complete lines the journal holds.
    func load() throws(ContactFileError) -> (records: [ContactRecord], journalEntries: Int) {
        var records: [[UInt8]: ContactRecord] = [:]
        if let bytes = try read(path) {
            let contents: Contents
            do {
                contents = try JSONDecoder().decode(Contents.self, from: Data(bytes))
            } catch {
                throw ContactFileError(description: "the contact file \(path) is not a contact file")
            }
            guard contents.version == 1 else {
                throw ContactFileError(description: "the contact file \(path) has version \(contents.version), not 1")
            }
            for entry in contents.contacts {
                let record = try entry.record("the contact file \(path)")
                records[record.hash] = record
            }
        }
        let changes = try journal()
        ContactChange.apply(changes, to: &records)
        let sorted = records.values.sorted {
            $0.created != $1.created ? $0.created < $1.created : $0.hash.lexicographicallyPrecedes($1.hash)
        }
        return (sorted, changes.count)
    }

    /// The journal's complete lines, in order.
    private func journal() throws(ContactFileError) -> [ContactChange] {
        guard let bytes = try read(journalPath) else { return [] }
        let decoder = JSONDecoder()
        var changes: [ContactChange] = []
        for (number, line) in OwnerOnlyFile.completeLines(of: bytes).enumerated() {
            let what = "the contact journal \(journalPath), line \(number + 1),"
            guard let decoded = try? decoder.decode(Line.self, from: Data(line)) else {
                throw ContactFileError(description: "\(what) is not a journal entry")
            }
            switch (decoded.store, decoded.forget) {
            case (let entry?, nil): changes.append(.store(try entry.record(what)))
            case (nil, let hash?):
                guard let bytes = [UInt8](base64URLEncoded: hash), bytes.count == 32 else {
                    throw ContactFileError(description: "\(what) holds a malformed contact")
                }
                changes.append(.forget(hash: bytes))
            default: throw ContactFileError(description: "\(what) is not a journal entry")
            }
        }
        return changes
    }

    /// Writes every contact to the file, atomically and durably, then removes the journal.
    func replace(with records: [ContactRecord]) throws(ContactFileError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Strings, integers and booleans only: encoding cannot fail.
        let bytes = (try? encoder.encode(Contents(version: 1, contacts: records.map(Entry.init)))) ?? Data()
        do {
            try OwnerOnlyFile.write([UInt8](bytes), to: URL(fileURLWithPath: path))
            try OwnerOnlyFile.remove(URL(fileURLWithPath: journalPath))
        } catch {
            throw ContactFileError(description: "cannot write the contact file \(error)")
        }
    }

    /// Appends `changes` to the journal in one write, and flushes it to the disk.
    func append(_ changes: [ContactChange]) throws(ContactFileError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var bytes: [UInt8] = []
        for change in changes {
            let line: Line
            switch change {
            case .store(let record): line = Line(store: Entry(record))
            case .forget(let hash): line = Line(forget: hash.base64URLEncodedString)
            }
            bytes += Array((try? encoder.encode(line)) ?? Data()) + [UInt8(ascii: "\n")]
        }
        do {
            try OwnerOnlyFile.append(bytes, to: URL(fileURLWithPath: journalPath), durably: true)
        } catch {
            throw ContactFileError(description: "cannot write the contact journal \(error)")
        }
    }

    private func read(_ path: String) throws(ContactFileError) -> [UInt8]? {
        do {
            return try OwnerOnlyFile.read(URL(fileURLWithPath: path), limit: Self.readLimit)
        } catch {
            throw ContactFileError(description: "cannot read the contact file \(error)")
        }
    }
}
