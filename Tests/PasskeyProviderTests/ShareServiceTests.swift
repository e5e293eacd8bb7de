import CTAP2
import CredentialExchange
import Crypto
import Foundation
import NearbyShare
import PasskeyProvider
import PasskeyStoreIO
import TestSupport
import Testing

/// Nearby sharing's decisions, in process: which passkey goes, what is asked before it leaves, and what is asked
/// before one that arrived is added. The radio and relay side is `NearbyShareDriverTests`'.
struct ShareServiceTests {
    typealias World = TestStore

    static func credential(id: [UInt8], user: String = "alice") -> StoredCredential {
        StoredCredential(
            id: id, relyingPartyID: "example.com", relyingPartyName: nil, userHandle: Array(user.utf8), userName: user,
            userDisplayName: "Alice Example", privateKey: P256.Signing.PrivateKey(compactRepresentable: false),
            isDiscoverable: true, backupEligible: true, backupState: true,
            creationDate: Date(timeIntervalSince1970: 1_700_000_000))
    }

    static func offered(_ person: ScriptedPerson) -> [ShareEvent] {
        person.events.compactMap { if case .share(let event) = $0 { event } else { nil } }
    }

    // MARK: Receiving

    @Test func anArrivingPasskeyIsShownThenAddedOnlyAfterAYes() async throws {
        let world = try World()
        let passkey = ImportedPasskey(
            credential: Self.credential(id: [1, 2, 3]), location: "share", notes: ["the counter starts at 0"])

        let refusing = ScriptedPerson([.no])
        #expect(try await world.service(refusing).receive(passkey) == .declined)
        #expect(try world.ids().isEmpty)
        #expect(refusing.prompts == [.confirm(.addSharedPasskey(store: world.store.url.path))])
        #expect(
            Self.offered(refusing) == [
                .offered(
                    relyingPartyID: "example.com", userName: "alice", displayName: "Alice Example",
                    created: Date(timeIntervalSince1970: 1_700_000_000), notes: ["the counter starts at 0"])
            ])

        let agreeing = ScriptedPerson([.yes])
        #expect(try await world.service(agreeing).receive(passkey) == .added)
        #expect(try world.ids() == [[1, 2, 3]])
        #expect(
            try world.store.credential(id: [1, 2, 3])?.privateKey.rawRepresentation
                == passkey.credential.privateKey.rawRepresentation)

        // The same passkey again: nothing is asked and nothing changes.
        let again = ScriptedPerson()
        #expect(try await world.service(again).receive(passkey) == .alreadyPresent)
        #expect(again.prompts.isEmpty && again.unexpectedPrompts == 0)
        #expect(try world.ids() == [[1, 2, 3]])
    }

    @Test(arguments: [ScriptedPerson.Reply.cancel, .timeOut, .endOfInput])
    func anyAnswerButYesAddsNothing(reply: ScriptedPerson.Reply) async throws {
        let world = try World()
        let passkey = ImportedPasskey(credential: Self.credential(id: [4]), location: "share")
        #expect(try await world.service(ScriptedPerson([reply])).receive(passkey) == .declined)
        #expect(try world.ids().isEmpty)
    }

    @Test func withNobodyToAskNothingIsAddedAndUnattendedModeSaysSo() async throws {
        let world = try World()
        let passkey = ImportedPasskey(credential: Self.credential(id: [5]), location: "share")
        let nobody = ScriptedPerson()
        let error = await #expect(throws: ProviderError.self) {
            try await world.service(nobody, canAsk: false).receive(passkey)
        }
        #expect(error == ProviderError("adding a passkey needs your approval", hint: "Run it in a terminal."))
        #expect(nobody.prompts.isEmpty)
        #expect(try world.ids().isEmpty)

        let unattended = ScriptedPerson()
        #expect(try await world.service(unattended, yes: true, canAsk: false).receive(passkey) == .added)
        #expect(unattended.prompts.isEmpty)
        let reports = unattended.events.compactMap { event -> String? in
            switch event {
            case .unattendedApprovalOn(let reason): "on: \(reason)"
            case .autoAnswered(let question): "\(question)"
            default: nil
            }
        }
        #expect(reports == ["on: --yes", "\(ProviderQuestion.addSharedPasskey(store: world.store.url.path))"])
    }

    // MARK: Sending

    @Test func theCredentialIDMustNameExactlyOnePasskey() throws {
        let world = try World()
        try world.store.save(Self.credential(id: [0xAA]))
        try world.store.save(Self.credential(id: [0xBB], user: "bob"))
        let service = world.service(ScriptedPerson())
        #expect(try service.passkey(candidates: [[0xAA]], text: "qg").userName == "alice")
        #expect(throws: ProviderError("no passkey with credential ID zz", hint: "`passkey list` shows the IDs.")) {
            try service.passkey(candidates: [[0xCC]], text: "zz")
        }
        #expect(
            throws: ProviderError(
                "'x' names two passkeys, read as base64url and as hex",
                hint: "Prefix it with b64: or hex: to say which.")
        ) {
            try service.passkey(candidates: [[0xAA], [0xBB]], text: "x")
        }
    }

    @Test func sharingAsksThenVerifiesWithThePassphraseAndThreeWrongOnesRefuse() async throws {
        let world = try World()
        let credential = Self.credential(id: [7])
        let question = ProviderQuestion.sharePasskey(relyingPartyID: "example.com", user: "alice")

        let verified = ScriptedPerson([.yes, .type("wrong"), .type(TestStore.passphrase)])
        try await world.service(verified).confirmSharing(credential)
        #expect(verified.prompts == [.confirm(question), .secret(.verification), .secret(.verification)])

        let wrong = ScriptedPerson([.yes, .type("a"), .type("b"), .type("c")])
        await #expect(throws: ProviderError("user verification failed; nothing was shared")) {
            try await world.service(wrong).confirmSharing(credential)
        }
        #expect(wrong.unusedReplies == 0)

        let declining = ScriptedPerson([.no])
        await #expect(throws: ProviderError("nothing was shared", exitStatus: ExitStatus.declined)) {
            try await world.service(declining).confirmSharing(credential)
        }
        #expect(declining.prompts == [.confirm(question)])

        let nobody = ScriptedPerson()
        await #expect(throws: ProviderError("sharing a passkey needs your approval", hint: "Run it in a terminal.")) {
            try await world.service(nobody, canAsk: false).confirmSharing(credential)
        }
        #expect(nobody.prompts.isEmpty)

        let unattended = ScriptedPerson()
        try await world.service(unattended, yes: true, canAsk: false).confirmSharing(credential)
        #expect(unattended.prompts.isEmpty)
        #expect(unattended.events.contains { if case .autoAnswered(question) = $0 { true } else { false } })
    }
}

extension TestStore {
    func service(_ person: ScriptedPerson, yes: Bool = false, canAsk: Bool = true) -> ShareService {
        ShareService(store: store, interface: person, mode: ApprovalMode(yes: yes, environment: [:]), canAsk: canAsk)
    }

    func ids() throws -> [[UInt8]] { try store.entries().map(\.id) }
}
