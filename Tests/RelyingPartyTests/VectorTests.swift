import Basics
import CBOR
import Foundation
import RelyingParty
import Testing
import WebAuthn

/// Runs the registration and authentication vectors of both files through the verifier and checks
/// the outcome each vector names: the record's fields when it is accepted, the error code otherwise.
struct VectorTests {
    static let pythonFido2 = Result { try VectorFile.load("python-fido2") }
    static let recorded = Result { try VectorFile.load("recorded") }

    /// Guards against a vector file that silently loses its cases.
    @Test func filesHoldTheExpectedNumberOfVectors() throws {
        let generated = try Self.pythonFido2.get()
        #expect(generated.registrations.count == 19)
        #expect(generated.authentications.count == 21)
        #expect(generated.registrations.contains { !$0.expected.ok })
        #expect(generated.authentications.contains { $0.expected.ok })
        let recorded = try Self.recorded.get()
        #expect(recorded.registrations.count == 17)
        #expect(recorded.authentications.count == 9)
        #expect(recorded.registrations.allSatisfy { $0.source != nil })
        #expect(recorded.authentications.allSatisfy { $0.source != nil })
    }

    @Test(arguments: try pythonFido2.get().registrations)
    func pythonFido2Registration(_ vector: RegistrationVector) throws {
        try check(vector)
    }

    @Test(arguments: try pythonFido2.get().authentications)
    func pythonFido2Authentication(_ vector: AuthenticationVector) throws {
        try check(vector)
    }

    @Test(arguments: try recorded.get().registrations)
    func recordedRegistration(_ vector: RegistrationVector) throws {
        try check(vector)
    }

    @Test(arguments: try recorded.get().authentications)
    func recordedAuthentication(_ vector: AuthenticationVector) throws {
        try check(vector)
    }

    /// The spec's authentication vectors also pass when the record comes from our own registration of
    /// the paired registration vector, so the two halves agree.
    @Test func specRegistrationsFeedSpecAuthentications() throws {
        let file = try Self.recorded.get()
        var checked = 0
        for authentication in file.authentications where authentication.name.hasPrefix("spec-") {
            let registration = try #require(file.registrations.first { $0.name == authentication.name })
            let registered = try registration.verifier().verifyRegistration(
                try registration.response(), options: try registration.options())
            var record = registered.credential
            record.userHandle = nil
            let result = try authentication.verifier().verifyAuthentication(
                try authentication.assertion(), options: try authentication.options(), credentials: [record])
            #expect(result.credential.id == record.id)
            checked += 1
        }
        #expect(checked == 6)
    }

    private func check(_ vector: RegistrationVector) throws {
        let verifier = vector.verifier()
        let response = try vector.response()
        let options = try vector.options()
        let outcome = Result { () throws(RelyingPartyError) in
            try verifier.verifyRegistration(response, options: options)
        }
        let expected = vector.expected
        switch outcome {
        case .success(let result):
            #expect(expected.ok, "accepted, but the vector expects \(expected.error ?? "?")")
            let record = result.credential
            #expect(record.id.base64URLEncodedString == expected.credentialId)
            #expect(record.publicKey.coseRepresentation.encoded().base64URLEncodedString == expected.publicKey)
            #expect(record.signCount == expected.signCount)
            #expect(record.aaguid.description == expected.aaguid)
            #expect(record.attestationFormat == expected.fmt)
            #expect(record.attestationType.rawValue == expected.attestationType)
            #expect(record.backupEligible == expected.backupEligible)
            #expect(record.backupState == expected.backupState)
            #expect(record.uvInitialized == expected.userVerified)
            #expect(record.userHandle == (try bytes(vector.userId)))
            #expect((record.attestationType == .basicOrAttCA) == !result.attestationTrustPath.isEmpty)
        case .failure(let error):
            #expect(!expected.ok, "refused with \(error), but the vector expects acceptance")
            #expect(error.code.rawValue == expected.error, "\(error)")
        }
    }

    private func check(_ vector: AuthenticationVector) throws {
        let verifier = vector.verifier()
        let response = try vector.assertion()
        let options = try vector.options()
        let record = try vector.record()
        let outcome = Result { () throws(RelyingPartyError) in
            try verifier.verifyAuthentication(response, options: options, credentials: [record])
        }
        let expected = vector.expected
        switch outcome {
        case .success(let result):
            #expect(expected.ok, "accepted, but the vector expects \(expected.error ?? "?")")
            #expect(result.credential.signCount == expected.signCount)
            #expect(result.credential.backupState == expected.backupState)
            #expect(result.userVerified == expected.userVerified)
            #expect(result.credential.uvInitialized == expected.userVerified)
            #expect(result.credential.id == record.id)
            #expect(result.credential.publicKey == record.publicKey)
            #expect(!result.possibleClone)
        case .failure(let error):
            #expect(!expected.ok, "refused with \(error), but the vector expects acceptance")
            #expect(error.code.rawValue == expected.error, "\(error)")
        }
    }
}
