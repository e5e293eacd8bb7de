import Basics
import Foundation
import RelyingParty
import RelyingPartyTestSupport
import Testing
import WebAuthn
import WebRelyingParty

/// Registration and authentication through the JSON forms: the verdicts, the new state, and every refusal leaving
/// the state as it was.
struct VerificationTests {
    @Test func registerThenSignInWithAndWithoutAUserName() throws {
        var harness = Harness()
        var key = SoftwareAuthenticator(origin: Harness.origin)
        let registered = try harness.register("alice", with: &key)
        guard case .registered(let verdict) = registered.verdict else {
            Issue.record("not registered: \(registered.verdict)")
            return
        }
        #expect(
            verdict.userName == "alice" && verdict.userVerified && verdict.authenticatorAttachment == "cross-platform")
        #expect(verdict.credential.id == key.credentialID && verdict.credential.transports == ["usb"])
        #expect(verdict.credential.userHandle == key.userHandle)
        let account = try #require(harness.state.accounts.first)
        #expect(harness.state.accounts.count == 1)
        #expect(account.rpID == "localhost" && account.userName == "alice" && account.registered == Harness.date)

        let discoverable = try key.authenticate(optionsJSON: try harness.authenticationOptions())
        let first = harness.verifyAuthentication(discoverable)
        guard case .authenticated(let signedIn) = first.verdict else {
            Issue.record("not signed in: \(first.verdict)")
            return
        }
        #expect(signedIn.userName == "alice" && signedIn.credential.signCount == 1 && signedIn.userVerified)
        #expect(first.newState?.accounts.first?.credential.signCount == 1)

        let named = try key.authenticate(
            optionsJSON: try harness.authenticationOptions(AuthenticationOptionsRequest(userName: "alice")))
        #expect(harness.verifyAuthentication(named).refusalCode == nil)
        #expect(harness.state.accounts.first?.credential.signCount == 2)
        #expect(harness.relyingParty.pendingCount == 0)
    }

    @Test func anUnchangedRecordIsNotSavedAgain() throws {
        var harness = Harness()
        var key = SoftwareAuthenticator(origin: Harness.origin)
        key.countsSignatures = false
        try harness.register("alice", with: &key)
        let outcome = harness.verifyAuthentication(
            try key.authenticate(optionsJSON: try harness.authenticationOptions()))
        #expect(outcome.refusalCode == nil)
        #expect(outcome.newState == nil)
    }

    @Test func aChallengeIsSingleUseEvenWhenItsFirstResponseWasRefused() throws {
        var harness = Harness()
        var key = SoftwareAuthenticator(origin: Harness.origin)
        let options = harness.registrationOptions(RegistrationOptionsRequest(userName: "alice"))
        var wrongOrigin = SoftwareAuthenticator.Spoil()
        wrongOrigin.origin = "http://localhost:9999"
        let refused = harness.verifyRegistration(try key.register(optionsJSON: options, spoil: wrongOrigin))
        #expect(refused.refusalCode == WebRelyingPartyError.Code(.originMismatch))
        #expect(refused.newState == nil)

        let good = try key.register(optionsJSON: options)
        let replayed = harness.verifyRegistration(good)
        #expect(replayed.refusalCode == .challengeReplayed)
        #expect(replayed.verdict.status == 409)
        #expect(harness.state.accounts.isEmpty)
        guard case .refused(_, _, let userName) = replayed.verdict else {
            Issue.record("not refused: \(replayed.verdict)")
            return
        }
        #expect(userName == nil)  // a spent challenge no longer names its ceremony
    }

    @Test func aSuccessfulResponseCannotBeReplayed() throws {
        var harness = Harness()
        var key = SoftwareAuthenticator(origin: Harness.origin)
        try harness.register("alice", with: &key)
        let assertion = try key.authenticate(optionsJSON: try harness.authenticationOptions())
        #expect(harness.verifyAuthentication(assertion).refusalCode == nil)
        let state = harness.state
        let again = harness.verifyAuthentication(assertion)
        #expect(again.refusalCode == .challengeReplayed && again.newState == nil)
        #expect(harness.state == state)
    }

    @Test func challengesExpireAtTheirLifetime() throws {
        var harness = Harness { $0.ceremonies.lifetime = .seconds(60) }
        var key = SoftwareAuthenticator(origin: Harness.origin)
        let late = harness.registrationOptions(RegistrationOptionsRequest(userName: "alice"))
        let inTime = harness.registrationOptions(RegistrationOptionsRequest(userName: "bob"))
        harness.now += .seconds(60) - .nanoseconds(1)
        #expect(harness.verifyRegistration(try key.register(optionsJSON: inTime)).refusalCode == nil)
        harness.now += .nanoseconds(1)
        let expired = harness.verifyRegistration(try key.register(optionsJSON: late))
        #expect(expired.refusalCode == .challengeExpired && expired.verdict.status == 400)
        #expect(harness.state.accounts.map(\.userName) == ["bob"])
    }

    @Test func pendingCeremoniesAreBoundedByDroppingTheOldest() throws {
        var harness = Harness { $0.ceremonies.maximumPending = 3 }
        var key = SoftwareAuthenticator(origin: Harness.origin)
        let oldest = harness.registrationOptions(RegistrationOptionsRequest(userName: "alice"))
        for _ in 0..<1000 { _ = try harness.authenticationOptions() }
        #expect(harness.relyingParty.pendingCount == 3)
        #expect(harness.verifyRegistration(try key.register(optionsJSON: oldest)).refusalCode == .challengeEvicted)
    }

    @Test func forgottenAndNeverIssuedChallengesAreUnknown() throws {
        var harness = Harness {
            $0.ceremonies.maximumPending = 1
            $0.ceremonies.maximumRetired = 2
        }
        var key = SoftwareAuthenticator(origin: Harness.origin)
        let first = harness.registrationOptions(RegistrationOptionsRequest(userName: "alice"))
        for _ in 0..<3 { _ = try harness.authenticationOptions() }  // evicts `first` and two more: it is forgotten
        #expect(harness.verifyRegistration(try key.register(optionsJSON: first)).refusalCode == .unknownChallenge)
        var spoil = SoftwareAuthenticator.Spoil()
        spoil.challenge = [UInt8](repeating: 0xEE, count: 32)
        let options = harness.registrationOptions(RegistrationOptionsRequest(userName: "alice"))
        let never = harness.verifyRegistration(try key.register(optionsJSON: options, spoil: spoil))
        #expect(never.refusalCode == .unknownChallenge)
    }

    @Test func aChallengeAnswersOnlyItsOwnCeremony() throws {
        var harness = Harness()
        var key = SoftwareAuthenticator(origin: Harness.origin)
        try harness.register("alice", with: &key)
        let registrationOptions = harness.registrationOptions(RegistrationOptionsRequest(userName: "bob"))
        let registration = try SoftwareAuthenticator(origin: Harness.origin).registerCopy(registrationOptions)
        let mismatch = harness.verifyAuthentication(registration)
        #expect(mismatch.refusalCode == .ceremonyMismatch)
        guard case .refused(.authentication, _, let userName) = mismatch.verdict else {
            Issue.record("\(mismatch.verdict)")
            return
        }
        #expect(userName == "bob")
        let assertion = try key.authenticate(optionsJSON: try harness.authenticationOptions())
        #expect(harness.verifyRegistration(assertion).refusalCode == .ceremonyMismatch)
    }

    /// Each refusal: its code, its status, and no new state.
    @Test(arguments: [
        ("wrong origin", WebRelyingPartyError.Code(.originMismatch)),
        ("wrong RP ID", WebRelyingPartyError.Code(.rpIDHashMismatch)),
        ("no UP", WebRelyingPartyError.Code(.userNotPresent)),
        ("wrong type", WebRelyingPartyError.Code(.typeMismatch)),
        ("id differs", .malformedResponse),
        ("not public-key", .malformedResponse),
        ("padded rawId", .malformedResponse),
        ("odd transport", .malformedResponse),
    ])
    func registrationRefusals(spoiled: String, code: WebRelyingPartyError.Code) throws {
        var harness = Harness()
        var key = SoftwareAuthenticator(origin: Harness.origin)
        var spoil = SoftwareAuthenticator.Spoil()
        switch spoiled {
        case "wrong origin": spoil.origin = "https://evil.example"
        case "wrong RP ID": spoil.rpID = "example.com"
        case "no UP": spoil.flags = [.userVerified]
        case "wrong type": spoil.type = "webauthn.get"
        case "id differs": spoil.idText = "AAAA"
        case "not public-key": spoil.credentialType = "password"
        case "padded rawId":
            spoil.rawIDText = key.credentialID.base64URLEncodedString + "="
            spoil.idText = spoil.rawIDText
        default: spoil.transports = ["usb", "bad transport"]
        }
        let outcome = try harness.register("alice", with: &key, spoil: spoil)
        #expect(outcome.refusalCode == code)
        #expect(outcome.verdict.status == 400)
        #expect(outcome.newState == nil && harness.state.accounts.isEmpty)
        #expect(harness.relyingParty.pendingCount == 0)  // the challenge was spent all the same
    }

    @Test func userVerificationRequiredIsEnforced() throws {
        var harness = Harness()
        var key = SoftwareAuthenticator(origin: Harness.origin)
        var spoil = SoftwareAuthenticator.Spoil()
        spoil.flags = [.userPresent]
        let options = harness.registrationOptions(
            RegistrationOptionsRequest(userName: "alice", userVerification: .required))
        let outcome = harness.verifyRegistration(try key.register(optionsJSON: options, spoil: spoil))
        #expect(outcome.refusalCode == WebRelyingPartyError.Code(.userVerificationRequired))
    }

    /// WebAuthn L3 §7.1 step 14: options given to `create()` with `mediation: "conditional"` (an automatic passkey
    /// upgrade) may be answered without UP; every other flag check stays (UV when required, BS only with BE).
    @Test(arguments: ["no flags", "backed up", "UV required", "BS without BE"])
    func anUpgradeIsAcceptedWithoutUserPresenceOnly(_ name: String) throws {
        let (flags, userVerification, refusal):
            (AuthenticatorFlags, UserVerificationRequirement, RelyingPartyError.Code?) =
                switch name {
                case "no flags": ([], .preferred, nil)
                case "backed up": ([.backupEligible, .backupState], .preferred, nil)
                case "UV required": ([], .required, .userVerificationRequired)
                default: ([.backupState], .preferred, .backupFlagsInconsistent)
                }
        var harness = Harness()
        var key = SoftwareAuthenticator(origin: Harness.origin)
        var spoil = SoftwareAuthenticator.Spoil()
        spoil.flags = flags
        let challenge = harness.random(32)
        let options = harness.relyingParty.registrationOptions(
            for: RegistrationOptionsRequest(userName: "alice", userVerification: userVerification),
            state: harness.state, challenge: challenge, newUserHandle: harness.random(16), now: harness.now,
            upgrade: true)
        let outcome = harness.verifyRegistration(try key.register(optionsJSON: options, spoil: spoil))
        #expect(outcome.refusalCode == refusal.map(WebRelyingPartyError.Code.init))
        if refusal == nil {
            let accepted: AcceptedResponse? =
                if case .registered(let accepted) = outcome.verdict { accepted } else { nil }
            #expect(accepted?.upgrade == true && accepted?.userPresent == false)
        }
    }

    @Test func aCredentialIDAlreadyRegisteredIsRefused() throws {
        var harness = Harness()
        var key = SoftwareAuthenticator(origin: Harness.origin)
        try harness.register("alice", with: &key)
        let state = harness.state
        // The same credential again, for another user (no excludeCredentials stops it: a lying authenticator).
        let outcome = try harness.register("mallory", with: &key)
        #expect(outcome.refusalCode == .credentialAlreadyRegistered && outcome.verdict.status == 409)
        #expect(harness.state == state)
    }

    @Test func unknownCredentialsAndForeignSignaturesAreRefused() throws {
        var harness = Harness()
        var alice = SoftwareAuthenticator(origin: Harness.origin)
        try harness.register("alice", with: &alice)
        let state = harness.state

        var stranger = SoftwareAuthenticator(origin: Harness.origin)
        stranger.userHandle = alice.userHandle
        let unknown = harness.verifyAuthentication(
            try stranger.authenticate(optionsJSON: try harness.authenticationOptions()))
        #expect(unknown.refusalCode == WebRelyingPartyError.Code(.unknownCredential) && unknown.verdict.status == 400)

        var spoil = SoftwareAuthenticator.Spoil()
        spoil.credentialID = alice.credentialID  // claims alice's credential, signs with another key
        let forged = harness.verifyAuthentication(
            try stranger.authenticate(optionsJSON: try harness.authenticationOptions(), spoil: spoil))
        #expect(forged.refusalCode == WebRelyingPartyError.Code(.signatureInvalid))

        let notAllowed = harness.verifyAuthentication(
            try stranger.authenticate(
                optionsJSON: try harness.authenticationOptions(AuthenticationOptionsRequest(userName: "alice"))))
        #expect(notAllowed.refusalCode == WebRelyingPartyError.Code(.credentialNotAllowed))

        var wrongOrigin = SoftwareAuthenticator.Spoil()
        wrongOrigin.origin = "http://localhost:1"
        let origin = harness.verifyAuthentication(
            try alice.authenticate(optionsJSON: try harness.authenticationOptions(), spoil: wrongOrigin))
        #expect(origin.refusalCode == WebRelyingPartyError.Code(.originMismatch))
        #expect(harness.state == state)
    }

    @Test(arguments: [
        ("", WebRelyingPartyError.Code.badJSON),
        ("{nope", .badJSON),
        ("[1,2]", .badJSON),
        (String(repeating: "[", count: 60_000), .badJSON),
        ("{}", .malformedResponse),
        (#"{"response":{"clientDataJSON":"e30"}}"#, .malformedResponse),
        (#"{"response":{"clientDataJSON":7}}"#, .malformedResponse),
        (#"{"id":"AA","rawId":"AA","type":"public-key","response":{}}"#, .malformedResponse),
    ])
    func bodiesThatNameNoCeremony(body: String, code: WebRelyingPartyError.Code) {
        var harness = Harness()
        _ = harness.registrationOptions(RegistrationOptionsRequest(userName: "alice"))
        for outcome in [harness.verifyRegistration(Array(body.utf8)), harness.verifyAuthentication(Array(body.utf8))] {
            #expect(outcome.refusalCode == code && outcome.newState == nil)
        }
        #expect(harness.relyingParty.pendingCount == 1)
    }

    @Test func aMalformedResponseWithAReadableChallengeSpendsIt() throws {
        var harness = Harness()
        var key = SoftwareAuthenticator(origin: Harness.origin)
        let options = harness.registrationOptions(RegistrationOptionsRequest(userName: "alice"))
        var body = try object(try key.register(optionsJSON: options))
        var response = try #require(body["response"] as? [String: Any])
        response["attestationObject"] = nil
        body["response"] = response
        let outcome = harness.verifyRegistration(Array(try JSONSerialization.data(withJSONObject: body)))
        #expect(outcome.refusalCode == .malformedResponse)
        guard case .refused(_, let error, let userName) = outcome.verdict else {
            Issue.record("not refused: \(outcome.verdict)")
            return
        }
        #expect(error.message == "response.attestationObject is missing" && userName == "alice")
        #expect(harness.relyingParty.pendingCount == 0)
    }
}

extension SoftwareAuthenticator {
    /// A registration response from a copy, so the caller's value is not needed as `inout`.
    func registerCopy(_ options: [UInt8]) throws -> [UInt8] {
        var copy = self
        return try copy.register(optionsJSON: options)
    }
}
