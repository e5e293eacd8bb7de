import Basics
import CTAP2
import Foundation
import Synchronization
import Testing
import WebAuthn
import WebAuthnClient

/// `create()` with mediation conditional: an automatic passkey upgrade is made on this computer with nothing shown
/// when the provider allows it, and otherwise fails with one NotAllowedError whatever the reason.
struct ConditionalCreateTests {
    /// Who the provider was asked about.
    final class Asked: Sendable {
        let names = Mutex<[String]>([])
    }

    static func engine(
        _ platform: TestAuthenticator, interface: ScriptedInterface, allows: Bool?, asked: Asked
    ) -> ClientEngine {
        var engine = makeEngine([platform.client, UnansweredAuthenticator()], interface: interface)
        if let allows {
            engine.environment.conditionalCreation = { relyingPartyID, userName in
                asked.names.withLock { $0.append("\(userName)@\(relyingPartyID)") }
                return allows
            }
        }
        return engine
    }

    static func options() throws -> PublicKeyCredentialCreationOptions {
        try PublicKeyCredentialCreationOptions(
            json: creationOptionsJSON(
                #""authenticatorSelection":{"residentKey":"required","userVerification":"required"}"#))
    }

    @Test func anAllowedUpgradeIsMadeWithNothingShownAndTheUPFlagClear() async throws {
        let platform = TestAuthenticator(configuration: .platform)
        let interface = ScriptedInterface()
        let asked = Asked()
        let engine = Self.engine(platform, interface: interface, allows: true, asked: asked)
        let credential = try await engine.create(
            try Self.options(), origin: "https://example.com", mediation: .conditional)
        #expect(asked.names.withLock { $0 } == ["alice@example.com"])
        #expect(interface.showedNothing)
        #expect(platform.user.seen.isEmpty, "the authenticator asked nobody either")
        let flags = try AuthenticatorData(bytes: credential.authenticatorData).flags
        #expect(!flags.contains(.userPresent) && !flags.contains(.userVerified))
        #expect(credential.authenticatorAttachment == .platform)
        #expect(try platform.store.allCredentials().map(\.id) == [credential.id])
    }

    @Test(arguments: [false, nil] as [Bool?])
    func aRefusedUpgradeIsOneNotAllowedErrorAndShowsNothing(allows: Bool?) async throws {
        let platform = TestAuthenticator(configuration: .platform)
        let interface = ScriptedInterface()
        let engine = Self.engine(platform, interface: interface, allows: allows, asked: Asked())
        let error = await #expect(throws: ClientError.self) {
            _ = try await engine.create(try Self.options(), origin: "https://example.com", mediation: .conditional)
        }
        #expect(error?.name == .notAllowedError)
        #expect(interface.showedNothing)
        #expect(try platform.store.allCredentials().isEmpty)
    }

    /// The authenticator's own refusal (here an excluded credential) ends the same way, so the page cannot tell an
    /// account that has a passkey here from one that has none.
    @Test func anExcludedCredentialLooksLikeAnyRefusal() async throws {
        let platform = TestAuthenticator(configuration: .platform)
        let existing = try await platform.addCredential(userName: "alice")
        let interface = ScriptedInterface()
        let engine = Self.engine(platform, interface: interface, allows: true, asked: Asked())
        let excluding = try PublicKeyCredentialCreationOptions(
            json: creationOptionsJSON(
                #""excludeCredentials":[{"type":"public-key","id":"\#(existing.base64URLEncodedString)"}]"#))
        let error = await #expect(throws: ClientError.self) {
            _ = try await engine.create(excluding, origin: "https://example.com", mediation: .conditional)
        }
        #expect(error?.name == .notAllowedError)
        #expect(interface.showedNothing)
        #expect(platform.user.seen.isEmpty)
    }

    /// The origin is checked first, as for every create(): a page cannot upgrade for another site.
    @Test func theRPIDIsCheckedBeforeAnything() async throws {
        let platform = TestAuthenticator(configuration: .platform)
        let asked = Asked()
        let engine = Self.engine(platform, interface: ScriptedInterface(), allows: true, asked: asked)
        let error = await #expect(throws: ClientError.self) {
            _ = try await engine.create(try Self.options(), origin: "https://evil.example", mediation: .conditional)
        }
        #expect(error?.name == .securityError)
        #expect(asked.names.withLock { $0 }.isEmpty)
    }
}
