import Crypto
import Foundation
import Testing
import WebAuthn

struct ECDSASignatureDERTests {
    /// The hand-written DER matches swift-crypto's ASN.1 serializer for many real signatures,
    /// which between them have r and s with and without the top bit set and with leading zeros.
    @Test func matchesSwiftCrypto() throws {
        let key = P256.Signing.PrivateKey()
        for index in 0..<2_000 {
            let signature = try key.signature(for: [UInt8(index & 0xFF), UInt8(index >> 8)])
            let encoded = ECDSASignatureDER.encode(raw: Array(signature.rawRepresentation))
            #expect(encoded == Array(signature.derRepresentation))
        }
    }

    @Test(arguments: [
        (
            [UInt8](repeating: 0, count: 31) + [1] + [0x80] + [UInt8](repeating: 0, count: 31),
            "3026020101022100" + "80" + String(repeating: "00", count: 31)
        ),
        ([UInt8](repeating: 0, count: 64), "3006020100020100"),
        (
            [UInt8](repeating: 0x7F, count: 64),
            "30440220" + String(repeating: "7f", count: 32) + "0220" + String(repeating: "7f", count: 32)
        ),
    ])
    func edgeCases(raw: [UInt8], hex: String) {
        #expect(ECDSASignatureDER.encode(raw: raw).map { String(format: "%02x", $0) }.joined() == hex)
    }
}
