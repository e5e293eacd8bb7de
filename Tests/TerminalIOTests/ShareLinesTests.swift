import CTAP2
import Crypto
import Foundation
import Hybrid
import JSON
import NearbyShare
import NearbyShareDriver
import Proximity
import Testing

@testable import TerminalIO

/// `passkey share` and `passkey receive` as the person reads them.
struct ShareLinesTests {
    static let radio = ProximityMode.simulated(host: "127.0.0.1", port: 9)

    static func credential(user: String? = "alice") -> StoredCredential {
        StoredCredential(
            id: [0xFB, 0xFF], relyingPartyID: "example.com", relyingPartyName: nil, userHandle: [1], userName: user,
            userDisplayName: nil, privateKey: P256.Signing.PrivateKey(), isDiscoverable: true, backupEligible: true,
            backupState: false, creationDate: Date(timeIntervalSince1970: 0))
    }

    @Test func theReceiverSaysEachStepAndNothingOfAPhone() throws {
        let routingID = try RoutingID(bytes: [1, 2, 3])
        #expect(
            ShareLines.receiver(.showQRCode(url: "PASSKEY-SHARE:/1"), radio: Self.radio)
                == "waiting for the sender to scan the QR code and come near (Bluetooth: \(Self.radio))")
        #expect(
            ShareLines.receiver(
                .hybrid(.advertSeen(routingID: routingID, domain: try TunnelDomain(id: 0))), radio: Self.radio)
                == "advert seen: the sender is near; relay cable.ua5v.com, routing ID \(routingID)")
        #expect(
            ShareLines.receiver(
                .hybrid(.tunnelConnected(url: "wss://relay.example/cable/connect/AA/BB")), radio: Self.radio)
                == "tunnel connected: wss://relay.example")
        #expect(ShareLines.receiver(.acknowledged(.added), radio: Self.radio) == "the sender was told: added")
        #expect(ShareLines.receiver(.hybrid(.linkedPhoneNear), radio: Self.radio) == nil)
        #expect(ShareLines.receiver(.hybrid(.showQRCode(url: "FIDO:/1")), radio: Self.radio) == nil)
    }

    @Test func theSenderSaysWhatTheReceiverAsks() {
        #expect(
            ShareLines.sender(.requestReceived(command: ShareCommand.request.rawValue), radio: Self.radio)
                == "the receiver asks for the passkey")
        #expect(ShareLines.sender(.responseSent(status: 0), radio: Self.radio) == "answer sent")
        #expect(ShareLines.sender(.responseSent(status: 0x2E), radio: Self.radio) == "refused (status 0x2E)")
        #expect(
            ShareLines.sender(.connecting(url: "wss://relay.example/cable/new/AA"), radio: Self.radio)
                == "connecting to the relay wss://relay.example")
    }

    /// The account's name is the site's choice: quoted and escaped, so it cannot pass for the site.
    @Test func whatBecameOfThePasskeyNamesItsAccountEscaped() {
        let hostile = Self.credential(user: "bob\u{1B}[2K\" at bank.example")
        #expect(
            ShareLines.received(.added, hostile) == [
                "Added the passkey for \"bob\\u{1B}[2K\\\" at bank.example\" at example.com.", "  credential ID  -_8",
            ])
        #expect(
            ShareLines.received(.alreadyPresent, Self.credential(user: nil))
                == ["This store already has that passkey (example.com, \"no name\"); nothing was added."])
        #expect(ShareLines.received(.declined, Self.credential()).isEmpty)
        #expect(
            ShareLines.shared(.added, Self.credential())
                == .success("Shared the passkey for \"alice\" at example.com: the receiver added it."))
        #expect(
            ShareLines.shared(.declined, Self.credential())
                == .failure(
                    ShareLines.Failure(message: "the receiver declined the passkey for \"alice\" at example.com")))
        #expect(
            ShareLines.shared(.refused, Self.credential())
                == .failure(
                    ShareLines.Failure(
                        message: "the receiver refused the passkey for \"alice\" at example.com (refused)")))
    }

    /// `share --json` and `receive --json`: the passkey where it went, in the documented key style; nothing for an
    /// outcome the command reports as its failure.
    @Test func theJSONNamesThePasskeyAndWhatBecameOfIt() throws {
        let added = try #require(ShareLines.json(.added, Self.credential()))
        #expect(
            String(decoding: added.serialized(), as: UTF8.self)
                == #"{"credentialId":"-_8","outcome":"added","rpId":"example.com","userName":"alice"}"#)
        let held = try #require(ShareLines.json(.alreadyPresent, Self.credential(user: nil)))
        #expect(
            String(decoding: held.serialized(), as: UTF8.self)
                == #"{"credentialId":"-_8","outcome":"alreadyPresent","rpId":"example.com"}"#)
        #expect(ShareLines.json(.declined, Self.credential()) == nil)
    }
}
