import CBOR
import CTAP2
import Crypto
import Foundation
import Testing

/// The platform's side of authenticatorClientPIN, written from CTAP 2.1 §6.5 for tests: key agreement,
/// PIN blocks, tokens and pinUvAuthParams.
struct PlatformDouble {
    let harness: Harness
    var pinProtocol: PinUvAuthProtocol = .two

    static func padded(_ pin: String) -> [UInt8] {
        let bytes = Array(pin.utf8)
        return bytes + [UInt8](repeating: 0, count: max(0, 64 - bytes.count))
    }

    static func pinHash(_ pin: String) -> [UInt8] { Array(SHA256.hash(data: Array(pin.utf8)).prefix(16)) }

    /// getKeyAgreement, then the platform's half: its COSE key and the shared secret.
    func encapsulate() async throws -> (keyAgreement: CBORValue, shared: [UInt8]) {
        let (status, body) = try await harness.send(.clientPIN, [1: .int(pinProtocol.rawValue), 2: 2])
        try #require(status == 0)
        let authenticatorKey = try #require(body?[1])
        let platformKey = P256.KeyAgreement.PrivateKey()
        let shared = try pinProtocol.sharedSecret(privateKey: platformKey, platformKey: authenticatorKey)
        return (PinUvAuthProtocol.coseKey(platformKey.publicKey), shared)
    }

    func encrypt(_ shared: [UInt8], _ plaintext: [UInt8]) throws -> [UInt8] {
        try pinProtocol.encrypt(key: shared, plaintext: plaintext, iv: (0..<16).map { _ in .random(in: 0...255) })
    }

    /// setPIN with a PIN block built from `block` (normally the padded PIN); returns the status.
    func setPIN(_ pin: String, block: [UInt8]? = nil) async throws -> UInt8 {
        let (keyAgreement, shared) = try await encapsulate()
        let newPinEnc = try encrypt(shared, block ?? Self.padded(pin))
        let param = pinProtocol.authenticate(key: shared, message: newPinEnc)
        return try await harness.send(
            .clientPIN,
            [1: .int(pinProtocol.rawValue), 2: 3, 3: keyAgreement, 4: .bytes(param), 5: .bytes(newPinEnc)]
        ).status
    }

    func changePIN(from old: String, to new: String) async throws -> UInt8 {
        let (keyAgreement, shared) = try await encapsulate()
        let newPinEnc = try encrypt(shared, Self.padded(new))
        let pinHashEnc = try encrypt(shared, Self.pinHash(old))
        let param = pinProtocol.authenticate(key: shared, message: newPinEnc + pinHashEnc)
        return try await harness.send(
            .clientPIN,
            [
                1: .int(pinProtocol.rawValue), 2: 4, 3: keyAgreement, 4: .bytes(param), 5: .bytes(newPinEnc),
                6: .bytes(pinHashEnc),
            ]
        ).status
    }

    /// getPinUvAuthTokenUsingPinWithPermissions (or getPinToken when `permissions` is nil).
    func pinToken(_ pin: String, permissions: Int? = 0x03, rpID: String? = nil) async throws -> (
        status: UInt8, token: [UInt8]?
    ) {
        let (keyAgreement, shared) = try await encapsulate()
        var request: [CBORValue: CBORValue] = [
            1: .int(pinProtocol.rawValue), 2: permissions == nil ? 5 : 9, 3: keyAgreement,
            6: .bytes(try encrypt(shared, Self.pinHash(pin))),
        ]
        if let permissions { request[9] = .int(permissions) }
        if let rpID { request[10] = .text(rpID) }
        let (status, body) = try await harness.send(.clientPIN, .map(request))
        guard status == 0 else { return (status, nil) }
        let encrypted = try #require(body?[2]?.bytesValue)
        return (status, try pinProtocol.decrypt(key: shared, ciphertext: encrypted))
    }

    /// getPinUvAuthTokenUsingUvWithPermissions.
    func uvToken(permissions: Int = 0x03, rpID: String? = nil) async throws -> (status: UInt8, token: [UInt8]?) {
        let (keyAgreement, shared) = try await encapsulate()
        var request: [CBORValue: CBORValue] = [
            1: .int(pinProtocol.rawValue), 2: 6, 3: keyAgreement, 9: .int(permissions),
        ]
        if let rpID { request[10] = .text(rpID) }
        let (status, body) = try await harness.send(.clientPIN, .map(request))
        guard status == 0 else { return (status, nil) }
        let encrypted = try #require(body?[2]?.bytesValue)
        return (status, try pinProtocol.decrypt(key: shared, ciphertext: encrypted))
    }

    /// A token's pinUvAuthParam over `message`, with this platform's protocol.
    func param(_ token: [UInt8], _ message: [UInt8] = Fixtures.clientDataHash) -> [CBORValue: CBORValue] {
        [8: .bytes(pinProtocol.authenticate(key: token, message: message)), 9: .int(pinProtocol.rawValue)]
    }

    /// The same for getAssertion's keys (6 and 7).
    func assertionParam(_ token: [UInt8], _ message: [UInt8] = Fixtures.clientDataHash) -> [CBORValue: CBORValue] {
        [6: .bytes(pinProtocol.authenticate(key: token, message: message)), 7: .int(pinProtocol.rawValue)]
    }

    func retries() async throws -> (pin: Int?, powerCycle: Bool?) {
        let body = try await harness.send(.clientPIN, [1: .int(pinProtocol.rawValue), 2: 1]).body
        return (body?[3]?.intValue, body?[4]?.boolValue)
    }
}
