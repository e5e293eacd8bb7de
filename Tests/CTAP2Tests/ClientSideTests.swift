import CBOR
import CTAP2
import Crypto
import Testing
import WebAuthn

struct ClientSideTests {
    @Test func registerAndSignInThroughTheClientHelpers() async throws {
        let harness = Harness()
        let registration = try MakeCredentialResponse(
            ctapResponse: await harness.authenticator.handle(
                CTAPClient.makeCredentialMessage(
                    clientDataHash: Fixtures.clientDataHash, relyingPartyID: "example.com", relyingPartyName: "Example",
                    userHandle: [7], userName: "alice", userDisplayName: "Alice")))
        let attestation = try AttestationObject(bytes: registration.attestationObject.bytes)
        #expect(attestation.format == "none")
        let key = try #require(attestation.authenticatorData.attestedCredentialData).publicKey

        let assertion = try GetAssertionResponse(
            ctapResponse: await harness.authenticator.handle(
                CTAPClient.getAssertionMessage(relyingPartyID: "example.com", clientDataHash: Fixtures.clientDataHash)))
        #expect(assertion.credentialID == registration.credentialID)
        #expect(assertion.userHandle == [7])
        #expect(assertion.userName == "alice")
        let signature = try P256.Signing.ECDSASignature(derRepresentation: assertion.signature)
        #expect(
            try key.signingKey().isValidSignature(signature, for: assertion.authenticatorData + Fixtures.clientDataHash)
        )
    }

    @Test func errorStatusesAreThrown() async throws {
        let harness = Harness()
        #expect(throws: CTAPError.noCredentials) {
            try GetAssertionResponse(ctapResponse: [0x2E])
        }
        #expect(throws: CTAPError.invalidCBOR) {
            try GetAssertionResponse(ctapResponse: [0x00, 0xA1])
        }
        let response = await harness.authenticator.handle(
            CTAPClient.getAssertionMessage(relyingPartyID: "example.com", clientDataHash: Fixtures.clientDataHash))
        #expect(throws: CTAPError.noCredentials) { try GetAssertionResponse(ctapResponse: response) }
    }
}
