import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh directory of mode 0700 under the system's temporary directory, removed with everything in it by
/// ``remove()`` or when the last reference goes.
public final class TemporaryDirectory: Sendable {
    /// The directory's path, without a trailing slash.
    public let path: String

    /// Makes the directory; `prefix` starts its name.
    public init(prefix: String = "passkey-tests") throws {
        let base = FileManager.default.temporaryDirectory.path
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        path = String(cString: made)
    }

    deinit { remove() }

    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// The URL of `name` inside the directory.
    public func url(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Writes `bytes` to the file `name` (made with mode `mode`, or truncated); returns its path.
    @discardableResult
    public func write(_ bytes: [UInt8], to name: String, mode: mode_t = 0o600) throws -> String {
        let path = file(name)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                Glibc.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
            }
            guard count > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            written += count
        }
        return path
    }

    /// The names in the directory, sorted.
    public func listing() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// Removes the directory and everything in it (again: nothing).
    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
