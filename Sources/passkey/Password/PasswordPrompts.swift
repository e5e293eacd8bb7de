import Basics
import ArgumentParser
import Foundation
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
import TerminalIO

/// What the password commands share: the vault on the terminal, the user name's limit and the JSON they print.
enum PasswordPrompts {
    static func validateUserName(_ user: String) throws {
        guard user.utf8.count <= SQLiteCredentialStore.maximumUserNameLength else {
            throw ValidationError("The user name is longer than \(SQLiteCredentialStore.maximumUserNameLength) bytes.")
        }
    }

    /// Runs `body` with the vault over the store `options` names, unlocked (it must exist), asking at the terminal,
    /// with the approval table at `approvals` (else beside the store); the store is closed afterwards. A command
    /// without `--yes` passes no `approval` (an `ApprovalOptions` exists only as ArgumentParser decoded it): approval
    /// is then unattended only under `PASSKEY_ASSUME_YES=1`.
    static func withVault<T>(
        _ options: StoreOptions, approvals: String? = nil, approval: ApprovalOptions? = nil,
        _ body: (PasswordVault) async throws -> T
    ) async throws -> T {
        try await withStore(options, approval: approval) { store, interface, mode, environment in
            try await body(
                PasswordVault(
                    store: store, interface: interface, mode: mode, canAsk: interface.canAsk, environment: environment,
                    approvalTable: approvals.map { URL(fileURLWithPath: $0) } ?? options.files.domainApprovals))
        }
    }

    /// What `passkey password` and `passkey otp` run on: the store (never created here), the terminal, the approval
    /// mode (`--yes`, or the environment's) and the environment.
    static func withStore<T>(
        _ options: StoreOptions, approval: ApprovalOptions?,
        _ body: (SQLiteCredentialStore, TerminalInterface, ApprovalMode, [String: String]) async throws -> T
    ) async throws -> T {
        let store = try await options.open(create: false)
        defer { store.close() }
        let interface = TerminalInterface()
        let environment = ProcessInfo.processInfo.environment
        let mode = approval?.mode ?? ApprovalMode(yes: false, environment: environment)
        return try await body(store, interface, mode, environment)
    }

    /// The store and what it says, as `passkey password` prints it: quoted names, a terminal-safe service.
    static func login(_ user: String, _ service: PasswordService) -> String {
        "\(user.siteChosen) at \(service.text.terminalSafe)"
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

extension PasswordService {
    /// A site as a command's argument names it: a domain, an https:// origin or an app ID, else the sentence every
    /// `passkey password` and `passkey otp` command refuses it with.
    static func named(_ text: String) throws -> PasswordService {
        guard let service = PasswordService(text) else {
            throw ValidationError("'\(text)' is not a domain, an https:// origin or an app ID.")
        }
        return service
    }
}
