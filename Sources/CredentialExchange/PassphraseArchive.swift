import Basics
import Crypto
import Foundation
import JSON

/// A passphrase-protected backup of a CXF document: JSON holding the scrypt parameters, the salt, the AES-256-GCM
/// nonce and the ciphertext.
///
/// ```json
/// {"format": "passkey-archive", "version": 1,
///  "kdf": {"name": "scrypt", "N": 131072, "r": 8, "p": 1, "salt": <32 bytes>},
///  "cipher": "AES-256-GCM", "nonce": <12 bytes>, "ciphertext": <sealed CXF JSON and 16-byte tag>}
/// ```
///
/// The key is scrypt(NFC(passphrase), salt, N, r, p) to 32 bytes. The associated data is the header
/// (`associatedData`): format, version, KDF parameters and salt, so none can be changed without failing the tag.
/// Parameters are bounded on read (`KDF.problem`), so a hostile file cannot make the reader allocate gigabytes or
/// work for minutes.
public struct PassphraseArchive: Sendable {
    public static let format = "passkey-archive"
    public static let version: UInt64 = 1

    /// scrypt's cost parameters.
    public struct KDF: Hashable, Sendable, CustomStringConvertible {
        /// N = 2^17, r = 8, p = 1: 128 MiB and about half a second per derivation, for a file that may sit on backup
        /// media for years (four times the store's own cost).
        public static let `default` = KDF(rounds: 1 << 17, blockSize: 8, parallelism: 1)
        /// The bounds every passphrase file is held to (``ScryptCost``).
        public static let minimumMemoryByteCount = ScryptCost.minimumMemoryByteCount
        public static let maximumMemoryByteCount = ScryptCost.maximumMemoryByteCount
        public static let maximumWork = ScryptCost.maximumWork

        public var rounds: Int
        public var blockSize: Int
        public var parallelism: Int

        public init(rounds: Int, blockSize: Int, parallelism: Int) {
            self.rounds = rounds
            self.blockSize = blockSize
            self.parallelism = parallelism
        }

        /// Why these parameters are refused, nil if they are accepted.
        public static func problem(rounds: Int, blockSize: Int, parallelism: Int) -> String? {
            ScryptCost.problem(rounds: rounds, blockSize: blockSize, parallelism: parallelism)
        }

        /// The memory one derivation needs.
        public var memoryByteCount: Int { ScryptCost.memoryByteCount(rounds: rounds, blockSize: blockSize) }

        public var description: String {
            ScryptCost.description(rounds: rounds, blockSize: blockSize, parallelism: parallelism)
        }

        func deriveKey(passphrase: String, salt: [UInt8]) throws(ExchangeError) -> SymmetricKey {
            let normalized = ScryptCost.normalized(passphrase)
            guard !normalized.isEmpty else { throw ExchangeError(.invalidValue, "the passphrase must not be empty") }
            guard
                let key = ScryptCost.deriveKey(
                    normalizedPassphrase: normalized, salt: salt, outputByteCount: 32, rounds: rounds,
                    blockSize: blockSize, parallelism: parallelism)
            else {
                throw ExchangeError(.kdfParametersRefused, "could not derive the archive key with \(self)")
            }
            return key
        }
    }

    public var kdf: KDF
    public var salt: [UInt8]
    public var nonce: [UInt8]
    /// The sealed CXF JSON with its tag.
    public var ciphertext: [UInt8]

    /// Seals `document` under `passphrase` with a fresh random salt and nonce.
    public init(sealing document: CXF.Header, passphrase: String, kdf: KDF = .default) throws(ExchangeError) {
        try self.init(
            sealing: document.jsonBytes, passphrase: passphrase, kdf: kdf,
            salt: Array(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }), nonce: Array(AES.GCM.Nonce()))
    }

    /// Seals `plaintext` with the salt and nonce given: for known-answer tests.
    init(sealing plaintext: [UInt8], passphrase: String, kdf: KDF, salt: [UInt8], nonce: [UInt8]) throws(ExchangeError)
    {
        if let problem = KDF.problem(rounds: kdf.rounds, blockSize: kdf.blockSize, parallelism: kdf.parallelism) {
            throw ExchangeError(
                .kdfParametersRefused, "the archive's key derivation parameters are refused: \(problem)")
        }
        self.kdf = kdf
        self.salt = salt
        self.nonce = nonce
        let key = try kdf.deriveKey(passphrase: passphrase, salt: salt)
        do {
            let box = try AES.GCM.seal(
                plaintext, using: key, nonce: AES.GCM.Nonce(data: nonce), authenticating: Self.associatedData(kdf, salt)
            )
            ciphertext = Array(box.ciphertext) + Array(box.tag)
        } catch {
            throw ExchangeError(.invalidValue, "could not seal the archive")
        }
    }

    /// Opens the archive and reads the CXF document in it. A wrong passphrase and a changed byte fail alike.
    public func open(passphrase: String) throws(ExchangeError) -> CXF.Header {
        try CXF.Header(jsonBytes: openBytes(passphrase: passphrase))
    }

    func openBytes(passphrase: String) throws(ExchangeError) -> [UInt8] {
        let key = try kdf.deriveKey(passphrase: passphrase, salt: salt)
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: nonce), ciphertext: ciphertext.dropLast(16), tag: ciphertext.suffix(16))
            return Array(try AES.GCM.open(box, using: key, authenticating: Self.associatedData(kdf, salt)))
        } catch {
            throw ExchangeError(
                .wrongPassphraseOrTampered,
                "the archive does not open with this passphrase: the wrong passphrase, or the file was changed")
        }
    }

    /// The header the tag covers: `passkey-archive v1 scrypt N=… r=… p=… salt=<base64url>`.
    static func associatedData(_ kdf: KDF, _ salt: [UInt8]) -> [UInt8] {
        Array(
            "\(format) v\(version) scrypt N=\(kdf.rounds) r=\(kdf.blockSize) p=\(kdf.parallelism) salt=\(salt.base64URLEncodedString)"
                .utf8)
    }

    /// Reads an archive, checking its parameters before any work is done.
    public init(jsonBytes: [UInt8]) throws(ExchangeError) {
        try self.init(json: ExchangeJSON.parse(jsonBytes, what: "the archive"))
    }

    init(json: JSONValue) throws(ExchangeError) {
        let fields = try JSONFields(json, path: "")
        guard try fields.requiredString("format") == Self.format else {
            throw ExchangeError(.unknownFormat, "the file is not a passkey archive")
        }
        let version = try fields.requiredUnsigned("version")
        guard version == Self.version else {
            throw ExchangeError(
                .unsupportedVersion, "the archive is version \(version); this program reads version \(Self.version)")
        }
        let kdfFields = try JSONFields(fields.required("kdf"), path: "kdf")
        guard try kdfFields.requiredString("name") == "scrypt" else {
            throw ExchangeError(.unsupportedAlgorithm, "the archive's key derivation is not scrypt")
        }
        let (rounds, blockSize, parallelism) = (
            try kdfFields.requiredUnsigned("N"), try kdfFields.requiredUnsigned("r"),
            try kdfFields.requiredUnsigned("p")
        )
        guard rounds <= 1 << 30, blockSize <= 1 << 30, parallelism <= 1 << 30,
            Self.KDF.problem(rounds: Int(rounds), blockSize: Int(blockSize), parallelism: Int(parallelism)) == nil
        else {
            let problem =
                Self.KDF.problem(
                    rounds: Int(min(rounds, 1 << 30)), blockSize: Int(min(blockSize, 1 << 30)),
                    parallelism: Int(min(parallelism, 1 << 30))) ?? "they are out of range"
            throw ExchangeError(.kdfParametersRefused, "the archive's scrypt parameters are refused: \(problem)")
        }
        kdf = KDF(rounds: Int(rounds), blockSize: Int(blockSize), parallelism: Int(parallelism))
        salt = try kdfFields.requiredBytes("salt")
        guard (16...64).contains(salt.count) else {
            throw ExchangeError(.invalidValue, "kdf.salt must be 16 to 64 bytes")
        }
        guard try fields.requiredString("cipher") == "AES-256-GCM" else {
            throw ExchangeError(.unsupportedAlgorithm, "the archive's cipher is not AES-256-GCM")
        }
        nonce = try fields.requiredBytes("nonce")
        guard nonce.count == 12 else { throw ExchangeError(.invalidValue, "nonce must be 12 bytes") }
        ciphertext = try fields.requiredBytes("ciphertext")
        guard ciphertext.count >= 16 else {
            throw ExchangeError(.invalidValue, "ciphertext is shorter than its 16-byte tag")
        }
    }

    /// The archive as JSON text.
    public var jsonBytes: [UInt8] {
        JSONValue.object(omittingNil: [
            ("format", .string(Self.format)),
            ("version", .integer(Self.version)),
            (
                "kdf",
                .object([
                    JSONMember("name", .string("scrypt")), JSONMember("N", .number(Double(kdf.rounds))),
                    JSONMember("r", .number(Double(kdf.blockSize))), JSONMember("p", .number(Double(kdf.parallelism))),
                    JSONMember("salt", .bytes(salt)),
                ])
            ),
            ("cipher", .string("AES-256-GCM")),
            ("nonce", .bytes(nonce)),
            ("ciphertext", .bytes(ciphertext)),
        ]).serialized(.pretty)
    }
}
