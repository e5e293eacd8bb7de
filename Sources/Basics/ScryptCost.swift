import COpenSSL
import Crypto
import Foundation

/// scrypt (RFC 7914) as every passphrase file here uses it: the bounds on its cost that a file must stay within, so
/// that a file can neither weaken its own passphrase nor make opening it take minutes or gigabytes, and the
/// derivation from an NFC-normalized passphrase. The store (`KDFParameters`) and the export archive
/// (`PassphraseArchive.KDF`) each choose their default and their errors; the rules are these.
public enum ScryptCost {
    /// The least memory one derivation must need: 16 MiB (N = 2^14 with r = 8, the scrypt paper's parameters for
    /// interactive logins).
    public static let minimumMemoryByteCount = 16 << 20
    /// The most memory one derivation may need: 256 MiB.
    public static let maximumMemoryByteCount = 256 << 20
    /// The most work one derivation may take, N·r·p: 2^22 (a few seconds), so a hostile file cannot make opening take
    /// minutes through the parallelism.
    public static let maximumWork = 1 << 22

    /// The memory one derivation with these parameters needs, in bytes.
    public static func memoryByteCount(rounds: Int, blockSize: Int) -> Int { 128 * rounds * blockSize }

    /// Why these parameters are refused, or nil when they are accepted: `rounds` must be a power of two from 2^10 to
    /// 2^22, `blockSize` 1...32 and `parallelism` 1...16; one derivation must need from `minimumMemoryByteCount` to
    /// `maximumMemoryByteCount` of memory and at most `maximumWork`.
    public static func problem(rounds: Int, blockSize: Int, parallelism: Int) -> String? {
        guard rounds >= 1 << 10, rounds <= 1 << 22, rounds & (rounds - 1) == 0 else {
            return "N must be a power of two from 1024 to 4194304"
        }
        guard (1...32).contains(blockSize) else { return "r must be 1 to 32" }
        guard (1...16).contains(parallelism) else { return "p must be 1 to 16" }
        let memory = memoryByteCount(rounds: rounds, blockSize: blockSize)
        guard memory >= minimumMemoryByteCount else {
            return "they need \(memory >> 10) KiB of memory, below the minimum of \(minimumMemoryByteCount >> 20) MiB"
        }
        guard memory <= maximumMemoryByteCount else {
            return "they need \(memory >> 20) MiB of memory, above the maximum of \(maximumMemoryByteCount >> 20) MiB"
        }
        guard rounds * blockSize * parallelism <= maximumWork else {
            return "N·r·p is above the maximum of \(maximumWork)"
        }
        return nil
    }

    /// The parameters in scrypt's notation, for example `scrypt(N=32768, r=8, p=1)`.
    public static func description(rounds: Int, blockSize: Int, parallelism: Int) -> String {
        "scrypt(N=\(rounds), r=\(blockSize), p=\(parallelism))"
    }

    /// The passphrase as scrypt gets it: Unicode NFC, so the same text typed through different input methods gives
    /// the same key, in UTF-8.
    public static func normalized(_ passphrase: String) -> [UInt8] {
        Array(passphrase.precomposedStringWithCanonicalMapping.utf8)
    }

    /// Derives an `outputByteCount`-byte key from a passphrase already `normalized`; nil when scrypt fails (it could
    /// not allocate its memory). Callers refuse an empty passphrase or salt, and parameters `problem` refuses, first.
    ///
    /// The derivation is libcrypto's `EVP_PBE_scrypt` (the system OpenSSL), not swift-crypto's: SwiftPM compiles a
    /// package's C dependencies without optimization in debug builds, where BoringSSL's scrypt took about ten times
    /// as long as this one (most of the test suite's time went into unlocking stores); release builds gain nothing
    /// either way, and the two agree on RFC 7914's vectors (`ScryptCostTests`).
    public static func deriveKey(
        normalizedPassphrase: [UInt8], salt: [UInt8], outputByteCount: Int, rounds: Int, blockSize: Int,
        parallelism: Int
    ) -> SymmetricKey? {
        guard rounds > 1, blockSize > 0, parallelism > 0, outputByteCount > 0 else { return nil }
        // The working memory scrypt needs (V and B), with room for its bookkeeping.
        let memoryLimit =
            memoryByteCount(rounds: rounds, blockSize: blockSize) + 128 * blockSize * parallelism
            + (1 << 16)
        var key = [UInt8](repeating: 0, count: outputByteCount)
        defer { key.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        let status = normalizedPassphrase.withUnsafeBytes { passphrase in
            salt.withUnsafeBytes { salt in
                key.withUnsafeMutableBytes { output in
                    EVP_PBE_scrypt(
                        passphrase.baseAddress?.assumingMemoryBound(to: CChar.self), passphrase.count,
                        salt.baseAddress?.assumingMemoryBound(to: UInt8.self), salt.count, UInt64(rounds),
                        UInt64(blockSize), UInt64(parallelism), UInt64(memoryLimit),
                        output.baseAddress?.assumingMemoryBound(to: UInt8.self), output.count)
                }
            }
        }
        guard status == 1 else { return nil }
        return SymmetricKey(data: key)
    }
}
