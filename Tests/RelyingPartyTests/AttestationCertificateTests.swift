import CBOR
import Crypto
import Foundation
import Testing
import WebAuthn

@testable import RelyingParty

/// The minimal DER walk over real attestation certificates from the recorded vectors.
struct AttestationCertificateTests {
    /// x5c of the named registration vector in recorded.json.
    static func x5c(_ name: String) throws -> [[UInt8]] {
        let file = try VectorFile.load("recorded")
        let vector = try #require(file.registrations.first { $0.name == name })
        let object = try AttestationObject(bytes: try bytes(vector.attestationObject))
        let chain = try #require(object.statement.mapValue?["x5c"]?.arrayValue)
        return try chain.map { try #require($0.bytesValue) }
    }

    @Test func readsTheYubiKeyLeaf() throws {
        let leaf = try #require(AttestationCertificate(der: try Self.x5c("py_webauthn-packed-yubikey-firefox")[0]))
        #expect(leaf.version == 3)
        #expect(leaf.subjectValues(AttestationCertificate.countryName) == ["SE"])
        #expect(leaf.subjectValues(AttestationCertificate.organizationName) == ["Yubico AB"])
        #expect(leaf.subjectValues(AttestationCertificate.organizationalUnitName) == ["Authenticator Attestation"])
        #expect(leaf.subjectValues(AttestationCertificate.commonName) == ["Yubico U2F EE Serial 719807075"])
        #expect(leaf.basicConstraintsCA == false)
        #expect(leaf.aaguidExtension?.critical == false)
        #expect(
            leaf.aaguidExtension?.aaguid.map { AAGUID(bytes: $0)!.description }
                == "6d44ba9b-f6ec-2e49-b930-0c8fe920cb73")
        #expect(leaf.publicKey != nil)
    }

    @Test func readsTheSpecLeaf() throws {
        let leaf = try #require(AttestationCertificate(der: try Self.x5c("spec-packed-es256")[0]))
        #expect(leaf.version == 3)
        #expect(leaf.subjectValues(AttestationCertificate.commonName) == ["WebAuthn test vectors"])
        #expect(leaf.basicConstraintsCA == false)
        #expect(leaf.aaguidExtension == nil)
        #expect(leaf.publicKey?.rawRepresentation.prefix(4) == Data([0xA9, 0x1B, 0xA4, 0x38]))
    }

    /// Every prefix and every single-byte truncation point of a real certificate is handled without a crash.
    @Test func damagedCertificatesAreRefused() throws {
        let der = try Self.x5c("py_webauthn-packed-yubikey-firefox")[0]
        for length in 0..<der.count {
            #expect(AttestationCertificate(der: Array(der[..<length])) == nil, "prefix \(length)")
        }
        #expect(AttestationCertificate(der: der + [0]) == nil)
        // Flipping bytes changes tags and lengths all over; the reader must stay in bounds.
        for index in der.indices {
            var flipped = der
            flipped[index] ^= 0xFF
            _ = AttestationCertificate(der: flipped)
        }
    }

    @Test func derReaderRefusesBadLengths() {
        var reader = DERReader([0x30, 0x80][...])  // indefinite length
        #expect(reader.read() == nil)
        reader = DERReader([0x30, 0x85, 1, 0, 0, 0, 0][...])  // 5 length octets
        #expect(reader.read() == nil)
        reader = DERReader([0x30, 0x82, 0xFF, 0xFF, 0][...])  // longer than the input
        #expect(reader.read() == nil)
        reader = DERReader([0x1F, 0x01, 0x00][...])  // high tag number
        #expect(reader.read() == nil)
        reader = DERReader([0x04, 0x81, 0x02, 0xAA, 0xBB, 0x05, 0x00][...])
        #expect(reader.read().map { Array($0.contents) } == [0xAA, 0xBB])
        #expect(reader.read(tag: 0x05).map { $0.contents.isEmpty } == true)
        #expect(reader.isAtEnd)
    }
}
