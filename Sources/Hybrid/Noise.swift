import Basics
import Crypto

// The caBLE v2 handshake: Noise KNpsk0 (QR-initiated) and NKpsk0 (state-assisted) over P-256, AES-256-GCM and
// SHA-256, as Chromium's device/fido/cable/noise.cc (@b2528ae3: Init, MixHash, MixKey, MixKeyAndHash,
// EncryptAndHash, DecryptAndHash, traffic_keys) and v2_handshake.cc (@ccfdb09e: HandshakeInitiator::
// BuildInitialMessage, HandshakeInitiator::ProcessResponse, RespondToHandshake) implement them; webauthn-rs
// cable/noise.rs (CableNoise) is the same port. See Docs/HybridNoise.md.
//
//   KNpsk0 (prologue 0x01)          NKpsk0 (prologue 0x00)
//     -> s  (client's QR key)          <- s  (authenticator identity key)
//     ...                              ...
//     -> psk, e                        -> psk, e, es
//     <- e, ee, se                     <- e, ee
//
// Both messages are `e.pub (65 bytes, uncompressed) ‖ AES-GCM tag over an empty payload (16 bytes)` = 81 bytes.

/// Why a handshake message, or the keys given to the handshake, were refused.
public enum NoiseError: Error, Hashable, Sendable {
    /// A handshake message is not exactly 81 bytes; a message that carries a payload is longer and ends here too.
    case wrongLength(Int)
    /// The first 65 bytes of a message are not an uncompressed P-256 point on the curve.
    case invalidPoint
    /// The tag did not verify: the peer used another PSK or static key, or the message was changed.
    case authenticationFailed
    /// The pre-shared key is not 32 bytes.
    case wrongPSKLength(Int)
    /// swift-crypto refused ECDH or AES-GCM on well-formed inputs (not expected to happen).
    case cryptoFailure
}

extension NoiseError: CustomStringConvertible {
    /// One line for logs; it never contains key material.
    public var description: String {
        switch self {
        case .wrongLength(let count): "Noise handshake message is \(count) bytes, expected 81"
        case .invalidPoint: "Noise handshake message does not start with a P-256 point"
        case .authenticationFailed: "Noise handshake message failed authentication"
        case .wrongPSKLength(let count): "Noise pre-shared key is \(count) bytes, expected 32"
        case .cryptoFailure: "swift-crypto refused a Noise handshake operation"
        }
    }
}

/// What a finished handshake gives each side: the transport crypter and the handshake hash.
///
/// Noncopyable because the crypter inside it is (a copy would reuse nonces). Frozen so that callers can take the
/// crypter out of it (partial consumption).
@frozen
public struct HandshakeResult: ~Copyable, Sendable {
    /// Encrypts and decrypts every later message of the session (write-up §6).
    public var crypter: Crypter
    /// The final `h` of the handshake: the channel binding that the linking signature covers.
    public var handshakeHash: [UInt8]
}

/// The authenticator's answer to message 1: message 2, to send, and its own result. Frozen, like
/// ``HandshakeResult``, so that its parts can be taken out.
@frozen
public struct HandshakeResponse: ~Copyable, Sendable {
    /// Message 2 (81 bytes), to send to the client.
    public var message: [UInt8]
    /// The authenticator's crypter and the handshake hash.
    public var result: HandshakeResult
}

/// The client (the computer that showed the QR code) before it sends message 1.
///
/// ```swift
/// let (message1, waiting) = try HandshakeInitiator(kind: .qrInitiated(qrKey: qrKey), psk: psk,
///                                                  ephemeralKey: .init()).makeMessage()
/// // send message1, receive message2
/// let result = try waiting.processResponse(message2)
/// ```
public struct HandshakeInitiator: Sendable {
    /// Which of the two handshakes to run, with the static key the client knows.
    public enum Kind: Sendable {
        /// QR-initiated (Noise_KNpsk0, prologue 0x01): the client's own key, whose public half is in the QR code.
        case qrInitiated(qrKey: P256.KeyAgreement.PrivateKey)
        /// State-assisted (Noise_NKpsk0, prologue 0x00): the authenticator's identity key from linking information.
        case stateAssisted(peerIdentity: P256.KeyAgreement.PublicKey)
    }

    private let kind: Kind
    private let ephemeralKey: P256.KeyAgreement.PrivateKey
    private let state: SymmetricState

    /// Initializes the handshake state (prologue, pre-message key, `MixKeyAndHash(psk)`).
    /// - Parameters:
    ///   - psk: the 32-byte PSK derived from the decrypted BLE advert (write-up §2).
    ///   - ephemeralKey: a fresh key, used for this handshake only.
    public init(kind: Kind, psk: [UInt8], ephemeralKey: P256.KeyAgreement.PrivateKey) throws(NoiseError) {
        self.kind = kind
        self.ephemeralKey = ephemeralKey
        switch kind {
        case .qrInitiated(let qrKey):
            state = try SymmetricState(.knpsk0, preMessageKey: qrKey.publicKey.uncompressed, psk: psk)
        case .stateAssisted(let peerIdentity):
            state = try SymmetricState(.nkpsk0, preMessageKey: peerIdentity.uncompressed, psk: psk)
        }
    }

    /// Writes message 1 (`-> psk, e[, es]`) and returns it with the state that waits for message 2.
    public consuming func makeMessage() throws(NoiseError) -> (message: [UInt8], waiting: HandshakeInitiatorWaiting) {
        // v2_handshake.cc BuildInitialMessage: MixHash(e.pub), MixKey(e.pub) (psk mode), NK: MixKey(DH(e, rs)).
        let ephemeralPublic = ephemeralKey.publicKey.uncompressed
        var state = self.state
        state.mixHash(ephemeralPublic)
        state.mixKey(ephemeralPublic)
        var qrKey: P256.KeyAgreement.PrivateKey?
        switch kind {
        case .qrInitiated(let key):
            qrKey = key
        case .stateAssisted(let peerIdentity):
            state.mixKey(try ECDH.handshakeDH(ephemeralKey, peerIdentity))
        }
        let tag = try state.encryptAndHash([])
        let waiting = HandshakeInitiatorWaiting(state: state, ephemeralKey: ephemeralKey, qrKey: qrKey)
        return (ephemeralPublic + tag, waiting)
    }
}

extension HandshakeInitiator: CustomStringConvertible, CustomReflectable {
    /// Names the handshake only: the keys stay out of logs.
    public var description: String { "HandshakeInitiator(\(kind.protocolName))" }

    /// Keeps the keys out of `dump` and the debugger.
    public var customMirror: Mirror { Mirror(self, children: ["protocol": kind.protocolName]) }
}

/// The client after sending message 1, waiting for message 2.
public struct HandshakeInitiatorWaiting: Sendable {
    private let state: SymmetricState
    private let ephemeralKey: P256.KeyAgreement.PrivateKey
    /// The QR key (KN only): the client mirrors the authenticator's `DH(e', rs)` with `DH(s, re')`.
    private let qrKey: P256.KeyAgreement.PrivateKey?

    fileprivate init(
        state: SymmetricState, ephemeralKey: P256.KeyAgreement.PrivateKey, qrKey: P256.KeyAgreement.PrivateKey?
    ) {
        self.state = state
        self.ephemeralKey = ephemeralKey
        self.qrKey = qrKey
    }

    /// Reads message 2 (`<- e, ee[, se]`) and splits: the client writes with k1 and reads with k2.
    ///
    /// Checks run cheapest first: the length (exactly 81 bytes, as current Chromium's `ProcessResponse` requires),
    /// then the point, then ECDH and the tag.
    public consuming func processResponse(_ message: [UInt8]) throws(NoiseError) -> HandshakeResult {
        let peerEphemeral = try HandshakeMessage.peerKey(message)
        let peerBytes = message[0..<HandshakeMessage.pointLength]
        // v2_handshake.cc ProcessResponse: MixHash(re), MixKey(re), MixKey(DH(e, re)), KN: MixKey(DH(s, re)).
        var state = self.state
        state.mixHash(peerBytes)
        state.mixKey(peerBytes)
        state.mixKey(try ECDH.handshakeDH(ephemeralKey, peerEphemeral))
        if let qrKey {
            state.mixKey(try ECDH.handshakeDH(qrKey, peerEphemeral))
        }
        try state.decryptAndHash(message[HandshakeMessage.pointLength...])
        let (k1, k2) = state.split()
        return HandshakeResult(crypter: Crypter(handshakeReadKey: k2, writeKey: k1), handshakeHash: state.hash)
    }
}

extension HandshakeInitiatorWaiting: CustomStringConvertible, CustomReflectable {
    /// The keys stay out of logs.
    public var description: String { "HandshakeInitiatorWaiting" }

    /// Keeps the keys out of `dump` and the debugger.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// The authenticator (the phone) side: answers message 1 in one step.
public enum HandshakeResponder {
    /// Which of the two handshakes to run, with the static key the authenticator knows.
    public enum Kind: Sendable {
        /// QR-initiated (Noise_KNpsk0, prologue 0x01): the client's public key, decompressed from the QR code.
        case qrInitiated(qrPublicKey: P256.KeyAgreement.PublicKey)
        /// State-assisted (Noise_NKpsk0, prologue 0x00): the authenticator's own identity key.
        case stateAssisted(identityKey: P256.KeyAgreement.PrivateKey)
    }

    /// Reads message 1 and writes message 2; the authenticator reads with k1 and writes with k2.
    ///
    /// Checks run cheapest first: PSK length, message length (exactly 81 bytes), the point, then ECDH and the tag.
    /// - Parameter ephemeralKey: a fresh key, used for this handshake only.
    public static func respond(
        to message: [UInt8], kind: Kind, psk: [UInt8], ephemeralKey: P256.KeyAgreement.PrivateKey
    ) throws(NoiseError) -> HandshakeResponse {
        guard psk.count == 32 else { throw .wrongPSKLength(psk.count) }
        let peerEphemeral = try HandshakeMessage.peerKey(message)
        let peerBytes = message[0..<HandshakeMessage.pointLength]
        var state: SymmetricState
        switch kind {
        case .qrInitiated(let qrPublicKey):
            state = try SymmetricState(.knpsk0, preMessageKey: qrPublicKey.uncompressed, psk: psk)
        case .stateAssisted(let identityKey):
            state = try SymmetricState(.nkpsk0, preMessageKey: identityKey.publicKey.uncompressed, psk: psk)
        }

        // v2_handshake.cc RespondToHandshake: MixHash(re), MixKey(re), NK: MixKey(DH(s, re)), DecryptAndHash.
        state.mixHash(peerBytes)
        state.mixKey(peerBytes)
        if case .stateAssisted(let identityKey) = kind {
            state.mixKey(try ECDH.handshakeDH(identityKey, peerEphemeral))
        }
        try state.decryptAndHash(message[HandshakeMessage.pointLength...])

        // Then e': MixHash(e'.pub), MixKey(e'.pub), MixKey(DH(e', re)), KN: MixKey(DH(e', rs)), EncryptAndHash("").
        let ephemeralPublic = ephemeralKey.publicKey.uncompressed
        state.mixHash(ephemeralPublic)
        state.mixKey(ephemeralPublic)
        state.mixKey(try ECDH.handshakeDH(ephemeralKey, peerEphemeral))
        if case .qrInitiated(let qrPublicKey) = kind {
            state.mixKey(try ECDH.handshakeDH(ephemeralKey, qrPublicKey))
        }
        let tag = try state.encryptAndHash([])
        let (k1, k2) = state.split()
        return HandshakeResponse(
            message: ephemeralPublic + tag,
            result: HandshakeResult(crypter: Crypter(handshakeReadKey: k1, writeKey: k2), handshakeHash: state.hash)
        )
    }
}

// MARK: - Noise internals

/// The two handshake patterns: protocol name (31 ASCII bytes, zero-padded to 32) and prologue byte.
enum HandshakePattern: Sendable {
    /// QR-initiated.
    case knpsk0
    /// State-assisted.
    case nkpsk0

    var protocolName: String {
        switch self {
        case .knpsk0: "Noise_KNpsk0_P256_AESGCM_SHA256"
        case .nkpsk0: "Noise_NKpsk0_P256_AESGCM_SHA256"
        }
    }

    /// v2_handshake.cc BuildInitialMessage: `prologue[0] = 1` for KN, `0` for NK.
    var prologue: UInt8 {
        switch self {
        case .knpsk0: 1
        case .nkpsk0: 0
        }
    }
}

extension HandshakeInitiator.Kind {
    fileprivate var protocolName: String {
        switch self {
        case .qrInitiated: HandshakePattern.knpsk0.protocolName
        case .stateAssisted: HandshakePattern.nkpsk0.protocolName
        }
    }
}

/// The shape shared by both handshake messages.
enum HandshakeMessage {
    /// An uncompressed P-256 point: `04 ‖ X ‖ Y`.
    static let pointLength = 65
    /// The AES-GCM tag over the empty payload.
    static let tagLength = 16
    /// Every handshake message: point and tag.
    static let length = pointLength + tagLength

    /// Checks the length and parses the peer's ephemeral key, before any ECDH.
    static func peerKey(_ message: [UInt8]) throws(NoiseError) -> P256.KeyAgreement.PublicKey {
        guard message.count == length else { throw .wrongLength(message.count) }
        guard let key = ECDH.publicKey(uncompressed: message[0..<pointLength]) else { throw .invalidPoint }
        return key
    }
}

/// P-256 helpers shared by the handshake and the linking signature.
enum ECDH {
    /// An uncompressed point (`04 ‖ X ‖ Y`, 65 bytes) on the curve, or nil.
    static func publicKey(uncompressed bytes: ArraySlice<UInt8>) -> P256.KeyAgreement.PublicKey? {
        guard bytes.count == HandshakeMessage.pointLength, bytes.first == 0x04 else { return nil }
        return try? P256.KeyAgreement.PublicKey(x963Representation: bytes)
    }

    /// ECDH: the raw 32-byte x coordinate of the shared point, or nil if swift-crypto refuses.
    static func sharedX(_ privateKey: P256.KeyAgreement.PrivateKey, _ publicKey: P256.KeyAgreement.PublicKey)
        -> [UInt8]?
    {
        guard let secret = try? privateKey.sharedSecretFromKeyAgreement(with: publicKey) else { return nil }
        return secret.withUnsafeBytes { Array($0) }
    }

    /// ``sharedX(_:_:)`` for the handshake, where both keys have already been validated.
    static func handshakeDH(
        _ privateKey: P256.KeyAgreement.PrivateKey, _ publicKey: P256.KeyAgreement.PublicKey
    ) throws(NoiseError) -> [UInt8] {
        guard let shared = sharedX(privateKey, publicKey) else { throw .cryptoFailure }
        return shared
    }
}

extension P256.KeyAgreement.PublicKey {
    /// The 65-byte uncompressed X9.62 encoding, `04 ‖ X ‖ Y`.
    var uncompressed: [UInt8] { Array(x963Representation) }
}

/// Noise's SymmetricState (noiseprotocol.org §5.2) as Chromium's noise.cc implements it.
struct SymmetricState: Sendable {
    /// `ck`.
    private var chainingKey: [UInt8]
    /// `h`; its final value is the handshake hash.
    private(set) var hash: [UInt8]
    /// `k`. Every EncryptAndHash/DecryptAndHash in these patterns directly follows a MixKey, so `n` is always 0.
    private var key: SymmetricKey

    /// `InitializeSymmetric(name)`, `MixHash(prologue)`, `MixHash(pre-message key)`, `MixKeyAndHash(psk)`.
    init(_ pattern: HandshakePattern, preMessageKey: [UInt8], psk: [UInt8]) throws(NoiseError) {
        guard psk.count == 32 else { throw .wrongPSKLength(psk.count) }
        // noise.cc Noise::Init: the 31-byte name plus its NUL terminator is exactly HASHLEN, so h = ck = name ‖ 0.
        let name = Array(pattern.protocolName.utf8) + [0]
        chainingKey = name
        hash = name
        key = SymmetricKey(data: [UInt8](repeating: 0, count: 32))
        mixHash([pattern.prologue])
        mixHash(preMessageKey)
        mixKeyAndHash(psk)
    }

    /// `h = SHA-256(h ‖ data)`.
    mutating func mixHash(_ data: some Sequence<UInt8>) {
        var hasher = SHA256()
        hasher.update(data: hash)
        hasher.update(data: Array(data))
        hash = hasher.finalize().bytes
    }

    /// `ck, k = HKDF(salt: ck, ikm, 64)` (noise.cc HKDF2).
    mutating func mixKey(_ inputKeyMaterial: some Sequence<UInt8>) {
        let output = hkdf(inputKeyMaterial, count: 64)
        chainingKey = Array(output[0..<32])
        key = SymmetricKey(data: output[32..<64])
    }

    /// `ck, temp_h, k = HKDF(salt: ck, ikm, 96)`, then `MixHash(temp_h)` (noise.cc MixKeyAndHash).
    mutating func mixKeyAndHash(_ inputKeyMaterial: [UInt8]) {
        let output = hkdf(inputKeyMaterial, count: 96)
        chainingKey = Array(output[0..<32])
        mixHash(output[32..<64])
        key = SymmetricKey(data: output[64..<96])
    }

    /// AES-256-GCM with `n = 0` (12 zero bytes) and AAD `h`, then `MixHash(ciphertext ‖ tag)`.
    mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let sealed: AES.GCM.SealedBox
        do {
            sealed = try AES.GCM.seal(plaintext, using: key, nonce: try Self.zeroNonce(), authenticating: hash)
        } catch {
            throw .cryptoFailure
        }
        let ciphertext = Array(sealed.ciphertext) + Array(sealed.tag)
        mixHash(ciphertext)
        return ciphertext
    }

    /// Opens `ciphertext ‖ tag` with `n = 0` and AAD `h`, then `MixHash`; the payload must be empty, which the
    /// callers guarantee by requiring exactly 81-byte messages.
    mutating func decryptAndHash(_ ciphertext: ArraySlice<UInt8>) throws(NoiseError) {
        guard ciphertext.count == HandshakeMessage.tagLength else {
            throw .wrongLength(HandshakeMessage.pointLength + ciphertext.count)
        }
        do {
            let box = try AES.GCM.SealedBox(nonce: try Self.zeroNonce(), ciphertext: [UInt8](), tag: ciphertext)
            _ = try AES.GCM.open(box, using: key, authenticating: hash)
        } catch {
            throw .authenticationFailed
        }
        mixHash(ciphertext)
    }

    /// `Split()`: `(k1, k2) = HKDF(salt: ck, ikm: empty, 64)` (noise.cc traffic_keys).
    func split() -> (SymmetricKey, SymmetricKey) {
        let output = hkdf([UInt8](), count: 64)
        return (SymmetricKey(data: output[0..<32]), SymmetricKey(data: output[32..<64]))
    }

    private func hkdf(_ inputKeyMaterial: some Sequence<UInt8>, count: Int) -> [UInt8] {
        HKDFSHA256.derive(inputKeyMaterial: Array(inputKeyMaterial), salt: chainingKey, info: [], length: count)
    }

    /// noise.cc puts `n` in bytes 0–3 and Crypter puts it in 8–11; with `n = 0` both are 12 zero bytes.
    private static func zeroNonce() throws -> AES.GCM.Nonce {
        try AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 12))
    }
}
