import Basics
import Foundation
import PasskeyFilesIO

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The index file's JSON, the wire form of `CredentialIdentityIndex`:
///
/// ```json
/// { "format": "passkey-credential-identity-index", "version": 1,
///   "identities": [ { "serviceIdentifier": "example.com", "userName": "alice", "userDisplayName": "Alice",
///                     "credentialID": "<base64url>", "userHandle": "<base64url>", "discoverable": true,
///                     "created": 1764000000123, "lastUsed": 1764000300456, "rank": 0 } ] }
/// ```
///
/// Dates are milliseconds since 1970 (UTC); `userName`, `userDisplayName`, `lastUsed` and `hidden` (when a relying
/// party's signal hid the passkey) may be absent. Every other
/// field must be there with exactly its type; unknown fields are ignored, so a later version can add some.
struct IndexDocument: Codable {
    static let formatName = "passkey-credential-identity-index"
    static let currentVersion = 1

    struct Identity: Codable {
        /// `passkey` or `password`; absent means a passkey (as every index before passwords).
        var kind: String?
        var serviceIdentifier: String
        var userName: String?
        var userDisplayName: String?
        var credentialID: String
        var userHandle: String
        var discoverable: Bool
        var created: Int64
        var lastUsed: Int64?
        var rank: Int
        /// When a signal hid the passkey; absent while it is shown (and in every index before hiding).
        var hidden: Int64?

        init(_ identity: CredentialIdentity) {
            kind = identity.kind.rawValue
            serviceIdentifier = identity.serviceIdentifier
            userName = identity.userName
            userDisplayName = identity.userDisplayName
            credentialID = identity.credentialID.base64URLEncodedString
            userHandle = identity.userHandle.base64URLEncodedString
            discoverable = identity.isDiscoverable
            created = identity.creationDate.milliseconds
            lastUsed = identity.lastUsedDate?.milliseconds
            rank = identity.rank
            hidden = identity.hiddenDate?.milliseconds
        }

        /// The identity this entry describes, checked; `what` names it in the reason.
        func identity(named what: String) throws(Problem) -> CredentialIdentity {
            guard let kind = CredentialIdentity.Kind(rawValue: kind ?? "passkey") else {
                throw Problem(reason: "\(what) has an unknown kind")
            }
            guard let id = [UInt8](base64URLEncoded: credentialID), (1...1023).contains(id.count) else {
                throw Problem(reason: "\(what) has no valid credential ID")
            }
            guard let handle = [UInt8](base64URLEncoded: userHandle), handle.count <= 64 else {
                throw Problem(reason: "\(what) has no valid user handle")
            }
            guard !serviceIdentifier.isEmpty else { throw Problem(reason: "\(what) has no relying party") }
            guard [created, lastUsed ?? 0, hidden ?? 0].allSatisfy({ abs($0) < 9_000_000_000_000_000 }) else {
                throw Problem(reason: "\(what) has a date out of range")
            }
            return CredentialIdentity(
                kind: kind, serviceIdentifier: serviceIdentifier, userName: userName, userDisplayName: userDisplayName,
                credentialID: id, userHandle: handle, isDiscoverable: discoverable,
                creationDate: Date(milliseconds: created), rank: rank,
                lastUsedDate: lastUsed.map { Date(milliseconds: $0) }, hiddenDate: hidden.map { Date(milliseconds: $0) }
            )
        }
    }

    var format: String
    var version: Int
    var identities: [Identity]

    static func decoder() -> JSONDecoder { JSONDecoder() }

    /// Why a file is not an index, as `CredentialIdentityIndexError.reason` says it.
    struct Problem: Error {
        var reason: String
    }

    static func encode(_ index: CredentialIdentityIndex) -> [UInt8] {
        let document = IndexDocument(
            format: formatName,
            version: currentVersion,
            identities: index.identities.map(Identity.init)
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Strings, integers and booleans only: encoding cannot fail.
        return Array((try? encoder.encode(document)) ?? Data()) + [UInt8(ascii: "\n")]
    }

    static func decode(_ bytes: [UInt8]) throws(Problem) -> CredentialIdentityIndex {
        let document: IndexDocument
        do {
            document = try JSONDecoder().decode(IndexDocument.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw Problem(reason: describe(error))
        } catch {
            throw Problem(reason: "it is not JSON")
        }
        guard document.format == formatName else { throw Problem(reason: "it is not a passkey index") }
        guard document.version == currentVersion else {
            throw Problem(reason: "its format version \(document.version) is unknown")
        }
        var identities: [CredentialIdentity] = []
        identities.reserveCapacity(document.identities.count)
        var seen: Set<[UInt8]> = []
        for (position, entry) in document.identities.enumerated() {
            let identity = try entry.identity(named: "identity \(position + 1)")
            guard seen.insert([identity.kind == .passkey ? 0 : 1] + identity.credentialID).inserted else {
                throw Problem(reason: "identity \(position + 1) repeats a credential ID")
            }
            identities.append(identity)
        }
        return CredentialIdentityIndex(identities: identities)
    }

    /// Names the field at fault, never its value.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let names = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return names.isEmpty ? "the top level" : names.joined(separator: ".")
        }
        switch error {
        case .typeMismatch(_, let context): return "\(path(context)) has the wrong type"
        case .valueNotFound(_, let context): return "\(path(context)) is null"
        case .keyNotFound(let key, let context):
            return "\(context.codingPath.isEmpty ? "" : path(context) + ".")\(key.stringValue) is missing"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "it is not JSON" : "\(path(context)) is not valid"
        @unknown default: return "it is not an index"
        }
    }
}

/// The index's journal: the changes made since the index file was last written, one JSON object a line, so that a
/// change costs an append rather than writing every identity again.
///
/// ```json
/// {"put":{"serviceIdentifier":"example.com","credentialID":"<base64url>",…}}
/// {"remove":"<base64url credential ID>"}
/// {"removePassword":"<base64url password ID>"}
/// {"clear":true}
/// ```
///
/// Each line replaces or removes one identity by kind and ID, or (`clear`, authenticatorReset) removes every
/// passkey, leaving the saved passwords, so replaying the journal over an
/// index that already holds some of its changes gives the same result: the index file can be written before the
/// journal is removed. A last line without its newline is a write that did not finish and is ignored; any other line
/// that is not one of these makes the index damaged, to be rebuilt on the next unlock.
enum IndexJournal {
    enum Entry: Equatable {
        case put(CredentialIdentity)
        /// Removes a passkey.
        case remove([UInt8])
        /// Removes a saved password.
        case removePassword([UInt8])
        /// Removes every passkey (authenticatorReset); saved passwords stay.
        case clear
    }

    /// Entries kept before the store folds them into the index file.
    static let maximumEntries = CredentialIdentityIndex.maximumJournalEntries

    private struct Line: Codable {
        var put: IndexDocument.Identity?
        var remove: String?
        var removePassword: String?
        var clear: Bool?
    }

    /// The entries of the journal at `path`, in order; none when there is no journal.
    static func read(_ url: URL, limit: Int) throws(IndexDocument.Problem) -> [Entry] {
        let bytes: [UInt8]
        do {
            guard let read = try OwnerOnlyFile.read(url, limit: limit) else { return [] }
            bytes = read
        } catch {
            throw IndexDocument.Problem(reason: "its journal: \(error.reason)")
        }
        var entries: [Entry] = []
        for (number, line) in OwnerOnlyFile.completeLines(of: bytes).enumerated() {
            let what = "journal line \(number + 1)"
            let decoded: Line
            do {
                decoded = try IndexDocument.decoder().decode(Line.self, from: Data(line))
            } catch {
                throw IndexDocument.Problem(reason: "\(what) is not a journal entry")
            }
            switch (decoded.put, decoded.remove, decoded.removePassword, decoded.clear) {
            case (let identity?, nil, nil, nil): entries.append(.put(try identity.identity(named: what)))
            case (nil, let id?, nil, nil):
                guard let bytes = [UInt8](base64URLEncoded: id), !bytes.isEmpty else {
                    throw IndexDocument.Problem(reason: "\(what) has no valid credential ID")
                }
                entries.append(.remove(bytes))
            case (nil, nil, let id?, nil):
                guard let bytes = [UInt8](base64URLEncoded: id), !bytes.isEmpty else {
                    throw IndexDocument.Problem(reason: "\(what) has no valid password ID")
                }
                entries.append(.removePassword(bytes))
            case (nil, nil, nil, true?): entries.append(.clear)
            default: throw IndexDocument.Problem(reason: "\(what) is not a journal entry")
            }
        }
        return entries
    }

    /// `entries` applied to `identities`, in order.
    static func apply(_ entries: [Entry], to identities: inout [CredentialIdentity]) {
        for entry in entries {
            switch entry {
            case .put(let identity):
                if let position = identities.firstIndex(where: {
                    $0.kind == identity.kind && $0.credentialID == identity.credentialID
                }) {
                    identities[position] = identity
                } else {
                    identities.append(identity)
                }
            case .remove(let id): identities.removeAll { $0.kind == .passkey && $0.credentialID == id }
            case .removePassword(let id): identities.removeAll { $0.kind == .password && $0.credentialID == id }
            case .clear: identities.removeAll { $0.kind == .passkey }
            }
        }
    }

    /// Appends `entries` to the journal at `url` in one write, creating it owner-only (0600).
    static func append(_ entries: [Entry], to url: URL) throws(IndexDocument.Problem) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes: [UInt8] = []
        for entry in entries {
            let line: Line
            switch entry {
            case .put(let identity): line = Line(put: IndexDocument.Identity(identity))
            case .remove(let id): line = Line(remove: id.base64URLEncodedString)
            case .removePassword(let id): line = Line(removePassword: id.base64URLEncodedString)
            case .clear: line = Line(clear: true)
            }
            // Strings, integers and booleans only: encoding cannot fail.
            bytes += Array((try? encoder.encode(line)) ?? Data()) + [UInt8(ascii: "\n")]
        }
        do {
            try OwnerOnlyFile.append(bytes, to: url)
        } catch {
            throw IndexDocument.Problem(reason: error.description)
        }
    }
}

/// What tells one version of the index files from another (reading and writing them is `OwnerOnlyFile`'s).
enum IndexFiles {
    /// What identifies one version of a file: a rename over it gives a new inode or a new change time.
    struct Stamp: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var changed: timespec

        static func == (a: Stamp, b: Stamp) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size && a.changed.tv_sec == b.changed.tv_sec
                && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    /// The stamp of the file at `path`; nil when there is none.
    static func stamp(_ path: String) -> Stamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Stamp(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size), changed: info.st_ctim)
    }
}
