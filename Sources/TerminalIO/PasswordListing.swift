import Basics
import Foundation
import JSON
import PasskeyStoreIO

/// What `passkey password list` shows of each saved login (never a password): from the index without the
/// passphrase, or from the store's rows with `--verify`, damaged ones included.
public struct PasswordRow: Hashable, Sendable {
    public var service: String
    public var user: String
    public var id: [UInt8]
    public var created: Date?
    /// Only the store's rows know when a login last changed.
    public var modified: Date?
    public var rank: Int
    public var damaged: Bool
    /// The login's note, when `password list --notes` read them.
    public var note: String?

    public init(
        service: String, user: String, id: [UInt8], created: Date?, modified: Date?, rank: Int, damaged: Bool
    ) {
        (self.service, self.user, self.id, self.created) = (service, user, id, created)
        (self.modified, self.rank, self.damaged) = (modified, rank, damaged)
    }
}

public enum PasswordListing {
    /// The store's rows (`--verify`), damaged ones with what is left of their service and user.
    public static func rows(_ entries: [PasswordEntry]) -> [PasswordRow] {
        entries.map { entry in
            switch entry {
            case .intact(let credential):
                let login = credential.login
                return PasswordRow(
                    service: login.service.text, user: login.userName, id: login.id, created: login.creationDate,
                    modified: login.modificationDate, rank: login.rank, damaged: false)
            case .damaged(let damaged):
                return PasswordRow(
                    service: damaged.service ?? "", user: damaged.userName ?? "", id: damaged.id, created: nil,
                    modified: nil, rank: 0, damaged: true)
            }
        }
    }

    /// The index's logins, only those of `service` when one is given; an entry whose service does not read as one is
    /// left out.
    public static func rows(_ identities: [CredentialIdentity], service wanted: PasswordService?) -> [PasswordRow] {
        identities.compactMap { identity in
            guard let service = PasswordService(identity.serviceIdentifier),
                wanted.map({ $0.text == service.text }) ?? true
            else { return nil }
            return PasswordRow(
                service: service.text, user: identity.userName ?? "", id: identity.credentialID,
                created: identity.creationDate, modified: nil, rank: identity.rank, damaged: false)
        }
    }

    /// Two lines a login: service and user, then when it was saved and changed and its rank; a damaged one says how
    /// to remove it. No rows: one line saying so.
    public static func lines(_ rows: [PasswordRow], service: PasswordService?) -> [String] {
        guard !rows.isEmpty else {
            return [service.map { "No saved passwords for \($0.text.terminalSafe)." } ?? "No saved passwords."]
        }
        return rows.flatMap { row -> [String] in
            if row.damaged {
                return [
                    "DAMAGED  \(row.service.terminalSafe)  \(row.user.siteChosen)",
                    "    fails its integrity check; not used; remove it with `passkey password delete`",
                ]
            }
            var details: [String] = []
            if let created = row.created { details.append("saved \(created.formatted(.iso8601))") }
            if let modified = row.modified, modified != row.created {
                details.append("changed \(modified.formatted(.iso8601))")
            }
            details.append("rank \(row.rank)")
            return ["\(row.service.terminalSafe)  \(row.user.siteChosen)", "    " + details.joined(separator: ", ")]
                + NoteLines.lines(row.note)
        }
    }

    /// One object a login: `service`, `user`, `id` (base64url), `rank`, `damaged`, and `created` and `modified`
    /// (ISO 8601) when known.
    public static func json(_ rows: [PasswordRow]) -> JSONValue {
        .array(
            rows.map { row in
                .sortedObject([
                    "service": .string(row.service), "user": .string(row.user),
                    "id": .string(row.id.base64URLEncodedString), "rank": .integer(row.rank),
                    "damaged": .bool(row.damaged), "created": row.created.map { .string($0.formatted(.iso8601)) },
                    "modified": row.modified.map { .string($0.formatted(.iso8601)) },
                    "note": row.note.map { .string($0) },
                ])
            })
    }
}

/// A note under a listed passkey or login: `    note  ` before its first line, its other lines indented to match.
public enum NoteLines {
    public static func lines(_ note: String?) -> [String] {
        guard let note else { return [] }
        return note.split(separator: "\n", omittingEmptySubsequences: false).enumerated().map { index, line in
            (index == 0 ? "    note  " : "          ") + String(line).terminalSafe
        }
    }
}
