import Basics
import CBOR
import Crypto
import TestSupport
import Testing

@testable import Hybrid

struct AdvertTests {
    struct AdvertVector: Decodable {
        var qrSecret: String
        var tunnelID: String
        var eidKey: String
        var advert: String
        var plaintext: String
        var nonce: String
        var routingID: String
        var domainID: UInt16
        var tag: String
        var psk: String
        var connectURL: String

        enum CodingKeys: String, CodingKey {
            case qrSecret = "qr_secret", tunnelID = "tunnel_id", eidKey = "eid_key", advert, plaintext, nonce
            case routingID = "routing_id", domainID = "domain_id", tag, psk, connectURL = "connect_url"
        }
    }

    struct PlaintextVector: Decodable {
        var plaintext: String
        var valid: Bool
        var nonce: String?
        var routingID: String?
        var domainID: UInt16?

        enum CodingKeys: String, CodingKey {
            case plaintext, valid, nonce, routingID = "routing_id", domainID = "domain_id"
        }
    }

    @Test func advertVectorsDecryptAndEncrypt() throws {
        for vector in try HybridVectors.decodedSection("adverts", as: AdvertVector.self) {
            let secret = try HybridVectors.hexBytes(vector.qrSecret)
            let key = KeyDerivation.eidKey(qrSecret: secret)
            #expect(key.rawRepresentation == (try HybridVectors.hexBytes(vector.eidKey)))
            let advert = try HybridVectors.hexBytes(vector.advert)
            #expect(Array(advert.suffix(4)) == (try HybridVectors.hexBytes(vector.tag)))
            let plaintext = try key.decrypt(advert)
            #expect(plaintext.bytes == (try HybridVectors.hexBytes(vector.plaintext)))
            #expect(plaintext.nonce == (try HybridVectors.hexBytes(vector.nonce)))
            #expect(plaintext.routingID == (try RoutingID(hex: vector.routingID)))
            #expect(plaintext.domain.id == vector.domainID)
            #expect(key.encrypt(plaintext) == advert)
            #expect(KeyDerivation.psk(secret: secret, advert: plaintext) == (try HybridVectors.hexBytes(vector.psk)))
            let tunnelID = KeyDerivation.tunnelID(qrSecret: secret)
            #expect(tunnelID.hex == vector.tunnelID)
            let url = TunnelServerEndpoint.domain(plaintext.domain).url(for: .connect(plaintext.routingID, tunnelID))
            #expect(url == vector.connectURL)
            // Also found among other candidate keys, at its index.
            let others = (0..<3).map { KeyDerivation.eidKey(qrSecret: [UInt8](repeating: UInt8($0), count: 16)) }
            let found = try EIDKey.decrypt(advert, candidates: others + [key] + others)
            #expect(found.keyIndex == 3 && found.plaintext == plaintext)
        }
    }

    @Test func plaintextVectors() throws {
        for vector in try HybridVectors.decodedSection("eid_plaintexts", as: PlaintextVector.self) {
            let bytes = try HybridVectors.hexBytes(vector.plaintext)
            if vector.valid {
                let plaintext = try AdvertPlaintext(bytes: bytes)
                #expect(plaintext.nonce == (try HybridVectors.hexBytes(try #require(vector.nonce))))
                #expect(plaintext.routingID == (try RoutingID(hex: try #require(vector.routingID))))
                #expect(plaintext.domain.id == vector.domainID)
                #expect(plaintext.bytes == bytes)
            } else {
                #expect(throws: AdvertError.self, "\(vector.plaintext)") { try AdvertPlaintext(bytes: bytes) }
            }
        }
    }

    @Test func plaintextRejections() {
        let valid = [UInt8](hex: "00098b736b36a98cb9a42f090a0bff01")!
        var reserved = valid
        reserved[0] = 0x80
        #expect(throws: AdvertError.reservedByteNotZero(0x80)) { try AdvertPlaintext(bytes: reserved) }
        for domain in [UInt16(2), 3, 200, 255] {
            var bytes = valid
            bytes[14] = UInt8(domain & 0xFF)
            bytes[15] = UInt8(domain >> 8)
            #expect(throws: AdvertError.unassignedDomain(domain)) { try AdvertPlaintext(bytes: bytes) }
        }
        #expect(throws: AdvertError.wrongLength(15)) { try AdvertPlaintext(bytes: Array(valid.dropLast())) }
        #expect(throws: AdvertError.wrongLength(17)) { try AdvertPlaintext(bytes: valid + [0]) }
        #expect(throws: AdvertError.invalidNonceLength(9)) {
            try AdvertPlaintext(
                nonce: [UInt8](repeating: 0, count: 9), routingID: RoutingID(bytes: [1, 2, 3]), domain: .google)
        }
    }

    static let key = KeyDerivation.eidKey(qrSecret: [UInt8](repeating: 0x11, count: 16))

    static func advert(domain: TunnelDomain = .apple) throws -> [UInt8] {
        try key.encrypt(
            AdvertPlaintext(nonce: Array(1...10), routingID: RoutingID(bytes: [0xAA, 0xBB, 0xCC]), domain: domain))
    }

    @Test func everyFlippedBitIsRejected() throws {
        let advert = try Self.advert()
        #expect(try Self.key.decrypt(advert).domain == .apple)
        for bit in 0..<advert.count * 8 {
            var damaged = advert
            damaged[bit / 8] ^= 1 << UInt8(bit % 8)
            #expect(throws: AdvertError.tagMismatch) { try Self.key.decrypt(damaged) }
        }
    }

    @Test func wrongLengthsAreRejectedBeforeAnyCrypto() throws {
        let advert = try Self.advert()
        for count in [0, 1, 16, 19, 21, 31] {
            let bytes = Array((advert + advert).prefix(count))
            #expect(throws: AdvertError.wrongLength(count)) { try Self.key.decrypt(bytes) }
            #expect(throws: AdvertError.wrongLength(count)) { try EIDKey.decrypt(bytes, candidates: [Self.key]) }
        }
    }

    @Test func keysMustBeSixtyFourBytes() throws {
        #expect(throws: AdvertError.invalidKeyLength(32)) {
            try EIDKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        }
        let copy = try EIDKey(rawRepresentation: Self.key.rawRepresentation)
        #expect(try copy.decrypt(Self.advert()) == Self.key.decrypt(Self.advert()))
    }

    /// An authentic advert whose plaintext breaks a rule is rejected for that rule, not as someone else's.
    @Test func authenticAdvertsWithBadPlaintextsAreRejectedByRule() throws {
        var block = try Self.key.decrypt(Self.advert()).bytes
        block[0] = 1
        #expect(throws: AdvertError.reservedByteNotZero(1)) { try Self.key.decrypt(Self.key.seal(block)) }
        block[0] = 0
        block[14] = 255
        block[15] = 0
        let reservedDomain = Self.key.seal(block)
        #expect(throws: AdvertError.unassignedDomain(255)) { try Self.key.decrypt(reservedDomain) }
        // Among several keys, the authentic rejection is reported rather than a tag mismatch.
        let other = KeyDerivation.eidKey(qrSecret: [UInt8](repeating: 0x22, count: 16))
        #expect(throws: AdvertError.unassignedDomain(255)) {
            try EIDKey.decrypt(reservedDomain, candidates: [other, Self.key, other])
        }
        #expect(throws: AdvertError.tagMismatch) { try EIDKey.decrypt(reservedDomain, candidates: [other]) }
        #expect(throws: AdvertError.tagMismatch) { try EIDKey.decrypt(reservedDomain, candidates: []) }
    }

    /// The first candidate that accepts wins, as in Chromium's ordered trial decryption.
    @Test func firstAcceptingCandidateWins() throws {
        let advert = try Self.advert()
        let found = try EIDKey.decrypt(advert, candidates: [Self.key, Self.key])
        #expect(found.keyIndex == 0)
    }

    @Test func freshKeysAndPlaintextsRoundTrip() throws {
        var random = SeededRandom(seed: 0xAD)
        let domains: [TunnelDomain] = [.google, .apple, try TunnelDomain(id: 256), try TunnelDomain(id: 65535)]
        for _ in 0..<300 {
            let key = KeyDerivation.eidKey(qrSecret: random.bytes(16))
            let plaintext = try AdvertPlaintext(
                nonce: random.bytes(10), routingID: RoutingID(bytes: random.bytes(3)),
                domain: domains[random.below(domains.count)])
            let advert = key.encrypt(plaintext)
            #expect(advert.count == 20)
            #expect(try key.decrypt(advert) == plaintext)
            // The ciphertext is one AES block and the tag is HMAC-SHA256 over it, truncated.
            let tagKey = SymmetricKey(data: key.rawRepresentation[32..<64])
            let tag = Array(HMAC<SHA256>.authenticationCode(for: advert[0..<16], using: tagKey)).prefix(4)
            #expect(Array(advert[16...]) == Array(tag))
        }
    }

    /// Linked-flow adverts are `0x00 ‖ 15 random bytes`: those whose last two bytes name a reserved domain are
    /// dropped by Chromium, about 254 in 65536.
    @Test func linkedAdvertsFollowTheDomainRule() throws {
        var random = SeededRandom(seed: 0x11)
        let key = KeyDerivation.eidKey(linkSecret: random.bytes(32), clientNonce: random.bytes(16))
        var rejected = 0
        for _ in 0..<2_000 {
            let block = [0] + random.bytes(15)
            let domainID = UInt16(block[14]) | UInt16(block[15]) << 8
            do {
                let plaintext = try key.decrypt(key.seal(block))
                #expect(plaintext.bytes == block)
            } catch {
                #expect(error == .unassignedDomain(domainID))
                rejected += 1
            }
        }
        #expect(rejected > 0 && rejected < 40)
    }
}
