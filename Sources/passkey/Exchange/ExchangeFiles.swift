import Foundation
import PasskeyProvider

#if canImport(Glibc)
    import Glibc
#endif

/// Files named on the command line, for the commands beside export and import that read and write them too
/// (`domains sign`, `domains check --ca`): the exchange service's rules, one place.
enum ExchangeFiles {
    static func exists(_ path: String) -> Bool { ExchangeService.exists(path) }

    /// Reads a file of at most `ImportFile.maximumBytes`.
    static func read(_ path: String, what: String) throws -> [UInt8] {
        try ExchangeService.read(path, what: what)
    }

    /// Creates `path` (never replacing anything) with `mode`, and writes `bytes` to disk.
    static func writeNew(_ bytes: [UInt8], to path: String, mode: mode_t) throws {
        try ExchangeService.writeNew(bytes, to: path, mode: mode)
    }
}
