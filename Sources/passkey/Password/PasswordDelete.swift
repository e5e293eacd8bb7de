import ArgumentParser
import Foundation
import PasskeyProvider
import PasskeyStoreIO
import TerminalIO

extension Passkey.Password {
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
        @Option(
            help: ArgumentHelp("The domain approval table (default: beside the store).", valueName: "file"),
            completion: .file(extensions: ["json"]))
        var approvals: String?
        @OptionGroup var approval: ApprovalOptions

        func validate() throws {
            let parsed = try PasswordService.named(service)
            if app != nil, parsed.hostAndPort == nil {
                throw ValidationError("--app deletes for a domain or an https:// origin, not for an app ID.")
            }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let service = try PasswordService.named(service)
            try await PasswordPrompts.withVault(store, approvals: approvals, approval: approval) {
                try await $0.delete(service: service, user: user, app: app)
            }
            printLine("Deleted the saved password for \(PasswordPrompts.login(user, service)).")
        }
    }

    struct Request: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give an app a saved login, as SecRequestSharedWebCredential does.",
            discussion: """
                Offers the logins of the domains that approved APP for webcredentials (of DOMAIN alone with \
                --domain), and prints the one you choose as JSON: {"server", "account", "password"}. A domain that \
                did not approve the app and an approved domain with nothing saved give the same answer (exit status \
                \(PasswordVault.notFoundExitStatus), "no shared web credential for this app"), so an app cannot learn \
                where you have accounts.
                """)

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("The app asking (TEAMID.bundle.id).", valueName: "app-id")) var app: String
        @Option(help: ArgumentHelp("Only this domain's logins.", valueName: "domain[:port]")) var domain: String?
        @Option(
            help: ArgumentHelp("The domain approval table (default: beside the store).", valueName: "file"),
            completion: .file(extensions: ["json"]))
        var approvals: String?
        @OptionGroup var approval: ApprovalOptions

        func validate() throws {
            if let domain, !SharedWebCredentials.isDomain(domain) {
                throw ValidationError("'\(domain)' is not a domain name (with an optional :port).")
            }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            // Whether the person can be asked is settled before the store is unlocked, as the vault settles it
            // before anything is decided.
            let mode = approval.mode
            guard mode.unattended || TerminalInterface().canAsk else { throw PasswordVault.needsConfirmation }
            let login = try await PasswordPrompts.withVault(store, approvals: approvals, approval: approval) {
                try await $0.request(app: app, domain: domain)
            }
            printLine(
                PasswordPrompts.jsonObject([
                    ("server", login.server), ("account", login.account), ("password", login.password),
                ]))
        }
    }
}
