import Testing
import WebAuthnClient

/// getClientCapabilities() (L3 §5.1.7) as this client answers it: each value follows the machine or what the client
/// does, never more.
struct CapabilitiesTests {
    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func theMapFollowsTheMachine(radio: Bool, store: Bool) {
        let map = ClientCapabilities.map(for: .init(radioUsable: radio, storeExists: store))
        #expect(map["hybridTransport"] == radio)
        #expect(map["passkeyPlatformAuthenticator"] == store && map["userVerifyingPlatformAuthenticator"] == store)
        // What the client does whatever the machine: conditional get and related origins; conditional create and the
        // signal methods act on this computer's store, so only when there is one.
        #expect(map["conditionalGet"] == true && map["relatedOrigins"] == true)
        #expect(map["conditionalCreate"] == store)
        for signal in ["signalAllAcceptedCredentials", "signalCurrentUserDetails", "signalUnknownCredential"] {
            #expect(map[signal] == store)
        }
        // Every extension input the client reads, and only those, as extension:NAME.
        #expect(
            Set(map.keys.filter { $0.hasPrefix("extension:") })
                == Set(ClientCapabilities.extensions.map { "extension:\($0)" }))
        #expect(map.count == 9 + ClientCapabilities.extensions.count)
    }
}
