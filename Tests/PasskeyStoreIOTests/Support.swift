import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh directory under the system temporary directory, removed when the last reference goes.
final class Scratch: Sendable {
    private let temporary: TemporaryDirectory

    init() throws {
        temporary = try TemporaryDirectory(prefix: "passkey-store-tests")
    }

    var directory: URL { temporary.url }

    /// A path inside the scratch directory.
    func url(_ name: String = "passkeys.sqlite") -> URL {
        directory.appendingPathComponent(name)
    }

    /// A new store at `url()` with the cheap test parameters.
    func makeStore(_ name: String = "passkeys.sqlite", passphrase: String = "correct horse") throws
        -> SQLiteCredentialStore
    {
        try SQLiteCredentialStore.create(at: url(name), passphrase: passphrase, kdf: .testing)
    }
}

/// Random bytes for IDs and handles.
func randomBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0...255) }
}

/// Lowercase hex, as the store's messages name credentials.
func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { byte in
        let digits = String(byte, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }.joined()
}

/// A credential with a fresh key and random ID.
func makeCredential(
    relyingParty: String = "example.com",
    userHandle: [UInt8] = [1, 2, 3],
    discoverable: Bool = true,
    date: Date = Date(timeIntervalSince1970: 1_700_000_000),
    userName: String? = "alice@example.com"
) -> StoredCredential {
    StoredCredential(
        id: randomBytes(16),
        relyingPartyID: relyingParty,
        relyingPartyName: "Example",
        userHandle: userHandle,
        userName: userName,
        userDisplayName: "Alice",
        privateKey: P256.Signing.PrivateKey(compactRepresentable: false),
        isDiscoverable: discoverable,
        backupEligible: false,
        backupState: false,
        creationDate: date
    )
}

/// Checks that two credentials agree in every field, the private key included.
func expectSame(
    _ actual: StoredCredential?, _ expected: StoredCredential, sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let actual else {
        Issue.record("credential \(expected.id) is missing", sourceLocation: sourceLocation)
        return
    }
    #expect(actual.id == expected.id, sourceLocation: sourceLocation)
    #expect(actual.relyingPartyID == expected.relyingPartyID, sourceLocation: sourceLocation)
    #expect(actual.relyingPartyName == expected.relyingPartyName, sourceLocation: sourceLocation)
    #expect(actual.userHandle == expected.userHandle, sourceLocation: sourceLocation)
    #expect(actual.userName == expected.userName, sourceLocation: sourceLocation)
    #expect(actual.userDisplayName == expected.userDisplayName, sourceLocation: sourceLocation)
    #expect(
        actual.privateKey.storedRepresentation == expected.privateKey.storedRepresentation,
        sourceLocation: sourceLocation
    )
    #expect(actual.isDiscoverable == expected.isDiscoverable, sourceLocation: sourceLocation)
    #expect(actual.backupEligible == expected.backupEligible, sourceLocation: sourceLocation)
    #expect(actual.backupState == expected.backupState, sourceLocation: sourceLocation)
    #expect(
        abs(actual.creationDate.timeIntervalSince(expected.creationDate)) < 0.001,
        sourceLocation: sourceLocation
    )
    #expect(actual.credentialProtection == expected.credentialProtection, sourceLocation: sourceLocation)
    #expect(actual.credentialBlob == expected.credentialBlob, sourceLocation: sourceLocation)
    #expect(actual.hmacSecret == expected.hmacSecret, sourceLocation: sourceLocation)
    #expect(actual.largeBlobKey == expected.largeBlobKey, sourceLocation: sourceLocation)
    #expect(actual.thirdPartyPayment == expected.thirdPartyPayment, sourceLocation: sourceLocation)
}

/// The SHA-256 of a file's bytes, to prove a failed open changed nothing.
func digest(of url: URL) throws -> [UInt8] {
    Array(SHA256.hash(data: try Data(contentsOf: url)))
}

/// The permission bits of a file, or nil if it does not exist.
func permissions(of url: URL) -> Int? {
    var info = stat()
    guard stat(url.path, &info) == 0 else { return nil }
    return Int(info.st_mode & 0o7777)
}

/// Expects `body` to throw a `CredentialStoreError` with `code`, and returns it for further checks.
@discardableResult
func expectStoreError<Result>(
    _ code: CredentialStoreError.Code,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Result
) -> CredentialStoreError? {
    do {
        _ = try body()
        Issue.record("expected a \(code) error, but the call succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as CredentialStoreError {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected a CredentialStoreError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Runs `python3 -c script args…` and returns its standard output; fails the test if it exits non-zero.
@discardableResult
func python(_ script: String, _ arguments: String...) async throws -> String {
    let result = try await ChildProcess.run("/usr/bin/env", ["python3", "-c", script] + arguments)
    guard result.termination.exitStatus == 0 else { throw PythonFailure(message: result.stderr) }
    return result.stdout
}

/// A python3 helper exited with an error.
struct PythonFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { "python3 failed: \(message)" }
}

/// A passkey with every protection a row can carry (credProtect level 3, credBlob, hmac-secret, largeBlobKey): the
/// one the hostile-row tests change with SQL.
func makeFullyProtectedCredential() -> StoredCredential {
    var credential = makeCredential()
    credential.credentialProtection = .userVerificationRequired
    credential.credentialBlob = [7, 7]
    credential.hmacSecret = true
    credential.largeBlobKey = true
    credential.thirdPartyPayment = true
    return credential
}

/// Runs `python3` with an SQL statement against the store at `url`, committing it: a change made outside this
/// program, as another process or someone without the passphrase would make it.
func execute(_ statement: String, on url: URL) async throws {
    try await python(
        "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute(sys.argv[2]); db.commit()", url.path,
        statement)
}
