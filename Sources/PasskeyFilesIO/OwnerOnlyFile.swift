import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The one reader and the one writer of the provider's small files (the identity index, the links, the approval
/// table, the relying party state, exported keys): files only their owner may read or write.
///
/// Writing replaces a file whole and atomically: the bytes go to a new 0600 file in the same directory (created with
/// `O_EXCL`, so nothing in the way is followed or reused), which is flushed with `fsync`, renamed over the old file,
/// and the directory is flushed too, so after a crash a reader finds the old file or the new one, never a mixture or
/// nothing. Missing directories are created 0700.
///
/// Reading refuses what it cannot trust: a symbolic link, anything but a regular file, a file of another user, a file
/// others may write to, and a file larger than the caller's limit.
public enum OwnerOnlyFile {
    /// The whole file, or nil when there is none.
    public static func read(_ url: URL, limit: Int) throws(OwnerOnlyFileError) -> [UInt8]? {
        let path = url.path
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            let error = errno
            if error == ENOENT { return nil }
            if error == ELOOP { throw OwnerOnlyFileError(path, "it is a symbolic link") }
            throw OwnerOnlyFileError(path, "cannot read it: \(describe(error))")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw OwnerOnlyFileError(path, "cannot examine it: \(describe(errno))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw OwnerOnlyFileError(path, "it is not a regular file") }
        guard info.st_uid == geteuid() else { throw OwnerOnlyFileError(path, "it belongs to another user") }
        guard info.st_mode & 0o022 == 0 else {
            throw OwnerOnlyFileError(
                path, "other users may change it (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        guard Int(info.st_size) <= limit else { throw OwnerOnlyFileError(path, "it is larger than \(size(limit))") }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(info.st_size))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= limit {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw OwnerOnlyFileError(path, "cannot read it: \(describe(errno))") }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
        }
        throw OwnerOnlyFileError(path, "it is larger than \(size(limit))")
    }

    /// Replaces the file with `bytes` (or creates it), atomically and durably, as a 0600 file.
    public static func write(_ bytes: [UInt8], to url: URL) throws(OwnerOnlyFileError) {
        let path = url.path
        let directory = url.deletingLastPathComponent().path
        try makePrivateDirectory(URL(fileURLWithPath: directory))
        let temporary = (directory as NSString).appendingPathComponent(".\(url.lastPathComponent).\(nonce()).tmp")
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw OwnerOnlyFileError(path, "cannot write it: \(describe(errno))")
        }
        var failure = writeAll(descriptor, bytes)
        if failure == 0, fsync(descriptor) != 0 { failure = errno }
        close(descriptor)
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else {
            _ = unlink(temporary)
            throw OwnerOnlyFileError(path, "cannot write it: \(describe(failure))")
        }
        syncDirectory(directory)
    }

    /// Creates the file with `bytes`, durably; never replaces anything already at its place (a symbolic link
    /// included). The mode is 0600 unless the file is meant for others to read (a public key, a signed association
    /// file: 0644).
    public static func create(_ bytes: [UInt8], at url: URL, mode: mode_t = 0o600) throws(OwnerOnlyFileError) {
        let path = url.path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        guard descriptor >= 0 else {
            let error = errno
            if error == EEXIST { throw OwnerOnlyFileError(path, "it already exists; not replacing it") }
            throw OwnerOnlyFileError(path, "cannot create it: \(describe(error))")
        }
        var failure = writeAll(descriptor, bytes, mode: mode)
        if failure == 0, fsync(descriptor) != 0 { failure = errno }
        close(descriptor)
        guard failure == 0 else {
            _ = unlink(path)
            throw OwnerOnlyFileError(path, "cannot write it: \(describe(failure))")
        }
        syncDirectory(url.deletingLastPathComponent().path)
    }

    /// Appends `bytes` in one `O_APPEND` write, creating the file 0600 when it is not there. `durably` flushes the
    /// file (and, when it was created, its directory) to the disk before returning.
    public static func append(_ bytes: [UInt8], to url: URL, durably: Bool = false) throws(OwnerOnlyFileError) {
        let path = url.path
        var descriptor = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW)
        let created = descriptor < 0 && errno == ENOENT
        if created {
            descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        }
        guard descriptor >= 0 else {
            throw OwnerOnlyFileError(path, "cannot open it: \(describe(errno))")
        }
        defer { close(descriptor) }
        var failure = writeAll(descriptor, bytes)
        if failure == 0, durably, fsync(descriptor) != 0 { failure = errno }
        guard failure == 0 else { throw OwnerOnlyFileError(path, "cannot write it: \(describe(failure))") }
        if durably, created { syncDirectory(url.deletingLastPathComponent().path) }
    }

    /// The complete lines of a journal (a file appended to one line at a time), without their newlines: the part
    /// after the last newline is a write that did not finish, or nothing, and is left out.
    public static func completeLines(of bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        Array(bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast())
    }

    /// Removes the file, if it is there; a missing file is no error.
    public static func remove(_ url: URL) throws(OwnerOnlyFileError) {
        guard unlink(url.path) == 0 || errno == ENOENT else {
            throw OwnerOnlyFileError(url.path, "cannot remove it: \(describe(errno))")
        }
    }

    /// Creates `directory` and any missing parents with mode 0700; an existing directory is left as it is.
    public static func makePrivateDirectory(_ directory: URL) throws(OwnerOnlyFileError) {
        let path = directory.path
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw OwnerOnlyFileError(path, "it is not a directory") }
            return
        }
        let parent = directory.deletingLastPathComponent()
        if parent.path != path, !parent.path.isEmpty {
            try makePrivateDirectory(parent)
        }
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
            throw OwnerOnlyFileError(path, "cannot create the directory: \(describe(errno))")
        }
    }

    /// Sets the open file's mode to exactly `mode` (`O_CREAT` applies the umask, which can only remove bits) and
    /// writes all of `bytes`, retrying after `EINTR`; 0, or the errno that stopped it.
    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], mode: mode_t = 0o600) -> Int32 {
        guard fchmod(descriptor, mode) == 0 else { return errno }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                return errno
            }
            written += count
        }
        return 0
    }

    /// Flushes the directory entry of a rename or a new file. A file system that cannot flush directories (some
    /// network ones answer `EINVAL`) still got the rename; it is not an error.
    private static func syncDirectory(_ path: String) {
        let descriptor = open(path.isEmpty ? "." : path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }

    private static func nonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next(), radix: 16)
    }

    private static func size(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes >> 10) KiB"
    }

    static func describe(_ error: Int32) -> String {
        String(cString: strerror(error))
    }
}

/// Why an owner-only file could not be read or written: the file and the reason, for a person.
public struct OwnerOnlyFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file's path.
    public var path: String
    /// What went wrong, in a person's terms ("it is a symbolic link", "cannot write it: No space left on device").
    public var reason: String

    public init(_ path: String, _ reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}

/// Why a file named by the person cannot be read, in their terms ("no such file", "permission denied", "it is a
/// directory"): for messages that would otherwise say only "cannot read".
public enum UnreadableFile {
    public static func reason(_ path: String) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor < 0 else {
            defer { close(descriptor) }
            var info = stat()
            if fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { return "it is a directory" }
            return "it could not be read"
        }
        switch errno {
        case ENOENT: return "no such file"
        case EACCES, EPERM: return "permission denied"
        case EISDIR: return "it is a directory"
        case ENOTDIR: return "a part of the path is not a directory"
        case ELOOP: return "too many symbolic links"
        case let error: return String(cString: strerror(error)).lowercased()
        }
    }
}
