import CTAP2
import CTAPHID
import Hybrid
import PasskeyProvider
import Testing

@Suite("Phone route: which requests a phone behind the key answers")
struct PhoneRouteTests {
    /// One row of the rule: the request, then the route with `--phone` and with `--phone-only`.
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var facts: PhoneRouteFacts
        var lastRoute: PhoneRoute?
        var fallback: PhoneRoute
        var only: PhoneRoute
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(
            name: "a sign-in the store can answer", facts: .init(command: .getAssertion, storeCanAnswer: true),
            fallback: .store, only: .phone),
        Row(
            name: "a sign-in the store cannot answer", facts: .init(command: .getAssertion, storeCanAnswer: false),
            fallback: .phone, only: .phone),
        Row(
            name: "a sign-in asking for presence explicitly",
            facts: .init(command: .getAssertion, userPresence: true, storeCanAnswer: false), fallback: .phone,
            only: .phone),
        Row(
            name: "a pre-flight (up false) the store cannot answer",
            facts: .init(command: .getAssertion, userPresence: false, storeCanAnswer: false), fallback: .store,
            only: .refuse(.noCredentials)),
        Row(
            name: "a sign-in bound to this key's token",
            facts: .init(command: .getAssertion, hasPinUvAuthParam: true, storeCanAnswer: false), fallback: .store,
            only: .refuse(.pinAuthInvalid)),
        Row(
            name: "a creation", facts: .init(command: .makeCredential), fallback: .askWhere, only: .phone),
        Row(
            name: "a creation the store excludes", facts: .init(command: .makeCredential, storeExcludes: true),
            fallback: .store, only: .phone),
        Row(
            name: "a creation bound to this key's token",
            facts: .init(command: .makeCredential, hasPinUvAuthParam: true), fallback: .store,
            only: .refuse(.pinAuthInvalid)),
        Row(
            name: "the next assertion after the store's sign-in", facts: .init(command: .getNextAssertion),
            lastRoute: .store, fallback: .store, only: .refuse(.notAllowed)),
        Row(
            name: "the next assertion after a phone's sign-in", facts: .init(command: .getNextAssertion),
            lastRoute: .phone, fallback: .refuse(.notAllowed), only: .refuse(.notAllowed)),
        Row(name: "getInfo", facts: .init(command: .getInfo), fallback: .store, only: .store),
        Row(name: "selection", facts: .init(command: .selection), fallback: .store, only: .store),
        Row(
            name: "clientPIN", facts: .init(command: .clientPIN), fallback: .store, only: .refuse(.invalidCommand)),
        Row(
            name: "credential management", facts: .init(command: .credentialManagement), fallback: .store,
            only: .refuse(.invalidCommand)),
        Row(
            name: "credential management (prototype)", facts: .init(command: .credentialManagementPreview),
            fallback: .store, only: .refuse(.invalidCommand)),
        Row(
            name: "large blobs", facts: .init(command: .largeBlobs), fallback: .store,
            only: .refuse(.invalidCommand)),
        Row(name: "config", facts: .init(command: .config), fallback: .store, only: .refuse(.invalidCommand)),
        Row(name: "reset", facts: .init(command: .reset), fallback: .store, only: .refuse(.notAllowed)),
        Row(
            name: "an unknown command", facts: .init(command: CTAPCommand(rawValue: 0x40)), fallback: .store,
            only: .store),
    ]

    @Test("each request's route with --phone and --phone-only", arguments: rows)
    func route(_ row: Row) {
        #expect(PhoneRoute.decide(row.facts, mode: .phoneFallback, lastRoute: row.lastRoute) == row.fallback)
        #expect(PhoneRoute.decide(row.facts, mode: .phoneOnly, lastRoute: row.lastRoute) == row.only)
    }

    @Test("without the bridge every request goes to the store", arguments: rows)
    func off(_ row: Row) {
        #expect(PhoneRoute.decide(row.facts, mode: .off, lastRoute: row.lastRoute) == .store)
        #expect(PhoneRoute.decide(row.facts, mode: .off, lastRoute: .phone) == .store)
    }

    @Test("keepalive: user presence while the person acts, processing once the phone is near")
    func keepalive() throws {
        let routing = try RoutingID(bytes: [1, 2, 3])
        let domain = try TunnelDomain(id: 0)
        #expect(BridgeKeepalive.status(after: .showQRCode(url: "FIDO:/1")) == .userPresenceNeeded)
        #expect(BridgeKeepalive.status(after: .contacting(url: "wss://relay.example")) == .userPresenceNeeded)
        for near: HybridClientProgress in [
            .advertSeen(routingID: routing, domain: domain), .linkedPhoneNear, .tunnelConnected(url: "wss://x"),
            .handshakeDone, .requestSent(command: 0x02),
        ] {
            #expect(BridgeKeepalive.status(after: near) == .processing, "\(near)")
        }
        #expect(BridgeKeepalive.status(after: .responseReceived(status: 0)) == nil)
    }
}
