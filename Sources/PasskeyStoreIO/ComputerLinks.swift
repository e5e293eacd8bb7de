import CTAP2
import Crypto
import Foundation
import PasskeyFilesIO

/// The sealed file that holds the computer's linked phones (`passkey client --link`, `--phone NAME`): beside the
/// store, named after it (`passkeys.sqlite` → `passkeys.computer-links.sealed`), mode 0600, replaced atomically. Its
/// bytes are `"PKCL" ‖ version 1 ‖ AES-GCM(nonce ‖ ciphertext ‖ tag)` of the links' JSON (the book's own encoding,
/// `LinkedPhoneBook`), under `HKDF-SHA256(store key, info "passkey computer links v1")`, with the first five bytes as
/// associated data: the phone's ``PhoneLinkFile`` under a key of its own. Link secrets and contact IDs (which let
/// anyone wake the phone) are therefore as safe as the passkeys' private keys and open only with the passphrase. A
/// file that does not open (damaged, or another store's) is an error, never replaced silently.
public enum ComputerLinkFile {
    private static let magic: [UInt8] = Array("PKCL".utf8) + [1]

    private static func file(for store: SQLiteCredentialStore) -> SealedSideFile {
        SealedSideFile(
            url: PasskeyFiles(store: store.url).computerLinks, magic: magic, keyring: store.keyring,
            use: .computerLinks,
            what: "the linked phones")
    }

    /// The opened contents of `store`'s file, or nil when it has none yet.
    public static func load(for store: SQLiteCredentialStore) throws(CredentialStoreError) -> [UInt8]? {
        try file(for: store).open()
    }

    /// Seals and writes `contents` for `store`.
    public static func save(_ contents: [UInt8], for store: SQLiteCredentialStore) throws(CredentialStoreError) {
        try file(for: store).seal(contents)
    }
}
