import CTAP2
import Crypto
import Foundation
import _CryptoExtras

/// The cost of turning a store passphrase into the store key with scrypt (RFC 7914).
///
/// `create` writes these into the store file together with a random salt; `open` always reads them back from
/// the file, so a store made with cheap test parameters stays cheap and one made with `default` stays strong.
public struct KDFParameters: Sendable, Hashable, CustomStringConvertible {
    /// The key derivation function's name as the store file records it.
    public static let scryptAlgorithm = "scrypt"
    /// The length of the derived key in bytes: an AES-256 key.
    public static let outputByteCount = 32
    /// The largest memory one derivation may need (1 GiB); larger parameters are refused as damage.
    public static let maximumMemoryByteCount = 1 << 30

    /// scrypt's CPU/memory cost `N`, a power of two.
    public let rounds: Int
    /// scrypt's block size `r`.
    public let blockSize: Int
    /// scrypt's parallelism `p`.
    public let parallelism: Int

    /// Checks the parameters; nil when `rounds` is not a power of two from 2 to 2^22, `blockSize` is not
    /// 1...32, `parallelism` is not 1...16, or one derivation would need more than `maximumMemoryByteCount`.
    public init?(rounds: Int, blockSize: Int, parallelism: Int) {
        guard rounds >= 2, rounds <= 1 << 22, rounds & (rounds - 1) == 0 else { return nil }
        guard (1...32).contains(blockSize), (1...16).contains(parallelism) else { return nil }
        guard 128 * rounds * blockSize + 128 * blockSize * parallelism <= Self.maximumMemoryByteCount else {
            return nil
        }
        self.rounds = rounds
        self.blockSize = blockSize
        self.parallelism = parallelism
    }

    /// N = 2^15, r = 8, p = 1: 32 MiB of memory per derivation.
    public static let `default` = KDFParameters(rounds: 1 << 15, blockSize: 8, parallelism: 1)!

    /// N = 2^10, r = 8, p = 1: 1 MiB and a few milliseconds; for tests only, it offers little protection.
    public static let testing = KDFParameters(rounds: 1 << 10, blockSize: 8, parallelism: 1)!

    /// The memory one derivation needs, in bytes.
    public var memoryByteCount: Int { 128 * rounds * blockSize }

    /// The parameters in scrypt's notation, for example `scrypt(N=32768, r=8, p=1)`.
    public var description: String {
        "scrypt(N=\(rounds), r=\(blockSize), p=\(parallelism))"
    }

    /// Derives the store key from `passphrase` and `salt`.
    ///
    /// The passphrase is normalized to Unicode NFC first, so the same text typed through different input
    /// methods opens the store. Callers reject empty passphrases before calling.
    func deriveKey(passphrase: String, salt: [UInt8]) throws(CredentialStoreError) -> SymmetricKey {
        let normalized = Array(passphrase.precomposedStringWithCanonicalMapping.utf8)
        // swift-crypto's scrypt needs a non-empty buffer for both.
        guard !normalized.isEmpty else {
            throw CredentialStoreError(.wrongPassphrase, "the passphrase must not be empty")
        }
        guard !salt.isEmpty else {
            throw CredentialStoreError(.corrupt, "the key derivation salt is empty")
        }
        do {
            return try KDF.Scrypt.deriveKey(
                from: normalized,
                salt: salt,
                outputByteCount: Self.outputByteCount,
                rounds: rounds,
                blockSize: blockSize,
                parallelism: parallelism
            )
        } catch {
            throw CredentialStoreError(.io, "could not derive the store key with \(self): out of memory?")
        }
    }
}
