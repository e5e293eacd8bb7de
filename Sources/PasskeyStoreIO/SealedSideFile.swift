import CTAP2
import Crypto
import Foundation
import PasskeyFilesIO

/// A file beside the store sealed under a key derived from the store key: `magic ‖ AES-GCM(nonce ‖ ciphertext ‖
/// tag)`, the magic (format and version) as associated data, mode 0600, replaced atomically. The phone's links
/// (``PhoneLinkFile``) and the computer's (``ComputerLinkFile``) are two of these, each with its own magic and key.
struct SealedSideFile {
    var url: URL
    var magic: [UInt8]
    var keyring: any StoreKeyring
    var use: StoreKeyUse
    /// What the file holds, for messages ("the phone links").
    var what: String

    /// The largest file read: 16 MiB.
    static let maximumSize = 16 << 20

    /// The opened contents, or nil when there is no file yet. A file that does not open is `.corrupt`.
    func open() throws(CredentialStoreError) -> [UInt8]? {
        let bytes: [UInt8]
        do {
            guard let read = try OwnerOnlyFile.read(url, limit: Self.maximumSize) else { return nil }
            bytes = read
        } catch {
            throw CredentialStoreError(.io, "cannot read \(what) at \(url.path): \(error.reason)")
        }
        guard bytes.count > magic.count, Array(bytes.prefix(magic.count)) == magic,
            let opened = try keyring.open(Array(bytes.dropFirst(magic.count)), aad: magic, use: use)
        else { throw notOpening }
        return opened
    }

    /// The error for a file that does not open with this store's key.
    var notOpening: CredentialStoreError {
        CredentialStoreError(
            .corrupt,
            "\(what) at \(url.path) do not open with this store's key: the file is damaged or belongs to another store")
    }

    /// Seals and writes `contents`.
    func seal(_ contents: some DataProtocol) throws(CredentialStoreError) {
        let sealed = try keyring.seal([UInt8](contents), aad: magic, use: use)
        do {
            try OwnerOnlyFile.write(magic + sealed, to: url)
        } catch {
            throw CredentialStoreError(.io, "cannot save \(what): \(error)")
        }
    }
}
