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
/// shared by `passkey client` and `passkey rp serve`). It holds public keys only.
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

    public static let currentVersion = 1
    /// The largest state file read: anything bigger is not one of ours.
    public static let maximumFileSize = 16 << 20

    public var version = Self.currentVersion
    public var accounts: [Account] = []

    public init() {}

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
