import ArgumentParser
import CTAP2
import Foundation
import PasskeyProvider
import PasskeySettings
import PasskeyStoreIO
import PasskeyFilesIO
import TerminalIO

/// `--store PATH` and the passphrase that unlocks it, shared by every command that touches passkeys.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .customLong("store"),
        help: ArgumentHelp(
            "The passkey store file (default: $PASSKEY_STORE, else the settings file's store, else "
                + "$XDG_DATA_HOME/passkey/passkeys.sqlite).",
            valueName: "path"),
        completion: .file(extensions: ["sqlite"]))
    var path: String?

    var url: URL { URL(fileURLWithPath: checkedSettings(flags: flags).store.value) }

    func validate() throws {
        do {
            _ = try Settings(flags: flags, environment: [:], file: nil, defaultStore: "")
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// `--store` as `Settings` reads it.
    var flags: [SettingKey: String] { path.map { [.store: $0] } ?? [:] }

    /// The store and every file kept beside it.
    var files: PasskeyFiles { PasskeyFiles(store: url) }

    /// How the provider opens this store, asking the person at the terminal (`StoreAccess`).
    func access(_ interface: TerminalInterface = TerminalInterface(), allowsWeakPassphrase: Bool = false)
        -> StoreAccess
    {
        StoreAccess(
            files: files, interface: interface, environment: ProcessInfo.processInfo.environment,
            canAsk: interface.canAsk, allowsWeakPassphrase: allowsWeakPassphrase)
    }

    /// Opens the store, creating it when `create` allows and it does not exist yet (`StoreAccess.open`).
    func open(create: Bool) async throws -> SQLiteCredentialStore {
        try await access().open(create: create)
    }

    /// Creates a new store for `passkey init` (`StoreAccess.create`).
    func create(allowingWeakPassphrase: Bool = false) async throws -> SQLiteCredentialStore {
        try await access(allowsWeakPassphrase: allowingWeakPassphrase).create()
    }

    /// The failure of a command that needs an existing store.
    static func noStore(at url: URL) -> ProviderError { StoreAccess.noStore(at: url) }

    /// Takes the store's lock, then opens it (`StoreAccess.openForServing`).
    func openForServing(create: Bool) async throws -> (StoreLock, SQLiteCredentialStore) {
        try await access().openForServing(create: create)
    }

    /// Runs `body` with the store taken and opened (`openForServing`), then closes it and lets its lock go.
    func withServingStore<Result>(
        create: Bool = false, _ body: (SQLiteCredentialStore) async throws -> Result
    ) async throws -> Result {
        try await access().withServingStore(create: create, body)
    }
}

/// `--yes`: approve every request without asking (tests and CI only). Also $PASSKEY_ASSUME_YES=1.
struct ApprovalOptions: ParsableArguments {
    @Flag(name: .long, help: "Approve every request without asking. For tests and CI only; the output says so.")
    var yes = false

    var mode: ApprovalMode { ApprovalMode(yes: yes, environment: ProcessInfo.processInfo.environment) }

    var unattended: Bool { mode.unattended }

    /// The consent an authenticator on `store` asks through `interface`: the person, or the announced unattended
    /// approver. With `openingVerifies` (a command whose one ceremony follows the opening: `scan`), a passphrase
    /// typed to open `store` counts as that ceremony's verification; `serve` and `listen`, whose ceremonies come
    /// later, ask each time.
    func consent(
        interface: TerminalInterface, store: SQLiteCredentialStore, openingVerifies: Bool = false
    ) -> any UserInteraction {
        mode.consent(
            interface: interface, verifiedAtOpening: { openingVerifies && OpeningVerification.take(for: store) },
            verifyPassphrase: { store.verifyPassphrase($0) })
    }

    /// The user interaction to use: the terminal prompt, or the announced unattended approver.
    func makeUserInteraction(store: SQLiteCredentialStore) -> any UserInteraction {
        consent(interface: TerminalInterface(), store: store)
    }
}
