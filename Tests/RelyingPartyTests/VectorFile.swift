import Basics
import CBOR
import Foundation
import RelyingParty
import Testing
import WebAuthn

/// A vector file in Tests/RelyingPartyTests/Vectors: python-fido2.json (made by
/// Tools/vectors/make_rp_vectors.py) or recorded.json (copied from public test suites).
/// Field names are the files' own, in snake_case.
struct VectorFile: Decodable, Sendable {
    var source: String
    var licence: String
    var registrations: [RegistrationVector]
    var authentications: [AuthenticationVector]

    static func load(_ name: String) throws -> VectorFile {
        guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Vectors") else {
            throw VectorError("Vectors/\(name).json is not in the test bundle")
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(VectorFile.self, from: Data(contentsOf: url))
    }
}

struct VectorError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// `{"top_origins": [...]}` when cross-origin use is allowed; absent for same-origin only.
struct CrossOriginVector: Decodable, Sendable {
    var topOrigins: [String]
}

/// Either `{"ok": true, …fields}` or `{"ok": false, "error": "<RelyingPartyError.Code>"}`.
struct ExpectedOutcome: Decodable, Sendable {
    var ok: Bool
    var error: String?
    // Registration results.
    var credentialId: String?
    var publicKey: String?
    var aaguid: String?
    var fmt: String?
    var attestationType: String?
    var backupEligible: Bool?
    // Both.
    var signCount: UInt32?
    var backupState: Bool?
    var userVerified: Bool?
}

struct RegistrationVector: Decodable, Sendable, CustomTestStringConvertible {
    var name: String
    var description: String
    var source: String?
    var rpId: String
    var origins: [String]
    var crossOrigin: CrossOriginVector?
    var challenge: String
    var userId: String
    var userVerification: String
    var clientDataJson: String
    var attestationObject: String
    var expected: ExpectedOutcome
    var testDescription: String { name }
}

struct CredentialVector: Decodable, Sendable {
    var id: String
    var publicKey: String
    var signCount: UInt32
    var backupEligible: Bool
    var backupState: Bool
    var userHandle: String?
}

struct AssertionVector: Decodable, Sendable {
    var credentialId: String
    var clientDataJson: String
    var authenticatorData: String
    var signature: String
    var userHandle: String?
}

struct AuthenticationVector: Decodable, Sendable, CustomTestStringConvertible {
    var name: String
    var description: String
    var source: String?
    var rpId: String
    var origins: [String]
    var crossOrigin: CrossOriginVector?
    var challenge: String
    var allowCredentials: [String]
    var userVerification: String
    var credential: CredentialVector
    var response: AssertionVector
    var expected: ExpectedOutcome
    var testDescription: String { name }
}

/// Decodes base64url vector fields, turning bad data into a thrown error rather than a crash.
func bytes(_ text: String) throws -> [UInt8] {
    guard let value = [UInt8](base64URLEncoded: text) else { throw VectorError("not base64url: \(text)") }
    return value
}

extension RegistrationVector {
    func verifier() -> RelyingPartyVerifier {
        RelyingPartyVerifier(
            relyingParty: RelyingPartyEntity(id: rpId), origins: Set(origins),
            crossOrigin: crossOrigin.map { .allowed(topOrigins: Set($0.topOrigins)) } ?? .sameOriginOnly)
    }

    func options() throws -> RegistrationOptions {
        guard let requirement = UserVerificationRequirement(rawValue: userVerification) else {
            throw VectorError("unknown user_verification \(userVerification)")
        }
        return RegistrationOptions(
            challenge: try bytes(challenge), user: UserEntity(id: try bytes(userId), name: "vector user"),
            userVerification: requirement)
    }

    func response() throws -> RegistrationResponse {
        RegistrationResponse(clientDataJSON: try bytes(clientDataJson), attestationObject: try bytes(attestationObject))
    }
}

extension AuthenticationVector {
    func verifier() -> RelyingPartyVerifier {
        RelyingPartyVerifier(
            relyingParty: RelyingPartyEntity(id: rpId), origins: Set(origins),
            crossOrigin: crossOrigin.map { .allowed(topOrigins: Set($0.topOrigins)) } ?? .sameOriginOnly)
    }

    func options() throws -> AuthenticationOptions {
        guard let requirement = UserVerificationRequirement(rawValue: userVerification) else {
            throw VectorError("unknown user_verification \(userVerification)")
        }
        return AuthenticationOptions(
            challenge: try bytes(challenge), allowCredentials: try allowCredentials.map(bytes),
            userVerification: requirement)
    }

    func record() throws -> CredentialRecord {
        let keyBytes = try bytes(credential.publicKey)
        let key = try COSEKey(coseRepresentation: try CBORValue(decoding: keyBytes))
        return CredentialRecord(
            id: try bytes(credential.id), publicKey: key, signCount: credential.signCount,
            backupEligible: credential.backupEligible, backupState: credential.backupState, uvInitialized: false,
            userHandle: try credential.userHandle.map(bytes))
    }

    func assertion() throws -> AuthenticationResponse {
        AuthenticationResponse(
            credentialID: try bytes(response.credentialId), clientDataJSON: try bytes(response.clientDataJson),
            authenticatorData: try bytes(response.authenticatorData), signature: try bytes(response.signature),
            userHandle: try response.userHandle.map(bytes))
    }
}
