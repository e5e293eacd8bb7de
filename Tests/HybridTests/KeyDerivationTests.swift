import CBOR
import Hybrid
import TestSupport
import Testing

struct KeyDerivationTests {
    struct HKDFVector: Decodable {
        var secret: String
        var salt: String
        var purpose: UInt32
        var length: Int
        var output: String
    }

    struct QRSecretVector: Decodable {
        var qrSecret: String
        var tunnelID: String
        var eidKey: String
        var newURL: String
        var connectURL: String

        enum CodingKeys: String, CodingKey {
            case qrSecret = "qr_secret", tunnelID = "tunnel_id", eidKey = "eid_key"
            case newURL = "new_url_domain_63872", connectURL = "connect_url_domain_63872_routing_090a0b"
        }
    }

    @Test func hkdfVectors() throws {
        for vector in try HybridVectors.decodedSection("hkdf_derive", as: HKDFVector.self) {
            let output = try KeyDerivation.derive(
                secret: HybridVectors.hexBytes(vector.secret), salt: HybridVectors.hexBytes(vector.salt),
                purpose: KeyPurpose(rawValue: vector.purpose), length: vector.length)
            #expect(output == (try HybridVectors.hexBytes(vector.output)))
        }
    }

    @Test func qrSecretDerivations() throws {
        for vector in try HybridVectors.decodedSection("qr_secret_derivations", as: QRSecretVector.self) {
            let secret = try HybridVectors.hexBytes(vector.qrSecret)
            let tunnelID = KeyDerivation.tunnelID(qrSecret: secret)
            #expect(tunnelID.hex == vector.tunnelID)
            #expect(
                KeyDerivation.eidKey(qrSecret: secret).rawRepresentation == (try HybridVectors.hexBytes(vector.eidKey)))
            let endpoint = TunnelServerEndpoint.domain(try TunnelDomain(id: 63872))
            #expect(endpoint.url(for: .new(tunnelID)) == vector.newURL)
            #expect(endpoint.url(for: .connect(try RoutingID(hex: "090a0b"), tunnelID)) == vector.connectURL)
        }
    }

    @Test func outputIsPrefixConsistent() throws {
        let secret: [UInt8] = Array(0..<16)
        let long = try KeyDerivation.derive(secret: secret, purpose: .eidKey, length: 200)
        for length in [1, 16, 32, 33, 64, 199] {
            #expect(
                try KeyDerivation.derive(secret: secret, purpose: .eidKey, length: length) == Array(long.prefix(length))
            )
        }
    }

    @Test func namedDerivationsMatchTheGenericOne() throws {
        var random = SeededRandom(seed: 3)
        for _ in 0..<20 {
            let secret = random.bytes(16 + random.below(17))
            let nonce = random.bytes(16)
            #expect(
                KeyDerivation.eidKey(qrSecret: secret).rawRepresentation
                    == (try KeyDerivation.derive(secret: secret, purpose: .eidKey, length: 64)))
            #expect(
                KeyDerivation.eidKey(linkSecret: secret, clientNonce: nonce).rawRepresentation
                    == (try KeyDerivation.derive(secret: secret, salt: nonce, purpose: .eidKey, length: 64)))
            #expect(
                KeyDerivation.tunnelID(qrSecret: secret).bytes
                    == (try KeyDerivation.derive(secret: secret, purpose: .tunnelID, length: 16)))
            let plaintext = try AdvertPlaintext(
                nonce: random.bytes(10), routingID: RoutingID(bytes: random.bytes(3)), domain: .google)
            #expect(
                KeyDerivation.psk(secret: secret, advert: plaintext)
                    == (try KeyDerivation.derive(secret: secret, salt: plaintext.bytes, purpose: .psk, length: 32)))
        }
    }

    @Test func purposesAreDistinct() throws {
        let secret = [UInt8](repeating: 7, count: 16)
        let purposes: [KeyPurpose] = [.eidKey, .tunnelID, .psk, .pairedSecret, .identityKeySeed, .perContactIDSecret]
        #expect(purposes.map(\.rawValue) == [1, 2, 3, 4, 5, 6])
        let outputs = try purposes.map { try KeyDerivation.derive(secret: secret, purpose: $0, length: 32) }
        #expect(Set(outputs).count == purposes.count)
    }

    @Test func purposeIsLittleEndianInfo() {
        #expect(KeyPurpose.eidKey.info == [1, 0, 0, 0])
        #expect(KeyPurpose(rawValue: 0x0102_0304).info == [4, 3, 2, 1])
        #expect(KeyPurpose(rawValue: 77).description == "purpose 77")
        #expect(KeyPurpose.psk.description == "psk")
    }

    @Test(arguments: [-1, 8161, Int.max, Int.min])
    func lengthsHKDFCannotGiveAreRejected(length: Int) {
        #expect(throws: KeyDerivationError.invalidLength(length)) {
            try KeyDerivation.derive(secret: [1], purpose: .psk, length: length)
        }
    }

    @Test func lengthLimitsAreAccepted() throws {
        #expect(try KeyDerivation.derive(secret: [1], purpose: .psk, length: 0) == [])
        #expect(try KeyDerivation.derive(secret: [1], purpose: .psk, length: 8160).count == 8160)
    }
}
