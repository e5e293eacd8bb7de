/// The schema and every statement the store runs.
enum SQL {
    static let schema = """
        CREATE TABLE meta (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            kdf_algorithm TEXT NOT NULL,
            kdf_rounds INTEGER NOT NULL,
            kdf_block_size INTEGER NOT NULL,
            kdf_parallelism INTEGER NOT NULL,
            kdf_output_length INTEGER NOT NULL,
            kdf_salt BLOB NOT NULL,
            key_check BLOB NOT NULL,
            created_ms INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE credentials (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            credential_id BLOB NOT NULL CHECK (length(credential_id) BETWEEN 1 AND 1023),
            rp_id TEXT NOT NULL,
            rp_name TEXT,
            user_handle BLOB NOT NULL CHECK (length(user_handle) <= 64),
            user_name TEXT,
            user_display_name TEXT,
            discoverable INTEGER NOT NULL CHECK (discoverable IN (0, 1)),
            backup_eligible INTEGER NOT NULL CHECK (backup_eligible IN (0, 1)),
            backup_state INTEGER NOT NULL CHECK (backup_state IN (0, 1) AND backup_state <= backup_eligible),
            created_ms INTEGER NOT NULL,
            sealed_private_key BLOB NOT NULL
        ) STRICT;
        CREATE UNIQUE INDEX credentials_by_id ON credentials (credential_id);
        CREATE INDEX credentials_by_rp ON credentials (rp_id, created_ms DESC, seq DESC);
        \(version2)
        \(version3)
        \(version4)
        \(version5)
        \(version6)
        """

    /// Schema version 2 (CTAP 2.1), both for new stores and as the in-place upgrade of version 1: per-credential
    /// extension data, and the PIN state and authenticatorConfig settings in one row. The PIN hash is sealed with
    /// AES-256-GCM under the store key.
    static let version2 = """
        ALTER TABLE credentials ADD COLUMN cred_protect INTEGER NOT NULL DEFAULT 1 CHECK (cred_protect IN (1, 2, 3));
        ALTER TABLE credentials ADD COLUMN cred_blob BLOB CHECK (cred_blob IS NULL OR length(cred_blob) <= 32);
        ALTER TABLE credentials ADD COLUMN hmac_secret INTEGER NOT NULL DEFAULT 0 CHECK (hmac_secret IN (0, 1));
        ALTER TABLE credentials ADD COLUMN large_blob_key INTEGER NOT NULL DEFAULT 0 CHECK (large_blob_key IN (0, 1));
        CREATE TABLE large_blob_array (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            serialized BLOB NOT NULL
        ) STRICT;
        CREATE TABLE authenticator_settings (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            sealed_pin_hash BLOB,
            pin_code_points INTEGER NOT NULL CHECK (pin_code_points BETWEEN 0 AND 63),
            pin_retries INTEGER NOT NULL CHECK (pin_retries BETWEEN 0 AND 8),
            uv_retries INTEGER NOT NULL CHECK (uv_retries BETWEEN 0 AND 8),
            min_pin_length INTEGER NOT NULL CHECK (min_pin_length BETWEEN 4 AND 63),
            min_pin_length_rp_ids TEXT NOT NULL,
            always_uv INTEGER NOT NULL CHECK (always_uv IN (0, 1)),
            force_pin_change INTEGER NOT NULL CHECK (force_pin_change IN (0, 1))
        ) STRICT;
        """

    /// Schema version 3: the settings row carries an HMAC of its columns. (The credentials table does not change;
    /// version 3 seals each private key with the whole row as associated data, see `RowAuthentication`.)
    static let version3 = "ALTER TABLE authenticator_settings ADD COLUMN mac BLOB;"

    /// Schema version 4: saved passwords (`SQLiteCredentialStore+Passwords.swift`). Each password is sealed with
    /// AES-256-GCM under the store key, with every other column of its row as associated data (`RowAuthentication`).
    static let version4 = """
        CREATE TABLE passwords (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            password_id BLOB NOT NULL CHECK (length(password_id) = 16),
            service TEXT NOT NULL CHECK (length(service) BETWEEN 1 AND 1024),
            user_name TEXT NOT NULL CHECK (length(user_name) <= 1024),
            created_ms INTEGER NOT NULL,
            modified_ms INTEGER NOT NULL,
            rank INTEGER NOT NULL,
            sealed_password BLOB NOT NULL
        ) STRICT;
        CREATE UNIQUE INDEX passwords_by_id ON passwords (password_id);
        CREATE UNIQUE INDEX passwords_by_account ON passwords (service, user_name);
        """

    /// Schema version 5 (CTAP 2.2 and notes): a credential's thirdPartyPayment flag, the sealed device secret the
    /// persistent read-only token derives from (``AuthenticatorSettings/deviceSecret``), and a sealed note per passkey
    /// and per password. The new credential and settings columns are authenticated only when set (`RowAuthentication`),
    /// so every row written before reads unchanged and the upgrade rewrites none.
    static let version5 = """
        ALTER TABLE credentials ADD COLUMN third_party_payment INTEGER NOT NULL DEFAULT 0
            CHECK (third_party_payment IN (0, 1));
        ALTER TABLE credentials ADD COLUMN sealed_note BLOB;
        ALTER TABLE passwords ADD COLUMN sealed_note BLOB;
        ALTER TABLE authenticator_settings ADD COLUMN sealed_device_secret BLOB;
        """

    /// Schema version 6: when a relying party's signal hid a passkey (`hidden_ms`, NULL while it is shown), authenticated
    /// only when set like version 5's columns, so the upgrade rewrites no row.
    /// And when this program last gave a saved password to a page (`filled_ms`), which lets that account's passkey be
    /// made by a conditional create (Docs/Client.md, "Automatic passkey upgrades"), authenticated only when set.
    /// And the one-time-code secrets (`oneTimeCodes`).
    static let version6 = """
        ALTER TABLE credentials ADD COLUMN hidden_ms INTEGER;
        ALTER TABLE passwords ADD COLUMN filled_ms INTEGER;
        \(oneTimeCodes)
        """

    /// One-time-code secrets (`SQLiteCredentialStore+OneTimeCodes.swift`), part of schema version 6: a TOTP's
    /// parameters and its secret, sealed with AES-256-GCM under the store key with every other column of its row as
    /// associated data (`RowAuthentication`), as passwords are. The upgrade adds the table and rewrites no row.
    static let oneTimeCodes = """
        CREATE TABLE one_time_codes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            code_id BLOB NOT NULL CHECK (length(code_id) = 16),
            service TEXT NOT NULL CHECK (length(service) BETWEEN 1 AND 1024),
            user_name TEXT NOT NULL CHECK (length(user_name) <= 1024),
            issuer TEXT CHECK (issuer IS NULL OR length(issuer) <= 1024),
            algorithm TEXT NOT NULL CHECK (algorithm IN ('SHA1', 'SHA256', 'SHA512')),
            digits INTEGER NOT NULL CHECK (digits BETWEEN 6 AND 8),
            period INTEGER NOT NULL CHECK (period BETWEEN 1 AND 3600),
            created_ms INTEGER NOT NULL,
            sealed_secret BLOB NOT NULL
        ) STRICT;
        CREATE UNIQUE INDEX one_time_codes_by_id ON one_time_codes (code_id);
        CREATE UNIQUE INDEX one_time_codes_by_account ON one_time_codes (service, user_name);
        """

    /// The one-time-code columns the seal authenticates, in `OneTimeCodeColumn` order.
    static let oneTimeCodeAuthenticatedColumns =
        "code_id, service, user_name, issuer, algorithm, digits, period, created_ms"
    static let oneTimeCodeColumns = "seq, \(oneTimeCodeAuthenticatedColumns), sealed_secret"
    static let selectOneTimeCodes =
        "SELECT \(oneTimeCodeColumns) FROM one_time_codes ORDER BY service, user_name"
    static let selectOneTimeCodesOfService =
        "SELECT \(oneTimeCodeColumns) FROM one_time_codes WHERE service = ? ORDER BY user_name"
    /// An add: a login that already has a code keeps it (0 changes).
    static let insertOneTimeCodeUnlessPresent = """
        INSERT INTO one_time_codes (\(oneTimeCodeAuthenticatedColumns), sealed_secret) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (service, user_name) DO NOTHING
        """
    static let deleteOneTimeCode =
        "DELETE FROM one_time_codes WHERE service = ? AND user_name = ? RETURNING code_id"

    /// An import's password insert: a login already in the store is left as it is (0 changes).
    static let insertPasswordUnlessPresent = """
        INSERT INTO passwords (\(passwordAuthenticatedColumns), sealed_password) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (service, user_name) DO NOTHING
        """

    /// The password columns the seal authenticates, in `PasswordColumn` order.
    static let passwordAuthenticatedColumns =
        "password_id, service, user_name, created_ms, modified_ms, rank, filled_ms"
    static let passwordColumns = "seq, \(passwordAuthenticatedColumns), sealed_password"
    static let selectPasswords = "SELECT \(passwordColumns) FROM passwords ORDER BY service, user_name"
    static let selectPasswordsOfService =
        "SELECT \(passwordColumns) FROM passwords WHERE service = ? ORDER BY user_name"
    static let selectPassword = "SELECT \(passwordColumns) FROM passwords WHERE service = ? AND user_name = ?"
    static let selectPasswordByID = "SELECT \(passwordColumns) FROM passwords WHERE password_id = ?"
    /// The rows whose recorded fill is at or after a time; the seal covers `filled_ms`, so each is still checked.
    static let selectPasswordsFilledSince = "SELECT \(passwordColumns) FROM passwords WHERE filled_ms >= ?"
    static let insertPassword = """
        INSERT INTO passwords (\(passwordAuthenticatedColumns), sealed_password) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        """
    static let updatePassword = """
        UPDATE passwords SET modified_ms = ?, rank = ?, sealed_password = ? WHERE password_id = ?
        """
    static let updatePasswordUse = """
        UPDATE passwords SET rank = ?, filled_ms = ?, sealed_password = ? WHERE password_id = ?
        """
    static let deletePassword = "DELETE FROM passwords WHERE service = ? AND user_name = ? RETURNING password_id"
    static let maximumPasswordRank = "SELECT max(rank) FROM passwords WHERE service = ?"

    /// The settings columns the MAC covers, in `SettingsRecord` order.
    static let settingsColumns = """
        sealed_pin_hash, pin_code_points, pin_retries, uv_retries, min_pin_length, min_pin_length_rp_ids, always_uv,
        force_pin_change, sealed_device_secret
        """

    static let selectSettings = "SELECT \(settingsColumns), mac FROM authenticator_settings"

    static let upsertSettings = """
        INSERT OR REPLACE INTO authenticator_settings (singleton, \(settingsColumns), mac)
        VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    static let selectLargeBlobArray = "SELECT serialized FROM large_blob_array"
    static let upsertLargeBlobArray = "INSERT OR REPLACE INTO large_blob_array (singleton, serialized) VALUES (1, ?)"
    static let deleteLargeBlobArray = "DELETE FROM large_blob_array"

    static let insertMeta = """
        INSERT INTO meta (singleton, kdf_algorithm, kdf_rounds, kdf_block_size, kdf_parallelism, kdf_output_length,
            kdf_salt, key_check, created_ms)
        VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    static let selectMeta = """
        SELECT kdf_algorithm, kdf_rounds, kdf_block_size, kdf_parallelism, kdf_output_length, kdf_salt, key_check
        FROM meta
        """

    /// Every credential column but `seq` and the sealed key, in `CredentialColumn` order: what the seal
    /// authenticates.
    static let authenticatedColumns = """
        credential_id, rp_id, rp_name, user_handle, user_name, user_display_name, discoverable, backup_eligible,
        backup_state, created_ms, cred_protect, cred_blob, hmac_secret, large_blob_key, third_party_payment, hidden_ms
        """

    static let credentialColumns = "seq, \(authenticatedColumns), sealed_private_key"

    static let selectByID = "SELECT \(credentialColumns) FROM credentials WHERE credential_id = ?"
    static let selectByRelyingParty =
        "SELECT \(credentialColumns) FROM credentials WHERE rp_id = ? ORDER BY created_ms DESC, seq DESC"
    static let selectAll =
        "SELECT \(credentialColumns) FROM credentials ORDER BY rp_id, created_ms DESC, seq DESC"

    static let insert = """
        INSERT INTO credentials (\(authenticatedColumns), sealed_private_key)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// An import's insert: a credential ID already in the store is left as it is (0 changes).
    static let insertUnlessPresent = """
        INSERT INTO credentials (\(authenticatedColumns), sealed_private_key)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (credential_id) DO NOTHING
        """

    static let deleteDiscoverable =
        "DELETE FROM credentials WHERE discoverable = 1 AND rp_id = ? AND user_handle = ? RETURNING credential_id"
    static let deleteByID = "DELETE FROM credentials WHERE credential_id = ?"
    static let updateUser = """
        UPDATE credentials SET user_name = ?, user_display_name = ?, sealed_private_key = ? WHERE credential_id = ?
        """
    static let updateHidden = "UPDATE credentials SET hidden_ms = ?, sealed_private_key = ? WHERE credential_id = ?"
    /// Passkeys hidden before a time (the grace period's end), deleted from their rows alone.
    static let deleteHiddenBefore =
        "DELETE FROM credentials WHERE hidden_ms IS NOT NULL AND hidden_ms < ? RETURNING credential_id"
    static let countHiddenBefore = "SELECT count(*) FROM credentials WHERE hidden_ms IS NOT NULL AND hidden_ms < ?"
    static let updateSealedKey = "UPDATE credentials SET sealed_private_key = ? WHERE seq = ?"
    static let deleteAll = "DELETE FROM credentials"

    static let selectNote = "SELECT sealed_note FROM credentials WHERE credential_id = ?"
    static let updateNote = "UPDATE credentials SET sealed_note = ? WHERE credential_id = ?"
    static let selectNotes = "SELECT credential_id, sealed_note FROM credentials WHERE sealed_note IS NOT NULL"
    static let selectPasswordNote = "SELECT sealed_note FROM passwords WHERE password_id = ?"
    static let updatePasswordNote = "UPDATE passwords SET sealed_note = ? WHERE password_id = ?"
    static let selectPasswordNotes = "SELECT password_id, sealed_note FROM passwords WHERE sealed_note IS NOT NULL"

    /// The statements `open` prepares to prove the schema has every column they use.
    static let all = [
        selectMeta, selectByID, selectByRelyingParty, selectAll, insert, insertUnlessPresent, deleteDiscoverable,
        deleteByID, deleteAll,
        selectSettings, upsertSettings, updateUser, updateSealedKey, selectLargeBlobArray, upsertLargeBlobArray,
        deleteLargeBlobArray, selectPasswords, selectPasswordsOfService, selectPassword, selectPasswordByID,
        selectPasswordsFilledSince,
        insertPassword, updatePassword, deletePassword, maximumPasswordRank, selectNote, updateNote, selectNotes,
        selectPasswordNote, updatePasswordNote, selectPasswordNotes, updateHidden, updatePasswordUse,
        deleteHiddenBefore, countHiddenBefore, insertPasswordUnlessPresent, selectOneTimeCodes,
        selectOneTimeCodesOfService, insertOneTimeCodeUnlessPresent, deleteOneTimeCode,
    ]
}
