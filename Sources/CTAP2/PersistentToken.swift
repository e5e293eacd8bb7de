import Basics
import CBOR
import Crypto
import Foundation
import Synchronization
import _CryptoExtras

/// CTAP 2.2's persistent read-only credential-management token (`pcmr`) and the two getInfo fields only its holder
/// can read, `encIdentifier` (0x19) and `encCredStoreState` (0x1E).
///
/// Everything derives from ``AuthenticatorSettings/deviceSecret``, 32 random bytes made when the first such token
/// is issued and forgotten at reset, so the store keeps one more sealed value and nothing else:
/// - the token is HKDF-SHA-256 of the device secret with the PIN hash as salt: the same for every platform that asks,
///   across restarts (so a platform can keep it, which is the point), and void once the PIN changes or the
///   authenticator is reset. It only ever authorizes getCredsMetadata and the two enumerations.
/// - the device identifier is 16 bytes derived from the device secret alone: stable until reset.
/// - the credential-store state is 16 bytes of an HMAC under the device secret over every discoverable credential's
///   ID, relying party, user and credProtect: it changes when a passkey is made, deleted or renamed, by any program.
///
/// Both fields are `iv ‖ AES-128-CBC(HKDF-SHA-256(salt: 32 zero bytes, token, info: the field's name), iv, value)`
/// with a fresh IV each time, as python-fido2 2.2's `Info.get_identifier` reads them, so polling getInfo without the
/// token shows nothing, not even whether the store changed.
extension Authenticator {
    /// The persistent token for `settings`, or nil before the first was issued (no device secret yet).
    static func persistentToken(_ settings: AuthenticatorSettings) -> [UInt8]? {
        guard let secret = settings.deviceSecret else { return nil }
        return derivedBytes(
            from: secret, salt: settings.pinHash ?? [], info: "passkey pcmr persistent token", count: 32)
    }

    /// Issues the persistent token through `pinProtocol`'s shared secret, making the device secret first if needed.
    func issuePersistentToken(
        _ pinProtocol: PinUvAuthProtocol, shared: [UInt8]
    ) async throws(CTAPError) -> CBORValue {
        var settings = try await loadSettings()
        if settings.deviceSecret == nil {
            settings.deviceSecret = environment.randomBytes(32)
            try await saveSettings(settings)
        }
        guard let token = Self.persistentToken(settings) else { throw .other }
        do {
            return [2: .bytes(try pinProtocol.encrypt(key: shared, plaintext: token, iv: environment.randomBytes(16)))]
        } catch {
            throw .other
        }
    }

    /// Whether `pinUvAuthParam` over `message` is the persistent token's, for a read-only subcommand.
    func verifiesWithPersistentToken(
        _ parameters: PinUvAuthParameters, message: [UInt8]
    ) async throws(CTAPError) -> Bool {
        guard let token = Self.persistentToken(try await loadSettings()) else { return false }
        return parameters.pinUvAuthProtocol.verify(key: token, message: message, signature: parameters.param)
    }

    /// getInfo's encIdentifier and encCredStoreState, once a persistent token exists.
    func encryptedInfoFields(_ settings: AuthenticatorSettings) async throws(CTAPError) -> [CBORValue: CBORValue] {
        guard let secret = settings.deviceSecret, let token = Self.persistentToken(settings) else { return [:] }
        let identifier = derivedBytes(from: secret, info: "passkey device identifier", count: 16)
        let state = Self.credentialStoreState(try await discoverableCredentials(), secret: secret)
        return [
            0x19: .bytes(
                try Self.encryptInfoField(
                    identifier, token: token, label: "encIdentifier", iv: environment.randomBytes(16))),
            0x1E: .bytes(
                try Self.encryptInfoField(
                    state, token: token, label: "encCredStoreState", iv: environment.randomBytes(16))),
        ]
    }

    /// 16 bytes that change whenever a discoverable credential is added, removed or renamed: the first half of an
    /// HMAC-SHA-256 under the device secret over each credential's fields, in credential ID order.
    static func credentialStoreState(_ credentials: [StoredCredential], secret: [UInt8]) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: secret))
        func add(_ bytes: [UInt8]) {
            let count = UInt32(bytes.count)
            hmac.update(data: [
                UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF),
            ])
            hmac.update(data: bytes)
        }
        for credential in credentials.sorted(by: { $0.id.lexicographicallyPrecedes($1.id) }) {
            add(credential.id)
            add(Array(credential.relyingPartyID.utf8))
            add(credential.userHandle)
            add(Array((credential.userName ?? "").utf8) + [credential.userName == nil ? 0 : 1])
            add(Array((credential.userDisplayName ?? "").utf8) + [credential.userDisplayName == nil ? 0 : 1])
            add([UInt8(credential.credentialProtection.rawValue), credential.thirdPartyPayment ? 1 : 0])
        }
        return Array(hmac.finalize().withUnsafeBytes { Array($0) }.prefix(16))
    }

    /// `iv ‖ AES-128-CBC(key, iv, value)` with the key HKDF-SHA-256(salt: 32 zero bytes, token, info: label, 16);
    /// `value` is 16 bytes, one block, so there is no padding.
    static func encryptInfoField(
        _ value: [UInt8], token: [UInt8], label: String, iv: [UInt8]
    ) throws(CTAPError) -> [UInt8] {
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: token), salt: [UInt8](repeating: 0, count: 32),
            info: Array(label.utf8), outputByteCount: 16)
        do {
            return iv + Array(try AES._CBC.encrypt(value, using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: true))
        } catch {
            throw .other
        }
    }
}

/// HKDF-SHA-256 of `secret` with `salt` and the UTF-8 of `info`, as `count` bytes: how this authenticator derives
/// its per-credential and per-device values.
func derivedBytes(from secret: [UInt8], salt: [UInt8] = [], info: String, count: Int) -> [UInt8] {
    HKDF<SHA256>.deriveKey(
        inputKeyMaterial: SymmetricKey(data: secret), salt: salt, info: Array(info.utf8), outputByteCount: count
    ).withUnsafeBytes { Array($0) }
}
