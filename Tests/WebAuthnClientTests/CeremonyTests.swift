import Basics
import CTAP2
import Foundation
import Testing
import WebAuthn
import WebAuthnClient

/// The decision rules carried out by the engine: what the user is shown, which authenticator is asked, and the
/// error when nothing may answer.
struct CeremonyTests {
    static func get() throws -> PublicKeyCredentialRequestOptions {
        try PublicKeyCredentialRequestOptions(json: requestOptionsJSON())
    }

    @Test func conditionalListsLocalPasskeysAndNeverOpensThePhoneUnlessPicked() async throws {
        let local = TestAuthenticator()
        let aliceID = try await local.addCredential(userName: "alice")
        let interface = ScriptedInterface()
        let engine = makeEngine([local.client, UnansweredAuthenticator()], interface: interface)
        let assertion = try await engine.get(
            Self.get(), origin: Site.origin, parameters: GetParameters(mediation: .conditional))
        #expect(assertion.id == aliceID)
        let prompt = try #require(interface.prompts.first)
        #expect(prompt.isConditional)
        #expect(prompt.choices.count == 2)
        #expect(prompt.choices.last == .phone)
        #expect(!interface.events.contains(.contacting(.hybrid)))
        // The pick asked for user verification and named that one credential.
        #expect(local.user.seen.map(\.requiresVerification) == [true])
    }

    @Test func conditionalWithNothingLocalShowsNoErrorAndDismissingIsAbort() async throws {
        let interface = ScriptedInterface { _ in nil }
        let engine = makeEngine([TestAuthenticator().client, UnansweredAuthenticator()], interface: interface)
        await #expect(throws: ClientError(.aborted)) {
            try await engine.get(Self.get(), origin: Site.origin, parameters: GetParameters(mediation: .conditional))
        }
        #expect(interface.prompts.map(\.choices) == [[.phone]])
        #expect(interface.events.isEmpty)
    }

    @Test func conditionalPickOfThePhoneRunsTheDiscoverableRequestThere() async throws {
        let local = TestAuthenticator()
        _ = try await local.addCredential(userName: "alice")
        let phone = TestAuthenticator(kind: .hybrid, configuration: .hybridPhone(oneRequestPerSession: true), seed: 3)
        let carolID = try await phone.addCredential(userName: "carol")
        let interface = ScriptedInterface { $0.choices.firstIndex(of: .phone) }
        let engine = makeEngine([local.client, phone.client], interface: interface)
        let assertion = try await engine.get(
            Self.get(), origin: Site.origin, parameters: GetParameters(mediation: .conditional))
        #expect(assertion.id == carolID)
        #expect(assertion.authenticatorAttachment == .crossPlatform)
    }

    @Test func conditionalRefusesACredentialOutsideTheFilter() async throws {
        let phone = TestAuthenticator(kind: .hybrid, configuration: .hybridPhone(oneRequestPerSession: true), seed: 3)
        _ = try await phone.addCredential(userName: "carol")
        let engine = makeEngine([phone.client])
        let options = try PublicKeyCredentialRequestOptions(
            json: requestOptionsJSON(#""allowCredentials":[{"type":"public-key","id":"AQIDBA"}]"#))
        await #expect(throws: ClientError(.invalidResponse("the credential is not in allowCredentials"))) {
            try await engine.get(options, origin: Site.origin, parameters: GetParameters(mediation: .conditional))
        }
    }

    @Test func aTypedUserNameSignsInWithThatUsersCredential() async throws {
        let local = TestAuthenticator()
        _ = try await local.addCredential(userName: "alice", created: Date(timeIntervalSince1970: 2))
        let bobID = try await local.addCredential(userName: "bob", created: Date(timeIntervalSince1970: 1))
        let interface = ScriptedInterface()
        let engine = makeEngine([local.client], interface: interface)
        let assertion = try await engine.get(
            Self.get(), origin: Site.origin, parameters: GetParameters(mediation: .conditional, userName: "bob"))
        #expect(assertion.id == bobID)
        #expect(interface.prompts.isEmpty)
    }

    @Test(arguments: [
        GetParameters(mediation: .immediate), GetParameters(preferImmediatelyAvailableCredentials: true),
    ])
    func immediateWithoutALocalPasskeyFailsAtOnceShowingNothing(parameters: GetParameters) async throws {
        let phone = TestAuthenticator(kind: .hybrid, configuration: .hybridPhone(oneRequestPerSession: true))
        _ = try await phone.addCredential(userName: "carol")
        let interface = ScriptedInterface()
        let engine = makeEngine([TestAuthenticator().client, phone.client], interface: interface)
        await #expect(throws: ClientError(.noImmediatelyAvailableCredential)) {
            try await engine.get(Self.get(), origin: Site.origin, parameters: parameters)
        }
        #expect(interface.showedNothing)
        #expect(phone.user.seen.isEmpty)
    }

    @Test func immediateWithAnAllowListFailsShowingNothing() async throws {
        let local = TestAuthenticator()
        let id = try await local.addCredential(userName: "alice")
        let interface = ScriptedInterface()
        let engine = makeEngine([local.client], interface: interface)
        let options = try PublicKeyCredentialRequestOptions(
            json: requestOptionsJSON(
                #""allowCredentials":[{"type":"public-key","id":"\#(id.base64URLEncodedString)"}]"#))
        await #expect(throws: ClientError(.immediateWithAllowList)) {
            try await engine.get(options, origin: Site.origin, parameters: GetParameters(mediation: .immediate))
        }
        #expect(interface.showedNothing)
        #expect(ClientError(.immediateWithAllowList).name == .notAllowedError)
    }

    @Test func immediateWithALocalPasskeySignsIn() async throws {
        let local = TestAuthenticator()
        let id = try await local.addCredential(userName: "alice")
        let engine = makeEngine([local.client, UnansweredAuthenticator()])
        let assertion = try await engine.get(
            Self.get(), origin: Site.origin, parameters: GetParameters(mediation: .immediate))
        #expect(assertion.id == id)
    }

    @Test func hintsOrderTheChooser() async throws {
        let local = TestAuthenticator()
        _ = try await local.addCredential(userName: "alice")
        let interface = ScriptedInterface { $0.choices.firstIndex { if case .account = $0 { true } else { false } } }
        let engine = makeEngine(
            [local.client, UnansweredAuthenticator(), UnreachableAuthenticator()], interface: interface)
        _ = try await engine.get(
            Self.get(), origin: Site.origin, parameters: GetParameters(hints: [.securityKey, .clientDevice]))
        let choices = try #require(interface.prompts.first?.choices)
        #expect(choices.count == 3)
        #expect(choices[0] == .securityKey)
        #expect(choices[2] == .phone)
    }

    @Test func dismissingTheModalChooserIsNotAllowedError() async throws {
        let local = TestAuthenticator()
        _ = try await local.addCredential(userName: "alice")
        _ = try await local.addCredential(userName: "bob")
        let engine = makeEngine([local.client], interface: ScriptedInterface { _ in nil })
        await #expect(throws: ClientError(.userCancelled)) { try await engine.get(Self.get(), origin: Site.origin) }
    }

    @Test func theTimerRunningOutIsNotAllowedError() async throws {
        let engine = makeEngine([UnansweredAuthenticator()], timerFires: true)
        await #expect(throws: ClientError(.timedOut(milliseconds: 300_000))) {
            try await engine.get(Self.get(), origin: Site.origin)
        }
    }

    @Test func aCancelledCallerGetsAbortError() async throws {
        let engine = makeEngine([UnansweredAuthenticator()])
        let options = try Self.get()
        let task = Task { () async throws(ClientError) -> AuthenticationCredential in
            try await engine.get(options, origin: Site.origin)
        }
        task.cancel()
        await #expect(throws: ClientError(.aborted)) { try await task.value }
    }

    @Test func aPhoneAnswersWhileNoSecurityKeyIsConnected() async throws {
        let phone = TestAuthenticator(kind: .hybrid, configuration: .hybridPhone(oneRequestPerSession: true))
        let id = try await phone.addCredential(userName: "carol")
        let engine = makeEngine([UnreachableAuthenticator(), phone.client])
        let assertion = try await engine.get(Self.get(), origin: Site.origin)
        #expect(assertion.id == id)
    }

    @Test func severalAssertionsFromAKeyAreOfferedToTheUser() async throws {
        let key = TestAuthenticator(kind: .securityKey, configuration: .securityKey)
        _ = try await key.addCredential(userName: "alice", created: Date(timeIntervalSince1970: 1))
        let bobID = try await key.addCredential(userName: "bob", created: Date(timeIntervalSince1970: 2))
        let interface = ScriptedInterface { prompt in
            prompt.choices.firstIndex { choice in
                if case .account(let account, .securityKey) = choice { account.userName == "bob" } else { false }
            }
        }
        let engine = makeEngine([key.client], interface: interface)
        let assertion = try await engine.get(Self.get(), origin: Site.origin)
        #expect(assertion.id == bobID)
        #expect(interface.prompts.first?.choices.count == 2)
    }

    @Test func requiredVerificationOnAKeyThatCannotVerifyIsNotAllowedError() async throws {
        let key = TestAuthenticator(kind: .securityKey, configuration: .pinOnlySecurityKey)
        _ = try await key.addCredential(userName: "alice")
        let engine = makeEngine([key.client])
        let options = try PublicKeyCredentialRequestOptions(json: requestOptionsJSON(#""userVerification":"required""#))
        await #expect(throws: ClientError(.userVerificationUnavailable)) {
            try await engine.get(options, origin: Site.origin)
        }
        #expect(key.user.seen.isEmpty)
    }

    @Test func aPlatformOnlyRegistrationNeverShowsAChooser() async throws {
        let local = TestAuthenticator()
        let interface = ScriptedInterface()
        let engine = makeEngine([local.client, UnansweredAuthenticator()], interface: interface)
        let options = try PublicKeyCredentialCreationOptions(
            json: creationOptionsJSON(#""authenticatorSelection":{"authenticatorAttachment":"platform"}"#))
        let created = try await engine.create(options, origin: Site.origin)
        #expect(created.authenticatorAttachment == .platform)
        #expect(interface.prompts.isEmpty)
    }
}
