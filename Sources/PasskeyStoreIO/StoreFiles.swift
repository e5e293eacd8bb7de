import CTAP2
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The POSIX file operations the store needs: private directories, exclusive creation, fsync, no-clobber moves.
enum StoreFiles {
    /// What `stat(2)` says about a path, or why it could not.
    enum Status {
        /// Nothing is there.
        case missing
        /// A regular file (after following symbolic links) of this many bytes.
        case regularFile(size: Int)
        /// Something other than a regular file: a directory, a device, a socket.
        case other
    }

    /// The status of `path`, following symbolic links; a dangling link counts as a file in the way.
    static func status(of path: String) throws(CredentialStoreError) -> Status {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFREG else { return .other }
            return .regularFile(size: Int(info.st_size))
        }
        let error = errno
        if error == ENOENT {
            // A dangling symbolic link is still a name in use.
            return lstat(path, &info) == 0 ? .other : .missing
        }
        throw CredentialStoreError(.io, "cannot examine \(path): \(describe(error))")
    }

    /// The permission bits of `path` (for example `0o600`), or nil when it cannot be examined.
    static func permissions(of path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    /// Refuses a store that SQLite could only open read-only, before SQLite opens anything.
    ///
    /// SQLite gives the `-wal` and `-shm` files it creates the store file's permissions, so opening a store whose
    /// file is read-only would leave read-only side files behind, which keep the store read-only after the file's
    /// mode is restored. The store file, its directory (where SQLite makes those files) and any side file already
    /// there must be writable, as `fileAccess` answers: `access(2)` in use, which answers for the real user, so root
    /// passes the permission checks.
    static func checkWritable(_ path: String, fileAccess: FileAccess) throws(CredentialStoreError) {
        if let error = fileAccess.refusal(path, R_OK | W_OK) {
            let mode = permissions(of: path).map { " (mode \(String($0, radix: 8)))" } ?? ""
            throw CredentialStoreError(
                .io,
                error == EROFS
                    ? "the passkey store at \(path) is on a read-only file system; passkey needs to write to it"
                    : "the passkey store at \(path) is not writable\(mode); passkey needs to write to it "
                        + "(chmod 600 \(path))"
            )
        }
        let directory = (path as NSString).deletingLastPathComponent
        if let error = fileAccess.refusal(directory.isEmpty ? "." : directory, W_OK | X_OK) {
            throw CredentialStoreError(
                .io,
                "the directory \(directory), which holds the passkey store, is not writable "
                    + "(\(describe(error))); SQLite keeps the store's -wal and -shm files next to it"
            )
        }
        for suffix in ["-wal", "-shm"] where fileAccess.refusal(path + suffix, F_OK) == nil {
            guard fileAccess.refusal(path + suffix, R_OK | W_OK) != nil else { continue }
            let mode = permissions(of: path + suffix).map { " (mode \(String($0, radix: 8)))" } ?? ""
            throw CredentialStoreError(
                .io,
                "\(path)\(suffix), a journal file of the passkey store, is not writable\(mode), so the store "
                    + "could only be read: make it writable (chmod 600 \(path)\(suffix))"
            )
        }
    }

    /// Creates `directory` and any missing parents with mode 0700, as the XDG base directory spec asks.
    static func makePrivateDirectory(_ directory: String) throws(CredentialStoreError) {
        var info = stat()
        if stat(directory, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw CredentialStoreError(.io, "cannot create the store in \(directory): it is not a directory")
            }
            return
        }
        let parent = (directory as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != directory {
            try makePrivateDirectory(parent)
        }
        if mkdir(directory, 0o700) != 0 {
            let error = errno
            guard error == EEXIST else {
                throw CredentialStoreError(.io, "cannot create directory \(directory): \(describe(error))")
            }
            return
        }
        // mkdir applies the umask; set the exact mode.
        _ = chmod(directory, 0o700)
    }

    /// Creates a new, empty file with mode 0600 from its first instant; fails if anything is already there.
    static func createExclusive(_ path: String) throws(CredentialStoreError) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw CredentialStoreError(.io, "cannot create \(path): \(describe(errno))")
        }
        // O_CREAT applies the umask, which can only remove bits; set the exact mode anyway.
        _ = fchmod(descriptor, 0o600)
        close(descriptor)
    }

    /// Flushes `path`'s data (or a directory's entries) to stable storage.
    static func synchronize(_ path: String, directory: Bool = false) throws(CredentialStoreError) {
        let descriptor = open(path, (directory ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CredentialStoreError(.io, "cannot open \(path) to flush it: \(describe(errno))")
        }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else {
            throw CredentialStoreError(.io, "cannot flush \(path) to disk: \(describe(errno))")
        }
    }

    /// Gives the file at `source` the name `destination`, failing rather than replacing an existing file.
    ///
    /// `link(2)` refuses an existing destination atomically; the temporary name is then removed.
    /// Returns false when `destination` already exists.
    static func moveWithoutReplacing(_ source: String, to destination: String) throws(CredentialStoreError) -> Bool {
        guard link(source, destination) == 0 else {
            let error = errno
            if error == EEXIST { return false }
            throw CredentialStoreError(.io, "cannot move the new store to \(destination): \(describe(error))")
        }
        _ = unlink(source)
        return true
    }

    /// Removes `path` and the side files SQLite may have made for it; ignores what is not there.
    static func removeDatabase(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            _ = unlink(path + suffix)
        }
    }

    /// Fills `count` bytes from the system's secure random number generator.
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// The first `count` bytes of `path`, fewer if the file is shorter.
    static func prefix(of path: String, count: Int) throws(CredentialStoreError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CredentialStoreError(.io, "cannot read \(path): \(describe(errno))")
        }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let result = bytes.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress! + filled, count - filled)
            }
            if result < 0, errno == EINTR { continue }
            guard result >= 0 else {
                throw CredentialStoreError(.io, "cannot read \(path): \(describe(errno))")
            }
            if result == 0 { break }
            filled += result
        }
        return Array(bytes[0..<filled])
    }

    /// `strerror` for an errno value.
    static func describe(_ error: Int32) -> String {
        String(cString: strerror(error))
    }
}

/// Whether this process may use a path as `access(2)` asks it: the question behind `StoreFiles.checkWritable`.
///
/// Always `.system` in use. It is a value so that the tests of a read-only store can run as root, as CI does:
/// `access(2)` grants root whatever the permission bits deny, so those tests answer from the bits instead.
struct FileAccess: Sendable {
    /// nil when `path` allows `mode` (`F_OK`, or a union of `R_OK`, `W_OK` and `X_OK`); otherwise the `errno` of
    /// the refusal.
    let refusal: @Sendable (_ path: String, _ mode: Int32) -> Int32?

    /// `access(2)`, for the real user and group.
    static let system = FileAccess { path, mode in access(path, mode) == 0 ? nil : errno }
}
