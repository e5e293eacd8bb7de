import CTAP2
import Crypto
import Foundation
import PasskeyFilesIO

/// The sealed file that holds the computer's linked phones (`passkey client --link`, `--linked NAME`): beside the
/// store, named after it (`passkeys.sqlite` → `passkeys.computer-links.sealed`), mode 0600, replaced atomically. Its
/// bytes are `"PKCL" ‖ version 1 ‖ AES-GCM(nonce ‖ ciphertext ‖ tag)` of the links' JSON (the book's own encoding,
/// `LinkedPhoneBook`), under `HKDF-SHA256(store key, info "passkey computer links v1")`, with the first five bytes as
/// associated data: the phone's ``PhoneLinkFile`` under a key of its own. Link secrets and contact IDs (which let
/// anyone wake the phone) are therefore as safe as the passkeys' private keys and open only with the passphrase. A
/// file that does not open (damaged, or another store's) is an error, never replaced silently.
public enum ComputerLinkFile {
    private static let magic: [UInt8] = Array("PKCL".utf8) + [1]

    /// The largest file read: 16 MiB.
    static let maximumSize = 16 << 20

    /// The opened contents of `store`'s file, or nil when it has none yet.
    public static func load(for store: SQLiteCredentialStore) throws(CredentialStoreError) -> [UInt8]? {
        let url = PasskeyFiles(store: store.url).computerLinks
        let path = url.path
        let bytes: [UInt8]
        do {
            guard let read = try OwnerOnlyFile.read(url, limit: maximumSize) else { return nil }
            bytes = read
        } catch {
            throw CredentialStoreError(.io, "cannot read the linked phones at \(path): \(error.reason)")
        }
        guard bytes.count > magic.count, Array(bytes.prefix(magic.count)) == magic,
            let box = try? AES.GCM.SealedBox(combined: bytes.dropFirst(magic.count)),
            let opened = try? AES.GCM.open(box, using: store.computerLinkKey, authenticating: magic)
        else {
            throw CredentialStoreError(
                .corrupt,
                "the linked phones at \(path) do not open with this store's key: the file is damaged or belongs to "
                    + "another store")
        }
        return [UInt8](opened)
    }

    /// Seals and writes `contents` for `store`.
    public static func save(_ contents: [UInt8], for store: SQLiteCredentialStore) throws(CredentialStoreError) {
        let url = PasskeyFiles(store: store.url).computerLinks
        guard let sealed = try? AES.GCM.seal(contents, using: store.computerLinkKey, authenticating: magic).combined
        else { throw CredentialStoreError(.io, "cannot seal the linked phones") }
        do {
            try OwnerOnlyFile.write(magic + [UInt8](sealed), to: url)
        } catch {
            throw CredentialStoreError(.io, "cannot save the linked phones: \(error)")
        }
    }
}

extension SQLiteCredentialStore {
    /// The key of the computer links file, derived from the store key.
    var computerLinkKey: SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: storeKey, info: Array("passkey computer links v1".utf8), outputByteCount: 32)
    }
}
