import CTAP2
import PasskeyProvider
import Testing

@testable import ConsentIO

@Suite("What a notification offers and how its answer is read")
struct NotificationTextTests {
    static let alice = AccountSummary(
        relyingPartyID: "example.com", userName: "alice", userDisplayName: nil, credentialID: [1])
    static let bob = AccountSummary(
        relyingPartyID: "example.com", userName: "<b>bob</b>", userDisplayName: nil, credentialID: [2])

    @Test("Allow and Deny, or one action per account; the body's markup escaped")
    func actionsAndBody() {
        let single = ConsentPrompt(
            action: .makeCredential(relyingPartyID: "example.com", userName: "alice", userDisplayName: nil),
            verification: .notGiven(reason: "a <reason> & more"), accounts: [], timeout: .seconds(60))
        #expect(DesktopNotifications.actions(for: single) == ["allow", "Allow", "deny", "Deny"])
        #expect(DesktopNotifications.body(for: single).contains("a &lt;reason&gt; &amp; more"))
        #expect(!DesktopNotifications.body(for: single).contains("<"))
        let choice = ConsentPrompt(
            action: .getAssertion(
                relyingPartyID: "example.com", accounts: [Self.alice, Self.bob], chooseOnAuthenticator: true),
            verification: .notNeeded, accounts: [Self.alice, Self.bob], timeout: .seconds(60))
        #expect(
            DesktopNotifications.actions(for: choice) == [
                "account-0", "Sign in as alice", "account-1", "Sign in as <b>bob</b>", "deny", "Deny",
            ])
    }

    @Test("an action key is read as the answer it names, and only keys that were offered count")
    func answers() {
        #expect(DesktopNotifications.answer(forAction: "allow", accounts: 0) == .given(0))
        #expect(DesktopNotifications.answer(forAction: "deny", accounts: 0) == .declined)
        #expect(DesktopNotifications.answer(forAction: "default", accounts: 0) == nil)
        #expect(DesktopNotifications.answer(forAction: "account-1", accounts: 2) == .given(1))
        #expect(DesktopNotifications.answer(forAction: "account-2", accounts: 2) == nil)
        #expect(DesktopNotifications.answer(forAction: "account--1", accounts: 2) == nil)
        // With a choice to make, a bare Allow was not offered.
        #expect(DesktopNotifications.answer(forAction: "allow", accounts: 2) == nil)
        #expect(DesktopNotifications.answer(forAction: "account-0", accounts: 0) == nil)
    }
}
