import Basics
import Foundation

/// Why the relying party state could not be read or written. The file is never changed when loading fails.
///
/// `code` is stable; `description` names the file and the reason, for people. Equality uses the code only.
public struct RelyingPartyStateError: CodedError {
    /// A stable identifier for each kind of failure.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// The file exists but could not be read.
        case unreadable
        /// The file is larger than ``RelyingPartyState/maximumFileSize``.
        case tooLarge
        /// The file is not the JSON this type writes.
        case invalid
        /// The file has a version this build does not read.
        case unsupportedVersion
        /// The file could not be written or renamed into place.
        case unwritable
    }

    /// The stable kind of failure.
    public var code: Code
    /// A one-line explanation naming the file.
    public var description: String

    /// An error of kind `code`, explained by `description`.
    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

/// What a relying party remembers: the credential records of registered accounts, as JSON (`--rp-state FILE`,
/// shared by `passkey client` and `passkey rp serve`). It holds public keys, and for `rp serve`'s password sign-in
/// salted scrypt hashes, never a secret.
///
/// ```json
/// {"version": 1, "accounts": [{"rpID": "example.com", "userName": "alice", "registered": "2026-…Z",
///   "credential": {"id": "…", "publicKey": "…", "signCount": 0, …}}]}
/// ```
///
/// This type is the value and its JSON form; reading and writing the file (atomically, mode 0600, with a journal
/// of changes beside it) is `WebRelyingPartyIO`'s `load(from:)`, `save(to:)` and `RelyingPartyStateFile`.
public struct RelyingPartyState: Hashable, Sendable, Codable {
    /// One registered account.
    public struct Account: Hashable, Sendable, Codable {
        public var rpID: String
        public var userName: String
        public var registered: Date
        public var credential: CredentialRecord

        public init(rpID: String, userName: String, registered: Date, credential: CredentialRecord) {
            self.rpID = rpID
            self.userName = userName
            self.registered = registered
            self.credential = credential
        }
    }

    /// What the web relying party keeps of a user beyond the passkeys: the display name and, for an account that
    /// signs in with a password too, that password's scrypt hash (never the password). The key is the RP ID and the
    /// user name; `userHandle` is the WebAuthn user handle its passkeys are registered under.
    ///
    /// ```json
    /// {"rpID": "example.com", "userName": "alice", "displayName": "Alice", "userHandle": "<base64url>",
    ///  "password": {"kdf": "scrypt", "rounds": 16384, "blockSize": 8, "parallelism": 1, "salt": "…", "hash": "…"}}
    /// ```
    public struct User: Hashable, Sendable, Codable {
        public var rpID: String
        public var userName: String
        /// The name shown for the account; nil means the user name.
        public var displayName: String?
        /// The user handle, unpadded base64url in JSON.
        public var userHandle: [UInt8]
        public var password: PasswordHash?

        public init(rpID: String, userName: String, displayName: String?, userHandle: [UInt8], password: PasswordHash?)
        {
            self.rpID = rpID
            self.userName = userName
            self.displayName = displayName
            self.userHandle = userHandle
            self.password = password
        }

        private enum CodingKeys: String, CodingKey { case rpID, userName, displayName, userHandle, password }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            rpID = try container.decode(String.self, forKey: .rpID)
            userName = try container.decode(String.self, forKey: .userName)
            displayName = try container.decodeIfPresent(String.self, forKey: .displayName)
            userHandle = try PasswordHash.bytes(container, .userHandle)
            password = try container.decodeIfPresent(PasswordHash.self, forKey: .password)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(rpID, forKey: .rpID)
            try container.encode(userName, forKey: .userName)
            try container.encodeIfPresent(displayName, forKey: .displayName)
            try container.encode(userHandle.base64URLEncodedString, forKey: .userHandle)
            try container.encodeIfPresent(password, forKey: .password)
        }
    }

    /// A password's scrypt hash (RFC 7914) with its salt and parameters; byte strings are unpadded base64url in JSON.
    public struct PasswordHash: Hashable, Sendable, Codable {
        /// Always `scrypt`.
        public var kdf: String
        public var rounds: Int
        public var blockSize: Int
        public var parallelism: Int
        public var salt: [UInt8]
        public var hash: [UInt8]

        public init(rounds: Int, blockSize: Int, parallelism: Int, salt: [UInt8], hash: [UInt8]) {
            kdf = "scrypt"
            self.rounds = rounds
            self.blockSize = blockSize
            self.parallelism = parallelism
            self.salt = salt
            self.hash = hash
        }

        private enum CodingKeys: String, CodingKey { case kdf, rounds, blockSize, parallelism, salt, hash }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            kdf = try container.decode(String.self, forKey: .kdf)
            guard kdf == "scrypt" else {
                throw DecodingError.dataCorruptedError(
                    forKey: .kdf, in: container, debugDescription: "the password hash is not scrypt")
            }
            rounds = try container.decode(Int.self, forKey: .rounds)
            blockSize = try container.decode(Int.self, forKey: .blockSize)
            parallelism = try container.decode(Int.self, forKey: .parallelism)
            salt = try Self.bytes(container, .salt)
            hash = try Self.bytes(container, .hash)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(kdf, forKey: .kdf)
            try container.encode(rounds, forKey: .rounds)
            try container.encode(blockSize, forKey: .blockSize)
            try container.encode(parallelism, forKey: .parallelism)
            try container.encode(salt.base64URLEncodedString, forKey: .salt)
            try container.encode(hash.base64URLEncodedString, forKey: .hash)
        }

        static func bytes<Key: CodingKey>(_ container: KeyedDecodingContainer<Key>, _ key: Key) throws -> [UInt8] {
            let text = try container.decode(String.self, forKey: key)
            guard let bytes = [UInt8](base64URLEncoded: text), !bytes.isEmpty else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container, debugDescription: "not unpadded base64url")
            }
            return bytes
        }
    }

    public static let currentVersion = 1
    /// The largest state file read: anything bigger is not one of ours.
    public static let maximumFileSize = 16 << 20

    public var version = Self.currentVersion
    public var accounts: [Account] = []
    /// Display names and passwords (`rp serve`'s password sign-in); absent from the JSON when empty.
    public var users: [User] = []

    public init() {}

    private enum CodingKeys: String, CodingKey { case version, accounts, users }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        accounts = try container.decode([Account].self, forKey: .accounts)
        users = try container.decodeIfPresent([User].self, forKey: .users) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(accounts, forKey: .accounts)
        if !users.isEmpty { try container.encode(users, forKey: .users) }
    }

    /// The user record of `userName` at `rpID`, if there is one.
    public func user(rpID: String, userName: String) -> User? {
        users.first { $0.rpID == rpID && $0.userName == userName }
    }

    /// Sets a user record whole: replaces the one with the same RP ID and user name where it is, or adds it at the end.
    public mutating func set(_ user: User) {
        if let index = users.firstIndex(where: { $0.rpID == user.rpID && $0.userName == user.userName }) {
            users[index] = user
        } else {
            users.append(user)
        }
    }

    /// The accounts of one relying party.
    public func accounts(for rpID: String) -> [Account] { accounts.filter { $0.rpID == rpID } }

    /// Adds a registration at the end, or replaces the record with the same credential ID where it is.
    public mutating func add(_ account: Account) {
        if let index = accounts.firstIndex(where: { $0.credential.id == account.credential.id }) {
            accounts[index] = account
        } else {
            accounts.append(account)
        }
    }

    /// Removes the account of credential `id` of relying party `rpID`: the removed account, or nil when there was none.
    @discardableResult
    public mutating func remove(credentialID id: [UInt8], rpID: String) -> Account? {
        guard let index = accounts.firstIndex(where: { $0.rpID == rpID && $0.credential.id == id }) else { return nil }
        return accounts.remove(at: index)
    }

    /// Stores the record an authentication returned (new sign count, backup state).
    public mutating func update(_ credential: CredentialRecord) {
        guard let index = accounts.firstIndex(where: { $0.credential.id == credential.id }) else { return }
        accounts[index].credential = credential
    }

    /// Reads the JSON form; `source` names the file in error messages.
    public init(jsonData data: Data, source: String) throws(RelyingPartyStateError) {
        guard data.count <= Self.maximumFileSize else {
            throw RelyingPartyStateError(.tooLarge, "the relying party state \(source) is larger than 16 MiB: not ours")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            self = try decoder.decode(RelyingPartyState.self, from: data)
        } catch {
            throw RelyingPartyStateError(
                .invalid,
                "the relying party state \(source) is not a valid state file (\(Self.describe(error))); "
                    + "it was left unchanged")
        }
        guard version == Self.currentVersion else {
            throw RelyingPartyStateError(
                .unsupportedVersion,
                "the relying party state \(source) has version \(version); this passkey reads version 1")
        }
    }

    /// The JSON form: pretty-printed, keys sorted, dates in ISO 8601, slashes unescaped.
    public func jsonData() throws(RelyingPartyStateError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        do {
            return try encoder.encode(self)
        } catch {
            throw RelyingPartyStateError(.unwritable, "cannot encode the relying party state: \(error)")
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context), DecodingError.keyNotFound(_, let context),
            DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        default:
            return String(describing: error)
        }
    }
}
