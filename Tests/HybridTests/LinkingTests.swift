import Basics
import CBOR
import Crypto
import Testing

@testable import Hybrid

/// Linking information: built and signed by the authenticator, parsed and verified by the client.
struct LinkingTests {
    struct Session {
        let qrKey = P256.KeyAgreement.PrivateKey()
        let identityKey = P256.KeyAgreement.PrivateKey()
        let handshakeHash: [UInt8]

        /// A real QR handshake supplies the hash, as in a live session.
        init() throws {
            let psk = [UInt8](repeating: 0x5A, count: 32)
            let (message1, _) = try HandshakeInitiator(
                kind: .qrInitiated(qrKey: qrKey), psk: psk, ephemeralKey: .init()
            ).makeMessage()
            let response = try HandshakeResponder.respond(
                to: message1, kind: .qrInitiated(qrPublicKey: qrKey.publicKey), psk: psk, ephemeralKey: .init())
            handshakeHash = response.result.handshakeHash
        }

        func linking(playServices: Bool = false) throws -> LinkingInfo {
            try LinkingInfo(
                contactID: Array("fcm-token".utf8), linkID: [1, 2, 3, 4, 5, 6, 7, 8],
                linkSecret: [UInt8](repeating: 0xEE, count: 32), identityKey: identityKey, name: "Test phone",
                clientQRPublicKey: qrKey.publicKey, handshakeHash: handshakeHash, isFromPlayServices: playServices)
        }
    }

    @Test func signedByTheAuthenticatorVerifiedByTheClient() throws {
        let session = try Session()
        for playServices in [false, true] {
            let linking = try session.linking(playServices: playServices)
            let encoded = linking.cborValue.encoded()
            let parsed = try LinkingInfo(cbor: try CBORValue(decoding: encoded))
            #expect(parsed == linking)
            #expect(parsed.isFromPlayServices == playServices)
            #expect(parsed.authenticatorPublicKey == session.identityKey.publicKey.uncompressed)
            #expect(parsed.signature.count == 32)
            try parsed.verifySignature(qrKey: session.qrKey, handshakeHash: session.handshakeHash)
            #expect(try parsed.identityKey().rawRepresentation == session.identityKey.publicKey.rawRepresentation)
        }
        // Chromium's v2_handshake_unittest.cc HandshakeSignatures: the signature is HMAC-SHA256 keyed with the ECDH
        // x coordinate over the hash, computed here with swift-crypto's primitives directly.
        let shared = try session.identityKey.sharedSecretFromKeyAgreement(with: session.qrKey.publicKey)
        let key = SymmetricKey(data: shared.withUnsafeBytes { Array($0) })
        let expected = Array(HMAC<SHA256>.authenticationCode(for: session.handshakeHash, using: key))
        #expect(try session.linking().signature == expected)
    }

    @Test func wrongSignaturesAreRefused() throws {
        let session = try Session()
        let linking = try session.linking()
        var otherHash = session.handshakeHash
        otherHash[0] ^= 1
        #expect(throws: LinkingError.signatureMismatch) {
            try linking.verifySignature(qrKey: session.qrKey, handshakeHash: otherHash)
        }
        #expect(throws: LinkingError.signatureMismatch) {
            try linking.verifySignature(qrKey: .init(), handshakeHash: session.handshakeHash)
        }
        for bit in stride(from: 0, to: 256, by: 7) {
            var tampered = linking
            tampered.signature = flipping(linking.signature, bit: bit)
            #expect(throws: LinkingError.signatureMismatch) {
                try tampered.verifySignature(qrKey: session.qrKey, handshakeHash: session.handshakeHash)
            }
        }
        // A substituted identity key (a valid point) breaks the signature too.
        var substituted = linking
        substituted.authenticatorPublicKey = P256.KeyAgreement.PrivateKey().publicKey.uncompressed
        #expect(throws: LinkingError.signatureMismatch) {
            try substituted.verifySignature(qrKey: session.qrKey, handshakeHash: session.handshakeHash)
        }
        #expect(throws: LinkingError.wrongHandshakeHashLength(31)) {
            try linking.verifySignature(qrKey: session.qrKey, handshakeHash: Array(session.handshakeHash.prefix(31)))
        }
    }

    @Test func buildingChecksSizes() throws {
        let session = try Session()
        func build(
            linkID: [UInt8] = [UInt8](repeating: 1, count: 8), secret: [UInt8] = [UInt8](repeating: 2, count: 32),
            hash: [UInt8]? = nil
        ) throws(LinkingError) -> LinkingInfo {
            try LinkingInfo(
                contactID: [], linkID: linkID, linkSecret: secret, identityKey: session.identityKey, name: "",
                clientQRPublicKey: session.qrKey.publicKey, handshakeHash: hash ?? session.handshakeHash)
        }
        #expect(throws: LinkingError.invalidField(2)) { try build(linkID: [1, 2, 3]) }
        #expect(throws: LinkingError.invalidField(3)) { try build(secret: [UInt8](repeating: 2, count: 16)) }
        #expect(throws: LinkingError.wrongHandshakeHashLength(0)) { try build(hash: []) }
        _ = try build()
    }

    /// Every field: absent, the wrong type, the wrong size (Chromium's ParseInvalidLinkingInformation and more).
    @Test func malformedFieldsAreRefused() throws {
        let session = try Session()
        let valid = try #require(try session.linking().cborValue.mapValue)
        func parse(_ map: [CBORValue: CBORValue]) throws(LinkingError) -> LinkingInfo {
            try LinkingInfo(cbor: .map(map))
        }
        #expect(throws: LinkingError.notAMap) { try LinkingInfo(cbor: 1) }
        #expect(throws: LinkingError.notAMap) { try LinkingInfo(cbor: "foo") }
        for key in 1...6 {
            var missing = valid
            missing[.int(key)] = nil
            #expect(throws: LinkingError.missingField(key)) { try parse(missing) }
            var wrongType = valid
            wrongType[.int(key)] = key == 5 ? .bytes([0x41]) : .text("A")
            #expect(throws: LinkingError.invalidField(key)) { try parse(wrongType) }
        }
        for (key, size) in [(2, 7), (2, 9), (3, 31), (3, 33), (4, 64), (4, 33), (6, 31), (6, 0)] {
            var wrongSize = valid
            wrongSize[.int(key)] = .bytes([UInt8](repeating: 4, count: size))
            #expect(throws: LinkingError.invalidField(key)) { try parse(wrongSize) }
        }
        var offCurve = valid
        var point = session.identityKey.publicKey.uncompressed
        point[64] ^= 1
        offCurve[4] = .bytes(point)
        #expect(throws: LinkingError.invalidIdentityKey) { try parse(offCurve) }
        var compressedPrefix = valid
        point = session.identityKey.publicKey.uncompressed
        point[0] = 0x02
        compressedPrefix[4] = .bytes(point)
        #expect(throws: LinkingError.invalidIdentityKey) { try parse(compressedPrefix) }

        // Key 999 counts only when true; unknown keys are ignored; the contact ID may be empty.
        var tagged = valid
        tagged[999] = "yes"
        tagged[1000] = 1
        tagged[1] = .bytes([])
        let lenient = try parse(tagged)
        #expect(!lenient.isFromPlayServices && lenient.contactID.isEmpty)
    }

    @Test func descriptionsHideTheSecret() throws {
        let session = try Session()
        let linking = try session.linking()
        let secret = linking.linkSecret.hexString
        var dumped = ""
        dump(linking, to: &dumped)
        for text in [linking.description, linking.debugDescription, String(reflecting: linking), dumped] {
            #expect(!text.contains(secret))
            #expect(!text.contains("fcm-token"))
            #expect(text.contains("Test phone"))
        }
        let labels = Mirror(reflecting: linking).children.compactMap(\.label)
        #expect(!labels.contains("linkSecret") && !labels.contains("contactID") && labels.contains("name"))
        for error in [LinkingError.notAMap, .missingField(3), .invalidField(3), .signatureMismatch] {
            #expect(!String(describing: error).contains(secret))
        }
    }

    /// A whole QR session per revision: the authenticator sends a post-handshake message with linking
    /// information inline (as older phones do) and, in revision 1, an update carrying it (as current phones do);
    /// the client decrypts both and verifies the signature against its own handshake hash. Then the linked
    /// (state-assisted) handshake runs against the identity key it learnt.
    @Test(arguments: [ProtocolRevision.zero, .one])
    func linkingThroughTheTunnel(revision: ProtocolRevision) throws {
        let qrKey = P256.KeyAgreement.PrivateKey()
        let identityKey = P256.KeyAgreement.PrivateKey()
        let psk = [UInt8](repeating: 0x33, count: 32)
        let (message1, waiting) = try HandshakeInitiator(
            kind: .qrInitiated(qrKey: qrKey), psk: psk, ephemeralKey: .init()
        ).makeMessage()
        let response = try HandshakeResponder.respond(
            to: message1, kind: .qrInitiated(qrPublicKey: qrKey.publicKey), psk: psk, ephemeralKey: .init())
        let message2 = response.message
        var authenticator = response.result.crypter
        let authenticatorHash = response.result.handshakeHash
        let clientResult = try waiting.processResponse(message2)
        var client = clientResult.crypter
        let clientHash = clientResult.handshakeHash

        let linking = try LinkingInfo(
            contactID: [9, 9], linkID: [UInt8](repeating: 8, count: 8), linkSecret: [UInt8](repeating: 7, count: 32),
            identityKey: identityKey, name: "Phone", clientQRPublicKey: qrKey.publicKey,
            handshakeHash: authenticatorHash, isFromPlayServices: true)
        let getInfo = CBORValue.map([1: ["FIDO_2_0"], 3: .bytes([UInt8](repeating: 0, count: 16))]).encoded()

        let post = PostHandshakeMessage(getInfo: getInfo, linking: linking)
        let (parsed, detected) = try PostHandshakeMessage.parse(
            try client.decrypt(try authenticator.encrypt(post.plaintext(revision: revision))))
        #expect(detected == revision && parsed == post)
        try #require(parsed.linking).verifySignature(qrKey: qrKey, handshakeHash: clientHash)

        var learnt = try #require(parsed.linking)
        if revision == .one {
            let update = try TunnelFrame(
                plaintext: try client.decrypt(
                    try authenticator.encrypt(try UpdateMessage(linking: linking).frame.plaintext(revision: .one))),
                revision: .one)
            #expect(update.type == .update)
            learnt = try #require(try UpdateMessage(payload: update.payload).linking)
            try learnt.verifySignature(qrKey: qrKey, handshakeHash: clientHash)
            #expect(learnt.isFromPlayServices)
        }

        let linkedPSK = [UInt8](repeating: 0x44, count: 32)
        let (linked1, linkedWaiting) = try HandshakeInitiator(
            kind: .stateAssisted(peerIdentity: try learnt.identityKey()), psk: linkedPSK, ephemeralKey: .init()
        ).makeMessage()
        let linkedResponse = try HandshakeResponder.respond(
            to: linked1, kind: .stateAssisted(identityKey: identityKey), psk: linkedPSK, ephemeralKey: .init())
        let linkedHash = linkedResponse.result.handshakeHash
        #expect(try linkedWaiting.processResponse(linkedResponse.message).handshakeHash == linkedHash)
    }
}
