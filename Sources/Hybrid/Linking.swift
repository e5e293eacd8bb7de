import Basics
import CBOR
import Crypto

/// Why linking information was refused.
public enum LinkingError: Error, Hashable, Sendable {
    /// The linking information is not a CBOR map.
    case notAMap
    /// A required key (1 to 6) is absent.
    case missingField(Int)
    /// A key holds the wrong CBOR type, or a byte string of the wrong length.
    case invalidField(Int)
    /// Key 4 is not an uncompressed P-256 point on the curve.
    case invalidIdentityKey
    /// The handshake hash given to sign or verify is not 32 bytes.
    case wrongHandshakeHashLength(Int)
    /// Key 6 is not the HMAC that `ECDH(QR key, key 4)` gives over this session's handshake hash.
    case signatureMismatch
    /// swift-crypto refused ECDH on valid keys (not expected to happen).
    case cryptoFailure
}

extension LinkingError: CustomStringConvertible {
    /// One line for logs; it never contains key material.
    public var description: String {
        switch self {
        case .notAMap: "caBLE linking information is not a CBOR map"
        case .missingField(let key): "caBLE linking information lacks key \(key)"
        case .invalidField(let key): "caBLE linking information key \(key) is malformed"
        case .invalidIdentityKey: "caBLE linking information key 4 is not a P-256 point"
        case .wrongHandshakeHashLength(let count): "handshake hash is \(count) bytes, expected 32"
        case .signatureMismatch: "caBLE linking information signature does not verify"
        case .cryptoFailure: "swift-crypto refused ECDH for the linking signature"
        }
    }
}

/// Linking ("pairing") information: what a client stores to reach the authenticator again without a QR code
/// (write-up §6; Chromium cable_discovery_data.cc `Pairing::Parse`, v2_handshake.cc `PairingSignature`).
///
/// It travels as key 2 of the post-handshake message (older phones) or key 1 of an update message:
///
/// | key | type | content |
/// |---|---|---|
/// | 1 | bstr | contact ID, opaque (an FCM token on Android) |
/// | 2 | bstr | link ID, 8 bytes |
/// | 3 | bstr | link secret, 32 bytes |
/// | 4 | bstr | authenticator identity public key, 65 bytes uncompressed |
/// | 5 | tstr | display name |
/// | 6 | bstr | `HMAC-SHA256(ECDH(identity key, client QR key).x, handshake hash)`, 32 bytes |
/// | 999 | bool | true from Google Play services |
///
/// Parsing is stricter than Chromium, which checks only that keys 1–4 and 6 are byte strings, that key 4 is 65
/// bytes and that the signature verifies: here the link ID must be 8 bytes, the link secret 32 and the signature
/// 32 (the sizes Chromium's phone writes), and key 4 must be on the curve. Like Chromium, unknown keys are ignored
/// and key 999 counts only when it is `true`.
public struct LinkingInfo: Hashable, Sendable {
    /// Key 1: the contact ID the tunnel server uses to wake the authenticator.
    public var contactID: [UInt8]
    /// Key 2: the 8-byte link ID, sent back in `X-caBLE-Client-Payload`.
    public var linkID: [UInt8]
    /// Key 3: the 32-byte link secret, from which later EID keys and PSKs are derived. Never logged.
    public var linkSecret: [UInt8]
    /// Key 4: the authenticator's identity public key, 65 bytes uncompressed; the NK handshake's static key.
    public var authenticatorPublicKey: [UInt8]
    /// Key 5: a name to show the user.
    public var name: String
    /// Key 6: the 32-byte signature binding this information to the handshake.
    public var signature: [UInt8]
    /// Key 999: set by Google Play services ("new implementation" in Chromium).
    public var isFromPlayServices: Bool

    /// The link ID length (Chromium v2_constants.h `kPairingIDSize`).
    public static let linkIDLength = 8
    /// The link secret length.
    public static let linkSecretLength = 32

    /// Authenticator side: builds and signs linking information for the client whose QR key is
    /// `clientQRPublicKey`, over the handshake hash of the current session (v2_handshake.cc
    /// `CalculatePairingSignature`).
    public init(
        contactID: [UInt8], linkID: [UInt8], linkSecret: [UInt8], identityKey: P256.KeyAgreement.PrivateKey,
        name: String, clientQRPublicKey: P256.KeyAgreement.PublicKey, handshakeHash: [UInt8],
        isFromPlayServices: Bool = false
    ) throws(LinkingError) {
        guard linkID.count == Self.linkIDLength else { throw .invalidField(2) }
        guard linkSecret.count == Self.linkSecretLength else { throw .invalidField(3) }
        self.contactID = contactID
        self.linkID = linkID
        self.linkSecret = linkSecret
        self.authenticatorPublicKey = identityKey.publicKey.uncompressed
        self.name = name
        self.signature = try Self.signature(
            privateKey: identityKey, peerPublicKey: clientQRPublicKey, handshakeHash: handshakeHash)
        self.isFromPlayServices = isFromPlayServices
    }

    /// Parses the CBOR map and checks every field's type and size; the signature is checked separately by
    /// ``verifySignature(qrKey:handshakeHash:)``, which needs the client's QR key.
    public init(cbor: CBORValue) throws(LinkingError) {
        guard let map = cbor.mapValue else { throw .notAMap }
        func bytes(_ key: Int, count: Int? = nil) throws(LinkingError) -> [UInt8] {
            guard let value = map[.int(key)] else { throw .missingField(key) }
            guard let bytes = value.bytesValue, count.map({ bytes.count == $0 }) ?? true else {
                throw .invalidField(key)
            }
            return bytes
        }
        contactID = try bytes(1)
        linkID = try bytes(2, count: Self.linkIDLength)
        linkSecret = try bytes(3, count: Self.linkSecretLength)
        authenticatorPublicKey = try bytes(4, count: HandshakeMessage.pointLength)
        guard let nameValue = map[5] else { throw .missingField(5) }
        guard let name = nameValue.textValue else { throw .invalidField(5) }
        self.name = name
        signature = try bytes(6, count: 32)
        // cable_discovery_data.cc: the tag counts only if it is a bool and true.
        isFromPlayServices = map[999]?.boolValue ?? false
        guard ECDH.publicKey(uncompressed: authenticatorPublicKey[...]) != nil else { throw .invalidIdentityKey }
    }

    /// The CBOR map, keys 1–6 and, when set, 999.
    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [
            1: .bytes(contactID), 2: .bytes(linkID), 3: .bytes(linkSecret), 4: .bytes(authenticatorPublicKey),
            5: .text(name), 6: .bytes(signature),
        ]
        if isFromPlayServices { map[999] = true }
        return .map(map)
    }

    /// The identity key as a swift-crypto key, for a later state-assisted handshake.
    public func identityKey() throws(LinkingError) -> P256.KeyAgreement.PublicKey {
        guard let key = ECDH.publicKey(uncompressed: authenticatorPublicKey[...]) else { throw .invalidIdentityKey }
        return key
    }

    /// Client side: checks key 6 with `ECDH(QR private key, key 4)` over this session's handshake hash
    /// (v2_handshake.cc `VerifyPairingSignature`), in constant time.
    public func verifySignature(qrKey: P256.KeyAgreement.PrivateKey, handshakeHash: [UInt8]) throws(LinkingError) {
        let expected = try Self.signature(
            privateKey: qrKey, peerPublicKey: try identityKey(), handshakeHash: handshakeHash)
        guard signature.count == expected.count else { throw .signatureMismatch }
        var difference: UInt8 = 0
        for (a, b) in zip(signature, expected) { difference |= a ^ b }
        guard difference == 0 else { throw .signatureMismatch }
    }

    /// `HMAC-SHA256(key: ECDH(private, peer).x, message: handshake hash)`; ECDH is symmetric, so the authenticator
    /// (identity key, QR public key) and the client (QR key, identity public key) compute the same value.
    static func signature(
        privateKey: P256.KeyAgreement.PrivateKey, peerPublicKey: P256.KeyAgreement.PublicKey, handshakeHash: [UInt8]
    ) throws(LinkingError) -> [UInt8] {
        guard handshakeHash.count == 32 else { throw .wrongHandshakeHashLength(handshakeHash.count) }
        guard let shared = ECDH.sharedX(privateKey, peerPublicKey) else { throw .cryptoFailure }
        let code = HMAC<SHA256>.authenticationCode(for: handshakeHash, using: SymmetricKey(data: shared))
        return Array(code)
    }
}

extension LinkingInfo: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Shows the name and the link ID; the secret and the contact ID stay out of logs.
    public var description: String {
        "LinkingInfo(name: \(name), linkID: \(linkID.hexString), contactID: \(contactID.count) bytes)"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// Hides the secret from `dump` and the debugger.
    public var customMirror: Mirror {
        Mirror(self, children: ["name": name, "linkID": linkID.hexString, "isFromPlayServices": isFromPlayServices])
    }
}
