import CredentialExchange
import Foundation
import PasskeyFilesIO

#if canImport(Glibc)
    import Glibc
#endif

/// The files export and import read and write, named by the person: read with a size limit, and created new, never
/// replacing anything (a symbolic link counts as something).
extension ExchangeService {
    /// Whether anything, a dangling symbolic link included, is at `path`.
    public static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// Reads a file of at most `ImportFile.maximumBytes`; `what` names it in the failure.
    public static func read(_ path: String, what: String) throws(ProviderError) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ProviderError("cannot read \(what) \(path): \(UnreadableFile.reason(path))")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: ImportFile.maximumBytes + 1)) ?? Data()
        guard data.count <= ImportFile.maximumBytes else {
            throw ProviderError("\(path) is larger than \(ImportFile.maximumBytes >> 20) MiB; not a file passkey reads")
        }
        return Array(data)
    }

    /// Creates `path` as an owner-only file (`OwnerOnlyFile.create`), never replacing anything: for anything that
    /// opens passkeys (a sealed export, an importer's private key).
    public static func createOwnerOnly(_ bytes: [UInt8], at path: String) throws(ProviderError) {
        do {
            try OwnerOnlyFile.create(bytes, at: URL(fileURLWithPath: path))
        } catch {
            throw ProviderError("cannot create \(path): \(error.reason)")
        }
    }

    /// Creates `path` (never replacing anything) with `mode`, for files others may read (a public key, a signed
    /// association file), and writes `bytes` to disk.
    public static func writeNew(_ bytes: [UInt8], to path: String, mode: mode_t) throws(ProviderError) {
        do {
            try OwnerOnlyFile.create(bytes, at: URL(fileURLWithPath: path), mode: mode)
        } catch {
            throw ProviderError("cannot create \(path): \(error.reason)")
        }
    }
}
