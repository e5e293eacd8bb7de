import CTAP2
import PasskeyProvider
import Testing

/// `ProviderConsent`: what the authenticator's consent asks in which order, and what each answer means.
struct ConsentTests {
    static let alice = AccountSummary(
        relyingPartyID: "example.com", userName: "alice", userDisplayName: nil, credentialID: [1])
    static let bob = AccountSummary(
        relyingPartyID: "example.com", userName: "bob", userDisplayName: nil, credentialID: [2])

    static func request(verify: Bool, action: UserAction = .selection) -> ConsentRequest {
        ConsentRequest(action: action, requiresPresence: true, requiresVerification: verify)
    }

    static func consent(_ person: ScriptedPerson) -> ProviderConsent {
        ProviderConsent(interface: person, verifyPassphrase: { $0 == "right" })
    }

    @Test(arguments: [
        (ScriptedPerson.Reply.yes, ConsentResult.approved(userVerified: false, selectedAccount: nil)),
        (.no, .denied), (.endOfInput, .denied), (.cancel, .cancelled), (.timeOut, .timedOut),
    ])
    func presenceIsOneQuestion(reply: ScriptedPerson.Reply, expected: ConsentResult) async {
        let person = ScriptedPerson([reply])
        #expect(await Self.consent(person).requestConsent(Self.request(verify: false)) == expected)
        #expect(person.prompts == [.confirm(.authenticator(.selection))])
    }

    @Test func verificationFollowsPresenceAndTakesTheRightPassphrase() async {
        let person = ScriptedPerson([.yes, .type("right")])
        let action = UserAction.makeCredential(relyingPartyID: "example.com", userName: "alice", userDisplayName: nil)
        #expect(
            await Self.consent(person).requestConsent(Self.request(verify: true, action: action))
                == .approved(userVerified: true, selectedAccount: nil))
        #expect(person.prompts == [.confirm(.authenticator(action)), .secret(.verification)])
        #expect(person.events.isEmpty)
    }

    @Test func threeWrongPassphrasesFailVerificationAndEachIsReported() async {
        let person = ScriptedPerson([.yes, .type("a"), .type("b"), .type("c"), .type("right")])
        #expect(await Self.consent(person).requestConsent(Self.request(verify: true)) == .verificationFailed)
        #expect(person.prompts.filter { $0 == .secret(.verification) }.count == 3)
        #expect(person.unusedReplies == 1)
        let left = person.events.compactMap { event -> Int? in
            if case .wrongPassphrase(let left) = event { left } else { nil }
        }
        #expect(left == [2, 1, 0])
    }

    @Test func aWrongPassphraseThenTheRightOneIsVerified() async {
        let person = ScriptedPerson([.yes, .type("wrong"), .type("right")])
        #expect(
            await Self.consent(person).requestConsent(Self.request(verify: true))
                == .approved(userVerified: true, selectedAccount: nil))
    }

    @Test(arguments: [
        (ScriptedPerson.Reply.endOfInput, ConsentResult.verificationFailed), (.cancel, .cancelled),
        (.timeOut, .timedOut),
    ])
    func noPassphraseIsNoVerification(reply: ScriptedPerson.Reply, expected: ConsentResult) async {
        let person = ScriptedPerson([.yes, reply])
        #expect(await Self.consent(person).requestConsent(Self.request(verify: true)) == expected)
    }

    @Test func theAuthenticatorsChooserIsPresenceAndNamesTheAccount() async {
        let action = UserAction.getAssertion(
            relyingPartyID: "example.com", accounts: [Self.alice, Self.bob], chooseOnAuthenticator: true)
        let person = ScriptedPerson([.pick(1), .type("right")])
        #expect(
            await Self.consent(person).requestConsent(Self.request(verify: true, action: action))
                == .approved(userVerified: true, selectedAccount: 1))
        #expect(
            person.prompts == [
                .choose(.account(relyingPartyID: "example.com", accounts: [Self.alice, Self.bob])),
                .secret(.verification),
            ])
    }

    @Test(arguments: [
        (ScriptedPerson.Reply.pick(2), ConsentResult.denied), (.pick(-1), .denied), (.endOfInput, .denied),
        (.cancel, .cancelled), (.timeOut, .timedOut),
    ])
    func aChoiceOutsideTheListOrNoneDenies(reply: ScriptedPerson.Reply, expected: ConsentResult) async {
        let action = UserAction.getAssertion(
            relyingPartyID: "example.com", accounts: [Self.alice, Self.bob], chooseOnAuthenticator: true)
        let person = ScriptedPerson([reply])
        #expect(await Self.consent(person).requestConsent(Self.request(verify: false, action: action)) == expected)
        #expect(person.prompts.count == 1)
    }

    @Test func withoutPresenceOrVerificationNothingIsAsked() async {
        let person = ScriptedPerson()
        let request = ConsentRequest(action: .selection, requiresPresence: false, requiresVerification: false)
        #expect(
            await Self.consent(person).requestConsent(request) == .approved(userVerified: false, selectedAccount: nil))
        #expect(person.prompts.isEmpty)
    }

    @Test func unattendedApprovalIsAnnouncedOnceAndReportsEachApproval() async throws {
        let person = ScriptedPerson()
        let mode = ApprovalMode(yes: false, environment: ["PASSKEY_ASSUME_YES": "1"])
        #expect(mode.unattendedReason == "PASSKEY_ASSUME_YES=1")
        let consent = mode.consent(interface: person, verifyPassphrase: { _ in false })
        let action = UserAction.makeCredential(relyingPartyID: "example.com", userName: "alice", userDisplayName: nil)
        #expect(
            await consent.requestConsent(Self.request(verify: true, action: action))
                == .approved(userVerified: true, selectedAccount: nil))
        #expect(person.prompts.isEmpty)
        let events = person.events
        try #require(events.count == 2)
        if case .unattendedApprovalOn(let reason) = events[0] {
            #expect(reason == "PASSKEY_ASSUME_YES=1")
        } else {
            Issue.record("first event \(events[0])")
        }
        if case .autoApproved(let approved, true) = events[1] {
            #expect(approved == action)
        } else {
            Issue.record("second event \(events[1])")
        }
    }

    @Test func withoutTheSwitchesThePersonIsAsked() async {
        let mode = ApprovalMode(yes: false, environment: ["PASSKEY_ASSUME_YES": "yes"])
        #expect(!mode.unattended)
        #expect(ApprovalMode(yes: true, environment: [:]).unattendedReason == "--yes")
        let person = ScriptedPerson([.no])
        let consent = mode.consent(interface: person, verifyPassphrase: { _ in true })
        #expect(await consent.requestConsent(Self.request(verify: false)) == .denied)
        #expect(person.events.isEmpty)
    }
}
