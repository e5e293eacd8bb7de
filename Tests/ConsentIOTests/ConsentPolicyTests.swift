import CTAP2
import PasskeyProvider
import PasskeySettings
import Synchronization
import Testing

@Suite("Consent without a terminal: the routes, the verification rule and the consent")
struct ConsentPolicyTests {
    @Test("the consent setting gives the routes for what the process has")
    func routes() {
        func routes(_ channel: ConsentChannel, tty: Bool = false, bus: Bool = true, runtime: Bool = true)
            -> [ConsentRoute]
        {
            ConsentRoutes.choose(channel, standardInputIsTerminal: tty, sessionBus: bus, runtimeDirectory: runtime)
        }
        #expect(routes(.auto, tty: true) == [.terminal])
        #expect(routes(.auto) == [.notification, .queue])
        #expect(routes(.auto, bus: false) == [.queue])
        #expect(routes(.auto, runtime: false) == [.notification])
        #expect(routes(.auto, bus: false, runtime: false) == [.terminal])
        #expect(routes(.terminal) == [.terminal])
        #expect(routes(.terminal, tty: false, bus: false, runtime: false) == [.terminal])
        #expect(routes(.notification, tty: true) == [.notification, .queue])
        #expect(routes(.notification, bus: false, runtime: false) == [.notification])
        #expect(routes(.queue, tty: true) == [.queue])
        #expect(routes(.queue, runtime: false) == [.terminal])
    }

    @Test("an Allow verifies only while the agent holds the key and within the window")
    func verificationRule() {
        let window = Duration.seconds(300)
        #expect(AllowVerification.decide(requiresVerification: false, unlockedAgo: nil, window: window) == .notNeeded)
        #expect(
            AllowVerification.decide(requiresVerification: true, unlockedAgo: .seconds(10), window: window)
                == .given(unlockedAgo: .seconds(10)))
        #expect(
            AllowVerification.decide(requiresVerification: true, unlockedAgo: .seconds(300), window: window).verifies)
        let late = AllowVerification.decide(requiresVerification: true, unlockedAgo: .seconds(301), window: window)
        #expect(
            late
                == .notGiven(
                    reason:
                        "the store was unlocked 5 minutes ago, more than consent-uv-window's 5 minutes (run passkey unlock again)"
                ))
        #expect(
            AllowVerification.decide(requiresVerification: true, unlockedAgo: nil, window: window)
                == .notGiven(reason: "the store is not unlocked in the agent (run passkey unlock)"))
        #expect(
            !AllowVerification.decide(requiresVerification: true, unlockedAgo: .zero, window: .zero).verifies)
    }

    @Test("what the person is shown: who asks what, whether Allow verifies, the expiry; nothing a site can hide in")
    func promptText() {
        let alice = AccountSummary(
            relyingPartyID: "example.com", userName: "alice", userDisplayName: nil, credentialID: [1])
        let bob = AccountSummary(
            relyingPartyID: "example.com", userName: "bob", userDisplayName: nil, credentialID: [2])
        let signIn = ConsentPrompt(
            action: .getAssertion(relyingPartyID: "example.com", accounts: [alice], chooseOnAuthenticator: false),
            verification: .notNeeded, accounts: [], timeout: .seconds(60))
        #expect(signIn.summary == "example.com asks to sign in as alice")
        #expect(signIn.details == ["Expires in 1 minute."])
        #expect(signIn.relyingPartyID == "example.com")
        #expect(signIn.actionName == "sign in")
        let create = ConsentPrompt(
            action: .makeCredential(
                relyingPartyID: "evil\u{202E}moc.example", userName: "a\u{7}b", userDisplayName: nil),
            verification: .notGiven(reason: "the store is not unlocked in the agent (run passkey unlock)"),
            accounts: [], timeout: .seconds(30))
        #expect(create.summary == "evilmoc.example asks to create a passkey for ab")
        #expect(
            create.details == [
                "Allow counts as presence only, not as verification: the store is not unlocked in the agent (run "
                    + "passkey unlock). A site that requires verification will refuse it.",
                "Expires in 30 seconds.",
            ])
        let choose = ConsentPrompt(
            action: .getAssertion(relyingPartyID: "example.com", accounts: [alice, bob], chooseOnAuthenticator: true),
            verification: .given(unlockedAgo: .seconds(5)), accounts: [alice, bob], timeout: .seconds(120))
        #expect(choose.summary == "example.com asks to sign in")
        #expect(
            choose.details == [
                "Choose an account: alice, bob", "Allow also verifies you (the store was unlocked recently).",
                "Expires in 2 minutes.",
            ])
        #expect(
            ConsentPrompt(
                action: .reset(passkeyCount: 2), verification: .notNeeded, accounts: [], timeout: .seconds(60)
            ).summary
                == "A platform asks to reset the authenticator (deletes 2 passkeys)")
    }

    @Test("the consent: Allow is presence, verification only by the rule; deny, expiry and cancellation pass through")
    func consent() async {
        let asked = Recorder<ConsentPrompt>()
        let logged = Recorder<String>()
        func consent(answer: PromptAnswer<Int>, unlockedAgo: Duration?) -> ConsentWithoutTerminal {
            ConsentWithoutTerminal(
                asker: ScriptedAsker(answer: answer, asked: asked), window: .seconds(300), timeout: .seconds(60),
                unlockedAgo: { unlockedAgo }, log: { line in logged.append(line) })
        }
        let create = ConsentRequest(
            action: .makeCredential(relyingPartyID: "example.com", userName: "alice", userDisplayName: nil),
            requiresPresence: true, requiresVerification: true)
        #expect(
            await consent(answer: .given(0), unlockedAgo: .seconds(60)).requestConsent(create)
                == .approved(userVerified: true, selectedAccount: nil))
        #expect(logged.all.isEmpty)
        // Unlocked too long ago: presence only, and the log says why.
        #expect(
            await consent(answer: .given(0), unlockedAgo: .seconds(600)).requestConsent(create)
                == .approved(userVerified: false, selectedAccount: nil))
        #expect(logged.all.last?.contains("presence only") == true)
        #expect(asked.all.last?.verification.verifies == false)
        #expect(await consent(answer: .declined, unlockedAgo: .seconds(1)).requestConsent(create) == .denied)
        #expect(await consent(answer: .timedOut, unlockedAgo: .seconds(1)).requestConsent(create) == .timedOut)
        #expect(await consent(answer: .cancelled, unlockedAgo: .seconds(1)).requestConsent(create) == .cancelled)

        // A request for a verification token is refused without asking when an Allow would not verify.
        let before = asked.all.count
        let token = ConsentRequest(
            action: .verifyUser(relyingPartyID: "example.com"), requiresPresence: true, requiresVerification: true)
        #expect(await consent(answer: .given(0), unlockedAgo: nil).requestConsent(token) == .denied)
        #expect(asked.all.count == before)
        #expect(
            await consent(answer: .given(0), unlockedAgo: .seconds(1)).requestConsent(token)
                == .approved(userVerified: true, selectedAccount: nil))

        // Presence without verification: the agent is not asked about.
        let presence = ConsentRequest(action: .selection, requiresPresence: true, requiresVerification: false)
        #expect(
            await consent(answer: .given(0), unlockedAgo: nil).requestConsent(presence)
                == .approved(userVerified: false, selectedAccount: nil))
        #expect(asked.all.last?.verification == .notNeeded)

        // The account chooser: the index chosen, and one out of range is a refusal.
        let accounts = [
            AccountSummary(relyingPartyID: "example.com", userName: "alice", userDisplayName: nil, credentialID: [1]),
            AccountSummary(relyingPartyID: "example.com", userName: "bob", userDisplayName: nil, credentialID: [2]),
        ]
        let choose = ConsentRequest(
            action: .getAssertion(relyingPartyID: "example.com", accounts: accounts, chooseOnAuthenticator: true),
            requiresPresence: true, requiresVerification: false)
        #expect(
            await consent(answer: .given(1), unlockedAgo: nil).requestConsent(choose)
                == .approved(userVerified: false, selectedAccount: 1))
        #expect(asked.all.last?.accounts.count == 2)
        #expect(await consent(answer: .given(2), unlockedAgo: nil).requestConsent(choose) == .denied)
    }
}

/// Answers every prompt the same way and keeps what it was asked.
struct ScriptedAsker: ConsentAsker {
    let answer: PromptAnswer<Int>
    let asked: Recorder<ConsentPrompt>

    func ask(_ prompt: ConsentPrompt) async -> PromptAnswer<Int> {
        asked.append(prompt)
        return answer
    }
}

/// Values kept from any thread.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}
