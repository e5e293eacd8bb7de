import CTAP2
import Foundation
import PasskeyFilesIO

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The claim of one authenticator process on a store: an exclusive `flock(2)` on `<store>.lock`.
///
/// An authenticator keeps the PIN and user-verification settings (PIN hash, retry counters, alwaysUv) in memory
/// after reading them once, which is right only while it is the store's one authenticator. `passkey serve` and
/// `passkey scan` therefore take this lock before opening the store, and a second one is refused with the first
/// one's process ID. Commands that only read or delete passkeys (`list`, `info`, `delete`) do not take it.
///
/// The lock belongs to the open file description, so it ends with the process however the process ends (even
/// SIGKILL); the file itself stays, holding the last owner's process ID, and is reused.
///
/// The lock file is named after the store's resolved path (`realpath(3)`: every symbolic link in it followed), not
/// the text the person gave: a second process that reaches the same store through a link takes the same lock.
/// Hard links are not followed; SQLite itself does not support a database with two names (its journal is named
/// after the path), so a store must not have one.
public final class StoreLock: Sendable {
    /// The lock file's path: the store's path with `.lock` appended.
    public let path: String
    private let descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit {
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    /// Takes the lock for the store at `storeURL`, creating its directory (0700) and the lock file (0600) if needed.
    ///
    /// Fails at once with `.busy`, naming the holder's process ID, when another process holds it; never waits.
    public static func acquire(forStore storeURL: URL) throws(CredentialStoreError) -> StoreLock {
        try StoreFiles.makePrivateDirectory(storeURL.standardizedFileURL.deletingLastPathComponent().path)
        let path = PasskeyFiles(store: resolved(storeURL)).lock.path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw CredentialStoreError(.io, "cannot open the lock file \(path): \(StoreFiles.describe(errno))")
        }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            if error == EINTR { continue }
            let holder = error == EWOULDBLOCK ? Self.recordedProcessID(descriptor) : nil
            close(descriptor)
            guard error == EWOULDBLOCK else {
                throw CredentialStoreError(.io, "cannot lock \(path): \(StoreFiles.describe(error))")
            }
            let pid = holder.map { "pid \($0)" } ?? "pid unknown"
            throw CredentialStoreError(
                .busy,
                "the passkey store at \(storeURL.standardizedFileURL.path) is in use by another passkey process "
                    + "(\(pid)); stop it first, or choose another store with --store"
            )
        }
        _ = fchmod(descriptor, 0o600)
        let record = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = record.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return StoreLock(path: path, descriptor: descriptor)
    }

    /// `store` with every symbolic link followed: the whole path when the store exists, otherwise its directory's,
    /// with the file name kept (a store about to be created); the path as given when even the directory cannot be
    /// resolved.
    public static func resolved(_ store: URL) -> URL {
        let path = store.standardizedFileURL.path
        if let real = realPath(path) { return URL(fileURLWithPath: real) }
        let name = (path as NSString).lastPathComponent
        if let directory = realPath((path as NSString).deletingLastPathComponent) {
            return URL(fileURLWithPath: directory).appendingPathComponent(name)
        }
        return URL(fileURLWithPath: path)
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The process ID the current holder wrote into the lock file, if it is readable.
    private static func recordedProcessID(_ descriptor: Int32) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: bytes[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Int32(text)
    }
}
