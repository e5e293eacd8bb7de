import ArgumentParser
import Basics
import Foundation
import PasskeyStoreIO
import TerminalIO

extension Passkey.Password {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the saved logins (never the passwords).",
            discussion: """
                Reads the index beside the store, so no passphrase is needed; the most used logins of each service \
                come first. --verify unlocks the store instead and checks every saved password, listing damaged \
                ones too.
                """)

        @OptionGroup var store: StoreOptions
        @Option(help: "Only the logins of this service.") var service: String?
        @Flag(help: "Print one JSON array instead of a table.") var json = false
        @Flag(help: "Unlock the store and check every saved password, damaged ones included.") var verify = false

        func validate() throws {
            if let service, PasswordService(service) == nil {
                throw ValidationError("'\(service)' is not a domain, an https:// origin or an app ID.")
            }
        }

        func run() async throws {
            let wanted = service.flatMap(PasswordService.init)
            var rows: [Row] = []
            if verify {
                let store = try await store.open(create: false)
                defer { store.close() }
                rows = try store.passwordEntries(service: wanted).map { entry in
                    switch entry {
                    case .intact(let credential):
                        Row(login: credential.login)
                    case .damaged(let damaged):
                        Row(
                            service: damaged.service ?? "", user: damaged.userName ?? "", id: damaged.id, created: nil,
                            modified: nil, rank: 0, damaged: true)
                    }
                }
            } else {
                rows = try await Passkey.List.index(store: store).passwords.compactMap { identity in
                    guard let service = PasswordService(identity.serviceIdentifier) else { return nil }
                    return Row(
                        service: service.text, user: identity.userName ?? "", id: identity.credentialID,
                        created: identity.creationDate, modified: nil, rank: identity.rank, damaged: false)
                }
                if let wanted { rows = rows.filter { $0.service == wanted.text } }
            }
            if json {
                let dates = ISO8601DateFormatter()
                let objects: [[String: Any]] = rows.map { row in
                    var object: [String: Any] = [
                        "service": row.service, "user": row.user, "id": row.id.base64URLEncodedString,
                        "rank": row.rank, "damaged": row.damaged,
                    ]
                    object["created"] = row.created.map { dates.string(from: $0) }
                    object["modified"] = row.modified.map { dates.string(from: $0) }
                    return object
                }
                let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys])
                print(String(decoding: data, as: UTF8.self))
                return
            }
            guard !rows.isEmpty else {
                print(wanted.map { "No saved passwords for \($0.text)." } ?? "No saved passwords.")
                return
            }
            let dates = ISO8601DateFormatter()
            for row in rows {
                if row.damaged {
                    print("DAMAGED  \(row.service.terminalSafe)  \(row.user.siteChosen)")
                    print("    fails its integrity check; not used; remove it with `passkey password delete`")
                    continue
                }
                print("\(row.service.terminalSafe)  \(row.user.siteChosen)")
                var details: [String] = []
                if let created = row.created { details.append("saved \(dates.string(from: created))") }
                if let modified = row.modified, modified != row.created {
                    details.append("changed \(dates.string(from: modified))")
                }
                details.append("rank \(row.rank)")
                print("    " + details.joined(separator: ", "))
            }
        }

        struct Row {
            var service: String
            var user: String
            var id: [UInt8]
            var created: Date?
            var modified: Date?
            var rank: Int
            var damaged: Bool

            init(
                service: String, user: String, id: [UInt8], created: Date?, modified: Date?, rank: Int, damaged: Bool
            ) {
                (self.service, self.user, self.id, self.created) = (service, user, id, created)
                (self.modified, self.rank, self.damaged) = (modified, rank, damaged)
            }

            init(login: SavedLogin) {
                self.init(
                    service: login.service.text, user: login.userName, id: login.id, created: login.creationDate,
                    modified: login.modificationDate, rank: login.rank, damaged: false)
            }
        }
    }

}
