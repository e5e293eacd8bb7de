/// The small owner-only files kept beside the store (the identity index, the associated-domains approval table):
/// read whole with a size limit, replaced atomically as 0600.
public enum OwnerOnlyFile {
    /// The file's bytes; nil when there is none. Refuses a symbolic link, a non-regular file and a file over `limit`.
    public static func read(_ path: String, limit: Int) throws(OwnerOnlyFileError) -> [UInt8]? {
        switch IndexFiles.contents(of: path, limit: limit) {
        case .missing: return nil
        case .bytes(let bytes): return bytes
        case .failed(let reason): throw OwnerOnlyFileError(description: "\(path): \(reason)")
        }
    }

    /// Replaces the file with `bytes`: a new 0600 file in the same directory, renamed over it.
    public static func replace(_ path: String, with bytes: [UInt8]) throws(OwnerOnlyFileError) {
        do {
            try IndexFiles.replace(path, with: bytes)
        } catch {
            throw OwnerOnlyFileError(description: error.reason)
        }
    }
}

/// Why an owner-only file could not be read or written.
public struct OwnerOnlyFileError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
}
