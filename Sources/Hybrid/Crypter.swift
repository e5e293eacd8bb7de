import Crypto

/// Why the crypter refused a message. Every error ends the session: afterwards the crypter only throws
/// ``sessionFailed``.
public enum CrypterError: Error, Hashable, Sendable {
    /// A key given to ``Crypter/init(readKey:writeKey:)`` is not 256 bits; the value is its size in bytes.
    case wrongKeySize(Int)
    /// The ciphertext is shorter than a 16-byte tag plus one byte of plaintext.
    case truncated(Int)
    /// The message did not authenticate under the read key at the expected sequence number: changed, sent with
    /// another key, replayed, reordered or dropped before it.
    case authenticationFailed
    /// The last plaintext byte claims more padding than the plaintext holds.
    case invalidPadding
    /// A sequence number would pass 2²⁴ − 1, where Chromium stops (v2_handshake.cc `kMaxSequence`).
    case sequenceNumberExhausted
    /// An earlier error ended the session; the crypter refuses every further message.
    case sessionFailed
}

extension CrypterError: CustomStringConvertible {
    /// One line for logs; it never contains key material.
    public var description: String {
        switch self {
        case .wrongKeySize(let count): "caBLE crypter key is \(count) bytes, expected 32"
        case .truncated(let count): "caBLE message of \(count) bytes is too short"
        case .authenticationFailed: "caBLE message failed authentication"
        case .invalidPadding: "caBLE message padding is longer than the message"
        case .sequenceNumberExhausted: "caBLE sequence numbers are exhausted"
        case .sessionFailed: "caBLE session already failed"
        }
    }
}

/// The transport after the handshake (write-up §6; Chromium v2_handshake.cc @ccfdb09e `Crypter::Encrypt`,
/// `Crypter::Decrypt`, `ConstructNonce`; the legacy construction from @0b007350): AES-256-GCM with one
/// key and one `UInt32` sequence number per direction, both counting from 0.
///
/// - Sending always uses the ``Construction/current`` construction.
/// - The first received message is tried with ``Construction/current`` and then ``Construction/legacy``; the one
///   that opens it is kept for every later received message. (webauthn-rs also switches its *sending* side to
///   whatever it detected; current Chromium knows only the current construction, so this crypter never sends the
///   legacy one.)
/// - Plaintexts are padded inside the AEAD: `z` zero bytes and then the byte `z`, to a multiple of 32 bytes, with at
///   least one byte of padding. A receiver requires `p + 1 ≤ count` for the last byte `p` and strips `p + 1` bytes;
///   like Chromium it checks neither that the padding bytes are zero nor that the length is a multiple of 32.
/// - Any error ends the session: Chromium closes the connection on every decrypt failure.
///
/// Noncopyable: two copies would encrypt different messages under the same nonce.
public struct Crypter: ~Copyable, Sendable {
    /// How the AES-GCM nonce and additional data are built from a sequence number.
    public enum Construction: Hashable, Sendable {
        /// Current Chromium and standard Noise: nonce `0⁸ ‖ UInt32 big-endian`, no additional data.
        case current
        /// Chromium before the change (v2_handshake.cc @0b007350): nonce `UInt32 little-endian ‖ 0⁸`,
        /// additional data the single byte `0x02`.
        case legacy
    }

    /// The last usable sequence number in each direction (v2_handshake.cc `kMaxSequence`).
    public static let maximumSequenceNumber: UInt32 = (1 << 24) - 1
    /// Padding granularity inside the AEAD (v2_handshake.cc `kPaddingGranularity`).
    static let paddingGranularity = 32
    /// The AES-GCM tag length.
    static let tagLength = 16

    private let readKey: SymmetricKey
    private let writeKey: SymmetricKey
    /// The sequence number the next sent message uses.
    public private(set) var writeSequenceNumber: UInt32
    /// The sequence number the next received message must carry.
    public private(set) var readSequenceNumber: UInt32
    /// The construction of received messages; nil until the first message has been opened.
    public private(set) var readConstruction: Construction?
    /// Whether an error has ended the session.
    public private(set) var hasFailed = false

    /// A crypter for the given 32-byte AES keys; the handshake makes its own.
    public init(readKey: SymmetricKey, writeKey: SymmetricKey) throws(CrypterError) {
        guard readKey.bitCount == 256 else { throw .wrongKeySize(readKey.bitCount / 8) }
        guard writeKey.bitCount == 256 else { throw .wrongKeySize(writeKey.bitCount / 8) }
        self.init(readKey: readKey, writeKey: writeKey, readSequenceNumber: 0, writeSequenceNumber: 0)
    }

    /// The handshake's split keys, which are 32 bytes by construction.
    init(handshakeReadKey readKey: SymmetricKey, writeKey: SymmetricKey) {
        self.init(readKey: readKey, writeKey: writeKey, readSequenceNumber: 0, writeSequenceNumber: 0)
    }

    /// Starts mid-session: at arbitrary sequence numbers and, optionally, with the received construction already
    /// chosen (tests reach the 2²⁴ limit this way).
    init(
        readKey: SymmetricKey, writeKey: SymmetricKey, readSequenceNumber: UInt32, writeSequenceNumber: UInt32,
        readConstruction: Construction? = nil
    ) {
        self.readKey = readKey
        self.writeKey = writeKey
        self.readSequenceNumber = readSequenceNumber
        self.writeSequenceNumber = writeSequenceNumber
        self.readConstruction = readConstruction
    }

    /// Pads and seals one message with the current construction (v2_handshake.cc `Crypter::Encrypt`).
    public mutating func encrypt(_ plaintext: [UInt8]) throws(CrypterError) -> [UInt8] {
        guard !hasFailed else { throw .sessionFailed }
        do throws(CrypterError) {
            guard writeSequenceNumber <= Self.maximumSequenceNumber else { throw .sequenceNumberExhausted }
            let ciphertext = try Self.seal(
                Self.pad(plaintext), key: writeKey, sequenceNumber: writeSequenceNumber, construction: .current)
            writeSequenceNumber += 1
            return ciphertext
        } catch {
            hasFailed = true
            throw error
        }
    }

    /// Opens and unpads one message (v2_handshake.cc `Crypter::Decrypt`).
    public mutating func decrypt(_ ciphertext: [UInt8]) throws(CrypterError) -> [UInt8] {
        guard !hasFailed else { throw .sessionFailed }
        do throws(CrypterError) {
            guard readSequenceNumber <= Self.maximumSequenceNumber else { throw .sequenceNumberExhausted }
            // Chromium refuses an empty plaintext after opening; here it is refused before: tag plus one byte.
            guard ciphertext.count > Self.tagLength else { throw .truncated(ciphertext.count) }
            let padded: [UInt8]
            if let construction = readConstruction {
                padded = try Self.open(ciphertext, key: readKey, sequenceNumber: readSequenceNumber, construction)
            } else if let opened = try? Self.open(
                ciphertext, key: readKey, sequenceNumber: readSequenceNumber, .current)
            {
                padded = opened
                readConstruction = .current
            } else {
                padded = try Self.open(ciphertext, key: readKey, sequenceNumber: readSequenceNumber, .legacy)
                readConstruction = .legacy
            }
            readSequenceNumber += 1
            return try Self.unpad(padded)
        } catch {
            hasFailed = true
            throw error
        }
    }

    /// `z` zeros and the byte `z`, up to the next multiple of 32 (always at least one byte).
    static func pad(_ message: [UInt8]) -> [UInt8] {
        let paddedCount = (message.count + 1 + paddingGranularity - 1) / paddingGranularity * paddingGranularity
        let zeros = paddedCount - message.count - 1
        var padded = message
        padded.reserveCapacity(paddedCount)
        padded.append(contentsOf: repeatElement(0, count: zeros))
        padded.append(UInt8(zeros))
        return padded
    }

    /// Strips `p + 1` bytes, where `p` is the last byte.
    static func unpad(_ padded: [UInt8]) throws(CrypterError) -> [UInt8] {
        guard let last = padded.last, Int(last) + 1 <= padded.count else { throw .invalidPadding }
        return Array(padded.dropLast(Int(last) + 1))
    }

    /// The 12-byte nonce and the additional data for one sequence number.
    static func nonceAndAAD(_ sequenceNumber: UInt32, _ construction: Construction) -> (nonce: [UInt8], aad: [UInt8]) {
        switch construction {
        case .current:
            // v2_handshake.cc ConstructNonce (current): 8 zero bytes, then the counter big-endian.
            let bigEndian = (0..<4).map { UInt8(truncatingIfNeeded: sequenceNumber >> (24 - 8 * $0)) }
            return ([UInt8](repeating: 0, count: 8) + bigEndian, [])
        case .legacy:
            // v2_handshake.cc @0b007350 ConstructNonce: the counter little-endian, then 8 zero bytes; AAD {2}.
            let littleEndian = (0..<4).map { UInt8(truncatingIfNeeded: sequenceNumber >> (8 * $0)) }
            return (littleEndian + [UInt8](repeating: 0, count: 8), [2])
        }
    }

    /// AES-256-GCM seal of an already padded block: `ciphertext ‖ tag`.
    static func seal(
        _ padded: [UInt8], key: SymmetricKey, sequenceNumber: UInt32, construction: Construction
    ) throws(CrypterError) -> [UInt8] {
        let (nonce, aad) = nonceAndAAD(sequenceNumber, construction)
        do {
            let box = try AES.GCM.seal(padded, using: key, nonce: try AES.GCM.Nonce(data: nonce), authenticating: aad)
            return Array(box.ciphertext) + Array(box.tag)
        } catch {
            // Unreachable with a 32-byte key and a 12-byte nonce; the session ends rather than crash.
            throw .authenticationFailed
        }
    }

    /// AES-256-GCM open of `ciphertext ‖ tag` (at least 17 bytes).
    static func open(
        _ ciphertext: [UInt8], key: SymmetricKey, sequenceNumber: UInt32, _ construction: Construction
    ) throws(CrypterError) -> [UInt8] {
        let (nonce, aad) = nonceAndAAD(sequenceNumber, construction)
        let split = ciphertext.count - tagLength
        do {
            let box = try AES.GCM.SealedBox(
                nonce: try AES.GCM.Nonce(data: nonce), ciphertext: ciphertext[..<split], tag: ciphertext[split...])
            return Array(try AES.GCM.open(box, using: key, authenticating: aad))
        } catch {
            throw .authenticationFailed
        }
    }

    /// The raw keys, for known-answer tests only.
    var keyBytesForTesting: (read: [UInt8], write: [UInt8]) {
        (readKey.withUnsafeBytes { Array($0) }, writeKey.withUnsafeBytes { Array($0) })
    }
}
