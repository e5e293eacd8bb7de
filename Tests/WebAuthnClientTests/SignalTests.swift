import Foundation
import Testing
import WebAuthnClient

/// The L3 signal methods and conditional create as pure decisions: the options read as a page passes them, and what
/// a provider does with the credentials it holds.
struct SignalTests {
    static let alice = SignalCredential(
        credentialID: [1], relyingPartyID: "example.com", userHandle: [0xA1], userName: "alice",
        userDisplayName: "Alice", isHidden: false)
    static let aliceSecond = SignalCredential(
        credentialID: [2], relyingPartyID: "example.com", userHandle: [0xA1], userName: "alice",
        userDisplayName: "Alice", isHidden: true)
    static let bob = SignalCredential(
        credentialID: [3], relyingPartyID: "example.com", userHandle: [0xB0], userName: "bob", userDisplayName: "Bob",
        isHidden: false)
    static let elsewhere = SignalCredential(
        credentialID: [1], relyingPartyID: "other.example", userHandle: [0xA1], userName: "alice",
        userDisplayName: "Alice", isHidden: false)
    static let held = [alice, aliceSecond, bob, elsewhere]

    static func signal(_ kind: CredentialSignal.Kind, _ json: String) throws -> CredentialSignal {
        try CredentialSignal(kind: kind, json: Array(json.utf8))
    }

    @Test func theOptionsAreReadAsAPagePassesThem() throws {
        #expect(
            try Self.signal(.unknown, #"{"rpId":"example.com","credentialId":"AQ"}"#)
                == .unknownCredential(rpID: "example.com", credentialID: [1]))
        #expect(
            try Self.signal(.accepted, #"{"rpId":"example.com","userId":"oQ","allAcceptedCredentialIds":["AQ","Ag"]}"#)
                == .allAcceptedCredentials(rpID: "example.com", userHandle: [0xA1], credentialIDs: [[1], [2]]))
        #expect(
            try Self.signal(.details, #"{"rpId":"example.com","userId":"oQ","name":"a@x","displayName":"A"}"#)
                == .currentUserDetails(rpID: "example.com", userHandle: [0xA1], name: "a@x", displayName: "A"))
        #expect(
            try Self.signal(.unknown, #"{"rpId":"example.com","credentialId":"AQ"}"#).relyingPartyID == "example.com")
    }

    @Test(arguments: [
        (CredentialSignal.Kind.unknown, #"{"credentialId":"AQ"}"#, "rpId is required"),
        (.unknown, #"{"rpId":"example.com","credentialId":"*not*"}"#, "credentialId"),
        (.unknown, #"{"rpId":"example.com","credentialId":""}"#, "credentialId"),
        (.unknown, #"{"rpId":"example.com","credentialId":5}"#, "credentialId"),
        (.accepted, #"{"rpId":"example.com","userId":"oQ"}"#, "allAcceptedCredentialIds is required"),
        (
            .accepted, #"{"rpId":"example.com","userId":"oQ","allAcceptedCredentialIds":["AQ","!"]}"#,
            "allAcceptedCredentialIds[1]"
        ),
        (
            .accepted, #"{"rpId":"example.com","userId":"oQ","allAcceptedCredentialIds":"AQ"}"#,
            "allAcceptedCredentialIds"
        ),
        (.details, #"{"rpId":"example.com","userId":"oQ","name":"a"}"#, "displayName is required"),
        (.details, #"[1]"#, "the options"),
    ])
    func badOptionsAreTypeErrors(kind: CredentialSignal.Kind, json: String, naming: String) {
        let error = #expect(throws: ClientError.self) { try Self.signal(kind, json) }
        #expect(error?.name == .typeError || error?.name == .syntaxError)
        #expect(error?.explanation.contains(naming) == true, "\(error?.explanation ?? "")")
    }

    @Test func anUnknownCredentialIsHiddenOnlyForItsRelyingParty() {
        let unknown = CredentialSignal.unknownCredential(rpID: "example.com", credentialID: [1])
        #expect(unknown.actions(on: Self.held) == [.hide(credentialID: [1])])
        // Already hidden, or not held: nothing to do, and nothing that tells the page which.
        #expect(
            CredentialSignal.unknownCredential(rpID: "example.com", credentialID: [2]).actions(on: Self.held).isEmpty)
        #expect(
            CredentialSignal.unknownCredential(rpID: "example.com", credentialID: [9]).actions(on: Self.held).isEmpty)
        #expect(
            CredentialSignal.unknownCredential(rpID: "nope.example", credentialID: [1]).actions(on: Self.held).isEmpty)
    }

    @Test func allAcceptedHidesTheRestAndShowsTheListedAgain() {
        // Only [2] is accepted: [1] is hidden, the hidden [2] comes back; bob's and the other site's are untouched.
        let accepted = CredentialSignal.allAcceptedCredentials(
            rpID: "example.com", userHandle: [0xA1], credentialIDs: [[2], [42]])
        #expect(accepted.actions(on: Self.held) == [.hide(credentialID: [1]), .unhide(credentialID: [2])])
        let all = CredentialSignal.allAcceptedCredentials(
            rpID: "example.com", userHandle: [0xA1], credentialIDs: [[1], [2]])
        #expect(all.actions(on: Self.held) == [.unhide(credentialID: [2])])
        let none = CredentialSignal.allAcceptedCredentials(rpID: "example.com", userHandle: [0xCC], credentialIDs: [])
        #expect(none.actions(on: Self.held).isEmpty)
    }

    @Test func currentDetailsRenameWhereANameDiffers() {
        let details = CredentialSignal.currentUserDetails(
            rpID: "example.com", userHandle: [0xA1], name: "alice@new", displayName: "Alice")
        #expect(
            details.actions(on: Self.held) == [
                .rename(credentialID: [1], name: "alice@new", displayName: "Alice"),
                .rename(credentialID: [2], name: "alice@new", displayName: "Alice"),
            ])
        let same = CredentialSignal.currentUserDetails(
            rpID: "example.com", userHandle: [0xA1], name: "alice", displayName: "Alice")
        #expect(same.actions(on: Self.held).isEmpty)
    }

    @Test func conditionalCreateNeedsARecentFillOfThatUsersPasswordAndNoPasskeyYet() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func fill(_ host: String, _ user: String, secondsAgo: TimeInterval) -> ConditionalCreate.PasswordFill {
            ConditionalCreate.PasswordFill(host: host, userName: user, date: now.addingTimeInterval(-secondsAgo))
        }
        func allows(_ fills: [ConditionalCreate.PasswordFill], user: String = "carol", rpID: String = "example.com")
            -> Bool
        {
            ConditionalCreate.allows(rpID: rpID, userName: user, fills: fills, passkeys: Self.held, now: now)
        }
        #expect(allows([fill("example.com", "carol", secondsAgo: 10)]))
        #expect(allows([fill("login.example.com", "carol", secondsAgo: 299)]))
        #expect(allows([fill("Example.COM", "carol", secondsAgo: 0)], rpID: "EXAMPLE.com"))
        #expect(!allows([fill("example.com", "carol", secondsAgo: 301)]))  // too long ago
        #expect(!allows([fill("example.com", "carol", secondsAgo: -60)]))  // from the future
        #expect(!allows([fill("example.com", "dave", secondsAgo: 10)]))  // another user's password
        #expect(!allows([fill("notexample.com", "carol", secondsAgo: 10)]))  // another site
        #expect(!allows([fill("com", "carol", secondsAgo: 10)]))  // a parent is not the site
        #expect(!allows([]))
        // alice already has a passkey here (one visible, one hidden): no second one without asking.
        #expect(!allows([fill("example.com", "alice", secondsAgo: 10)], user: "alice"))
    }
}
