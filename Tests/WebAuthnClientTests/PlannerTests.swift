import Foundation
import Testing
import WebAuthnClient

/// One test per row of the decision table in Docs/Client.md, on the pure planner.
struct PlannerTests {
    static let alice = CredentialMetadata(
        credentialID: [0xA1], userHandle: [1], userName: "alice", created: Date(timeIntervalSince1970: 100))
    static let bob = CredentialMetadata(
        credentialID: [0xB0], userHandle: [2], userName: "bob", created: Date(timeIntervalSince1970: 200))
    static let serverSide = CredentialMetadata(credentialID: [0x5E], userName: "carol", isDiscoverable: false)

    static func local(_ credentials: [CredentialMetadata]) -> AuthenticatorSummary {
        AuthenticatorSummary(kind: .platform, transports: [.internal], credentials: credentials)
    }
    static let phone = AuthenticatorSummary(kind: .hybrid, transports: [.hybrid], credentials: nil)
    static let key = AuthenticatorSummary(kind: .securityKey, transports: [.usb], credentials: nil)

    static func get(
        _ authenticators: [AuthenticatorSummary], allow: [PublicKeyCredentialDescriptor] = [],
        hints: [PublicKeyCredentialHint] = [], mediation: CredentialMediation = .optional, immediate: Bool = false,
        userName: String? = nil
    ) -> GetPlan {
        CeremonyPlanner.planGet(
            allowCredentials: allow, hints: hints, mediation: mediation, preferImmediatelyAvailable: immediate,
            typedUserName: userName, authenticators: authenticators)
    }

    static func kinds(_ plan: CeremonyPlan) -> [ClientChoice] {
        switch plan {
        case .fail: []
        case .ask(let requests, _), .proceed(let requests): requests.map(\.choice)
        }
    }

    // MARK: Modal

    @Test func modalWithOneLocalAccountGoesAheadWithIt() {
        let plan = Self.get([Self.local([Self.alice]), Self.phone, Self.key])
        guard case .proceed(let requests) = plan.decision else { Issue.record("\(plan)"); return }
        #expect(requests.map(\.account) == [Self.alice])
        #expect(requests[0].allowList == [PublicKeyCredentialDescriptor(id: [0xA1], transports: [.internal])])
    }

    @Test func modalWithSeveralLocalAccountsAsksNewestFirstThenPhoneThenKey() {
        let plan = Self.get([Self.key, Self.local([Self.alice, Self.bob]), Self.phone])
        #expect(
            plan.decision
                == .ask(
                    [
                        PlannedRequest(
                            authenticator: 1, kind: .platform, allowList: [.init(id: [0xB0], transports: [.internal])],
                            account: Self.bob, choice: .account(Self.bob, on: .platform)),
                        PlannedRequest(
                            authenticator: 1, kind: .platform, allowList: [.init(id: [0xA1], transports: [.internal])],
                            account: Self.alice, choice: .account(Self.alice, on: .platform)),
                        PlannedRequest(authenticator: 2, kind: .hybrid, choice: .phone),
                        PlannedRequest(authenticator: 0, kind: .securityKey, choice: .securityKey),
                    ], conditional: false))
    }

    @Test func modalWithoutLocalMatchGoesStraightToTheQRCodeWhileAKeyListens() {
        let plan = Self.get([Self.local([]), Self.key, Self.phone])
        #expect(Self.kinds(plan.decision) == [.phone, .securityKey])
        guard case .proceed = plan.decision else { Issue.record("\(plan)"); return }
    }

    @Test func modalOnlyServerSideLocalCredentialsDoNotCountWithoutAllowList() {
        let plan = Self.get([Self.local([Self.serverSide]), Self.phone])
        #expect(plan.decision == .proceed([PlannedRequest(authenticator: 1, kind: .hybrid, choice: .phone)]))
    }

    @Test func modalWithNothingAvailableFails() {
        let plan = Self.get([Self.local([])])
        guard case .fail(let error) = plan.decision else { Issue.record("\(plan)"); return }
        #expect(error.name == .notAllowedError)
    }

    // MARK: Allow lists

    @Test func allowListKeepsBoundLocalCredentialsIncludingServerSideOnes() {
        let allow: [PublicKeyCredentialDescriptor] = [.init(id: [0x5E]), .init(id: [0xFF], transports: [.usb])]
        let plan = Self.get([Self.local([Self.alice, Self.serverSide]), Self.phone], allow: allow)
        #expect(
            plan.decision
                == .proceed([
                    PlannedRequest(
                        authenticator: 0, kind: .platform, allowList: [.init(id: [0x5E], transports: [.internal])],
                        account: Self.serverSide, choice: .account(Self.serverSide, on: .platform))
                ]))
        // Asked for a phone: the hint wins over the usb-only descriptor's transports, so the phone gets both.
        let hinted = Self.get([Self.local([Self.alice, Self.serverSide]), Self.phone], allow: allow, hints: [.hybrid])
        guard case .ask(let requests, false) = hinted.decision else { Issue.record("\(hinted)"); return }
        #expect(requests.map(\.account) == [nil, Self.serverSide])
        #expect(requests[0].allowList == allow)
    }

    @Test func allowListTransportsSkipAuthenticatorsWithNoneLeft() {
        let plan = Self.get(
            [Self.local([Self.alice]), Self.phone, Self.key], allow: [.init(id: [0x77], transports: [.usb, .nfc])])
        #expect(
            plan.decision
                == .proceed([
                    PlannedRequest(
                        authenticator: 2, kind: .securityKey, allowList: [.init(id: [0x77], transports: [.usb, .nfc])],
                        choice: .securityKey)
                ]))
    }

    @Test func aHintWinsOverTheDescriptorsTransports() {
        // The relying party recorded the credential as a USB key's; the hint says it is on a phone now.
        let allow: [PublicKeyCredentialDescriptor] = [.init(id: [0x77], transports: [.usb])]
        let plan = Self.get([Self.local([Self.alice]), Self.phone, Self.key], allow: allow, hints: [.hybrid])
        #expect(
            plan.decision
                == .proceed([
                    PlannedRequest(authenticator: 1, kind: .hybrid, allowList: allow, choice: .phone),
                    PlannedRequest(authenticator: 2, kind: .securityKey, allowList: allow, choice: .securityKey),
                ]))
    }

    @Test func allowListWithNothingBoundAnywhereFails() {
        let plan = Self.get(
            [Self.local([Self.alice]), Self.phone], allow: [.init(id: [0x99], transports: [.internal])])
        guard case .fail(let error) = plan.decision else { Issue.record("\(plan)"); return }
        #expect(error.name == .notAllowedError)
    }

    @Test func allowListOfUnknownTypesFails() {
        let plan = Self.get([Self.phone], allow: [.init(type: "future-key", id: [1])])
        guard case .fail(let error) = plan.decision else { Issue.record("\(plan)"); return }
        #expect(error.name == .notAllowedError)
    }

    // MARK: Hints

    @Test func hintsOrderTheChoices() {
        let authenticators = [Self.local([Self.alice, Self.bob]), Self.phone, Self.key]
        #expect(
            Self.kinds(Self.get(authenticators, hints: [.securityKey, .hybrid]).decision) == [
                .securityKey, .phone, .account(Self.bob, on: .platform), .account(Self.alice, on: .platform),
            ])
        #expect(
            Self.kinds(Self.get(authenticators, hints: [.hybrid]).decision) == [
                .phone, .account(Self.bob, on: .platform), .account(Self.alice, on: .platform), .securityKey,
            ])
    }

    @Test func aHintForAnotherKindStopsTheAutoSelect() {
        let plan = Self.get([Self.local([Self.alice]), Self.phone, Self.key], hints: [.securityKey])
        #expect(Self.kinds(plan.decision) == [.securityKey, .account(Self.alice, on: .platform), .phone])
        guard case .ask = plan.decision else { Issue.record("\(plan)"); return }
        let clientDevice = Self.get([Self.local([Self.alice]), Self.phone], hints: [.clientDevice])
        guard case .proceed = clientDevice.decision else { Issue.record("\(clientDevice)"); return }
    }

    // MARK: Conditional

    @Test func conditionalListsDiscoverableCredentialsAndOffersAPhoneWithoutShowingItsQRCode() {
        let plan = Self.get([Self.local([Self.alice, Self.serverSide]), Self.phone], mediation: .conditional)
        #expect(
            plan.decision
                == .ask(
                    [
                        PlannedRequest(
                            authenticator: 0, kind: .platform, allowList: [.init(id: [0xA1], transports: [.internal])],
                            account: Self.alice, choice: .account(Self.alice, on: .platform)),
                        PlannedRequest(authenticator: 1, kind: .hybrid, choice: .phone),
                    ], conditional: true))
    }

    @Test func conditionalWithNothingLocalStillAsksAndNeverFails() {
        let plan = Self.get([Self.local([])], mediation: .conditional)
        #expect(plan.decision == .ask([], conditional: true))
    }

    @Test func conditionalMovesTheAllowListIntoAFilter() {
        let plan = Self.get(
            [Self.local([Self.alice, Self.bob]), Self.phone], allow: [.init(id: [0xB0])], mediation: .conditional)
        #expect(plan.credentialIDFilter == [[0xB0]])
        guard case .ask(let requests, true) = plan.decision else { Issue.record("\(plan)"); return }
        #expect(requests.map(\.account) == [Self.bob, nil])
        #expect(requests[1].allowList.isEmpty)
    }

    @Test func aTypedUserNameMakesConditionalModalWithThatUsersCredentials() {
        let plan = Self.get(
            [Self.local([Self.alice, Self.bob]), Self.phone], mediation: .conditional, userName: "alice")
        #expect(plan.mediation == .optional)
        #expect(plan.credentialIDFilter.isEmpty)
        guard case .proceed(let requests) = plan.decision else { Issue.record("\(plan)"); return }
        #expect(requests.map(\.account) == [Self.alice])
    }

    @Test func aTypedUserNameWithoutLocalCredentialsGoesToThePhone() {
        let plan = Self.get([Self.local([Self.alice]), Self.phone], mediation: .conditional, userName: "dave")
        #expect(plan.mediation == .optional)
        #expect(plan.decision == .proceed([PlannedRequest(authenticator: 1, kind: .hybrid, choice: .phone)]))
    }

    // MARK: Immediate

    @Test func immediateWithoutLocalCredentialFailsSilentlyEvenWithAPhone() {
        for plan in [
            Self.get([Self.local([]), Self.phone, Self.key], mediation: .immediate),
            Self.get([Self.local([]), Self.phone], immediate: true),
        ] {
            #expect(plan.decision == .fail(ClientError(.noImmediatelyAvailableCredential)))
        }
    }

    @Test func immediateWithAnAllowListFails() {
        let plan = Self.get([Self.local([Self.alice])], allow: [.init(id: [0xA1])], mediation: .immediate)
        #expect(plan.decision == .fail(ClientError(.immediateWithAllowList)))
    }

    @Test func immediateOffersOnlyLocalCredentials() {
        let one = Self.get([Self.local([Self.alice]), Self.phone], hints: [.hybrid], mediation: .immediate)
        #expect(Self.kinds(one.decision) == [.account(Self.alice, on: .platform)])
        guard case .proceed = one.decision else { Issue.record("\(one)"); return }
        let two = Self.get([Self.phone, Self.local([Self.alice, Self.bob])], immediate: true)
        #expect(Self.kinds(two.decision) == [.account(Self.bob, on: .platform), .account(Self.alice, on: .platform)])
    }

    @Test func preferImmediatelyAvailableKeepsTheAllowList() {
        let plan = Self.get(
            [Self.local([Self.alice, Self.bob]), Self.phone], allow: [.init(id: [0xA1])], immediate: true)
        #expect(Self.kinds(plan.decision) == [.account(Self.alice, on: .platform)])
    }

    // MARK: Create

    @Test func createOnAnyAttachmentAsksWithThisComputerFirst() {
        let plan = CeremonyPlanner.planCreate(
            attachment: nil, hints: [], authenticators: [Self.key, Self.phone, Self.local([])])
        #expect(Self.kinds(plan) == [.thisComputer, .phone, .securityKey])
        guard case .ask = plan else { Issue.record("\(plan)"); return }
    }

    @Test func createPlatformAttachmentGoesToThisComputer() {
        let plan = CeremonyPlanner.planCreate(
            attachment: .platform, hints: [], authenticators: [Self.local([]), Self.phone, Self.key])
        #expect(plan == .proceed([PlannedRequest(authenticator: 0, kind: .platform, choice: .thisComputer)]))
    }

    @Test func createCrossPlatformRunsPhoneAndKeyAtOnce() {
        let plan = CeremonyPlanner.planCreate(
            attachment: .crossPlatform, hints: [.securityKey], authenticators: [Self.local([]), Self.phone, Self.key])
        #expect(Self.kinds(plan) == [.securityKey, .phone])
        guard case .proceed = plan else { Issue.record("\(plan)"); return }
    }

    @Test func createHintsWinOverAttachment() {
        let plan = CeremonyPlanner.planCreate(
            attachment: .platform, hints: [.securityKey], authenticators: [Self.local([]), Self.phone, Self.key])
        #expect(Self.kinds(plan) == [.securityKey, .thisComputer])
    }

    @Test func createWithNoMatchingAuthenticatorFails() {
        let plan = CeremonyPlanner.planCreate(attachment: .crossPlatform, hints: [], authenticators: [Self.local([])])
        guard case .fail(let error) = plan else { Issue.record("\(plan)"); return }
        #expect(error.name == .notAllowedError)
    }

    // MARK: Timer

    @Test func timeoutsAreClampedToChromiumsRange() {
        #expect(CeremonyTimeout.clamped(nil) == .seconds(300))
        #expect(CeremonyTimeout.clamped(0) == .seconds(10))
        #expect(CeremonyTimeout.clamped(60_000) == .seconds(60))
        #expect(CeremonyTimeout.clamped(4_000_000_000) == .seconds(600))
    }
}
