import CBOR
import CTAP2
import Crypto
import Foundation
import Testing
import WebAuthn

/// Which key makeCredential makes (the first algorithm of the platform's list this authenticator supports), and that
/// every kind signs its attestation and its assertions as its COSE key says.
@Suite("Credential algorithms: ES256, ESP256, EdDSA, Ed25519")
struct AlgorithmTests {
    static func list(_ algorithms: [Int]) -> CBORValue {
        .array(algorithms.map { ["alg": .int($0), "type": "public-key"] })
    }

    static let cases: [(offered: [Int], made: Int)] = [
        ([-8], -8), ([-19], -19), ([-9], -9), ([-7], -7),
        // The platform's order decides, not this authenticator's.
        ([-8, -7, -257], -8), ([-7, -8], -7), ([-257, -19, -7], -19), ([-35, -9], -9),
    ]

    @Test(arguments: cases)
    func theFirstSupportedAlgorithmIsMadeAndSignsAsItsKeySays(offered: [Int], made: Int) async throws {
        var configuration = AuthenticatorConfiguration()
        configuration.attestationFormat = .packedSelf
        let harness = Harness(configuration: configuration)
        let (status, body) = try await harness.send(
            .makeCredential, Fixtures.makeCredential(algorithms: Self.list(offered)))
        #expect(status == 0)
        let authData = try #require(body?[2]?.bytesValue)
        let attested = try #require(try AuthenticatorData(bytes: authData).attestedCredentialData)
        #expect(attested.publicKey.algorithm.rawValue == made)
        switch made {
        case -8, -19: #expect({ if case .ed25519 = attested.publicKey.material { true } else { false } }())
        default: #expect({ if case .p256 = attested.publicKey.material { true } else { false } }())
        }
        // Packed self attestation: alg is the key's, and the key signs authData ‖ clientDataHash.
        let statement = try #require(body?[3])
        #expect(statement["alg"] == .int(made))
        let attestation = try #require(statement["sig"]?.bytesValue)
        #expect(attested.publicKey.isValidSignature(attestation, for: authData + Fixtures.clientDataHash))
        if made == -8 || made == -19 { #expect(attestation.count == 64) }

        // The stored key is the attested one, and an assertion verifies with it.
        let stored = try #require(try harness.store.credential(id: attested.credentialID))
        #expect(stored.privateKey.publicKey == attested.publicKey)
        let (signed, assertion) = try await harness.send(.getAssertion, Fixtures.getAssertion())
        #expect(signed == 0)
        let assertionData = try #require(assertion?[2]?.bytesValue)
        let signature = try #require(assertion?[3]?.bytesValue)
        #expect(attested.publicKey.isValidSignature(signature, for: assertionData + Fixtures.clientDataHash))
        #expect(!attested.publicKey.isValidSignature(signature, for: assertionData + [UInt8](repeating: 0, count: 32)))
    }

    @Test func anAuthenticatorLimitedToES256RefusesEdDSAOnly() async throws {
        var configuration = AuthenticatorConfiguration()
        configuration.algorithms = [.es256]
        let harness = Harness(configuration: configuration)
        let (status, _) = try await harness.send(.makeCredential, Fixtures.makeCredential(algorithms: Self.list([-8])))
        #expect(status == CTAPError.unsupportedAlgorithm.rawValue)
        #expect(try harness.store.allCredentials().isEmpty)
        let (made, body) = try await harness.send(
            .makeCredential, Fixtures.makeCredential(algorithms: Self.list([-8, -7])))
        #expect(made == 0)
        let authData = try #require(body?[2]?.bytesValue)
        #expect(try AuthenticatorData(bytes: authData).attestedCredentialData?.publicKey.algorithm == .es256)
        let (_, info) = try await harness.send(.getInfo)
        #expect(info?[10] == Self.list([-7]))
    }

    @Test func storedFormKeepsES256AsBeforeAndTagsTheRest() throws {
        let p256 = P256.Signing.PrivateKey()
        // ES256: the 32-byte scalar every earlier store sealed.
        let es256 = CredentialPrivateKey.p256(p256, algorithm: .es256)
        #expect(es256.storedRepresentation == Array(p256.rawRepresentation))
        let seed = [UInt8](repeating: 7, count: 32)
        let ed25519 = CredentialPrivateKey.ed25519(
            try Curve25519.Signing.PrivateKey(rawRepresentation: seed), algorithm: .ed25519)
        #expect(ed25519.storedRepresentation == [0x01, 0xED] + seed)
        for key in [
            es256, .p256(p256, algorithm: .esp256), ed25519,
            .ed25519(try Curve25519.Signing.PrivateKey(rawRepresentation: seed), algorithm: .eddsa),
        ] {
            let read = try #require(CredentialPrivateKey(storedRepresentation: key.storedRepresentation))
            #expect(read.algorithm == key.algorithm && read.publicKey == key.publicKey)
            let pkcs8 = try #require(
                CredentialPrivateKey(pkcs8DER: key.pkcs8DERRepresentation, algorithm: key.algorithm))
            #expect(pkcs8.publicKey == key.publicKey)
        }
        // Damaged: a wrong length, an unknown tag or algorithm, an Ed25519 algorithm tag on P-256 bytes of the wrong
        // shape, a P-256 scalar out of range.
        for bytes in [
            [UInt8](repeating: 1, count: 31), [0x02, 0xF8] + seed, [0x01, 0xDD] + seed, [0x01, 0xF8] + seed + [0],
            [UInt8](repeating: 0xFF, count: 32), [UInt8](repeating: 0, count: 32),
        ] {
            #expect(CredentialPrivateKey(storedRepresentation: bytes) == nil)
        }
        // PKCS #8 of one kind is not read as the other algorithm.
        #expect(CredentialPrivateKey(pkcs8DER: ed25519.pkcs8DERRepresentation, algorithm: .es256) == nil)
        #expect(CredentialPrivateKey(pkcs8DER: es256.pkcs8DERRepresentation, algorithm: .eddsa) == nil)
        #expect(CredentialPrivateKey(pkcs8DER: [0x30, 0x00]) == nil)
    }
}
