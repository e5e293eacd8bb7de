import Basics
import Crypto
import Testing
import _CryptoExtras

/// The one scrypt every passphrase file uses (libcrypto's), against RFC 7914 §12 and against swift-crypto's.
struct ScryptCostTests {
    private static func bytes(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    private static func derive(
        _ passphrase: String, _ salt: String, _ rounds: Int, _ blockSize: Int, _ parallelism: Int
    )
        throws -> [UInt8]
    {
        let key = try #require(
            ScryptCost.deriveKey(
                normalizedPassphrase: Array(passphrase.utf8), salt: Array(salt.utf8), outputByteCount: 64,
                rounds: rounds, blockSize: blockSize, parallelism: parallelism))
        return key.withUnsafeBytes { Array($0) }
    }

    @Test func rfc7914Vectors() throws {
        #expect(
            try Self.derive("password", "NaCl", 1024, 8, 16)
                == Self.bytes(
                    "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
                ))
        #expect(
            try Self.derive("pleaseletmein", "SodiumChloride", 16384, 8, 1)
                == Self.bytes(
                    "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"
                ))
    }

    /// Files written while the derivation was swift-crypto's keep opening: both give the same key.
    @Test(arguments: [(1024, 1, 1), (1024, 16, 2), (2048, 8, 1)])
    func agreesWithSwiftCrypto(rounds: Int, blockSize: Int, parallelism: Int) throws {
        var generator = SystemRandomNumberGenerator()
        let passphrase = (0..<Int.random(in: 1...40, using: &generator)).map { _ in UInt8.random(in: 0...255) }
        let salt = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let ours = try #require(
            ScryptCost.deriveKey(
                normalizedPassphrase: passphrase, salt: salt, outputByteCount: 32, rounds: rounds,
                blockSize: blockSize, parallelism: parallelism))
        let theirs = try KDF.Scrypt.deriveKey(
            from: passphrase, salt: salt, outputByteCount: 32, rounds: rounds, blockSize: blockSize,
            parallelism: parallelism)
        #expect(ours == theirs)
    }

    @Test func impossibleParametersGiveNoKey() {
        #expect(
            ScryptCost.deriveKey(
                normalizedPassphrase: [1], salt: [2], outputByteCount: 32, rounds: 1000, blockSize: 8,
                parallelism: 1) == nil, "N must be a power of two")
        #expect(
            ScryptCost.deriveKey(
                normalizedPassphrase: [1], salt: [2], outputByteCount: 0, rounds: 1024, blockSize: 8,
                parallelism: 1) == nil)
    }
}
