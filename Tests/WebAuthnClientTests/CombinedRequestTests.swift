import Basics
import CTAP2
import Foundation
import RelyingParty
import Synchronization
import Testing
import WebAuthn
import WebAuthnClient
import WebRelyingParty

/// `get` with the RP's saved passwords offered beside its passkeys in one chooser: each choice carried out end to
/// end, the relying party verifying the assertion when a passkey is picked.
struct CombinedRequestTests {
    static let logins = [
        PasswordLogin(id: Array(repeating: 1, count: 16), userName: "alice", service: "example.com"),
        PasswordLogin(id: Array(repeating: 2, count: 16), userName: "bob", service: "https://example.com:8443"),
    ]

    /// A site with alice's passkey registered on this computer.
    static func registered() async throws -> (Site, TestAuthenticator) {
        var site = Site()
        let local = TestAuthenticator()
        let engine = makeEngine([local.client])
        let creation = try PublicKeyCredentialCreationOptions(
            json: site.registrationOptions(RegistrationOptionsRequest(userName: "alice", displayName: "Alice")))
        let created = try await engine.create(creation, origin: Site.origin)
        guard case .registered = site.verifyRegistration(created.json()) else {
            throw ClientError(.invalidResponse("registration refused"))
        }
        return (site, local)
    }

    @Test func choosingThePasskeySignsInAndTheRelyingPartyVerifiesIt() async throws {
        var (site, local) = try await Self.registered()
        let seenBefore = local.user.seen.count
        let interface = ScriptedInterface(pick: { _ in 0 })
        let engine = makeEngine([local.client], interface: interface)
        let asked = LockedStrings()
        let result = try await engine.get(
            PublicKeyCredentialRequestOptions(json: site.authenticationOptions()), origin: Site.origin,
            passwords: { relyingPartyID in
                asked.append(relyingPartyID)
                return Self.logins
            })
        #expect(asked.values == ["example.com"])
        // One chooser: the passkey (which would have gone ahead alone), then both passwords.
        let choices = try #require(interface.prompts.first).choices
        #expect(interface.prompts.count == 1 && choices.count == 3)
        guard case .account(let account, .platform) = choices[0] else {
            Issue.record("the passkey is not offered first: \(choices)")
            return
        }
        #expect(account.userName == "alice")
        #expect(Array(choices[1...]) == Self.logins.map(ClientChoice.password))
        guard case .publicKey(let assertion) = result,
            case .authenticated(let signedIn) = site.verifyAuthentication(assertion.json())
        else {
            Issue.record("no verified assertion: \(result)")
            return
        }
        #expect(signedIn.userName == "alice")
        #expect(local.user.seen.count == seenBefore + 1, "the authenticator asked once, for the sign-in")
    }

    @Test(arguments: [1, 2])
    func choosingAPasswordReturnsItsLoginAndAsksNoAuthenticator(index: Int) async throws {
        var (site, local) = try await Self.registered()
        let seenBefore = local.user.seen.count
        let interface = ScriptedInterface(pick: { _ in index })
        let engine = makeEngine([local.client], interface: interface)
        let result = try await engine.get(
            PublicKeyCredentialRequestOptions(json: site.authenticationOptions()), origin: Site.origin,
            passwords: { _ in Self.logins })
        guard case .password(let login) = result else {
            Issue.record("expected a password, got \(result)")
            return
        }
        #expect(login == Self.logins[index - 1])
        #expect(local.user.seen.count == seenBefore, "the authenticator was asked")
        #expect(!interface.events.contains(.contacting(.platform)))
    }

    @Test func withoutPasswordsItIsPlainGetAndWithoutPasskeysThePasswordsAreOfferedAlone() async throws {
        var (site, local) = try await Self.registered()
        let interface = ScriptedInterface()
        let engine = makeEngine([local.client], interface: interface)
        let plain = try await engine.get(
            PublicKeyCredentialRequestOptions(json: site.authenticationOptions()), origin: Site.origin,
            passwords: { _ in [] })
        guard case .publicKey = plain else {
            Issue.record("expected an assertion")
            return
        }
        #expect(interface.prompts.isEmpty, "one passkey and no password: no chooser, as get")

        // No passkey anywhere and preferImmediatelyAvailable: get would fail at once; the passwords are offered.
        let empty = TestAuthenticator()
        let other = ScriptedInterface(pick: { _ in 0 })
        let result = try await makeEngine([empty.client], interface: other).get(
            PublicKeyCredentialRequestOptions(json: requestOptionsJSON()), origin: Site.origin,
            parameters: GetParameters(preferImmediatelyAvailableCredentials: true), passwords: { _ in Self.logins })
        #expect(other.prompts.map(\.choices) == [Self.logins.map(ClientChoice.password)])
        guard case .password(let login) = result else {
            Issue.record("expected a password")
            return
        }
        #expect(login.userName == "alice")
    }

    @Test func dismissingTheCombinedChooserIsNotAllowedErrorOrAbortWhenConditional() async throws {
        let (_, local) = try await Self.registered()
        for (mediation, expected) in [(CredentialMediation.optional, "NotAllowedError"), (.conditional, "AbortError")] {
            let engine = makeEngine([local.client], interface: ScriptedInterface(pick: { _ in nil }))
            do {
                _ = try await engine.get(
                    PublicKeyCredentialRequestOptions(json: requestOptionsJSON()), origin: Site.origin,
                    parameters: GetParameters(mediation: mediation), passwords: { _ in Self.logins })
                Issue.record("a dismissed chooser returned a credential")
            } catch {
                #expect(error.name.rawValue == expected)
            }
        }
    }
}

/// Strings appended from a `@Sendable` closure.
final class LockedStrings: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ value: String) { storage.withLock { $0.append(value) } }
    var values: [String] { storage.withLock { $0 } }
}
