import ArgumentParser
import Foundation
import PasskeyProvider
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
        @Option(
            help: ArgumentHelp("The domain approval table (default: beside the store).", valueName: "file"),
            completion: .file(extensions: ["json"]))
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

        /// The new password --generate makes.
        func newPassword() async throws -> String {
            guard var random = BufferedSystemRandom() else { throw CommandFailure("cannot open /dev/urandom") }
            return try Passkey.Password.Generate.generator(format: nil, rules: rules)(&random)
        }

        func run() async throws {
            guard let service = PasswordService(service) else { return }
            // Made before anything is opened, so impossible rules change nothing.
            let generated = generate ? try await newPassword() : nil
            let saved = try await PasswordPrompts.withVault(store, approvals: approvals, approval: approval) {
                try await $0.add(service: service, user: user, app: app, password: generated.map { .given($0) } ?? .ask)
            }
            let login = PasswordPrompts.login(user, service)
            switch saved {
            case .added: printLine("Saved the password for \(login).")
            case .addedByApp: printLine("Saved the password for \(login) (from \(app ?? "")).")
            case .changed: printLine("Changed the password for \(login).")
            case .unchanged: printLine("The password for \(login) is already saved.")
            }
            // Shown once saved, never when nothing was.
            if let generated { printLine(generated) }
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
            let password = try await PasswordPrompts.withVault(store) { try $0.get(service: service, user: user) }
            FileHandle.standardOutput.write(Data((password + "\n").utf8))
        }
    }

}
