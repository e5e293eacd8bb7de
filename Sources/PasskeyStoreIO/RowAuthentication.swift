import Basics
import CTAP2
import Crypto
import Foundation

/// How the store proves that rows were written by a holder of the store key (schema version 3).
///
/// - A credentials row: its private key is sealed with AES-256-GCM under the store key, with every other column of
///   the row (all but `seq`) as associated data, encoded by `encode`. Changing any of them, credProtect or the
///   relying party ID for example, or moving the sealed key to another row, makes the seal fail to open, and the
///   row is reported as damaged instead of being used.
/// - The settings row: an HMAC-SHA-256 of its columns under a key derived from the store key with HKDF.
///
/// Columns added after version 3 (from version 5: a credential's thirdPartyPayment flag, the settings row's sealed
/// device secret; from version 6: when a signal hid a passkey, when a saved password was last filled) are authenticated only when set, that is not NULL and not the integer 0, each after its position in
/// the row: a row written before them reads exactly as it did, and the upgrade adds the columns without rewriting a
/// row. Setting or clearing one in the file still changes what is authenticated, so the row then fails its check
/// like any other change, and one such column cannot stand in for another.
///
/// There is no sign counter to cover: the authenticator always reports 0 (a software authenticator whose keys may be
/// copied cannot promise a monotonic counter), so nothing in a row changes on getAssertion.
enum RowAuthentication {
    /// The associated data label of a version 3 credential seal; the encoded row follows it.
    static let credentialLabel = Array("passkey-store-credential v3\0".utf8)
    /// The associated data label of a version 1 and 2 seal, which covered the credential ID only.
    static let legacyCredentialLabel = Array("passkey-store-private-key\0".utf8)
    /// The label that starts the settings MAC's input.
    static let settingsLabel = Array("passkey-store-settings v3\0".utf8)
    /// The associated data label of a saved password's seal (schema version 4); the encoded row follows it.
    static let passwordLabel = Array("passkey-store-password v4\0".utf8)
    /// The associated data label of a one-time-code secret's seal (schema version 6); the encoded row follows it.
    static let oneTimeCodeLabel = Array("passkey-store-one-time-code v6\0".utf8)
    /// HKDF info for the settings MAC key.
    static let settingsKeyInfo = Array("passkey-store settings MAC key v3".utf8)

    /// An unambiguous encoding of column values: a type byte, then 8 big-endian bytes for an integer or a 4-byte
    /// big-endian length and the bytes for text (UTF-8) and blobs.
    static func encode(_ label: [UInt8], _ values: [SQLiteValue]) -> [UInt8] {
        var bytes = label
        bytes.reserveCapacity(label.count + 16 * values.count + 128)
        for value in values {
            switch value {
            case .null:
                bytes.append(0)
            case .integer(let integer):
                bytes.append(1)
                appendBigEndian(UInt64(bitPattern: integer), byteCount: 8, to: &bytes)
            case .text(let text):
                bytes.append(2)
                let utf8 = Array(text.utf8)
                appendBigEndian(UInt64(utf8.count), byteCount: 4, to: &bytes)
                bytes += utf8
            case .blob(let blob):
                bytes.append(3)
                appendBigEndian(UInt64(blob.count), byteCount: 4, to: &bytes)
                bytes += blob
            }
        }
        return bytes
    }

    private static func appendBigEndian(_ value: UInt64, byteCount: Int, to bytes: inout [UInt8]) {
        for shift in stride(from: (byteCount - 1) * 8, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// Whether a column added after version 3 is set, and so authenticated.
    static func isSet(_ value: SQLiteValue) -> Bool {
        switch value {
        case .null: false
        case .integer(let integer): integer != 0
        default: true
        }
    }

    /// `encode` of the first `alwaysAuthenticated` values, then, for each later one that is set, its position (one
    /// byte) and its encoding: the position keeps two such columns from standing in for each other (a flag of 1 in
    /// one and a 1 in another would otherwise authenticate the same).
    static func encode(_ label: [UInt8], _ values: [SQLiteValue], alwaysAuthenticated: Int) -> [UInt8] {
        var bytes = encode(label, Array(values.prefix(alwaysAuthenticated)))
        for (index, value) in values.enumerated().dropFirst(alwaysAuthenticated) where isSet(value) {
            bytes.append(UInt8(truncatingIfNeeded: index))
            bytes += encode([], [value])
        }
        return bytes
    }

    /// The associated data that binds a sealed key to its row (`values` in `CredentialColumn` order).
    static func credentialAAD(_ values: [SQLiteValue]) -> [UInt8] {
        encode(credentialLabel, values, alwaysAuthenticated: CredentialColumn.alwaysAuthenticated)
    }

    /// `credentialAAD` of a row of `SQL.credentialColumns` as SQLite holds it, without decoding it first.
    static func credentialAAD(row: SQLiteRow) -> [UInt8] {
        var bytes = credentialLabel
        bytes.reserveCapacity(credentialLabel.count + 256)
        for column in 1...Int32(CredentialColumn.alwaysAuthenticated) {
            row.appendEncoded(column, to: &bytes)
        }
        // Row column N is value N - 1 (column 0 is `seq`), whose position is appended as `encode` appends it.
        for column in Int32(CredentialColumn.alwaysAuthenticated + 1)...Int32(CredentialColumn.allCases.count)
        where isSet(row.value(column)) {
            bytes.append(UInt8(truncatingIfNeeded: column - 1))
            row.appendEncoded(column, to: &bytes)
        }
        return bytes
    }

    /// The associated data of a version 1 or 2 seal: the label and the credential ID.
    static func legacyCredentialAAD(id: [UInt8]) -> [UInt8] {
        legacyCredentialLabel + id
    }

    /// Seals a private key under the store key, in its stored form (``CredentialPrivateKey/storedRepresentation``:
    /// an ES256 key as the 32-byte scalar every earlier version sealed, others tagged with their algorithm, so the
    /// algorithm is as authenticated as the key and no column or migration was needed for EdDSA).
    static func seal(
        _ key: CredentialPrivateKey, aad: [UInt8], with keyring: any StoreKeyring
    ) throws(CredentialStoreError) -> [UInt8] {
        try keyring.seal(key.storedRepresentation, aad: aad, use: .rows)
    }

    /// Opens a sealed private key; nil when the seal, the associated data or the key inside is wrong.
    static func unseal(
        _ sealed: [UInt8], aad: [UInt8], with keyring: any StoreKeyring
    ) throws(CredentialStoreError) -> CredentialPrivateKey? {
        guard let raw = try keyring.open(sealed, aad: aad, use: .rows) else { return nil }
        return CredentialPrivateKey(storedRepresentation: raw)
    }

    /// The associated data that binds a sealed password to its row (`values` in `PasswordColumn` order).
    static func passwordAAD(_ values: [SQLiteValue]) -> [UInt8] {
        encode(passwordLabel, values, alwaysAuthenticated: PasswordColumn.alwaysAuthenticated)
    }

    /// Seals a secret of a row that holds one (a one-time-code secret) under the store key, with
    /// the label and the row's other columns as associated data: a column changed or the seal moved to another row
    /// makes it fail to open.
    static func sealSecret(
        _ secret: [UInt8], label: [UInt8], row values: [SQLiteValue], with keyring: any StoreKeyring
    ) throws(CredentialStoreError) -> [UInt8] {
        try keyring.seal(secret, aad: encode(label, values), use: .rows)
    }

    /// Opens what `sealSecret` sealed; nil when the seal, the label or a column is wrong.
    static func unsealSecret(
        _ sealed: [UInt8], label: [UInt8], row values: [SQLiteValue], with keyring: any StoreKeyring
    ) throws(CredentialStoreError) -> [UInt8]? {
        try keyring.open(sealed, aad: encode(label, values), use: .rows)
    }

    /// Seals a saved password's UTF-8 bytes with its row's other columns (`PasswordColumn` order) as associated data.
    static func sealPassword(
        _ password: String, row values: [SQLiteValue], with keyring: any StoreKeyring
    ) throws(CredentialStoreError) -> [UInt8] {
        try keyring.seal(Array(password.utf8), aad: passwordAAD(values), use: .rows)
    }

    /// Opens a sealed password; nil when the seal or the associated data is wrong, or the bytes are not UTF-8.
    static func unsealPassword(
        _ sealed: [UInt8], row values: [SQLiteValue], with keyring: any StoreKeyring
    ) throws(CredentialStoreError) -> String? {
        guard let opened = try keyring.open(sealed, aad: passwordAAD(values), use: .rows) else {
            return nil
        }
        return String(validating: opened, as: UTF8.self)
    }

    /// The settings MAC key: HKDF-SHA-256 of the store key.
    static func settingsMACKey(storeKey: SymmetricKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: storeKey, info: settingsKeyInfo, outputByteCount: 32)
    }

    /// The MAC of the settings columns (`values` in `SQL.settingsColumns` order).
    static func settingsMAC(
        _ values: [SQLiteValue], with keyring: any StoreKeyring
    ) throws(CredentialStoreError) -> [UInt8] {
        try keyring.authenticationCode(
            encode(settingsLabel, values, alwaysAuthenticated: SettingsRecord.alwaysAuthenticated), use: .settings)
    }

    /// Whether `mac` is the MAC of `values`, compared in constant time.
    static func settingsMACIsValid(
        _ mac: [UInt8], _ values: [SQLiteValue], with keyring: any StoreKeyring
    ) throws(CredentialStoreError) -> Bool {
        let expected = try settingsMAC(values, with: keyring)
        return expected.count == mac.count && constantTimeEqual(expected, mac)
    }
}

/// Credentials by ID, each remembered with the sealed bytes and the associated data (the rest of the row) its key
/// was opened with, and the database version at which its row was last read.
///
/// A hit on the row needs both to match the row as read now, so a row changed by another process, a sealed key moved,
/// or a column changed underneath is checked afresh (and found damaged) rather than served from memory. On the
/// getAssertion path a hit is checked against SQLite's buffers directly and returns the credential as decoded before.
/// Without reading the row at all, a credential is returned only while the database version is still the one at
/// which its row was last read: no connection has committed anything since.
struct KeyCache {
    /// Beyond this many keys the cache starts over, bounding memory.
    static let capacity = 4096

    private struct Entry {
        var sealed: [UInt8]
        var aad: [UInt8]
        var credential: StoredCredential
        /// A database version no later than the read that last found this row as cached; nil when unknown.
        var readAt: DatabaseVersion?
    }

    private var entries: [[UInt8]: Entry] = [:]

    /// The key of the credential opened from exactly these sealed bytes and associated data.
    func key(id: [UInt8], sealed: [UInt8], aad: [UInt8]) -> CredentialPrivateKey? {
        guard let entry = entries[id], entry.sealed == sealed, entry.aad == aad else { return nil }
        return entry.credential.privateKey
    }

    /// The credential decoded from a row identical to `row` (sealed key at column `sealedColumn`).
    func credential(id: [UInt8], row: SQLiteRow, sealedColumn: Int32) -> StoredCredential? {
        guard let entry = entries[id], row.blobEquals(sealedColumn, entry.sealed),
            RowAuthentication.credentialAAD(row: row) == entry.aad
        else { return nil }
        return entry.credential
    }

    /// The credential whose row was last read at `version`, when the database is still at that version: nothing was
    /// committed since, so the row is as it was read. Nil otherwise; the caller reads the row.
    func credential(id: [UInt8], unchangedSince version: DatabaseVersion) -> StoredCredential? {
        guard let entry = entries[id], entry.readAt == version else { return nil }
        return entry.credential
    }

    /// Notes that a read that started at `version` found the row of `id` as cached.
    mutating func rowWasRead(id: [UInt8], at version: DatabaseVersion?) {
        entries[id]?.readAt = version
    }

    mutating func insert(
        _ credential: StoredCredential, sealed: [UInt8], aad: [UInt8], readAt version: DatabaseVersion? = nil
    ) {
        if entries.count >= Self.capacity {
            entries.removeAll()
        }
        entries[credential.id] = Entry(sealed: sealed, aad: aad, credential: credential, readAt: version)
    }

    mutating func remove(_ id: [UInt8]) {
        entries[id] = nil
    }

    mutating func removeAll() {
        entries.removeAll()
    }
}
