import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import Testing

/// Known answers from python-fido2 (Tools/vectors/make_pin_protocol_vectors.py).
struct PinUvAuthProtocolVectorTests {
    struct Vector: Decodable, CustomTestStringConvertible {
        var name: String
        var protocol_: Int
        var authenticator_private_key: String
        var platform_private_key: String
        var platform_public_x: String
        var platform_public_y: String
        var z: String
        var shared_secret: String
        var iv: String
        var pin: String
        var pin_hash: String
        var new_pin_enc: String
        var pin_hash_enc: String
        var set_pin_param: String
        var change_pin_param: String
        var token: String
        var token_enc: String
        var client_data_hash: String
        var token_param: String

        enum CodingKeys: String, CodingKey {
            case name, protocol_ = "protocol", authenticator_private_key, platform_private_key, platform_public_x
            case platform_public_y, z, shared_secret, iv, pin, pin_hash, new_pin_enc, pin_hash_enc, set_pin_param
            case change_pin_param, token, token_enc, client_data_hash, token_param
        }

        var testDescription: String { name }
    }

    struct File: Decodable { var vectors: [Vector] }

    static let vectors: [Vector] = {
        let url = Bundle.module.url(
            forResource: "pin-protocol-known-answers", withExtension: "json", subdirectory: "Vectors")!
        return try! JSONDecoder().decode(File.self, from: Data(contentsOf: url)).vectors
    }()

    static func hex(_ text: String) -> [UInt8] { [UInt8](hex: text)! }

    @Test func fileHasBothProtocols() {
        #expect(Set(Self.vectors.map(\.protocol_)) == [1, 2])
    }

    @Test(arguments: vectors) func reproducesPythonFido2(vector: Vector) throws {
        let pinProtocol = PinUvAuthProtocol(rawValue: vector.protocol_)
        let authenticatorKey = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: Self.hex(vector.authenticator_private_key))
        let platformCOSE: CBORValue = [
            1: 2, 3: -25, -1: 1, -2: .bytes(Self.hex(vector.platform_public_x)),
            -3: .bytes(Self.hex(vector.platform_public_y)),
        ]
        let shared = try pinProtocol.sharedSecret(privateKey: authenticatorKey, platformKey: platformCOSE)
        #expect(shared == Self.hex(vector.shared_secret))
        #expect(pinProtocol.kdf(Self.hex(vector.z)) == shared)
        #expect(shared.count == pinProtocol.sharedSecretLength)

        // The platform's side of the same agreement gives the same secret.
        let platformKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.hex(vector.platform_private_key))
        let authenticatorCOSE = PinUvAuthProtocol.coseKey(authenticatorKey.publicKey)
        #expect(try pinProtocol.sharedSecret(privateKey: platformKey, platformKey: authenticatorCOSE) == shared)

        let iv = Self.hex(vector.iv)
        var padded = Array(vector.pin.utf8)
        padded += [UInt8](repeating: 0, count: 64 - padded.count)
        #expect(try pinProtocol.encrypt(key: shared, plaintext: padded, iv: iv) == Self.hex(vector.new_pin_enc))
        #expect(try pinProtocol.decrypt(key: shared, ciphertext: Self.hex(vector.new_pin_enc)) == padded)
        let pinHash = Array(SHA256.hash(data: Array(vector.pin.utf8)).prefix(16))
        #expect(pinHash == Self.hex(vector.pin_hash))
        #expect(try pinProtocol.encrypt(key: shared, plaintext: pinHash, iv: iv) == Self.hex(vector.pin_hash_enc))
        #expect(
            try pinProtocol.encrypt(key: shared, plaintext: Self.hex(vector.token), iv: iv)
                == Self.hex(vector.token_enc))

        let newPinEnc = Self.hex(vector.new_pin_enc)
        let pinHashEnc = Self.hex(vector.pin_hash_enc)
        #expect(pinProtocol.authenticate(key: shared, message: newPinEnc) == Self.hex(vector.set_pin_param))
        #expect(
            pinProtocol.authenticate(key: shared, message: newPinEnc + pinHashEnc) == Self.hex(vector.change_pin_param))
        #expect(
            pinProtocol.verify(
                key: shared, message: newPinEnc + pinHashEnc, signature: Self.hex(vector.change_pin_param)))
        let token = Self.hex(vector.token)
        let clientDataHash = Self.hex(vector.client_data_hash)
        #expect(pinProtocol.authenticate(key: token, message: clientDataHash) == Self.hex(vector.token_param))
        #expect(pinProtocol.verify(key: token, message: clientDataHash, signature: Self.hex(vector.token_param)))
    }

    @Test(arguments: vectors) func verifyRefusesAnyChange(vector: Vector) {
        let pinProtocol = PinUvAuthProtocol(rawValue: vector.protocol_)
        let token = Self.hex(vector.token)
        let message = Self.hex(vector.client_data_hash)
        let good = Self.hex(vector.token_param)
        for index in good.indices {
            var bad = good
            bad[index] ^= 0x01
            #expect(!pinProtocol.verify(key: token, message: message, signature: bad))
        }
        #expect(!pinProtocol.verify(key: token, message: message, signature: Array(good.dropLast())))
        #expect(!pinProtocol.verify(key: token, message: message, signature: good + [0]))
        #expect(!pinProtocol.verify(key: token, message: message, signature: []))
        #expect(!pinProtocol.verify(key: token, message: message + [0], signature: good))
    }
}

struct PinUvAuthProtocolRejectionTests {
    static let key = P256.KeyAgreement.PrivateKey()

    @Test(
        arguments: [
            [1: 2, 3: -25, -1: 1, -2: .bytes([UInt8](repeating: 1, count: 32))],
            [
                1: 2, 3: -25, -1: 1, -2: .bytes([UInt8](repeating: 1, count: 32)),
                -3: .bytes([UInt8](repeating: 1, count: 32)),
            ],
            [
                1: 2, 3: -7, -1: 1, -2: .bytes([UInt8](repeating: 1, count: 32)),
                -3: .bytes([UInt8](repeating: 1, count: 32)),
            ],
            [
                1: 2, 3: -25, -1: 1, -2: .bytes([UInt8](repeating: 1, count: 31)),
                -3: .bytes([UInt8](repeating: 1, count: 32)),
            ],
            [
                1: 1, 3: -25, -1: 1, -2: .bytes([UInt8](repeating: 1, count: 32)),
                -3: .bytes([UInt8](repeating: 1, count: 32)),
            ],
            "not a map",
        ] as [CBORValue])
    func refusesKeysThatAreNotP256Points(cose: CBORValue) {
        for pinProtocol in PinUvAuthProtocol.supported {
            #expect(throws: PinUvAuthProtocol.Failure.invalidPublicKey) {
                try pinProtocol.sharedSecret(privateKey: Self.key, platformKey: cose)
            }
        }
    }

    @Test func refusesBadCiphertextAndKeyLengths() {
        let one = PinUvAuthProtocol.one
        let two = PinUvAuthProtocol.two
        let key32 = [UInt8](repeating: 7, count: 32)
        let key64 = [UInt8](repeating: 7, count: 64)
        #expect(throws: PinUvAuthProtocol.Failure.invalidCiphertextLength) {
            try one.decrypt(key: key32, ciphertext: [UInt8](repeating: 0, count: 15))
        }
        #expect(throws: PinUvAuthProtocol.Failure.invalidCiphertextLength) {
            try one.decrypt(key: key32, ciphertext: [])
        }
        #expect(throws: PinUvAuthProtocol.Failure.invalidCiphertextLength) {
            try two.decrypt(key: key64, ciphertext: [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: PinUvAuthProtocol.Failure.invalidCiphertextLength) {
            try two.decrypt(key: key64, ciphertext: [UInt8](repeating: 0, count: 40))
        }
        #expect(throws: PinUvAuthProtocol.Failure.invalidKeyLength) {
            try one.decrypt(key: key64, ciphertext: [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: PinUvAuthProtocol.Failure.invalidKeyLength) {
            try two.decrypt(key: key32, ciphertext: [UInt8](repeating: 0, count: 32))
        }
        #expect(throws: PinUvAuthProtocol.Failure.invalidCiphertextLength) {
            try two.encrypt(key: key64, plaintext: [1, 2, 3], iv: [UInt8](repeating: 0, count: 16))
        }
    }

    @Test func protocolTwoUsesTheGivenIVAndProtocolOneNone() throws {
        let key64 = [UInt8](repeating: 9, count: 64)
        let plaintext = [UInt8](repeating: 5, count: 32)
        let ivA = [UInt8](repeating: 1, count: 16)
        let ivB = [UInt8](repeating: 2, count: 16)
        let a = try PinUvAuthProtocol.two.encrypt(key: key64, plaintext: plaintext, iv: ivA)
        let b = try PinUvAuthProtocol.two.encrypt(key: key64, plaintext: plaintext, iv: ivB)
        #expect(Array(a.prefix(16)) == ivA && a != b && a.count == 48)
        #expect(try PinUvAuthProtocol.two.decrypt(key: key64, ciphertext: b) == plaintext)
        let one = try PinUvAuthProtocol.one.encrypt(key: Array(key64.prefix(32)), plaintext: plaintext, iv: ivA)
        #expect(one.count == 32)
        #expect(one == (try PinUvAuthProtocol.one.encrypt(key: Array(key64.prefix(32)), plaintext: plaintext, iv: [])))
    }
}
