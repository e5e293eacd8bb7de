import Basics
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The index file's JSON, the wire form of `CredentialIdentityIndex`:
///
/// ```json
/// { "format": "passkey-credential-identity-index", "version": 1,
///   "identities": [ { "serviceIdentifier": "example.com", "userName": "alice", "userDisplayName": "Alice",
///                     "credentialID": "<base64url>", "userHandle": "<base64url>", "discoverable": true,
///                     "created": 1764000000123, "lastUsed": 1764000300456, "rank": 0 } ] }
/// ```
///
/// Dates are milliseconds since 1970 (UTC); `userName`, `userDisplayName` and `lastUsed` may be absent. Every other
/// field must be there with exactly its type; unknown fields are ignored, so a later version can add some.
struct IndexDocument: Codable {
    static let formatName = "passkey-credential-identity-index"
    static let currentVersion = 1

    struct Identity: Codable {
        var serviceIdentifier: String
        var userName: String?
        var userDisplayName: String?
        var credentialID: String
        var userHandle: String
        var discoverable: Bool
        var created: Int64
        var lastUsed: Int64?
        var rank: Int
    }

    var format: String
    var version: Int
    var identities: [Identity]

    /// Why a file is not an index, as `CredentialIdentityIndexError.reason` says it.
    struct Problem: Error {
        var reason: String
    }

    static func encode(_ index: CredentialIdentityIndex) -> [UInt8] {
        let document = IndexDocument(
            format: formatName,
            version: currentVersion,
            identities: index.identities.map { identity in
                Identity(
                    serviceIdentifier: identity.serviceIdentifier,
                    userName: identity.userName,
                    userDisplayName: identity.userDisplayName,
                    credentialID: identity.credentialID.base64URLEncodedString,
                    userHandle: identity.userHandle.base64URLEncodedString,
                    discoverable: identity.isDiscoverable,
                    created: identity.creationDate.milliseconds,
                    lastUsed: identity.lastUsedDate?.milliseconds,
                    rank: identity.rank
                )
            }
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Strings, integers and booleans only: encoding cannot fail.
        return Array((try? encoder.encode(document)) ?? Data()) + [UInt8(ascii: "\n")]
    }

    static func decode(_ bytes: [UInt8]) throws(Problem) -> CredentialIdentityIndex {
        let document: IndexDocument
        do {
            document = try JSONDecoder().decode(IndexDocument.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw Problem(reason: describe(error))
        } catch {
            throw Problem(reason: "it is not JSON")
        }
        guard document.format == formatName else { throw Problem(reason: "it is not a passkey index") }
        guard document.version == currentVersion else {
            throw Problem(reason: "its format version \(document.version) is unknown")
        }
        var identities: [CredentialIdentity] = []
        identities.reserveCapacity(document.identities.count)
        var seen: Set<[UInt8]> = []
        for (position, entry) in document.identities.enumerated() {
            let what = "identity \(position + 1)"
            guard let id = [UInt8](base64URLEncoded: entry.credentialID), (1...1023).contains(id.count) else {
                throw Problem(reason: "\(what) has no valid credential ID")
            }
            guard let userHandle = [UInt8](base64URLEncoded: entry.userHandle), userHandle.count <= 64 else {
                throw Problem(reason: "\(what) has no valid user handle")
            }
            guard !entry.serviceIdentifier.isEmpty else { throw Problem(reason: "\(what) has no relying party") }
            guard abs(entry.created) < 9_000_000_000_000_000, abs(entry.lastUsed ?? 0) < 9_000_000_000_000_000 else {
                throw Problem(reason: "\(what) has a date out of range")
            }
            guard seen.insert(id).inserted else { throw Problem(reason: "\(what) repeats a credential ID") }
            identities.append(
                CredentialIdentity(
                    serviceIdentifier: entry.serviceIdentifier,
                    userName: entry.userName,
                    userDisplayName: entry.userDisplayName,
                    credentialID: id,
                    userHandle: userHandle,
                    isDiscoverable: entry.discoverable,
                    creationDate: Date(milliseconds: entry.created),
                    rank: entry.rank,
                    lastUsedDate: entry.lastUsed.map { Date(milliseconds: $0) }
                ))
        }
        return CredentialIdentityIndex(identities: identities)
    }

    /// Names the field at fault, never its value.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let names = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return names.isEmpty ? "the top level" : names.joined(separator: ".")
        }
        switch error {
        case .typeMismatch(_, let context): return "\(path(context)) has the wrong type"
        case .valueNotFound(_, let context): return "\(path(context)) is null"
        case .keyNotFound(let key, let context):
            return "\(context.codingPath.isEmpty ? "" : path(context) + ".")\(key.stringValue) is missing"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "it is not JSON" : "\(path(context)) is not valid"
        @unknown default: return "it is not an index"
        }
    }
}

/// The POSIX file operations of the index: a bounded read, an atomic owner-only replace, a removal.
enum IndexFiles {
    enum Contents {
        case missing
        case failed(String)
        case bytes([UInt8])
    }

    /// The whole file at `path` if it is a regular file of at most `limit` bytes (a symbolic link is refused).
    static func contents(of path: String, limit: Int) -> Contents {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            let error = errno
            return error == ENOENT ? .missing : .failed("cannot read it: \(StoreFiles.describe(error))")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            return .failed("it is not a regular file")
        }
        guard Int(info.st_size) <= limit else { return .failed("it is larger than \(limit >> 20) MiB") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= limit {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return .failed("cannot read it: \(StoreFiles.describe(errno))") }
            if count == 0 { return .bytes(bytes) }
            bytes += chunk[0..<count]
        }
        return .failed("it is larger than \(limit >> 20) MiB")
    }

    /// Replaces the file at `path` with `bytes` atomically: written to a new owner-only (0600) file in the same
    /// directory, then renamed over it, so a reader sees the old index or the new one, never a mixture.
    static func replace(_ path: String, with bytes: [UInt8]) throws(IndexDocument.Problem) {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let temporary = (directory as NSString).appendingPathComponent(
            ".\(name).\(StoreFiles.randomBytes(8).hexString).tmp")
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw IndexDocument.Problem(reason: "cannot create \(temporary): \(StoreFiles.describe(errno))")
        }
        var written = 0
        var failure: Int32 = 0
        // O_CREAT applies the umask, which can only remove bits; set the exact mode anyway.
        if fchmod(descriptor, 0o600) != 0 { failure = errno }
        while failure == 0, written < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                failure = errno
            } else {
                written += count
            }
        }
        close(descriptor)
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else {
            _ = unlink(temporary)
            throw IndexDocument.Problem(reason: "cannot write \(path): \(StoreFiles.describe(failure))")
        }
    }

    /// Removes the file at `path`, if it is there.
    static func remove(_ path: String) {
        _ = unlink(path)
    }
}
