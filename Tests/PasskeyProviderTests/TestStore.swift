import PasskeyStoreIO
import TestSupport

/// A new store in a temporary directory, its passphrase "correct horse" (the KDF at its testing cost): what the
/// vault and share tests start from, each adding its service in an extension.
struct TestStore {
    static let passphrase = "correct horse"

    let directory: TemporaryDirectory
    let store: SQLiteCredentialStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try SQLiteCredentialStore.create(
            at: directory.url("passkeys.sqlite"), passphrase: Self.passphrase, kdf: .testing)
    }
}
