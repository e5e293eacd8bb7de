import CBOR
import Crypto
import Foundation
import RelyingParty
import TestSupport
import Testing
import WebAuthn

struct RelyingPartyVerifierTests {
    static let challenge: [UInt8] = Array(repeating: 1, count: 32)

    /// The code of the `RelyingPartyError` that `body` throws, or nil when it returns.
    func code(_ body: () throws -> some Any) -> RelyingPartyError.Code? {
        do {
            _ = try body()
            return nil
        } catch let error as RelyingPartyError {
            return error.code
        } catch {
            Issue.record("not a RelyingPartyError: \(error)")
            return nil
        }
    }

    @Test func registersThenAuthenticatesTwice() throws {
        let fixture = Fixture()
        let options = RegistrationOptions(challenge: Self.challenge, user: Fixture.user)
        let registered = try fixture.verifier.verifyRegistration(
            fixture.noneRegistration(options, flags: [.userPresent, .backupEligible]), options: options)
        var record = registered.credential
        #expect(record.id == fixture.credentialID)
        #expect(record.publicKey == COSEKey(publicKey: fixture.credentialKey.publicKey))
        #expect(record.userHandle == Fixture.user.id)
        #expect(record.aaguid == fixture.aaguid)
        #expect(record.backupEligible && !record.backupState && !record.uvInitialized)
        #expect(record.attestationFormat == "none" && record.attestationType == .none)
        #expect(registered.attestationTrustPath.isEmpty)

        for (count, flags) in [
            (UInt32(1), AuthenticatorFlags([.userPresent, .backupEligible])),
            (9, [.userPresent, .userVerified, .backupEligible, .backupState]),
        ] {
            let authentication = AuthenticationOptions(challenge: Array(repeating: UInt8(count), count: 32))
            let result = try fixture.verifier.verifyAuthentication(
                fixture.assertion(authentication, flags: flags, signCount: count), options: authentication,
                credentials: [record])
            #expect(result.credential.signCount == count)
            #expect(result.credential.backupState == flags.contains(.backupState))
            #expect(result.userVerified == flags.contains(.userVerified))
            #expect(!result.possibleClone)
            record = result.credential
        }
        #expect(record.uvInitialized)
    }

    @Test func packedSelfAttestation() throws {
        let fixture = Fixture()
        let options = RegistrationOptions(challenge: Self.challenge, user: Fixture.user, userVerification: .required)
        let result = try fixture.verifier.verifyRegistration(
            try fixture.packedSelfRegistration(options), options: options)
        #expect(result.credential.attestationType == .self)
        #expect(result.credential.attestationFormat == "packed")
        #expect(result.credential.uvInitialized)
        #expect(
            code {
                try fixture.verifier.verifyRegistration(
                    try fixture.packedSelfRegistration(options, alg: -8), options: options)
            } == .attestationInvalid)
        #expect(
            code {
                try fixture.verifier.verifyRegistration(
                    try fixture.packedSelfRegistration(options, tamper: true), options: options)
            } == .attestationInvalid)
    }

    @Test func registrationWithoutAttestedCredentialData() {
        let fixture = Fixture()
        let options = RegistrationOptions(challenge: Self.challenge, user: Fixture.user)
        let data = AuthenticatorData(relyingPartyIDHash: fixture.rpIDHash, flags: .userPresent, signCount: 0)
        let response = RegistrationResponse(
            clientDataJSON: fixture.clientData(.create, challenge: Self.challenge),
            attestationObject: AttestationObject(format: "none", statement: [:], authenticatorData: data).bytes)
        #expect(
            code { try fixture.verifier.verifyRegistration(response, options: options) }
                == .attestedCredentialDataMissing)
    }

    @Test func algorithmsOptionIsEnforced() {
        let fixture = Fixture()
        let options = RegistrationOptions(
            challenge: Self.challenge, user: Fixture.user, algorithms: [COSEAlgorithm(rawValue: -8)])
        #expect(
            code { try fixture.verifier.verifyRegistration(fixture.noneRegistration(options), options: options) }
                == .unsupportedAlgorithm)
    }

    @Test func crossOriginPolicies() throws {
        var fixture = Fixture()
        let options = RegistrationOptions(challenge: Self.challenge, user: Fixture.user)
        let object = AttestationObject(format: "none", statement: [:], authenticatorData: fixture.registrationData())
        func response(crossOrigin: Bool, topOrigin: String?) -> RegistrationResponse {
            RegistrationResponse(
                clientDataJSON: fixture.clientData(
                    .create, challenge: Self.challenge, crossOrigin: crossOrigin, topOrigin: topOrigin),
                attestationObject: object.bytes)
        }
        let verify = { (verifier: RelyingPartyVerifier, response: RegistrationResponse) in
            self.code { try verifier.verifyRegistration(response, options: options) }
        }
        #expect(verify(fixture.verifier, response(crossOrigin: true, topOrigin: nil)) == .crossOriginNotAllowed)
        #expect(
            verify(fixture.verifier, response(crossOrigin: false, topOrigin: "https://a.example"))
                == .crossOriginNotAllowed)
        fixture.verifier.crossOrigin = .allowed(topOrigins: ["https://a.example"])
        #expect(verify(fixture.verifier, response(crossOrigin: true, topOrigin: nil)) == nil)
        #expect(verify(fixture.verifier, response(crossOrigin: true, topOrigin: "https://a.example")) == nil)
        #expect(
            verify(fixture.verifier, response(crossOrigin: true, topOrigin: "https://b.example")) == .topOriginMismatch)
        #expect(verify(fixture.verifier, response(crossOrigin: false, topOrigin: nil)) == nil)
    }

    @Test func signCountFlagPolicyKeepsTheLargerCounter() throws {
        var fixture = Fixture()
        fixture.verifier.signCountPolicy = .flag
        var record = try fixture.register()
        record.signCount = 10
        let options = AuthenticationOptions(challenge: Self.challenge, allowCredentials: [record.id])
        let result = try fixture.verifier.verifyAuthentication(
            fixture.assertion(options, signCount: 4), options: options, credentials: [record])
        #expect(result.possibleClone)
        #expect(result.credential.signCount == 10)

        fixture.verifier.signCountPolicy = .reject
        #expect(
            code {
                try fixture.verifier.verifyAuthentication(
                    try fixture.assertion(options, signCount: 4), options: options, credentials: [record])
            } == .signCountRegressed)
    }

    @Test func userHandleRules() throws {
        let fixture = Fixture()
        let record = try fixture.register()
        let discoverable = AuthenticationOptions(challenge: Self.challenge)
        let verify = { (options: AuthenticationOptions, handle: [UInt8]?) in
            self.code {
                try fixture.verifier.verifyAuthentication(
                    try fixture.assertion(options, signCount: 1, userHandle: handle), options: options,
                    credentials: [record])
            }
        }
        #expect(verify(discoverable, Fixture.user.id) == nil)
        #expect(verify(discoverable, nil) == .userHandleMissing)
        #expect(verify(discoverable, Array("user-2".utf8)) == .userHandleMismatch)
        let allowed = AuthenticationOptions(challenge: Self.challenge, allowCredentials: [record.id])
        #expect(verify(allowed, nil) == nil)
        var expectingOther = allowed
        expectingOther.expectedUserHandle = Array("user-2".utf8)
        #expect(verify(expectingOther, Fixture.user.id) == .userHandleMismatch)
        var expectingOwner = discoverable
        expectingOwner.expectedUserHandle = Fixture.user.id
        #expect(verify(expectingOwner, Fixture.user.id) == nil)
    }

    /// Every prefix of a valid response, and random bytes, give a typed error and never a crash.
    @Test func damagedInputsAreRefusedWithTypedErrors() throws {
        let fixture = Fixture()
        let options = RegistrationOptions(challenge: Self.challenge, user: Fixture.user)
        let valid = try fixture.packedSelfRegistration(options)
        for length in 0..<valid.attestationObject.count {
            var damaged = valid
            damaged.attestationObject = Array(valid.attestationObject[..<length])
            #expect(code { try fixture.verifier.verifyRegistration(damaged, options: options) } == .malformed)
        }
        for length in 0..<valid.clientDataJSON.count {
            var damaged = valid
            damaged.clientDataJSON = Array(valid.clientDataJSON[..<length])
            #expect(code { try fixture.verifier.verifyRegistration(damaged, options: options) } == .malformed)
        }

        let record = try fixture.register()
        let authentication = AuthenticationOptions(challenge: Self.challenge, allowCredentials: [record.id])
        let assertion = try fixture.assertion(authentication, signCount: 1)
        for length in 0..<assertion.authenticatorData.count {
            var damaged = assertion
            damaged.authenticatorData = Array(assertion.authenticatorData[..<length])
            #expect(
                code {
                    try fixture.verifier.verifyAuthentication(damaged, options: authentication, credentials: [record])
                }
                    == .malformed)
        }
        for length in 0..<assertion.signature.count {
            var damaged = assertion
            damaged.signature = Array(assertion.signature[..<length])
            #expect(
                code {
                    try fixture.verifier.verifyAuthentication(damaged, options: authentication, credentials: [record])
                }
                    == .signatureInvalid)
        }

        var generator = SeededRandom(seed: 0x5EED)
        for _ in 0..<500 {
            let length = Int(generator.next() % 300)
            let noise = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            var damaged = valid
            damaged.attestationObject = noise
            #expect(code { try fixture.verifier.verifyRegistration(damaged, options: options) } != nil)
            var damagedAssertion = assertion
            damagedAssertion.authenticatorData = noise
            damagedAssertion.signature = noise
            #expect(
                code {
                    try fixture.verifier.verifyAuthentication(
                        damagedAssertion, options: authentication, credentials: [record])
                } != nil)
        }
    }

    @Test func errorsCompareByCode() {
        let a = RelyingPartyError(.challengeMismatch, "one")
        let b = RelyingPartyError(.challengeMismatch, "two")
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
        #expect(a != RelyingPartyError(.originMismatch, "one"))
        #expect(a.description == "challengeMismatch: one")
        #expect(RelyingPartyError.Code(rawValue: "signCountRegressed") == .signCountRegressed)
    }
}
