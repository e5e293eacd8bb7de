import ArgumentParser
import AssociatedDomainsIO
import Basics
import Foundation
import PasskeyStoreIO

extension Passkey.Password {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Save a password for a service and user name.",
            discussion: """
                SERVICE is a domain (example.com), an https:// origin (https://example.com:8443) or an app ID \
                (ABCDE12345.com.example.app). The password comes from $PASSKEY_PASSWORD, else it is asked twice \
                without echo. Replacing a different saved password asks first (--yes does not ask). With --app, the \
                password is saved as that app would save it (SecAddSharedWebCredential): only for a domain that \
                approved the app for webcredentials; a new login is saved without asking, a change asks. \
                --generate saves a new strong password instead (--rules: one following the site's passwordrules \
                descriptor) and prints it on the last line, as a browser fills in the password it suggests.
                """)

        @OptionGroup var store: StoreOptions
        @Argument(help: "Where the password is used: a domain, an https:// origin or an app ID.") var service: String
        @Argument(help: "The user name.") var user: String
        @Option(help: ArgumentHelp("Save it as this app (TEAMID.bundle.id) would.", valueName: "app-id"))
        var app: String?
        @Option(help: ArgumentHelp("The domain approval table (default: beside the store).", valueName: "file"))
        var approvals: String?
        @OptionGroup var approval: ApprovalOptions
        @Flag(help: "Save a newly generated strong password, and print it.") var generate = false
        @Option(
            help: ArgumentHelp(
                "With --generate: follow this passwordrules descriptor instead.", valueName: "descriptor"))
        var rules: String?

        func validate() throws {
            if rules != nil, !generate { throw ValidationError("--rules goes with --generate.") }
            guard let parsed = PasswordService(service) else {
                throw ValidationError("'\(service)' is not a domain, an https:// origin or an app ID.")
            }
            if app != nil, parsed.hostAndPort == nil {
                throw ValidationError("--app saves for a domain or an https:// origin, not for an app ID.")
            }
            try PasswordPrompts.validateUserName(user)
        }

        /// The password to save: a new one made here with --generate, else typed or from $PASSKEY_PASSWORD.
        func newPassword() async throws -> String {
            guard generate else { return try await PasswordPrompts.newPassword() }
            guard var random = BufferedSystemRandom() else { throw CommandFailure("cannot open /dev/urandom") }
            return try Passkey.Password.Generate.generator(format: nil, rules: rules)(&random)
        }

        func run() async throws {
            guard let service = PasswordService(service) else { return }
            // Made before anything is opened, so impossible rules change nothing.
            let generated = generate ? try await newPassword() : nil
            try await save(service, generated: generated)
            // Shown once saved, never when nothing was.
            if let generated { print(generated) }
        }

        func save(_ service: PasswordService, generated: String?) async throws {
            let store = try await store.open(create: false)
            defer { store.close() }
            let existing = try store.passwordEntry(service: service, userName: user)
            if case .damaged = existing {
                throw PasswordPrompts.damaged(user: user, service: service)
            }
            let current: PasswordCredential? =
                if case .intact(let credential) = existing { credential } else { nil }
            if let app {
                let table = try PasswordPrompts.approvalTable(approvals, store: self.store)
                let domain = service.hostAndPort ?? service.text
                // The approval is checked before the password is asked for: an app that may not save here learns so
                // without typing anything.
                guard SharedWebCredentials.isApproved(app: app, domain: domain, approvals: table) else {
                    throw CommandFailure(
                        "\(app.siteChosen) is not approved for webcredentials at \(domain.terminalSafe); nothing saved",
                        hint: "The domain's apple-app-site-association file must list the app (passkey domains check).")
                }
                var password = generated ?? ""
                if generated == nil { password = try await newPassword() }
                switch SharedWebCredentials.decideAdd(
                    app: app, domain: domain, approvals: table, existing: current, password: password)
                {
                case .saveSilently:
                    try store.savePassword(password, userName: user, service: service)
                    print("Saved the password for \(user.siteChosen) at \(service.text.terminalSafe) (from \(app)).")
                case .unchanged:
                    print("The password for \(user.siteChosen) at \(service.text.terminalSafe) is already saved.")
                case .askToChange:
                    try await PasswordPrompts.confirm(
                        "\(app.siteChosen) wants to change your saved password for \(user.siteChosen) at "
                            + "\(service.text.terminalSafe).", unattended: approval.unattended)
                    try store.savePassword(password, userName: user, service: service)
                    print("Changed the password for \(user.siteChosen) at \(service.text.terminalSafe).")
                case .notApproved, .askToDelete, .nothingToDelete:
                    throw CommandFailure("\(app.siteChosen) is not approved for webcredentials at \(domain)")
                }
                return
            }
            var password = generated ?? ""
            if generated == nil { password = try await newPassword() }
            if let current, !current.hasPassword(password) {
                try await PasswordPrompts.confirm(
                    "A different password is saved for \(user.siteChosen) at \(service.text.terminalSafe). "
                        + "Replace it?", unattended: approval.unattended)
            }
            switch try store.savePassword(password, userName: user, service: service) {
            case .added: print("Saved the password for \(user.siteChosen) at \(service.text.terminalSafe).")
            case .changed: print("Changed the password for \(user.siteChosen) at \(service.text.terminalSafe).")
            case .unchanged:
                print("The password for \(user.siteChosen) at \(service.text.terminalSafe) is already saved.")
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print one saved password.",
            discussion: """
                Unlocks the store and prints the password alone on standard output: the one place passkey shows a \
                password. With several logins for SERVICE, name one with --user. Using a login ranks it first.
                """)

        @OptionGroup var store: StoreOptions
        @Argument(help: "The service: a domain, an https:// origin or an app ID.") var service: String
        @Option(help: "The user name, when the service has several logins.") var user: String?

        func validate() throws {
            guard PasswordService(service) != nil else {
                throw ValidationError("'\(service)' is not a domain, an https:// origin or an app ID.")
            }
        }

        func run() async throws {
            guard let service = PasswordService(service) else { return }
            let store = try await store.open(create: false)
            defer { store.close() }
            var logins = try store.passwords(service: service)
            if let user { logins = logins.filter { $0.login.userName == user } }
            guard let chosen = logins.first else {
                throw CommandFailure(
                    "no saved password for \(user.map { "\($0.siteChosen) at " } ?? "")\(service.text.terminalSafe)")
            }
            guard logins.count == 1 else {
                throw CommandFailure(
                    "\(service.text.terminalSafe) has \(logins.count) saved logins",
                    hint: "Choose one with --user: "
                        + logins.map(\.login.userName.siteChosen).joined(separator: ", "))
            }
            try store.recordPasswordUse(chosen.login)
            FileHandle.standardOutput.write(Data((chosen.password + "\n").utf8))
        }
    }

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

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a saved password.",
            discussion: """
                Asks first (--yes does not). A damaged login can be deleted too. With --app, the deletion comes \
                from that app (SecAddSharedWebCredential with no password): only for a domain that approved it.
                """)

        @OptionGroup var store: StoreOptions
        @Argument(help: "The service: a domain, an https:// origin or an app ID.") var service: String
        @Argument(help: "The user name.") var user: String
        @Option(help: ArgumentHelp("Delete it as this app (TEAMID.bundle.id) would.", valueName: "app-id"))
        var app: String?
        @Option(help: ArgumentHelp("The domain approval table (default: beside the store).", valueName: "file"))
        var approvals: String?
        @OptionGroup var approval: ApprovalOptions

        func validate() throws {
            guard let parsed = PasswordService(service) else {
                throw ValidationError("'\(service)' is not a domain, an https:// origin or an app ID.")
            }
            if app != nil, parsed.hostAndPort == nil {
                throw ValidationError("--app deletes for a domain or an https:// origin, not for an app ID.")
            }
        }

        func run() async throws {
            guard let service = PasswordService(service) else { return }
            let store = try await store.open(create: false)
            defer { store.close() }
            let what = "\(user.siteChosen) at \(service.text.terminalSafe)"
            var asker = "Delete the saved password for \(what)?"
            // An app learns nothing about a domain that did not approve it: the approval is checked first.
            if let app {
                let table = try PasswordPrompts.approvalTable(approvals, store: self.store)
                let domain = service.hostAndPort ?? service.text
                guard SharedWebCredentials.isApproved(app: app, domain: domain, approvals: table) else {
                    throw CommandFailure(
                        "\(app.siteChosen) is not approved for webcredentials at \(domain.terminalSafe); nothing deleted"
                    )
                }
                asker = "\(app.siteChosen) wants to delete your saved password for \(what)."
            }
            guard try store.passwordEntry(service: service, userName: user) != nil else {
                throw CommandFailure("no saved password for \(what)")
            }
            try await PasswordPrompts.confirm(asker, unattended: approval.unattended)
            guard try store.deletePassword(service: service, userName: user) else {
                throw CommandFailure("no saved password for \(what)")
            }
            print("Deleted the saved password for \(what).")
        }
    }

    struct Request: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give an app a saved login, as SecRequestSharedWebCredential does.",
            discussion: """
                Offers the logins of the domains that approved APP for webcredentials (of DOMAIN alone with \
                --domain), and prints the one you choose as JSON: {"server", "account", "password"}. A domain that \
                did not approve the app and an approved domain with nothing saved give the same answer (exit status \
                \(PasswordPrompts.notFoundExitCode), "no shared web credential for this app"), so an app cannot learn \
                where you have accounts.
                """)

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("The app asking (TEAMID.bundle.id).", valueName: "app-id")) var app: String
        @Option(help: ArgumentHelp("Only this domain's logins.", valueName: "domain[:port]")) var domain: String?
        @Option(help: ArgumentHelp("The domain approval table (default: beside the store).", valueName: "file"))
        var approvals: String?
        @OptionGroup var approval: ApprovalOptions

        func validate() throws {
            if let domain, !SharedWebCredentials.isDomain(domain) {
                throw ValidationError("'\(domain)' is not a domain name (with an optional :port).")
            }
        }

        func run() async throws {
            // Whether the user can be asked is settled, and the store unlocked, before anything is decided: both
            // not-found cases ask the same questions and end the same way.
            let terminal = Terminal.shared
            guard approval.unattended || terminal.isInteractive else { throw PasswordPrompts.needsConfirmation }
            let store = try await store.open(create: false)
            defer { store.close() }
            let table = try PasswordPrompts.approvalTable(approvals, store: self.store)
            let saved = try store.passwords()
            let offered = SharedWebCredentials.offered(
                to: app, domain: domain, approvals: table, logins: saved.map(\.login))
            guard !offered.isEmpty else { throw PasswordPrompts.notFound }
            terminal.write("\(app.siteChosen) wants to use one of your saved passwords:\n")
            for (index, login) in offered.enumerated() {
                terminal.write("  \(index + 1)) \(login.userName.siteChosen) at \(login.service.text.terminalSafe)\n")
            }
            let index: Int
            if approval.unattended {
                Unattended.announce(reason: "--yes")
                terminal.write("passkey: auto-chose 1 (unattended approval)\n")
                index = 0
            } else {
                terminal.write("Choose 1-\(offered.count), or press Enter to refuse: ")
                guard case .line(let answer) = await terminal.readLine(timeout: .seconds(120)),
                    let number = Int(answer.trimmingCharacters(in: .whitespaces)), (1...offered.count).contains(number)
                else {
                    // Refusing looks to the app as if nothing were saved.
                    throw PasswordPrompts.notFound
                }
                index = number - 1
            }
            let login = offered[index]
            guard let credential = saved.first(where: { $0.login.id == login.id }) else {
                throw PasswordPrompts.notFound
            }
            try store.recordPasswordUse(login)
            let object = [
                ("server", login.service.hostAndPort ?? login.service.text), ("account", login.userName),
                ("password", credential.password),
            ]
            print(PasswordPrompts.jsonObject(object))
        }
    }
}

/// What the password commands share: the new password, confirmations, the approval table and the JSON they print.
enum PasswordPrompts {
    /// `password request`'s exit status when nothing can be given: not approved, or nothing saved.
    static let notFoundExitCode: Int32 = 4

    static var notFound: CommandFailure {
        CommandFailure("no shared web credential for this app", exitCode: notFoundExitCode)
    }

    static var needsConfirmation: CommandFailure {
        CommandFailure("this needs your confirmation", hint: "Run passkey in a terminal, or pass --yes (tests only).")
    }

    static func damaged(user: String, service: PasswordService) -> CommandFailure {
        CommandFailure(
            "the saved password for \(user.siteChosen) at \(service.text.terminalSafe) fails its integrity check",
            hint: "Delete it with `passkey password delete`, then save it again.")
    }

    static func validateUserName(_ user: String) throws {
        guard user.utf8.count <= SQLiteCredentialStore.maximumUserNameLength else {
            throw ValidationError("The user name is longer than \(SQLiteCredentialStore.maximumUserNameLength) bytes.")
        }
    }

    /// The password to save: $PASSKEY_PASSWORD, else asked twice without echo.
    static func newPassword() async throws -> String {
        if let fromEnvironment = ProcessInfo.processInfo.environment["PASSKEY_PASSWORD"] {
            guard !fromEnvironment.isEmpty else { throw CommandFailure("PASSKEY_PASSWORD is set but empty") }
            return fromEnvironment
        }
        let terminal = Terminal.shared
        guard terminal.isInteractive else {
            throw CommandFailure("no password given", hint: "Set PASSKEY_PASSWORD, or run passkey in a terminal.")
        }
        guard case .line(let first) = await terminal.readSecret(prompt: "Password: ", timeout: .seconds(300)),
            !first.isEmpty
        else { throw CommandFailure("no password given; nothing saved") }
        guard case .line(let second) = await terminal.readSecret(prompt: "Repeat it: ", timeout: .seconds(300)),
            PasswordCredential.sameSecret(first, second)
        else { throw CommandFailure("the passwords do not match; nothing saved") }
        return first
    }

    /// Asks a yes-or-no question on the terminal; returns if the answer is yes, throws otherwise. `--yes` answers
    /// yes, and says so.
    static func confirm(_ question: String, unattended: Bool) async throws {
        let terminal = Terminal.shared
        if unattended {
            terminal.write("passkey: auto-approved: \(question)\n")
            return
        }
        guard terminal.isInteractive else { throw needsConfirmation }
        terminal.write(question + " [y/N] ")
        guard case .line(let answer) = await terminal.readLine(timeout: .seconds(120)),
            ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
        else { throw CommandFailure("not confirmed; nothing changed") }
    }

    /// The approval table that `passkey domains check` keeps (`ApprovalTableFile`), at `path`, else beside the store.
    /// A missing table approves nothing; a damaged one is an error, never read as "not approved".
    static func approvalTable(_ path: String?, store: StoreOptions) throws -> any DomainApprovals {
        let file = path.map { ApprovalTableFile(path: $0) } ?? ApprovalTableFile.beside(storeURL: store.url)
        do {
            return ApprovalTableApprovals(try file.load())
        } catch {
            throw CommandFailure("\(error)")
        }
    }

    /// One line of JSON with the members in this order.
    static func jsonObject(_ members: [(String, String)]) -> String {
        "{" + members.map { "\(jsonString($0.0)):\(jsonString($0.1))" }.joined(separator: ",") + "}"
    }

    static func jsonString(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return (try? encoder.encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    }
}
