import Basics
import CTAP2
import Crypto

/// The cost of turning a store passphrase into the store key with scrypt (RFC 7914).
///
/// `create` writes these into the store file together with a random salt; `open` always reads them back from
/// the file, so a store made with cheap test parameters stays cheap and one made with `default` stays strong.
public struct KDFParameters: Sendable, Hashable, CustomStringConvertible {
    /// The key derivation function's name as the store file records it.
    public static let scryptAlgorithm = "scrypt"
    /// The length of the derived key in bytes: an AES-256 key.
    public static let outputByteCount = 32
    /// The least memory one derivation must need (16 MiB). A store file asking for less is refused, so a file cannot
    /// weaken its own passphrase.
    public static let minimumMemoryByteCount = ScryptCost.minimumMemoryByteCount
    /// The most memory one derivation may need (256 MiB, eight times the default).
    public static let maximumMemoryByteCount = ScryptCost.maximumMemoryByteCount
    /// The most work one derivation may take, N·r·p (2^22: sixteen times the default, a few seconds).
    public static let maximumWork = ScryptCost.maximumWork

    /// scrypt's CPU/memory cost `N`, a power of two.
    public let rounds: Int
    /// scrypt's block size `r`.
    public let blockSize: Int
    /// scrypt's parallelism `p`.
    public let parallelism: Int

    /// Checks the parameters; nil when `problem(rounds:blockSize:parallelism:)` finds one.
    public init?(rounds: Int, blockSize: Int, parallelism: Int) {
        guard Self.problem(rounds: rounds, blockSize: blockSize, parallelism: parallelism) == nil else { return nil }
        self.rounds = rounds
        self.blockSize = blockSize
        self.parallelism = parallelism
    }

    /// Why these parameters are refused, or nil when they are accepted (``ScryptCost/problem(rounds:blockSize:parallelism:)``).
    public static func problem(rounds: Int, blockSize: Int, parallelism: Int) -> String? {
        ScryptCost.problem(rounds: rounds, blockSize: blockSize, parallelism: parallelism)
    }

    /// N = 2^15, r = 8, p = 1: 32 MiB of memory per derivation.
    public static let `default` = KDFParameters(rounds: 1 << 15, blockSize: 8, parallelism: 1)!

    /// N = 2^14, r = 8, p = 1: 16 MiB, the weakest parameters a store may have; for tests and throw-away stores.
    public static let testing = KDFParameters(rounds: 1 << 14, blockSize: 8, parallelism: 1)!

    /// The memory one derivation needs, in bytes.
    public var memoryByteCount: Int { ScryptCost.memoryByteCount(rounds: rounds, blockSize: blockSize) }

    /// The parameters in scrypt's notation, for example `scrypt(N=32768, r=8, p=1)`.
    public var description: String {
        ScryptCost.description(rounds: rounds, blockSize: blockSize, parallelism: parallelism)
    }

    /// Derives the store key from `passphrase` and `salt`.
    ///
    /// The passphrase is normalized to Unicode NFC first, so the same text typed through different input
    /// methods opens the store. Callers reject empty passphrases before calling.
    func deriveKey(passphrase: String, salt: [UInt8]) throws(CredentialStoreError) -> SymmetricKey {
        let normalized = ScryptCost.normalized(passphrase)
        // swift-crypto's scrypt needs a non-empty buffer for both.
        guard !normalized.isEmpty else {
            throw CredentialStoreError(.wrongPassphrase, "the passphrase must not be empty")
        }
        guard !salt.isEmpty else {
            throw CredentialStoreError(.corrupt, "the key derivation salt is empty")
        }
        guard
            let key = ScryptCost.deriveKey(
                normalizedPassphrase: normalized, salt: salt, outputByteCount: Self.outputByteCount, rounds: rounds,
                blockSize: blockSize, parallelism: parallelism)
        else {
            throw CredentialStoreError(.io, "could not derive the store key with \(self): out of memory?")
        }
        return key
    }
}
