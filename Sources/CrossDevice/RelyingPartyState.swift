import Foundation
import RelyingParty

/// Why the relying party state file could not be used. The file is never changed when loading fails.
public struct RelyingPartyStateError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String

    init(_ description: String) { self.description = description }
}

/// What the client role remembers as the relying party would: the credential records of registered accounts,
/// in a JSON file (`--rp-state FILE`). It holds public keys only; it is written atomically with mode 0600.
///
/// ```json
/// {"version": 1, "accounts": [{"rpID": "example.com", "userName": "alice", "registered": "2026-…Z",
///   "credential": {"id": "…", "publicKey": "…", "signCount": 0, …}}]}
/// ```
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

    public var version = Self.currentVersion
    public var accounts: [Account] = []

    public init() {}

    /// The accounts of one relying party.
    public func accounts(for rpID: String) -> [Account] { accounts.filter { $0.rpID == rpID } }

    /// Adds a registration, or replaces the record with the same credential ID.
    public mutating func add(_ account: Account) {
        accounts.removeAll { $0.credential.id == account.credential.id }
        accounts.append(account)
    }

    /// Stores the record an authentication returned (new sign count, backup state).
    public mutating func update(_ credential: CredentialRecord) {
        guard let index = accounts.firstIndex(where: { $0.credential.id == credential.id }) else { return }
        accounts[index].credential = credential
    }

    /// The file's default place: `rp-state.json` beside the default passkey store.
    public static func defaultURL(storeURL: URL) -> URL {
        storeURL.deletingLastPathComponent().appendingPathComponent("rp-state.json")
    }

    /// Reads the file; a missing file is an empty state. Anything unreadable is an error naming the file.
    public static func load(from url: URL) throws(RelyingPartyStateError) -> RelyingPartyState {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            return RelyingPartyState()
        } catch {
            throw RelyingPartyStateError(
                "cannot read the relying party state \(url.path): \(error.localizedDescription)")
        }
        guard data.count <= 16 << 20 else {
            throw RelyingPartyStateError("the relying party state \(url.path) is larger than 16 MiB: not ours")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let state: RelyingPartyState
        do {
            state = try decoder.decode(RelyingPartyState.self, from: data)
        } catch {
            throw RelyingPartyStateError(
                "the relying party state \(url.path) is not a valid state file (\(Self.describe(error))); "
                    + "it was left unchanged")
        }
        guard state.version == currentVersion else {
            throw RelyingPartyStateError(
                "the relying party state \(url.path) has version \(state.version); this passkey reads version 1")
        }
        return state
    }

    /// Writes the file atomically (a 0600 temporary file renamed over it).
    public func save(to url: URL) throws(RelyingPartyStateError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        do {
            let data = try encoder.encode(self)
            let directory = url.deletingLastPathComponent()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
            guard
                FileManager.default.createFile(
                    atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600])
            else {
                throw RelyingPartyStateError("cannot write \(temporary.path)")
            }
            guard rename(temporary.path, url.path) == 0 else {
                let reason = String(cString: strerror(errno))
                try? FileManager.default.removeItem(at: temporary)
                throw RelyingPartyStateError("cannot replace \(url.path): \(reason)")
            }
        } catch let error as RelyingPartyStateError {
            throw error
        } catch {
            throw RelyingPartyStateError(
                "cannot save the relying party state \(url.path): \(error.localizedDescription)")
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
