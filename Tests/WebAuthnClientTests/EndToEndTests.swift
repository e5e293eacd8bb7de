import Basics
import CTAP2
import Foundation
import JSON
import RelyingParty
import Testing
import WebAuthn
import WebAuthnClient
import WebRelyingParty

/// Options JSON from this package's web relying party, through the engine and the in-process CTAP2 authenticator
/// over an in-memory store, back to the relying party as response JSON, which it verifies.
struct EndToEndTests {
    @Test func registrationThenSignInWithAndWithoutAllowCredentials() async throws {
        var site = Site()
        let local = TestAuthenticator()
        let interface = ScriptedInterface()
        let engine = makeEngine([local.client], interface: interface)

        let creation = try PublicKeyCredentialCreationOptions(
            json: site.registrationOptions(RegistrationOptionsRequest(userName: "alice", displayName: "Alice")))
        let created = try await engine.create(creation, origin: Site.origin)
        guard case .registered(let registered) = site.verifyRegistration(created.json()) else {
            Issue.record("registration refused")
            return
        }
        #expect(registered.userName == "alice")
        #expect(registered.userVerified)
        #expect(registered.authenticatorAttachment == "platform")
        #expect(registered.credential.transports == ["internal"])
        #expect(registered.credential.attestationFormat == "none")
        // Only this computer could answer: no chooser was shown, and the authenticator verified the user once.
        #expect(interface.prompts.isEmpty)
        #expect(local.user.seen.map(\.requiresVerification) == [true])

        // A discoverable sign-in: the one local passkey goes ahead without a chooser.
        let discoverable = try PublicKeyCredentialRequestOptions(json: site.authenticationOptions())
        let assertion = try await engine.get(discoverable, origin: Site.origin)
        guard case .authenticated(let signedIn) = site.verifyAuthentication(assertion.json()) else {
            Issue.record("discoverable sign-in refused")
            return
        }
        #expect(signedIn.userName == "alice" && signedIn.userVerified)
        #expect(assertion.userHandle == creation.user.id)

        // With the account named: the allow list holds its credential.
        let named = try PublicKeyCredentialRequestOptions(
            json: site.authenticationOptions(AuthenticationOptionsRequest(userName: "alice")))
        #expect(named.allowCredentials.map(\.id) == [created.id])
        let second = try await engine.get(named, origin: Site.origin)
        guard case .authenticated = site.verifyAuthentication(second.json(.pretty)) else {
            Issue.record("sign-in with allowCredentials refused")
            return
        }
        #expect(interface.prompts.isEmpty)
    }

    @Test func registeringTheSameAccountAgainIsInvalidStateErrorAndStoresNothing() async throws {
        var site = Site()
        let local = TestAuthenticator()
        let engine = makeEngine([local.client])
        let first = try await engine.create(
            PublicKeyCredentialCreationOptions(json: site.registrationOptions(.init(userName: "alice"))),
            origin: Site.origin)
        guard case .registered = site.verifyRegistration(first.json()) else {
            Issue.record("registration refused")
            return
        }
        let again = try PublicKeyCredentialCreationOptions(json: site.registrationOptions(.init(userName: "alice")))
        #expect(again.excludeCredentials.map(\.id) == [first.id])
        await #expect(throws: ClientError(.authenticator(.credentialExcluded))) {
            try await engine.create(again, origin: Site.origin)
        }
        #expect(ClientError(.authenticator(.credentialExcluded)).name == .invalidStateError)
        #expect(try local.store.allCredentials().map(\.id) == [first.id])
    }

    @Test func aPhoneRegistersAndThenAnswersAtOnceWithNoLocalMatch() async throws {
        var site = Site()
        let local = TestAuthenticator()
        let phone = TestAuthenticator(kind: .hybrid, configuration: .hybridPhone(oneRequestPerSession: true), seed: 8)
        let interface = ScriptedInterface()
        let engine = makeEngine([local.client, phone.client], interface: interface)

        // The relying party hints at a phone: the chooser puts the phone first and the user takes it.
        let creation = try PublicKeyCredentialCreationOptions(
            json: site.registrationOptions(.init(userName: "bob", hints: ["hybrid"])))
        let created = try await engine.create(creation, origin: Site.origin)
        #expect(interface.prompts.map(\.choices) == [[.phone, .thisComputer]])
        guard case .registered(let registered) = site.verifyRegistration(created.json()) else {
            Issue.record("registration refused")
            return
        }
        #expect(registered.authenticatorAttachment == "cross-platform")
        #expect(registered.credential.transports == ["hybrid"])
        #expect(try local.store.allCredentials().isEmpty)

        // Nothing on this computer: straight to the phone, no chooser.
        let assertion = try await engine.get(
            PublicKeyCredentialRequestOptions(json: site.authenticationOptions()), origin: Site.origin)
        #expect(interface.prompts.count == 1)
        #expect(interface.events.contains(.contacting(.hybrid)))
        guard case .authenticated(let signedIn) = site.verifyAuthentication(assertion.json()) else {
            Issue.record("sign-in refused")
            return
        }
        #expect(signedIn.userName == "bob")
        #expect(signedIn.authenticatorAttachment == "cross-platform")
    }

    @Test func anAllowListPicksTheBoundLocalCredential() async throws {
        var site = Site()
        let local = TestAuthenticator()
        let engine = makeEngine([local.client])
        for name in ["alice", "bob"] {
            let created = try await engine.create(
                PublicKeyCredentialCreationOptions(json: site.registrationOptions(.init(userName: name))),
                origin: Site.origin)
            guard case .registered = site.verifyRegistration(created.json()) else {
                Issue.record("registration refused")
                return
            }
        }
        let bobsCredential = try #require(site.state.accounts(for: "example.com").first { $0.userName == "bob" })
        let options = try PublicKeyCredentialRequestOptions(
            json: site.authenticationOptions(.init(userName: "bob")))
        let assertion = try await engine.get(options, origin: Site.origin)
        #expect(assertion.id == bobsCredential.credential.id)
        guard case .authenticated(let signedIn) = site.verifyAuthentication(assertion.json()) else {
            Issue.record("sign-in refused")
            return
        }
        #expect(signedIn.userName == "bob")
    }

    @Test func userVerificationPreferredIsAskedForAndDiscouragedIsNot() async throws {
        let local = TestAuthenticator()
        let id = try await local.addCredential(userName: "alice", discoverable: false)
        let engine = makeEngine([local.client])
        let preferred = try await engine.get(
            PublicKeyCredentialRequestOptions(
                json: requestOptionsJSON(
                    #""allowCredentials":[{"type":"public-key","id":"\#(id.base64URLEncodedString)"}]"#)),
            origin: Site.origin)
        let discouraged = try await engine.get(
            PublicKeyCredentialRequestOptions(
                json: requestOptionsJSON(
                    #""userVerification":"discouraged","allowCredentials":[{"type":"public-key","id":"\#(id.base64URLEncodedString)"}]"#
                )),
            origin: Site.origin)
        #expect(local.user.seen.map(\.requiresVerification) == [true, false])
        #expect(try AuthenticatorData(bytes: preferred.authenticatorData).flags.contains(.userVerified))
        #expect(try !AuthenticatorData(bytes: discouraged.authenticatorData).flags.contains(.userVerified))
        // A server-side credential returns no user handle: the member is left out of the JSON.
        #expect(preferred.userHandle == nil)
        let json = try JSONValue(parsing: preferred.json())
        #expect(json["response"]?["userHandle"] == nil)
    }

    @Test func theUserDecliningAtTheAuthenticatorIsNotAllowedError() async throws {
        let local = TestAuthenticator(user: ApprovingUser(.denied))
        _ = try await local.addCredential(userName: "alice")
        let engine = makeEngine([local.client])
        await #expect(throws: ClientError(.authenticator(.operationDenied))) {
            try await engine.get(PublicKeyCredentialRequestOptions(json: requestOptionsJSON()), origin: Site.origin)
        }
    }

    @Test func anRPIDTheOriginMayNotUseIsSecurityError() async throws {
        let engine = makeEngine([TestAuthenticator().client])
        await #expect {
            try await engine.get(
                PublicKeyCredentialRequestOptions(json: requestOptionsJSON()), origin: "https://example.org")
        } throws: { error in
            (error as? ClientError)?.name == .securityError
        }
    }

    @Test func theRelyingPartysFirstSupportedAlgorithmIsMadeAndAnEmptyListMeansES256() async throws {
        let local = TestAuthenticator()
        let engine = makeEngine([local.client])
        func options(_ algorithms: String) throws -> PublicKeyCredentialCreationOptions {
            try PublicKeyCredentialCreationOptions(
                json: Array(
                    String(decoding: creationOptionsJSON(), as: UTF8.self).replacingOccurrences(
                        of: "-7", with: algorithms
                    ).utf8))
        }
        // RS256 only: no authenticator here makes it, NotSupportedError before anything is asked.
        await #expect(throws: ClientError(.authenticator(.unsupportedAlgorithm))) {
            try await engine.create(try options("-257"), origin: Site.origin)
        }
        // EdDSA first, as `rp serve` lists them: the authenticator makes EdDSA, and getPublicKey() is its SPKI.
        let eddsa = try await engine.create(
            try options(#"-8}, {"type": "public-key", "alg": -7}, {"type": "public-key", "alg": -257"#),
            origin: Site.origin)
        #expect(eddsa.publicKeyAlgorithm == -8)
        #expect(eddsa.publicKey?.count == 44)
        var defaults = try PublicKeyCredentialCreationOptions(json: creationOptionsJSON())
        defaults.parameters = []
        let created = try await engine.create(defaults, origin: Site.origin)
        #expect(created.publicKeyAlgorithm == -7)
        // No public-key entry at all.
        var none = defaults
        none.parameters = [PublicKeyCredentialParameters(type: "other", algorithm: -7)]
        await #expect(throws: ClientError(.noSupportedAlgorithm)) { try await engine.create(none, origin: Site.origin) }
    }
}
