import CTAP2
import Crypto
import Foundation

/// What a key derived from the store key is for. Each use has its own key, so a seal made for one cannot be opened
/// as another.
public enum StoreKeyUse: UInt8, Hashable, Sendable, CaseIterable {
    /// AES-256-GCM under the store key itself: private keys, saved passwords, the PIN hash, the key check.
    case rows = 1
    /// HMAC-SHA-256 of the settings row, under `HKDF(store key, "passkey-store settings MAC key v3")`.
    case settings = 2
    /// AES-256-GCM of the phone links file, under `HKDF(store key, "passkey phone links v1")`.
    case phoneLinks = 3
    /// AES-256-GCM of the computer links file, under `HKDF(store key, "passkey computer links v1")`.
    case computerLinks = 4
}

/// The operations an open store needs from its key: seal, open and authenticate bytes under one of the keys derived
/// from it. The store holds one of these rather than the key, so the key may live in another process (the agent,
/// `passkey unlock`), which answers these requests and never hands the key out.
///
/// A thrown error means the key could not be asked (the agent went away or forgot the store): the command fails
/// rather than report rows as damaged. `open` returns nil when the seal or its associated data is wrong.
public protocol StoreKeyring: Sendable {
    /// `nonce ‖ ciphertext ‖ tag` of `plaintext` under `use`'s key, with `aad` as associated data.
    func seal(_ plaintext: [UInt8], aad: [UInt8], use: StoreKeyUse) throws(CredentialStoreError) -> [UInt8]
    /// The plaintext of `sealed`, or nil when it does not open under `use`'s key with `aad`.
    func open(_ sealed: [UInt8], aad: [UInt8], use: StoreKeyUse) throws(CredentialStoreError) -> [UInt8]?
    /// The HMAC-SHA-256 of `message` under `use`'s key.
    func authenticationCode(_ message: [UInt8], use: StoreKeyUse) throws(CredentialStoreError) -> [UInt8]
}

/// The store key itself, in this process: what opening with the passphrase gives, and what the agent holds.
public struct StoreKey: StoreKeyring {
    private let key: SymmetricKey

    public init(_ key: SymmetricKey) { self.key = key }

    /// The store key as raw bytes, for the agent to keep in locked memory. Never written or sent anywhere.
    public init(bytes: UnsafeRawBufferPointer) { self.key = SymmetricKey(data: bytes) }

    /// Calls `body` with the raw key bytes (for the agent to copy into locked memory).
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try key.withUnsafeBytes(body)
    }

    /// The key of `use`.
    func key(for use: StoreKeyUse) -> SymmetricKey {
        switch use {
        case .rows: key
        case .settings: RowAuthentication.settingsMACKey(storeKey: key)
        case .phoneLinks:
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: key, info: Array("passkey phone links v1".utf8), outputByteCount: 32)
        case .computerLinks:
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: key, info: Array("passkey computer links v1".utf8), outputByteCount: 32)
        }
    }

    public func seal(_ plaintext: [UInt8], aad: [UInt8], use: StoreKeyUse) throws(CredentialStoreError) -> [UInt8] {
        guard let box = try? AES.GCM.seal(plaintext, using: key(for: use), authenticating: aad),
            let combined = box.combined
        else { throw CredentialStoreError(.io, "cannot seal with the store key") }
        return Array(combined)
    }

    public func open(_ sealed: [UInt8], aad: [UInt8], use: StoreKeyUse) throws(CredentialStoreError) -> [UInt8]? {
        guard let box = try? AES.GCM.SealedBox(combined: sealed),
            let opened = try? AES.GCM.open(box, using: key(for: use), authenticating: aad)
        else { return nil }
        return Array(opened)
    }

    public func authenticationCode(_ message: [UInt8], use: StoreKeyUse) throws(CredentialStoreError) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: key(for: use)))
    }
}
