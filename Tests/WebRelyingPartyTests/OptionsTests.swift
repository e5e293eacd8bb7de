import Basics
import Foundation
import RelyingParty
import RelyingPartyTestSupport
import Testing
import WebAuthn
import WebRelyingParty

/// The options JSON shape, as `parseCreationOptionsFromJSON` / `parseRequestOptionsFromJSON` and python-fido2 read it.
struct OptionsTests {
    @Test func creationOptionsCarryTheRequestAndTheDefaults() throws {
        var harness = Harness()
        let json = try object(
            harness.registrationOptions(RegistrationOptionsRequest(userName: "alice", hints: ["hybrid"])))
        #expect(json["challenge"] as? String == [UInt8](repeating: 1, count: 32).base64URLEncodedString)
        #expect(json["rp"] as? [String: String] == ["id": "localhost", "name": "Test RP"])
        #expect(
            json["user"] as? [String: String]
                == [
                    "id": [UInt8](repeating: 2, count: 16).base64URLEncodedString, "name": "alice",
                    "displayName": "alice",
                ])
        let parameters = try #require(json["pubKeyCredParams"] as? [[String: Any]])
        // EdDSA, ES256, RS256: the three WebAuthn §5.4.3 advises, in that order.
        #expect(parameters.map { ($0["alg"] as? NSNumber)?.intValue } == [-8, -7, -257])
        #expect(parameters.allSatisfy { $0["type"] as? String == "public-key" })
        let selection = try #require(json["authenticatorSelection"] as? [String: Any])
        #expect(selection["residentKey"] as? String == "required")
        #expect(selection["requireResidentKey"] as? Bool == true)
        #expect(selection["userVerification"] as? String == "preferred")
        #expect(json["attestation"] as? String == "none")
        #expect(json["hints"] as? [String] == ["hybrid"])
        #expect(json["excludeCredentials"] as? [Any] != nil && (json["excludeCredentials"] as? [Any])?.isEmpty == true)
        #expect((json["timeout"] as? NSNumber)?.intValue == 300_000)
        #expect(harness.relyingParty.pendingCount == 1)
    }

    @Test func creationOptionsFollowTheRequestedChoices() throws {
        var harness = Harness { $0.ceremonies.lifetime = .milliseconds(1500) }
        let request = RegistrationOptionsRequest(
            userName: "bob", displayName: "Bob B", residentKey: .discouraged, userVerification: .required,
            attestation: .direct, hints: ["security-key", "client-device"])
        let json = try object(harness.registrationOptions(request))
        #expect((json["user"] as? [String: String])?["displayName"] == "Bob B")
        let selection = try #require(json["authenticatorSelection"] as? [String: Any])
        #expect(selection["residentKey"] as? String == "discouraged")
        #expect(selection["requireResidentKey"] as? Bool == false)
        #expect(selection["userVerification"] as? String == "required")
        #expect(json["attestation"] as? String == "direct")
        #expect(json["hints"] as? [String] == ["security-key", "client-device"])
        #expect((json["timeout"] as? NSNumber)?.intValue == 1500)
        // No hints: no member at all (browsers read an absent list as empty).
        #expect(try object(harness.registrationOptions(RegistrationOptionsRequest(userName: "bob")))["hints"] == nil)
    }

    @Test func aKnownAccountKeepsItsUserHandleAndExcludesItsOwnCredentialsOnly() throws {
        var harness = Harness()
        var alice = SoftwareAuthenticator(origin: Harness.origin)
        var bob = SoftwareAuthenticator(origin: Harness.origin)
        try harness.register("alice", with: &alice)
        try harness.register("bob", with: &bob)
        // Another RP's account in the same state file, with the same user name.
        var other = harness.state.accounts[0]
        other.rpID = "example.com"
        other.credential.id = [9, 9, 9]
        harness.state.accounts.append(other)

        let json = try object(harness.registrationOptions(RegistrationOptionsRequest(userName: "alice")))
        let excluded = try #require(json["excludeCredentials"] as? [[String: String]])
        #expect(excluded == [["type": "public-key", "id": alice.credentialID.base64URLEncodedString]])
        #expect((json["user"] as? [String: String])?["id"] == alice.userHandle?.base64URLEncodedString)
    }

    @Test func requestOptionsWithAndWithoutAUserName() throws {
        var harness = Harness()
        var alice = SoftwareAuthenticator(origin: Harness.origin)
        try harness.register("alice", with: &alice)

        let discoverable = try object(try harness.authenticationOptions())
        #expect(discoverable["rpId"] as? String == "localhost")
        #expect((discoverable["allowCredentials"] as? [Any])?.isEmpty == true)
        #expect(discoverable["userVerification"] as? String == "preferred")
        #expect(discoverable["hints"] == nil)

        let named = try object(
            try harness.authenticationOptions(
                AuthenticationOptionsRequest(userName: "alice", userVerification: .required, hints: ["security-key"])))
        #expect(
            named["allowCredentials"] as? [[String: String]]
                == [["type": "public-key", "id": alice.credentialID.base64URLEncodedString]])
        #expect(named["userVerification"] as? String == "required")
        #expect(named["hints"] as? [String] == ["security-key"])
        #expect((named["timeout"] as? NSNumber)?.intValue == 300_000)
    }

    @Test func anUnknownUserGetsNoOptionsAndNoCeremony() throws {
        var harness = Harness()
        #expect(throws: WebRelyingPartyError(.unknownUser, "")) {
            try harness.authenticationOptions(AuthenticationOptionsRequest(userName: "nobody"))
        }
        #expect(harness.relyingParty.pendingCount == 0)
    }

    @Test func originsDefaultToTheRPIDOnTheBoundPortAndAreCheckedAsABrowserWould() throws {
        typealias Configuration = WebRelyingParty.Configuration
        #expect(
            try Configuration.origins(relyingPartyID: "localhost", explicit: [], port: 41234) == [
                "http://localhost:41234"
            ])
        #expect(
            try Configuration.origins(
                relyingPartyID: "example.test",
                explicit: ["https://Login.Example.Test:443", "https://example.test:8443"],
                port: 1) == ["https://login.example.test", "https://example.test:8443"])
        #expect(throws: OriginCheckError.self) {
            try Configuration.origins(relyingPartyID: "example.com", explicit: ["https://example.org"], port: 1)
        }
        #expect(throws: OriginCheckError.self) {  // not a secure context
            try Configuration.origins(relyingPartyID: "example.com", explicit: ["http://example.com"], port: 1)
        }
        #expect(throws: OriginCheckError.self) {  // http://example.com:PORT is no secure context either
            try Configuration.origins(relyingPartyID: "example.com", explicit: [], port: 8787)
        }
        #expect(throws: OriginCheckError.self) {
            try Configuration.origins(relyingPartyID: "localhost", explicit: ["http://127.0.0.1:8787"], port: 1)
        }
    }
}
