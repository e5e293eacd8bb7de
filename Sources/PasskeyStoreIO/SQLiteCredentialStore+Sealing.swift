import Basics
import CTAP2
import Crypto
import Foundation

/// Sealing and unsealing under the store key: private keys (with their row as associated data, through the
/// decrypted-key cache), the settings row's PIN hash and MAC, and the key check that tells a wrong passphrase.
extension SQLiteCredentialStore {
    func seal(_ key: CredentialPrivateKey, values: [SQLiteValue]) throws(CredentialStoreError) -> [UInt8] {
        try RowAuthentication.seal(key, aad: RowAuthentication.credentialAAD(values), with: keyring)
    }

    /// Turns a row into a credential, or into a damaged entry when a column is missing or the seal does not open
    /// with the row as associated data. The key comes from the cache when the sealed bytes and the row still match.
    /// `version` is the database version taken before the row was read, when known. Throws only when the key cannot be
    /// asked (``StoreKeyring``).
    func entry(
        from record: CredentialRecord, keys: inout KeyCache, readAt version: DatabaseVersion? = nil
    ) throws(CredentialStoreError) -> CredentialEntry {
        guard let id = record.blob(.id), !id.isEmpty, let relyingPartyID = record.text(.relyingPartyID),
            let userHandle = record.blob(.userHandle), let discoverable = record.integer(.discoverable),
            let backupEligible = record.integer(.backupEligible), let backupState = record.integer(.backupState),
            let milliseconds = record.integer(.creationMilliseconds), let sealed = record.sealedPrivateKey,
            let protectionLevel = record.integer(.credentialProtection),
            let protection = CredentialProtection(rawValue: Int(protectionLevel)),
            let hmacSecret = record.integer(.hmacSecret), let largeBlobKey = record.integer(.largeBlobKey),
            let thirdPartyPayment = record.integer(.thirdPartyPayment),
            record[.hidden] == .null || record.integer(.hidden) != nil
        else {
            return .damaged(record.damaged(.missingFields))
        }
        let aad = RowAuthentication.credentialAAD(record.values)
        let privateKey: CredentialPrivateKey
        if let cached = keys.key(id: id, sealed: sealed, aad: aad) {
            privateKey = cached
        } else {
            guard let opened = try RowAuthentication.unseal(sealed, aad: aad, with: keyring) else {
                keys.remove(id)
                return .damaged(record.damaged(.failsIntegrityCheck))
            }
            privateKey = opened
        }
        let credential = StoredCredential(
            id: id,
            relyingPartyID: relyingPartyID,
            relyingPartyName: record.text(.relyingPartyName),
            userHandle: userHandle,
            userName: record.text(.userName),
            userDisplayName: record.text(.userDisplayName),
            privateKey: privateKey,
            isDiscoverable: discoverable != 0,
            backupEligible: backupEligible != 0,
            backupState: backupState != 0,
            creationDate: Date(timeIntervalSince1970: Double(milliseconds) / 1000),
            credentialProtection: protection,
            credentialBlob: record.blob(.credentialBlob),
            hmacSecret: hmacSecret != 0,
            largeBlobKey: largeBlobKey != 0,
            thirdPartyPayment: thirdPartyPayment != 0,
            hiddenDate: record.integer(.hidden).map { Date(milliseconds: $0) }
        )
        keys.insert(credential, sealed: sealed, aad: aad, readAt: version)
        return .intact(credential)
    }

    // MARK: Settings

    /// The associated data of the PIN hash's seal.
    private static let pinHashAAD = Array("passkey-store-pin-hash".utf8)
    /// The associated data of the device secret's seal (schema version 5).
    private static let deviceSecretAAD = Array("passkey-store-device-secret v5".utf8)

    /// The values to bind to `SQL.upsertSettings` for `settings`: the columns, the PIN hash sealed, then the MAC.
    static func settingsRow(
        _ settings: AuthenticatorSettings, keyring: any StoreKeyring
    ) throws(CredentialStoreError) -> [SQLiteValue] {
        let action = "save the authenticator settings"
        guard (0...AuthenticatorSettings.maximumPINRetries).contains(settings.pinRetries),
            (0...AuthenticatorSettings.maximumUVRetries).contains(settings.uvRetries),
            (4...63).contains(settings.minimumPINLength), (0...63).contains(settings.pinCodePointCount),
            settings.pinHash.map({ $0.count == 16 }) ?? true, settings.deviceSecret.map({ $0.count == 32 }) ?? true
        else {
            throw CredentialStoreError(.io, "cannot \(action): a value is out of range")
        }
        var sealedPIN: [UInt8]? = nil
        if let hash = settings.pinHash {
            sealedPIN = try keyring.seal(hash, aad: pinHashAAD, use: .rows)
        }
        guard let relyingParties = try? JSONEncoder().encode(settings.minimumPINLengthRelyingParties) else {
            throw CredentialStoreError(.io, "cannot \(action): the relying party list does not encode")
        }
        let values: [SQLiteValue] = [
            sealedPIN.map(SQLiteValue.blob) ?? .null,
            .integer(Int64(settings.pinCodePointCount)),
            .integer(Int64(settings.pinRetries)),
            .integer(Int64(settings.uvRetries)),
            .integer(Int64(settings.minimumPINLength)),
            .text(String(decoding: relyingParties, as: UTF8.self)),
            .integer(settings.alwaysUV ? 1 : 0),
            .integer(settings.forcePINChange ? 1 : 0),
            try settings.deviceSecret.map { (secret) throws(CredentialStoreError) in
                SQLiteValue.blob(try keyring.seal(secret, aad: deviceSecretAAD, use: .rows))
            } ?? .null,
        ]
        return values + [.blob(try RowAuthentication.settingsMAC(values, with: keyring))]
    }

    /// Checks the settings row's MAC, then its values, then unseals the PIN hash.
    static func settings(
        from record: SettingsRecord, keyring: any StoreKeyring
    ) throws(CredentialStoreError) -> AuthenticatorSettings {
        guard let mac = record.mac, try RowAuthentication.settingsMACIsValid(mac, record.values, with: keyring) else {
            throw CredentialStoreError(
                .corrupt,
                "the authenticator settings (PIN state) fail their integrity check: the store was damaged or "
                    + "tampered with")
        }
        guard let pinCodePoints = record.integer(1), let pinRetries = record.integer(2),
            let uvRetries = record.integer(3), let minimumPINLength = record.integer(4),
            let relyingPartiesText = record.text(5), let alwaysUV = record.integer(6),
            let forcePINChange = record.integer(7),
            let relyingParties = try? JSONDecoder().decode([String].self, from: Data(relyingPartiesText.utf8))
        else {
            throw CredentialStoreError(.corrupt, "the passkey store is damaged: its authenticator settings are invalid")
        }
        var pinHash: [UInt8]? = nil
        if let sealed = record.blob(0) {
            guard let opened = try keyring.open(sealed, aad: pinHashAAD, use: .rows), opened.count == 16 else {
                throw CredentialStoreError(
                    .corrupt, "the PIN hash fails its integrity check: the store was damaged or tampered with")
            }
            pinHash = Array(opened)
        }
        var deviceSecret: [UInt8]? = nil
        if let sealed = record.blob(8) {
            guard let opened = try keyring.open(sealed, aad: deviceSecretAAD, use: .rows), opened.count == 32 else {
                throw CredentialStoreError(
                    .corrupt, "the device secret fails its integrity check: the store was damaged or tampered with")
            }
            deviceSecret = Array(opened)
        }
        return AuthenticatorSettings(
            pinHash: pinHash,
            pinCodePointCount: Int(pinCodePoints),
            pinRetries: Int(pinRetries),
            uvRetries: Int(uvRetries),
            minimumPINLength: Int(minimumPINLength),
            minimumPINLengthRelyingParties: relyingParties,
            alwaysUV: alwaysUV != 0,
            forcePINChange: forcePINChange != 0,
            deviceSecret: deviceSecret
        )
    }

    // MARK: Key check

    /// The plaintext sealed as the key check.
    private static let keyCheckLabel = Array("passkey-store key check v1".utf8)

    /// The associated data of the key check's seal.
    private static let keyCheckAAD = Array("passkey-store-key-check".utf8)

    static func sealKeyCheck(with key: SymmetricKey) throws(CredentialStoreError) -> [UInt8] {
        do {
            guard let combined = try AES.GCM.seal(keyCheckLabel, using: key, authenticating: keyCheckAAD).combined
            else {
                throw CredentialStoreError(.io, "could not seal the key check")
            }
            return Array(combined)
        } catch {
            throw CredentialStoreError(.io, "could not seal the key check")
        }
    }

    /// Checks that `keyring` opens the key check; `.wrongPassphrase` when it does not.
    static func verifyKeyCheck(_ sealed: [UInt8], with keyring: any StoreKeyring) throws(CredentialStoreError) {
        guard let opened = try keyring.open(sealed, aad: keyCheckAAD, use: .rows), opened == keyCheckLabel else {
            throw CredentialStoreError(.wrongPassphrase, "the passphrase does not open the passkey store")
        }
    }
}
